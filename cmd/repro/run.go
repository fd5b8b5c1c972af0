package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/repro-tools/repro/attribute"
	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/lab/binaries"
	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
	"github.com/repro-tools/repro/scenarios"
	"github.com/repro-tools/repro/trigger"
	"github.com/repro-tools/repro/vantage"
)

func init() { subcommands = append(subcommands, newRunCmd, newScenariosCmd) }

// exitOverLimit is the exit code of a run whose disruption exceeded --max-disruption.
const exitOverLimit = 3

type runOptions struct {
	scenario      string
	iterations    int
	out           string
	maxDisruption time.Duration
	dryRun        bool
	force         bool
	yes           bool
	useLab        bool
	baseline      time.Duration
	coolDown      time.Duration
	followTimeout time.Duration
	attribute     bool
	vantages      []string
	polling       pollingFlags
	lab           labFlags
}

// pollingFlags are the pollers' flags, shared by run and probe.
type pollingFlags struct {
	interval     time.Duration
	probeTimeout time.Duration
	backends     []string
	http2        bool
	awsLB        bool
	control      string
}

func (p *pollingFlags) bind(f *pflag.FlagSet) {
	f.DurationVar(&p.interval, "interval", prober.DefaultInterval, "time between two requests of each poller (minimum 10ms)")
	f.DurationVar(&p.probeTimeout, "probe-timeout", defaultProbeTimeout, "bound on each request; dial, TLS and response headers get 4/5 of it (default origin's 34s; on the lab divided by --lab-timing: 3.4s fast)")
	f.StringSliceVar(&p.backends, "backends", prober.DefaultBackendNames, "backends to poll: "+strings.Join(prober.BackendNames(), ", "))
	f.BoolVar(&p.http2, "http2", false, "negotiate HTTP/2 (default HTTP/1.1, like origin's sampler)")
	f.BoolVar(&p.awsLB, "aws-lb", false, "on AWS, poll the API load balancers' target health every second (AWS default credential chain, read-only describe calls; see README)")
	f.StringVar(&p.control, "control", "", "also poll this URL outside the cluster, on the same network path, to tell this side's network from the cluster's")
}

// minProbeTimeout is the smallest --probe-timeout taken: a TCP and TLS
// handshake and a response must fit in it, even on a loaded laptop.
const minProbeTimeout = 100 * time.Millisecond

// defaultProbeTimeout is --probe-timeout's default, the prober's own.
const defaultProbeTimeout = prober.DefaultProbeTimeout

// settings checks the polling flags and resolves the backends.
func (p *pollingFlags) settings() (scenarios.Polling, error) {
	if p.interval < prober.MinInterval {
		return scenarios.Polling{}, fmt.Errorf("--interval %v is below the minimum of %v", p.interval, prober.MinInterval)
	}
	if p.probeTimeout < minProbeTimeout {
		return scenarios.Polling{}, fmt.Errorf("--probe-timeout %v is below the minimum of %v (dial, TLS and response headers share 4/5 of it)", p.probeTimeout, minProbeTimeout)
	}
	if p.control != "" {
		if _, _, err := scenarios.ParseControlURL(p.control); err != nil {
			return scenarios.Polling{}, err
		}
	}
	backends, err := prober.LookupBackends(p.backends)
	if err != nil {
		return scenarios.Polling{}, fmt.Errorf("--backends: %w", err)
	}
	return scenarios.Polling{Backends: backends, Interval: p.interval, ProbeTimeout: p.probeTimeout, HTTP2: p.http2, AWSLB: p.awsLB, Control: p.control}, nil
}

func newScenariosCmd(o *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "scenarios",
		Short: "List the scenarios repro run can play",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range scenarios.List() {
				fmt.Fprintf(cmd.OutOrStdout(), "%-18s %s\n", s.Name, s.Summary)
			}
			return nil
		},
	}
}

func newRunCmd(o *rootOptions) *cobra.Command {
	ro := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run --scenario NAME",
		Short: "Force a kube-apiserver rollout while polling every API backend, and say where the disruption sits",
		Long: `Run a scenario against a cluster named with --kubeconfig, --context, --server
or KUBECONFIG or, when none is named (or with --lab), against the lab: real
kube-apiservers behind an NLB-like load balancer, started for the run. A
kubeconfig found elsewhere (~/.kube/config, in-cluster) is never used by run.

Before anything changes on a cluster, repro checks the permissions the run
needs (see "repro rbac"), that kube-apiserver is settled and that every
backend answers, then prints the server, context, cluster version and
platform and asks to go on (default no); without a terminal it needs --yes.

apiserver-rollout: the pollers start; after a baseline, kubeapiservers/cluster
spec.forceRedeploymentReason is set to repro-<run id>-<n> (nothing else is ever
changed) and the rollout is followed node by node until every node runs the new
revision; then a cool-down. --iterations repeats trigger, follow and cool-down.

Results go to --out: samples.jsonl, events.jsonl, intervals.json,
backend-disruption.json, placements.json, junit.xml, summary.txt, which
says where every disruption sits in the rollout, and repro.log.

--attribute then reads the control-plane nodes' audit logs and says where
each failed request went (attribution.jsonl; see "repro attribute").
--vantage (repeatable) polls from more places than the external load
balancer: internal-lb, direct (each apiserver), service-network (in-cluster).

Exit codes: 0 done within limits, 3 disruption over --max-disruption,
130 interrupted (partial results kept), 1 any other error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runScenario(cmd, o, ro) },
	}
	// Every flag of repro run is declared here.
	f := cmd.Flags()
	f.StringVar(&ro.scenario, "scenario", "", "scenario to run (see \"repro scenarios\")")
	f.IntVar(&ro.iterations, "iterations", 1, "rollouts to force in one run, each with its own figures")
	f.StringVar(&ro.out, "out", "", "results folder (default ./repro-results/<UTC timestamp>-<scenario>)")
	f.DurationVar(&ro.maxDisruption, "max-disruption", 0, "exit 3 when any backend-connection is disrupted longer than this in total (0: no limit)")
	f.BoolVar(&ro.dryRun, "dry-run", false, "run the checks, print the plan and the patch, check it with a server-side dry run, change nothing")
	f.BoolVar(&ro.force, "force", false, "go on even if kube-apiserver is already rolling out or not settled")
	f.BoolVar(&ro.yes, "yes", false, "roll out a live cluster without asking (needed when there is no terminal)")
	f.BoolVar(&ro.useLab, "lab", false, "run on the lab even when a cluster is named")
	f.DurationVar(&ro.baseline, "baseline", 0, "polling before the first trigger (default 60s live, 10s on the lab)")
	f.DurationVar(&ro.coolDown, "cool-down", 0, "polling after each rollout completes (default 60s live, 10s on the lab)")
	f.DurationVar(&ro.followTimeout, "follow-timeout", 0, "limit for one rollout to complete (default 60m live, 5m on the fast lab, 50m at --lab-timing aws)")
	f.BoolVar(&ro.attribute, "attribute", false, "after the run, say where each failed request went from the audit logs (as \"repro attribute\")")
	f.StringArrayVar(&ro.vantages, "vantage", nil, "where to poll from, repeatable: "+strings.Join(vantage.Names, ", ")+" (default external-lb)")
	ro.polling.bind(f)
	ro.lab.bind(cmd)
	// A run keeps the load balancer's records in its results folder.
	_ = cmd.Flags().MarkHidden("lb-records")
	_ = cmd.MarkFlagRequired("scenario")
	return cmd
}

// explicitTarget reports whether the user named a cluster: --kubeconfig,
// --context, --server or KUBECONFIG. Only then does repro run go live.
func explicitTarget(o *rootOptions) bool {
	for _, f := range []*string{o.configFlags.KubeConfig, o.configFlags.Context, o.configFlags.APIServer} {
		if f != nil && *f != "" {
			return true
		}
	}
	return os.Getenv("KUBECONFIG") != ""
}

// foundKubeconfig names a cluster configuration oc would use although none
// was named (~/.kube/config or in-cluster), "" when there is none.
func foundKubeconfig() string {
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != "" {
		return "the in-cluster service account"
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".kube", "config")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// maxIterations bounds --iterations: each iteration is a full rollout
// (about 10-20 minutes on a cluster), so more is a typo, not a plan.
const maxIterations = 1000

// why says why a run uses the lab.
func why(ro *runOptions, found string) string {
	if ro.useLab {
		return "--lab"
	}
	w := "no cluster named (--kubeconfig, --context, --server or KUBECONFIG)"
	if found != "" {
		w += "; " + found + " was found and not used"
	}
	return w
}

// validate checks the run's own flags: one line for the first bad one.
func (ro *runOptions) validate() error {
	if ro.iterations < 1 || ro.iterations > maxIterations {
		return fmt.Errorf("--iterations must be 1..%d, got %d", maxIterations, ro.iterations)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--max-disruption", ro.maxDisruption}, {"--baseline", ro.baseline}, {"--cool-down", ro.coolDown}, {"--follow-timeout", ro.followTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("%s must not be negative, got %v", d.name, d.v)
		}
	}
	return nil
}

func runScenario(cmd *cobra.Command, o *rootOptions, ro *runOptions) error {
	ctx := cmd.Context()
	log := o.logger()
	out := cmd.OutOrStdout()
	sc, err := scenarios.Lookup(ro.scenario)
	if err != nil {
		return err
	}
	if err := ro.validate(); err != nil {
		return err
	}
	polling, err := ro.polling.settings()
	if err != nil {
		return err
	}
	labOpts, err := ro.lab.options()
	if err != nil {
		return err
	}
	found := foundKubeconfig()
	vantages, err := vantage.Parse(ro.vantages)
	if err != nil {
		return err
	}
	// A run, and its dry run, go live only when a cluster is named: a dry
	// run resolves its target exactly as the run does, so with no cluster
	// named it is the lab's dry run and touches no cluster at all.
	named := explicitTarget(o)
	onLab := ro.useLab || !named
	timings := scenarios.LiveTimings()
	if onLab {
		timings = scenarios.LabTimings()
		// One time scale: the lab divides origin's probe timeout as it
		// divides every other duration of the rollout, unless it is given.
		if !cmd.Flags().Changed("probe-timeout") {
			polling.ProbeTimeout = labOpts.Timing.Scale(prober.DefaultProbeTimeout)
		}
		// A rollout at AWS timing takes three times (129 s + start + 30 s).
		timings.FollowTimeout = time.Duration(lab.TimingFast.Factor/labOpts.Timing.Factor) * timings.FollowTimeout
	}
	for _, d := range []struct {
		flag time.Duration
		into *time.Duration
	}{{ro.baseline, &timings.Baseline}, {ro.coolDown, &timings.CoolDown}, {ro.followTimeout, &timings.FollowTimeout}} {
		if d.flag > 0 {
			*d.into = d.flag
		}
	}
	runID := time.Now().UTC().Format("20060102t150405")
	session := &scenarios.Session{
		Command: "run", Args: os.Args, Scenario: sc, Timings: timings, Iterations: ro.iterations, RunID: runID,
		Force: ro.force, Polling: polling, MaxDisruption: ro.maxDisruption, Yes: ro.yes, Out: out, Log: log,
	}

	if ro.dryRun {
		printPlan(out, ro, sc, timings, runID, onLab)
		if onLab {
			printLabPlan(out, labOpts, polling.ProbeTimeout, why(ro, found))
			fmt.Fprintln(out, "dry run: nothing was built, started or changed, and no request was sent")
			return nil
		}
		if session.Target, err = runTarget(o); err != nil {
			return err
		}
		if err := session.DryRun(ctx); err != nil {
			return err
		}
		fmt.Fprintln(out, "dry run: nothing was changed")
		return nil
	}

	if onLab {
		// The kernel load balancer runs in a network namespace of its own:
		// the whole run (lab and pollers) goes on in a repro inside one.
		if code, ran, err := enterNetns(ctx, &labOpts, cmd.ErrOrStderr()); err != nil {
			return err
		} else if ran {
			return childExit(code)
		}
	}

	outDir := ro.out
	if outDir == "" {
		outDir = results.DefaultDir(sc.Name, time.Now())
	}
	folder, err := results.Create(outDir)
	if err != nil {
		return err
	}
	logFile, err := o.logToFile(folder.Path(logFileName))
	if err != nil {
		return err
	}
	defer logFile()

	var theLab *lab.Lab
	if onLab {
		fmt.Fprintf(out, "%s: starting the lab (%d real kube-apiservers behind an NLB-like load balancer; timing %s, probe timeout %v)\n", why(ro, found), labOpts.Nodes, labOpts.Timing, polling.ProbeTimeout)
		opts := labOpts
		// The lab's process chatter goes to repro.log; warnings also to the screen.
		opts.Logger = o.quietLogger().Named("lab")
		opts.BuildProgress = os.Stderr
		opts.ConnRecords = folder.Path(results.LBConnectionsFile)
		started := time.Now()
		theLab, err = startLab(ctx, opts)
		if err != nil {
			logFile()
			folder.RemoveIfEmpty()
			if ctx.Err() != nil {
				return withExitCode(exitInterrupted, errors.New("interrupted while starting the lab"))
			}
			return fmt.Errorf("lab did not start: %w", err)
		}
		defer func() {
			if ctx.Err() != nil {
				// One line: the teardown is the only wait left.
				fmt.Fprintf(os.Stderr, "repro: stopping the lab; its apiservers may take up to their grace period (%v) to exit (Ctrl-C again to exit at once)\n", theLab.Options().GracePeriod)
			}
			theLab.Stop()
		}()
		fmt.Fprintf(out, "lab is up in %s at %s (%s load balancer)\n", time.Since(started).Round(time.Millisecond), theLab.URL(), theLab.LBKind())
		session.Target = scenarios.Target{Config: theLab.RESTConfig(), Lab: labSettings(theLab, ro.lab.sets)}
		session.BeforeFinish = func(run *results.Run) {
			// The fault windows the lab applied, to line up with the gaps.
			run.SetExtra("labFaults", theLab.FaultEvents())
			if err := keepLabLogs(theLab, folder); err != nil {
				log.Warn("could not copy the apiserver logs into the results", zap.Error(err))
			}
			if _, err := scenarios.CopySignals(theLab.LBHealthPath(), folder.Path(results.SignalsFile)); err != nil {
				log.Warn("could not copy the load balancer's health records into the results", zap.Error(err))
			}
		}
	} else {
		if session.Target, err = runTarget(o); err != nil {
			logFile()
			folder.RemoveIfEmpty()
			return err
		}
		session.Confirm = terminalConfirm(cmd)
	}

	if err := setVantages(ctx, session, theLab, vantages, ro.attribute); err != nil {
		logFile()
		folder.RemoveIfEmpty()
		return err
	}

	view := newRolloutView(sc.Rollout)
	session.OnEvent = view.observe
	session.Progress = func(pr *prober.Prober, total time.Duration) (*zap.Logger, func()) {
		d := startProgress(ctx, pr, total, o, view)
		return d.logger(), d.finish
	}
	run, runErr := session.Run(ctx, folder)
	if run == nil {
		// Stopped before measuring: nothing of the run is kept but its log.
		logFile()
		removeIfOnlyLog(folder)
		if ctx.Err() != nil {
			return withExitCode(exitInterrupted, errors.New("interrupted before polling started; nothing was changed"))
		}
		return runErr
	}
	if ro.attribute {
		// On the lab this runs before the lab stops: its kubelet
		// endpoints serve the audit logs.
		timeout := attribute.DefaultRequestTimeout
		if theLab != nil {
			timeout = theLab.RequestTimeout()
		}
		if err := attributeRun(ctx, out, session.Target.Config, folder.Dir(), timeout, log); err != nil {
			log.Warn("attribution failed; rerun \"repro attribute "+folder.Dir()+"\"", zap.Error(err))
		}
	}
	return finishRun(out, folder, run, runErr, ro.maxDisruption)
}

// setVantages resolves the vantage points into the pollers' targets (on the
// lab, direct is each apiserver's own port) and adds what they and
// attribution read to the permissions checked before a live rollout.
func setVantages(ctx context.Context, s *scenarios.Session, l *lab.Lab, names []string, attribute bool) error {
	if attribute && l == nil {
		s.ExtraPermissions = append(s.ExtraPermissions, trigger.AttributionPermissions...)
	}
	if len(names) == 1 && names[0] == vantage.ExternalLB {
		return nil
	}
	var targets []prober.Target
	if l != nil {
		for _, n := range names {
			switch n {
			case vantage.ExternalLB:
				targets = append(targets, prober.Target{})
			case vantage.Direct:
				host := strings.TrimPrefix(l.URL(), "https://")
				host = host[:strings.LastIndex(host, ":")]
				for _, node := range l.Nodes() {
					targets = append(targets, prober.Target{Vantage: vantage.Direct, Node: node.Name(), URL: node.URL(), ServerName: host})
				}
			default:
				return fmt.Errorf("--vantage %s: the lab has only its load balancer (external-lb) and its apiservers' own ports (direct)", n)
			}
		}
	} else {
		c, err := vantage.NewClients(s.Target.Config)
		if err != nil {
			return err
		}
		// A few reads (Infrastructure, EndpointSlices, Nodes), bounded
		// together like one of the trigger's calls.
		rctx, cancel := context.WithTimeout(ctx, trigger.CallTimeout)
		targets, err = vantage.Resolve(rctx, c, s.Target.Config.Host, names)
		cancel()
		if err != nil {
			return err
		}
		s.ExtraPermissions = append(s.ExtraPermissions, trigger.VantagePermissions...)
	}
	s.Polling.Targets = targets
	return nil
}

// finishRun derives the report from the folder, prints the summary and
// turns the run's outcome into the exit code.
func finishRun(out io.Writer, folder *results.Folder, run *results.Run, runErr error, maxDisruption time.Duration) error {
	a, err := report.Rebuild(folder.Dir(), report.WithMaxDisruption(maxDisruption))
	if err != nil {
		return fmt.Errorf("report on %s: %w (samples are kept; rerun \"repro report %s\")", folder.Dir(), err, folder.Dir())
	}
	if summary, err := os.ReadFile(folder.Path(results.SummaryFile)); err == nil {
		fmt.Fprint(out, string(summary))
	}
	fmt.Fprintf(out, "\nresults: %s (%d samples)\n", folder.Dir(), a.Samples)
	switch {
	case run.Status == results.StatusInterrupted:
		return withExitCode(exitInterrupted, fmt.Errorf("interrupted; partial results kept in %s", folder.Dir()))
	case runErr != nil:
		return fmt.Errorf("%w; results so far kept in %s", runErr, folder.Dir())
	}
	if over := report.OverLimit(a, maxDisruption); len(over) > 0 {
		var parts []string
		for _, p := range over {
			parts = append(parts, fmt.Sprintf("%s %d ms", p.Name, p.Disrupted.Milliseconds()))
		}
		return withExitCode(exitOverLimit, fmt.Errorf("disruption over --max-disruption %v: %s", maxDisruption, strings.Join(parts, ", ")))
	}
	var refused int64
	for _, p := range a.Pollers {
		refused += p.Unauthorized
	}
	if refused > 0 {
		return fmt.Errorf("%d request(s) were refused with 401/403: the credentials expired or lost permission during the run (on OpenShift a token is checked through the oauth-apiserver); results kept in %s", refused, folder.Dir())
	}
	return nil
}

// startLab starts the lab so that Ctrl-C aborts its start (a first build
// takes minutes) but not the running lab: on an interrupt the pollers must
// stop before the apiservers do, or the teardown itself would be measured as
// disruption. The caller stops the lab; if repro dies, the parent-death
// signal takes the lab's processes with it.
func startLab(ctx context.Context, opts lab.Options) (*lab.Lab, error) {
	labCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	started := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			abort()
		case <-started:
		}
	}()
	l, err := lab.Start(labCtx, opts)
	close(started)
	if err != nil {
		abort()
		return nil, err
	}
	go func() {
		<-l.Done()
		abort()
	}()
	return l, nil
}

// labSettings records the lab of a run for run.json; sets are the
// --lab-set changes as typed, so a fix run names itself.
func labSettings(l *lab.Lab, sets []string) map[string]any {
	o := l.Options()
	return map[string]any{
		"sets":  append([]string{}, sets...),
		"nodes": o.Nodes, "shutdownDelay": o.ShutdownDelay.String(), "gracePeriod": o.GracePeriod.String(),
		"minReadyTime": o.MinReadyTime.String(), "lbHealthInterval": o.Health.Interval.String(),
		"lbHealthTimeout": o.Health.Timeout.String(), "lbHealthyThreshold": o.Health.HealthyThreshold,
		"lbUnhealthyThreshold": o.Health.UnhealthyThreshold, "kubeAPIServer": o.KubeAPIServer,
		"timing": o.Timing.Name, "timingFactor": o.Timing.Factor,
		"profile": o.Profile, "knobs": lab.Settings(o), "lb": l.LBKind(),
		// The release as the binary reported it, and whether it is the
		// lab's default, so labels name a release only where it differs.
		"kubeVersion": l.KubeVersion().String(), "kubeDefault": l.KubeVersion().GitVersion == binaries.KubeAPIServer.Version && o.KubeAPIServer == "",
	}
}

// keepLabLogs copies every apiserver process's log into the results folder,
// before the lab's temporary directory (which also holds its keys) goes away.
func keepLabLogs(l *lab.Lab, f *results.Folder) error {
	dir := f.Path("apiserver-logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range l.Nodes() {
		for i, p := range n.Processes() {
			if err := copyFile(p.LogPath, filepath.Join(dir, fmt.Sprintf("%s-%d-revision-%d.log", n.Name(), i, p.Revision))); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// printPlan says what a run would do, for --dry-run.
func printPlan(out io.Writer, ro *runOptions, sc scenarios.Scenario, t scenarios.Timings, runID string, onLab bool) {
	target := "the lab (started for the run)"
	if !onLab {
		target = "the kubeconfig's cluster"
	}
	fmt.Fprintf(out, "plan: scenario %s on %s\n", sc.Name, target)
	fmt.Fprintf(out, "  pollers: %s, new and reused connections, every %v\n", strings.Join(ro.polling.backends, ", "), ro.polling.interval)
	fmt.Fprintf(out, "  baseline %v\n", t.Baseline)
	if sc.Rollout {
		for n := 1; n <= ro.iterations; n++ {
			fmt.Fprintf(out, "  iteration %d: patch kubeapiservers.operator.openshift.io/cluster (merge) %s\n", n, trigger.Patch(trigger.Reason(runID, n)))
			fmt.Fprintf(out, "    follow the rollout (limit %v, settle %v), then cool down %v\n", t.FollowTimeout, t.Settle, t.CoolDown)
		}
	}
}

// printLabPlan says, for a lab dry run, what lab a run would start, from
// the validated options; it looks at the binary cache and builds nothing.
func printLabPlan(out io.Writer, o lab.Options, probeTimeout time.Duration, why string) {
	fmt.Fprintf(out, "lab (%s):\n", why)
	fmt.Fprintf(out, "  %d nodes, timing %s, load balancer %s, listen %s\n", o.Nodes, o.Timing.Name, o.LB, o.Listen)
	kas := "kube-apiserver " + binaries.KubeAPIServer.Version
	if o.KubeAPIServer != "" {
		kas = "kube-apiserver " + o.KubeAPIServer
	} else if spec, err := binaries.KubeAPIServerFor(o.KubeVersion); err == nil {
		kas = "kube-apiserver " + spec.Version
		if _, ok, err := binaries.Path(spec, binaries.Options{}); err == nil && !ok {
			kas += " (not built yet: the run builds it first, about " + spec.ColdBuild.String() + "; \"repro lab build\" does it now)"
		}
	}
	fmt.Fprintf(out, "  %s\n", kas)
	fmt.Fprintf(out, "  shutdown delay %v, grace period %v, min ready time %v, probe interval %v\n", o.ShutdownDelay, o.GracePeriod, o.MinReadyTime, o.ProbeInterval)
	fmt.Fprintf(out, "  load balancer health check every %v, timeout %v, healthy after %d, unhealthy after %d\n", o.Health.Interval, o.Health.Timeout, o.Health.HealthyThreshold, o.Health.UnhealthyThreshold)
	if o.Profile != "" {
		fmt.Fprintf(out, "  profile %s\n", o.Profile)
	}
	fmt.Fprintf(out, "  probe timeout %v\n", probeTimeout)
}
