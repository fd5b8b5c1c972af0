package importer

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/results"
)

// PlacementsFile is the importer's placements in an imported folder.
const PlacementsFile = "import-placements.json"

// WriteText writes the runs' placements for a person: per run, the
// disruption per pattern, then every interval with its place.
func WriteText(w io.Writer, runs []Run, ps []Placement) error {
	var b strings.Builder
	for _, r := range runs {
		var mine []Placement
		for _, p := range ps {
			if p.Run == r.Name {
				mine = append(mine, p)
			}
		}
		fmt.Fprintf(&b, "%s: %d interval file(s)", r.Name, len(r.Files))
		for _, f := range r.Files {
			ph := f.Phase
			if ph == "" {
				ph = "single"
			}
			fmt.Fprintf(&b, "\n  %s  %s (%d intervals)", ph, f.Path, len(f.Intervals))
		}
		b.WriteString("\n  times are origin's, whole seconds; durations are To - From of each interval\n")
		if len(mine) == 0 {
			b.WriteString("  no disruption\n\n")
			continue
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  PATTERN\tPHASE\tINTERVALS\tSECONDS\tBACKENDS")
		for _, g := range patternGroups(mine) {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%.0f\t%s\n", g.pattern, orDash(g.phase), g.n, g.secs, strings.Join(g.backends, " "))
		}
		tw.Flush()
		for _, p := range mine {
			length := fmt.Sprintf("+%.0fs", p.Seconds)
			if p.UnsetEnd {
				length = "+0s (no end recorded: origin counts it as zero)"
			}
			fmt.Fprintf(&b, "  %s %s %s %s\n      %s\n      %s\n", p.From.UTC().Format("2006-01-02 15:04:05"), length, p.Backend, p.Pattern, p.Where, p.Error)
			for _, n := range p.Nearest[min(1, len(p.Nearest)):] {
				fmt.Fprintf(&b, "      also near: %s\n", n)
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type patternGroup struct {
	pattern, phase string
	n              int
	secs           float64
	backends       []string
}

func patternGroups(ps []Placement) []patternGroup {
	var out []patternGroup
	idx := map[string]int{}
	for _, p := range ps {
		k := p.Pattern + "/" + p.Phase
		i, ok := idx[k]
		if !ok {
			out = append(out, patternGroup{pattern: p.Pattern, phase: p.Phase})
			i = len(out) - 1
			idx[k] = i
		}
		g := &out[i]
		g.n++
		g.secs += p.Seconds
		found := false
		for _, b := range g.backends {
			found = found || b == p.Backend
		}
		if !found {
			g.backends = append(g.backends, p.Backend)
		}
	}
	for i := range out {
		sort.Strings(out[i].backends)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].pattern < out[j].pattern })
	return out
}

// MaxRunSpan bounds the time a run's intervals may span when it is written
// as a results folder, which holds one sample a second per backend: a CI job
// runs for hours (prow ends a job at its timeout), so a longer span is a
// file with broken times, and writing it would take without bound.
const MaxRunSpan = 48 * time.Hour

// WriteJSON writes every placement as one JSON list.
func WriteJSON(w io.Writer, ps []Placement) error {
	if ps == nil {
		ps = []Placement{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(ps)
}

// sampler identifies one backend-connection of an imported run.
type sampler struct {
	name, backend string
	conn          results.ConnectionType
	http2         bool
	vantage       string
}

// samplerOf recovers the repro poller from an origin locator: the newer
// backends carry target, protocol and load-balancer keys; the legacy
// names are "<backend>-<new|reused>-connections".
func samplerOf(iv origin.Interval) sampler {
	name := iv.Locator.BackendDisruptionName()
	conn := iv.Locator.Keys[origin.KeyConnection]
	s := sampler{name: name, conn: results.ConnectionType(conn)}
	if t := iv.Locator.Keys[origin.KeyTarget]; t != "" {
		s.backend = t
		s.http2 = iv.Locator.Keys[origin.KeyProtocol] == "http2"
		s.vantage = iv.Locator.Keys[origin.KeyLoadBalancer]
		return s
	}
	s.backend = strings.TrimSuffix(name, "-"+conn+"-connections")
	return s
}

// classOf names the error class of an origin error text, as far as the
// text tells (repro's prober classifies the Go error itself).
func classOf(text string) results.ErrorClass {
	switch {
	case strings.Contains(text, "timeout awaiting response headers"):
		return results.ClassHeaderTimeout
	case strings.Contains(text, "connection refused"):
		return results.ClassConnectRefused
	case strings.Contains(text, "dial tcp") && strings.Contains(text, "lookup"):
		return results.ClassDNS
	case strings.Contains(text, "dial tcp") && strings.Contains(text, "i/o timeout"):
		return results.ClassConnectTimeout
	case strings.Contains(text, "TLS handshake timeout"):
		return results.ClassTLSHandshakeTimeout
	case strings.Contains(text, "tls:") || strings.Contains(text, "x509:"):
		return results.ClassTLS
	case strings.Contains(text, "connection reset by peer") || strings.Contains(text, "broken pipe"):
		return results.ClassReset
	case strings.HasSuffix(text, "EOF"):
		return results.ClassEOF
	case strings.Contains(text, "error running request: 429"):
		return results.ClassHTTP429
	case strings.Contains(text, "error running request: 5"):
		return results.ClassHTTP5xx
	case strings.Contains(text, "error running request: 401") || strings.Contains(text, "error running request: 403"):
		return results.ClassAuth
	case strings.Contains(text, "error running request: "):
		return results.ClassHTTPOther
	case strings.Contains(text, "Client.Timeout exceeded") || strings.Contains(text, "context deadline exceeded"):
		return results.ClassClientTimeout
	}
	return results.ClassOther
}

// statusOf reads the status of origin's "error running request: 429 ..."
// text, 0 for a transport error.
func statusOf(text string) int {
	_, after, ok := strings.Cut(text, "error running request: ")
	if !ok {
		return 0
	}
	n := 0
	for _, c := range after {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// OutOptions shape an imported folder.
type OutOptions struct {
	// Pattern, when set, keeps only the disruption of that pattern in the
	// folder's samples, so "repro compare" compares one pattern.
	Pattern string
	// Command is the command line recorded in run.json.
	Command []string
	// CI labels the CI run the files came from (nil for files given
	// alone); with it, run.json names the job, the versions and the
	// platform, so every reader of the folder says what was measured.
	CI *CIRun
}

// WriteFolder writes a results folder from one run: samples.jsonl
// synthesized at origin's resolution (one sample per backend-connection
// per whole second, failing inside each Disruption interval with its error
// text), events.jsonl with the kube-apiserver shutdown windows as
// termination events (each cluster of windows one rollout iteration,
// revision unknown and numbered by the iteration), run.json saying so, and
// import-placements.json. The caller then rebuilds the derived files with
// write.Rebuild (package report/write).
func WriteFolder(dir string, r Run, ps []Placement, o OutOptions) error {
	f, err := results.Create(dir)
	if err != nil {
		return err
	}
	var all []origin.Interval
	for _, fl := range r.Files {
		all = append(all, fl.Intervals...)
	}
	// The run starts at its earliest interval of any kind, not its earliest
	// disruption: a run whose first disruption came after a kube-apiserver
	// shutdown began would otherwise start inside that rollout, and its
	// rollout would read as baseline.
	var from, to, firstDisruption time.Time
	for _, iv := range all {
		if iv.From.IsZero() {
			continue
		}
		if from.IsZero() || iv.From.Before(from) {
			from = iv.From
		}
		end := iv.To
		if end.IsZero() {
			end = iv.From
		}
		if end.After(to) {
			to = end
		}
		if iv.IsDisruption() && (firstDisruption.IsZero() || iv.From.Before(firstDisruption)) {
			firstDisruption = iv.From
		}
	}
	if firstDisruption.IsZero() {
		return fmt.Errorf("%s: no Disruption intervals to import (the run sampled no backends)", r.Name)
	}
	from, to = from.Truncate(time.Second), to.Truncate(time.Second).Add(time.Second)
	if to.Sub(from) > MaxRunSpan {
		return fmt.Errorf("%s: its intervals span %s (%s to %s), longer than any CI run (limit %s): check the files' times", r.Name,
			to.Sub(from).Round(time.Second), from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), MaxRunSpan)
	}
	keep := map[string]bool{}
	for _, p := range ps {
		if o.Pattern == "" || p.Pattern == o.Pattern {
			keep[fmt.Sprintf("%s/%s/%d", p.File, p.Backend, p.From.UnixNano())] = true
		}
	}
	// per sampler, the failing seconds and their error text
	type failing struct {
		from, to time.Time
		text     string
	}
	samplers := map[string]sampler{}
	fails := map[string][]failing{}
	unsetEnds := 0
	for _, fl := range r.Files {
		for _, iv := range fl.Intervals {
			if !iv.IsDisruption() {
				continue
			}
			s := samplerOf(iv)
			if s.name == "" || BackendKind(iv) != results.KindAPIServer {
				// only apiserver backends become repro samples, so the
				// apiserver catalogue never reads an ingress, host-to-host
				// or canary failure as its own; they stay in the
				// placements file
				continue
			}
			samplers[s.name] = s
			if iv.Level != origin.LevelError || !keep[fmt.Sprintf("%s/%s/%d", fl.Path, s.name, iv.From.UnixNano())] {
				continue
			}
			if iv.To.IsZero() {
				// origin's unset end counts as zero length
				// (monitorapi Intervals.Duration): no failed sample,
				// rather than a failure stretched to the run's end
				unsetEnds++
				continue
			}
			fails[s.name] = append(fails[s.name], failing{iv.From, iv.To, errorText(iv.Message)})
		}
	}
	w, err := results.CreateJSONL(f.Path(results.SamplesFile))
	if err != nil {
		return err
	}
	names := make([]string, 0, len(samplers))
	for n := range samplers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := samplers[n]
		var seq uint64
		for t := from; t.Before(to); t = t.Add(origin.SamplingInterval) {
			seq++
			smp := results.Sample{Backend: s.backend, Connection: s.conn, Seq: seq, Start: t, HTTP2: s.http2, Vantage: s.vantage, StatusCode: 200}
			for _, fl := range fails[n] {
				if !t.Before(fl.from.Truncate(time.Second)) && t.Before(fl.to) {
					smp.StatusCode, smp.Error, smp.ErrorClass = statusOf(fl.text), fl.text, classOf(fl.text)
					break
				}
			}
			if err := w.Write(&smp); err != nil {
				w.Close()
				return err
			}
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := writeEvents(f, all, from, to); err != nil {
		return err
	}
	run := results.NewRun("import", o.Command, from)
	run.Finish(to, results.StatusComplete)
	run.Settings = results.Settings{Interval: results.Duration(time.Second), Resolution: "1s: origin's sampler polls once a second and its files keep whole seconds"}
	var files []string
	for _, fl := range r.Files {
		files = append(files, fl.Path)
	}
	run.Extra.Imported = results.Imported{ImportedFrom: "origin", JobRun: r.Name, Files: files, Pattern: o.Pattern}
	if unsetEnds > 0 {
		run.Extra.UnsetEnds = fmt.Sprintf("%d Error interval(s) with no end (\"to\": null) count as zero length, as origin counts them", unsetEnds)
	}
	if c := o.CI; c != nil {
		run.Extra.CI = &results.CIRunLabel{Job: c.Job, Build: c.Build, Result: c.Result, FromVersion: c.FromVersion, ToVersion: c.ToVersion, ProwURL: c.ProwURL}
		run.Extra.Target = "cluster"
		if c.ToVersion != "" || c.Platform != "" {
			run.Extra.Cluster = &results.ClusterRecord{OpenShift: true, Version: c.ToVersion, Platform: c.Platform}
		}
	}
	if err := f.WriteRun(run); err != nil {
		return err
	}
	js, err := json.MarshalIndent(ps, "", "  ")
	if err != nil {
		return err
	}
	return f.WriteFile(PlacementsFile, append(js, '\n'))
}

// rolloutGap separates two rollouts: windows closer than this belong to one
// (nodes roll one after another, minutes apart).
const rolloutGap = 10 * time.Minute

// writeEvents turns the kube-apiserver shutdown windows into repro's
// timeline: one iteration per cluster of windows, each window a
// ShutdownInitiated and a TerminationGracefulTerminationFinished event.
func writeEvents(f *results.Folder, all []origin.Interval, from, to time.Time) error {
	ev := gather(all)
	var evs []results.Event
	iter := 0
	var last time.Time
	phase := func(t time.Time, name string, it int) {
		evs = append(evs, results.Event{Time: t, Observed: t, Kind: results.KindPhase, Reason: name, Iteration: it})
	}
	// stretches without a rollout read as repro's baseline, so a
	// disruption long after a rollout is not placed in it
	phase(from, results.PhaseBaseline, 0)
	converged := func() {
		if iter > 0 {
			evs = append(evs, results.Event{Time: last, Observed: last, Kind: results.KindConverged, Revision: int32(iter), Iteration: iter,
				Message: "imported: the last kube-apiserver shutdown of this rollout ended"})
			phase(last, results.PhaseCoolDown, iter)
			phase(last.Add(RestartBuffer), results.PhaseBaseline, 0)
		}
	}
	for _, w := range ev.shutdowns {
		if iter == 0 || w.from.Sub(last) > rolloutGap {
			converged()
			iter++
			phase(w.from.Add(-time.Second), results.PhaseRollout, iter)
			evs = append(evs,
				results.Event{Time: w.from.Add(-time.Second), Observed: w.from, Kind: results.KindTrigger, Iteration: iter,
					Message: "imported: the first kube-apiserver shutdown of this rollout (the trigger itself is not in origin's files)"},
				results.Event{Time: w.from.Add(-time.Second), Observed: w.from, Kind: results.KindRevision, Revision: int32(iter), Iteration: iter,
					Message: "imported: revision unknown, numbered by rollout"})
		}
		evs = append(evs,
			results.Event{Time: w.from, Observed: w.from, Kind: results.KindClusterEvent, Node: w.node, Reason: "ShutdownInitiated", Iteration: iter, Message: "imported APIServerGracefulShutdown start"},
			results.Event{Time: w.to, Observed: w.to, Kind: results.KindClusterEvent, Node: w.node, Reason: "TerminationGracefulTerminationFinished", Iteration: iter, Message: "imported APIServerGracefulShutdown end"})
		if w.to.After(last) {
			last = w.to
		}
		for _, e := range w.events {
			if !origin.IsShutdownStart(e.Message.Reason) && !origin.IsShutdownEnd(e.Message.Reason) {
				evs = append(evs, results.Event{Time: e.From, Observed: e.From, Kind: results.KindClusterEvent, Node: w.node, Reason: e.Message.Reason, Iteration: iter, Message: e.Message.HumanMessage})
			}
		}
	}
	if iter == 0 {
		return nil
	}
	converged()
	phase(to, results.PhaseEnd, 0)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time.Before(evs[j].Time) })
	w, err := results.CreateJSONL(f.Path(results.EventsFile))
	if err != nil {
		return err
	}
	for i := range evs {
		if err := w.Write(evs[i]); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

// FolderName is a run's folder under --out when several runs are
// imported.
func FolderName(out string, r Run, many bool) string {
	if !many {
		return out
	}
	return filepath.Join(out, strings.NewReplacer("/", "_", " ", "_").Replace(r.Name))
}
