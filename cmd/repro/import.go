package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/repro-tools/repro/attribute"
	"github.com/repro-tools/repro/ci"
	"github.com/repro-tools/repro/importer"
)

func init() { subcommands = append(subcommands, newImportCmd) }

// exitPartial is import's exit code when some runs or files could not be
// fetched or imported and the rest were: the result is partial. No other
// repro command uses it.
const exitPartial = 4

type importOptions struct {
	out     string
	json    bool
	pattern string

	// CI runs.
	jobs               []string
	bucket             string
	compareBy          string
	since, until       string
	limit              int
	offline            bool
	cacheDir, cacheMax string
	sippy              bool
	sippyURL           string
	threshold          time.Duration
	audit              bool
	parallel           int
	maxObject          string
	// failures are the inputs that could not be fetched or imported, as
	// reported (see failed).
	failures       []string
	samplerTimeout time.Duration

	// Analysis of CI run folders (importer.AnalyzeCIRuns).
	html    string
	window  time.Duration
	atLeast float64
}

func newImportCmd(_ *rootOptions) *cobra.Command {
	io := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import [URL|gs://URI|FILE|DIR]... [--job NAME --since DATE]",
		Short: "Fetch origin CI runs or read their interval files, place each disruption and name its pattern",
		Long: `Read the interval files origin's CI runs leave behind
(e2e-timelines_spyglass_*.json; a folder is searched for them by name as
sippy does) and place every Disruption interval against the run's
kube-apiserver graceful shutdowns (APIServerGracefulShutdown), node updates
(NodeState) and kube-apiserver events. Each gets a pattern:

  apiserver-rollout  started in, 5 s before, or up to 60 s after a
                     kube-apiserver's shutdown window (not its node's update)
  node-update        started during a node's update phase (drain, OS update,
                     reboot)
  other              neither; the nearest events are named

An upgrade job's two files are its upgrade and conformance phases. A folder
whose interval files sit under different children is a folder of runs.
All three serializations origin has written are read; times are whole
seconds.

CI runs are fetched too; inputs mix freely with files and folders:

  https://prow.ci.openshift.org/view/gs/BUCKET/logs/JOB/BUILD
  https://gcsweb-ci.apps.ci.l2s4.p1.openshiftapps.com/gcs/BUCKET/logs/JOB/BUILD/
  gs://BUCKET/logs/JOB/BUILD   (pr-logs/pull/ORG_REPO/PR/JOB/BUILD too)

origin-ci-test is read from test-platform-results, anonymously; the
STORAGE_EMULATOR_HOST variable points reads at a mirror or an emulator. The
ci-operator target comes from prowjob.json; the run's timeline and
backend-disruption files are fetched from
artifacts/TARGET/openshift-e2e-test/artifacts/junit/ into a cache
(~/.cache/repro/ci, --cache-dir), once; --offline reads only the cache.

--job NAME --since DATE [--until DATE] [--limit N] reads a job's history:
build IDs grow with time, so the window is found by bisection, reading
started.json at the probe points only. Each run's small
backend-disruption_*.json is read first (--sippy: Sippy's
/api/jobs/runs/disruption instead); only runs with at least --threshold on
an apiserver backend get their timelines fetched, with one clean run of the
job (0 s on every apiserver backend, nearest in time) for the A/B.

--audit also fetches the gathered audit logs
(artifacts/TARGET/gather-extra/artifacts/audit_logs/) and gives each failed
request whose interval carries its audit ID (request-audit-id) a verdict:
answered, received-not-answered, not-received or unknown.

--json prints every Disruption interval with its backend, connection, from,
to, pattern, node, phase and error text. --out DIR writes a results folder
(one per run under DIR for several runs) that the rest of repro reads:
intervals, placements, summary.txt and report.html, with samples
synthesized at origin's one-per-second resolution; --pattern keeps only one
pattern's disruption there, so "repro compare" compares that pattern.

Exit codes: 0 everything was read; 1 nothing could be (bad input);
4 partial: some runs or files could not be fetched or imported (a missing
file, a 404, truncated JSON, no timeline), one line each on stderr, and
the rest were.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 && len(io.jobs) == 0 {
				return errors.New("import needs prow URLs, gs:// URIs, interval files or folders holding them (e2e-timelines_spyglass_*.json), or --job NAME --since DATE")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := io.validate(); err != nil {
				return err
			}
			if io.pattern != "" && io.out == "" {
				return errors.New("--pattern shapes the folder --out writes; give --out DIR too")
			}
			req, local, err := io.request(args)
			if err != nil {
				return err
			}
			in := importer.Inputs{Paths: local}
			var fetchFailed int
			// One gather per job (the named runs with the first).
			jobs := io.jobs
			if len(jobs) == 0 {
				jobs = []string{""}
			}
			for i, job := range jobs {
				r := req
				r.Job = job
				if i > 0 {
					r.Refs = nil
				}
				if len(r.Refs) == 0 && r.Job == "" {
					continue
				}
				res, cl, err := io.gather(cmd, r)
				if err != nil {
					return err
				}
				fetchFailed += len(res.Failures)
				in.Runs = append(in.Runs, res.Runs...)
				if io.audit {
					printAttribution(cmd, io, res.Runs)
				}
				evictCache(cmd, cl, in.Runs)
			}
			imported, bad, err := io.importRuns(cmd, in)
			if err != nil {
				return err
			}
			lone := imported == 0 && len(io.failures) == 1 && bad+fetchFailed == 1
			if len(io.failures) == 1 && !lone {
				fmt.Fprintln(cmd.ErrOrStderr(), io.failures[0])
			}
			switch {
			case lone:
				// One input, one failure: its own line is the error,
				// not a count pointing above.
				return fmt.Errorf("nothing could be imported: %s", io.failures[0])
			case imported == 0 && (bad > 0 || fetchFailed > 0):
				return fmt.Errorf("nothing could be imported: %d run(s) or file(s) failed (see above)", bad+fetchFailed)
			case bad > 0 || fetchFailed > 0:
				return withExitCode(exitPartial, fmt.Errorf("partial: %d run(s) or file(s) could not be fetched or imported (see above); the rest were", bad+fetchFailed))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&io.out, "out", "", "write a results folder (one per run under it for several runs)")
	f.BoolVar(&io.json, "json", false, "print the placements as JSON")
	f.StringVar(&io.pattern, "pattern", "", "with --out: keep only this pattern's disruption (apiserver-rollout, node-update, before-upgrade, other)")
	f.StringArrayVar(&io.jobs, "job", nil, "read this prow job's history (with --since); repeat for several jobs")
	f.StringVar(&io.compareBy, "compare-by", "", "CI runs: compare two sets per pattern and backend: job (two --job), date=2006-01-02 (before against from), version=4.16,4.17 (upgraded to)")
	f.StringVar(&io.bucket, "bucket", ci.BucketTestPlatformResult, "bucket holding --job's runs")
	f.StringVar(&io.since, "since", "", "with --job: runs started at or after this date (2006-01-02 or RFC 3339)")
	f.StringVar(&io.until, "until", "", "with --job: runs started before this date (default: now)")
	f.IntVar(&io.limit, "limit", 0, "with --job: at most this many runs, the newest (0: all in the window)")
	f.BoolVar(&io.offline, "offline", false, "read CI runs from the cache only")
	f.StringVar(&io.cacheDir, "cache-dir", "", "CI run cache (default ~/.cache/repro/ci)")
	f.StringVar(&io.cacheMax, "cache-max-size", "20GiB", "bound on the cache's size; the runs fetched longest ago are evicted first")
	f.BoolVar(&io.sippy, "sippy", false, "with --job: triage with Sippy's per-run disruption instead of each run's backend-disruption files")
	f.StringVar(&io.sippyURL, "sippy-url", ci.DefaultSippyURL, "Sippy's address")
	f.DurationVar(&io.threshold, "threshold", ci.DefaultThreshold, "with --job: fetch timelines only of runs with at least this much disruption on an apiserver backend")
	f.BoolVar(&io.audit, "audit", false, "fetch the runs' gathered audit logs and attribute each failed request")
	f.IntVar(&io.parallel, "parallel", ci.DefaultParallel, "objects downloaded at once")
	f.StringVar(&io.maxObject, "max-object", "1GiB", "bound on one downloaded object")
	f.StringVar(&io.html, "html", "", "CI runs: write the offline HTML page (one row per run) to this file")
	f.DurationVar(&io.window, "window", importer.DefaultEvidenceWindow, "CI runs: evidence read either side of each disruption")
	f.Float64Var(&io.atLeast, "at-least", importer.DefaultAtLeast, "CI runs: the pattern table's share of runs at or above this many seconds")
	f.DurationVar(&io.samplerTimeout, "sampler-timeout", attribute.DefaultSamplerTimeout, "with --audit: origin's sampler timeout in the runs (20s in 2024, 34s since origin #29761); a timed-out request gave up at 4/5 of it")
	return cmd
}

// request sorts the arguments into CI runs and local paths and checks the
// history flags.
func (o *importOptions) request(args []string) (ci.Request, []string, error) {
	req := ci.Request{Bucket: o.bucket, Limit: o.limit, Threshold: o.threshold, Sippy: o.sippy, SippyURL: o.sippyURL, Audit: o.audit}
	if _, _, err := importer.ParseCompareBy(o.compareBy, o.jobs); err != nil {
		return req, nil, err
	}
	var local []string
	for _, a := range args {
		if !ci.IsRemote(a) {
			local = append(local, a)
			continue
		}
		ref, err := ci.ParseRef(a)
		if err != nil {
			return req, nil, err
		}
		req.Refs = append(req.Refs, ref)
	}
	if len(o.jobs) == 0 {
		for _, fl := range []struct {
			name string
			set  bool
		}{{"--since", o.since != ""}, {"--until", o.until != ""}, {"--limit", o.limit != 0}, {"--sippy", o.sippy}} {
			if fl.set {
				return req, nil, fmt.Errorf("%s reads a job's history: give --job NAME too", fl.name)
			}
		}
		return req, local, nil
	}
	if o.since == "" {
		return req, nil, errors.New("--job needs --since DATE (2006-01-02 or RFC 3339), so that a job's whole history is never read")
	}
	var err error
	if req.Since, err = ci.ParseDate(o.since); err != nil {
		return req, nil, fmt.Errorf("--since %q: %v", o.since, err)
	}
	if o.until != "" {
		if req.Until, err = ci.ParseDate(o.until); err != nil {
			return req, nil, fmt.Errorf("--until %q: %v", o.until, err)
		}
		if !req.Until.After(req.Since) {
			return req, nil, ci.ErrBadWindow
		}
	}
	if o.limit < 0 {
		return req, nil, fmt.Errorf("--limit %d: give 0 (all) or more", o.limit)
	}
	if o.threshold < 0 {
		return req, nil, fmt.Errorf("--threshold %v: give 0 or more", o.threshold)
	}
	return req, local, nil
}

// failed notes one input that could not be fetched or imported. Each is
// printed as it happens, one line, except the first: it is held until a
// second one comes or the import ends, so that a lone failure is the
// command's own error line instead of a line above a count.
func (o *importOptions) failed(cmd *cobra.Command, msg string) {
	msg = oneLine(msg)
	o.failures = append(o.failures, msg)
	stderr := cmd.ErrOrStderr()
	switch len(o.failures) {
	case 1:
	case 2:
		fmt.Fprintln(stderr, o.failures[0])
		fmt.Fprintln(stderr, msg)
	default:
		fmt.Fprintln(stderr, msg)
	}
}

// validate checks every flag before any input is read or fetched, so a bad
// value is one line naming the flag, never a late failure.
func (o *importOptions) validate() error {
	if o.pattern != "" && !slices.Contains(importer.Patterns, o.pattern) {
		return fmt.Errorf("--pattern %q: use %s or %s", o.pattern, strings.Join(importer.Patterns[:len(importer.Patterns)-1], ", "), importer.Patterns[len(importer.Patterns)-1])
	}
	if o.parallel < 1 || o.parallel > 64 {
		return fmt.Errorf("--parallel %d: give 1 to 64 downloads at once", o.parallel)
	}
	if o.threshold < 0 {
		return fmt.Errorf("--threshold %s: give 0 or more (0 selects every run)", o.threshold)
	}
	if o.window <= 0 {
		return fmt.Errorf("--window %s: give a positive duration, such as 60s", o.window)
	}
	if o.atLeast < 0 {
		return fmt.Errorf("--at-least %g: give 0 or more seconds", o.atLeast)
	}
	if o.samplerTimeout <= 0 {
		return fmt.Errorf("--sampler-timeout %s: give origin's sampler timeout, such as 20s or 34s", o.samplerTimeout)
	}
	if n, err := ci.ParseSize(o.cacheMax); err != nil || n <= 0 {
		return fmt.Errorf("--cache-max-size %q: give a positive size such as 20GiB", o.cacheMax)
	}
	if n, err := ci.ParseSize(o.maxObject); err != nil || n <= 0 {
		return fmt.Errorf("--max-object %q: give a positive size such as 1GiB", o.maxObject)
	}
	return nil
}

// gather fetches the CI runs into the cache and prints what it did.
func (o *importOptions) gather(cmd *cobra.Command, req ci.Request) (*ci.Result, *ci.Client, error) {
	stderr := cmd.ErrOrStderr()
	maxCache, err := ci.ParseSize(o.cacheMax)
	if err != nil {
		return nil, nil, fmt.Errorf("--cache-max-size %v", err)
	}
	maxObject, err := ci.ParseSize(o.maxObject)
	if err != nil || maxObject <= 0 {
		return nil, nil, fmt.Errorf("--max-object %q: give a size such as 1GiB", o.maxObject)
	}
	if o.parallel <= 0 {
		return nil, nil, fmt.Errorf("--parallel %d: give 1 or more", o.parallel)
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	cl, closeClient, err := ci.Open(ctx, ci.ClientOptions{CacheRoot: o.cacheDir, CacheMax: maxCache, MaxObject: maxObject, Parallel: o.parallel, Offline: o.offline})
	if err != nil {
		return nil, nil, err
	}
	defer closeClient()
	root := cl.Cache.Root
	bar := newFetchBar(ctx, stderr)
	cl.Progress = bar
	start := time.Now()
	res, err := cl.Gather(ctx, req)
	bar.finish()
	if err != nil {
		return nil, nil, err
	}
	elapsed := time.Since(start)
	if res.History != nil {
		h := res.History
		fmt.Fprintf(stderr, "%s: %d builds listed, %d started.json read to narrow them to %d in the window\n", req.Job, h.Listed, h.Probed, len(h.Builds))
		for _, l := range res.Triage {
			fmt.Fprintf(stderr, "  %s\n", l)
		}
		src := "each run's backend-disruption files"
		if req.Sippy {
			src = "Sippy"
		}
		fmt.Fprintf(stderr, "triage (%s): %d runs scanned, %d selected (at least %v on an apiserver backend), %d skipped, %d without figures; %d clean run(s) added for the A/B\n",
			src, res.Scanned, res.Selected, req.Threshold, res.Skipped, res.NoData, len(res.Clean))
	}
	for _, l := range res.Failures {
		o.failed(cmd, l)
	}
	if n := bar.objects.Load(); n > 0 || len(res.Runs) > 0 {
		fmt.Fprintf(stderr, "fetched %d objects (%s) for %d runs in %s; cache %s\n", n, mib(bar.bytes.Load()), len(res.Runs), elapsed.Round(time.Millisecond), root)
	}
	return res, cl, nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// evictCache keeps the cache within its bound, never evicting the runs
// just read.
func evictCache(cmd *cobra.Command, cl *ci.Client, runs []*ci.Run) {
	ev, err := cl.EvictExcept(runs)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "cache: %v\n", err)
		return
	}
	if len(ev.Runs) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "cache: evicted %d run(s) fetched longest ago (%s) to stay within --cache-max-size; %s kept\n", len(ev.Runs), mib(ev.Bytes), mib(ev.Size))
	}
}

// printAttribution gives each fetched run's failed requests their
// verdicts from its gathered audit logs.
func printAttribution(cmd *cobra.Command, o *importOptions, runs []*ci.Run) {
	w := cmd.OutOrStdout()
	if o.json {
		w = cmd.ErrOrStderr()
	}
	for _, r := range runs {
		if !r.Has(ci.StageAudit) && !r.Has(ci.StageTimelines) {
			continue
		}
		a, err := attribute.AttributeCIRun(cmd.Context(), r.Dir, r.Target, attribute.CIOptions{SamplerTimeout: o.samplerTimeout})
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: attribution: %v\n", r.Name(), err)
			continue
		}
		counts := map[string]int{}
		for _, rec := range a.Records {
			counts[rec.Verdict]++
		}
		var parts []string
		for _, v := range attribute.Verdicts {
			parts = append(parts, fmt.Sprintf("%d %s", counts[v], v))
		}
		fmt.Fprintf(w, "\nAttribution of %s (%d failed intervals, %d with an audit ID): %s\n", r.Name(), a.Failures, a.Failures-a.WithoutID, strings.Join(parts, ", "))
		for _, n := range a.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		for _, rec := range a.Records {
			fmt.Fprintf(w, "  %s %s-%s %s %s: %s\n", rec.Start.UTC().Format("15:04:05"), rec.Backend, rec.Connection, rec.AuditID, rec.Verdict, rec.Detail)
		}
	}
}

// fetchBar shows the downloads: an mpb bar of bytes with the objects and an
// estimate on a terminal; nothing otherwise (a summary line follows).
type fetchBar struct {
	p                            *mpb.Progress
	bar                          *mpb.Bar
	objects, planned, bytes, all atomic.Int64
	done                         atomic.Int64
}

func newFetchBar(ctx context.Context, w io.Writer) *fetchBar {
	b := &fetchBar{}
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return b
	}
	b.p = newBars(ctx, w, 30)
	b.bar = b.p.AddBar(0,
		mpb.PrependDecorators(decor.Name("fetching "), decor.Any(func(decor.Statistics) string {
			return fmt.Sprintf("%d/%d objects", b.done.Load(), b.objects.Load())
		}, decor.WC{W: 18})),
		mpb.AppendDecorators(decor.Counters(decor.SizeB1024(0), "% .1f / % .1f"), decor.Name(" "), decor.AverageETA(decor.ET_STYLE_GO)),
	)
	return b
}

// Plan adds objects and bytes to the estimate.
func (b *fetchBar) Plan(objects int, n int64) {
	b.objects.Add(int64(objects))
	total := b.planned.Add(n)
	if b.bar != nil {
		b.bar.SetTotal(total, false)
	}
}

// Transferred adds bytes written.
func (b *fetchBar) Transferred(n int64) {
	b.bytes.Add(n)
	if b.bar != nil {
		b.bar.IncrInt64(n)
	}
}

// Done counts one object finished.
func (b *fetchBar) Done() { b.done.Add(1) }

func (b *fetchBar) finish() {
	if b.bar == nil {
		return
	}
	b.bar.SetTotal(-1, true)
	b.p.Wait()
}

// importRuns hands the inputs to importer.Import with the flags' options;
// each failed input is one line (failed).
func (o *importOptions) importRuns(cmd *cobra.Command, in importer.Inputs) (imported, bad int, err error) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	io := importer.ImportOptions{Out: o.out, Pattern: o.pattern, JSON: o.json, HTML: o.html,
		CI: importer.CIOptions{Window: o.window, AtLeast: o.atLeast}, Command: os.Args,
		Stdout: cmd.OutOrStdout(), Log: cmd.ErrOrStderr(), Failed: func(msg string) { o.failed(cmd, msg) }}
	if io.CI.A, io.CI.B, err = importer.ParseCompareBy(o.compareBy, o.jobs); err != nil {
		return 0, 0, err
	}
	return importer.Import(ctx, in, io)
}
