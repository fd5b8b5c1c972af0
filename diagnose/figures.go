package diagnose

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/repro-tools/repro/attribute"
	"github.com/repro-tools/repro/metrics"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

// Figures are what diagnose measures of a results folder, the evidence
// every fingerprint is compared with.
type Figures struct {
	// Samples counts every sample; Failures the failed ones, sampler
	// outages (DNS) and aborted requests left out.
	Samples  int64 `json:"samples"`
	Failures int64 `json:"failures"`
	// Pollers counts backend-connections; Backends names them.
	Pollers  int      `json:"pollers"`
	Backends []string `json:"backends"`
	// HasCache, HasCore and HasAggregated say which kinds of backend were
	// polled: cache-* (watch cache), kube-api, openshift-api/oauth-api.
	HasCache      bool `json:"hasCache"`
	HasCore       bool `json:"hasCore"`
	HasAggregated bool `json:"hasAggregated"`
	// CacheFailures and AggregatedFailures count failures on cache-* and
	// on aggregated (openshift-api, oauth-api and their cache-*) pollers.
	CacheFailures      int64 `json:"cacheFailures"`
	AggregatedFailures int64 `json:"aggregatedFailures"`
	// ByConn counts failures per connection type; MaxReusedPoller is the
	// most failures of one reused-connection poller.
	ByConn          map[results.ConnectionType]int64 `json:"byConnection"`
	MaxReusedPoller int64                            `json:"maxReusedPoller"`
	// MaxPoller is the most failures of any one poller.
	MaxPoller int64 `json:"maxPoller"`
	// Classes counts failures per error class.
	Classes map[results.ErrorClass]int64 `json:"classes"`
	// Timeline says the folder has a rollout timeline; RolledNodes counts
	// the nodes of its largest iteration; Phases counts disruption
	// intervals per node phase they started in ("" for no rollout).
	Timeline    bool             `json:"timeline"`
	RolledNodes int              `json:"rolledNodes"`
	Phases      map[string]int64 `json:"phases"`
	// HasServedBy says some record names the apiserver failed requests
	// went to; Servers counts them per apiserver; ToRolled and ToOther
	// split them by whether it was the node being rolled at the time.
	HasServedBy bool             `json:"hasServedBy"`
	Servers     map[string]int64 `json:"servers"`
	// ServedPhases counts those failed requests by the phase their
	// apiserver's node was in ("no-rollout" outside every iteration).
	ServedPhases map[string]int64 `json:"servedPhases"`
	ToRolled     int64            `json:"toRolled"`
	ToOther      int64            `json:"toOther"`
	// HasAttribution says attribution.jsonl was read; Verdicts counts its
	// verdicts.
	HasAttribution bool             `json:"hasAttribution"`
	Verdicts       map[string]int64 `json:"verdicts"`
	// Detection is how long the LB takes to stop routing to a target that
	// fails its checks (interval x (unhealthy threshold + 1)), from the
	// lab's knobs or else the installer's AWS health check (10 s x 2);
	// DetectionFrom says which.
	Detection     time.Duration `json:"detectionNs"`
	DetectionFrom string        `json:"detectionFrom"`
	// AfterSIGTERM counts failed requests by when they came relative to
	// their apiserver's node starting to terminate: "within-detection"
	// (before the LB could have noticed), "after-detection", or "outside"
	// (the node was not terminating or starting then).
	AfterSIGTERM map[string]int64 `json:"afterSigterm"`
	// LBVerdicts counts rolled nodes by when the lab LB first reset an
	// established connection to them after their SIGTERM, which it does
	// when it judges a target unhealthy (the NLB's connection termination):
	// "within-detection", "after-detection" or "none". HasLBVerdicts says
	// the LB reset some connection in this run at all (an LB that never
	// resets tells nothing).
	LBVerdicts    map[string]int64 `json:"lbVerdicts"`
	HasLBVerdicts bool             `json:"hasLbVerdicts"`
	// Unanswered counts failures whose request was written and then left
	// without an answer: header timeouts, and resets or EOFs that came
	// after waiting at least a tenth of the header timeout (a stalled
	// request the LB cut when it gave up on the target). HeaderTimeout is
	// the per-phase timeout that tenth is of.
	Unanswered    int64         `json:"unanswered"`
	HeaderTimeout time.Duration `json:"headerTimeoutNs"`
	// Lab names the lab profile when the folder is a lab run.
	Lab string `json:"lab,omitempty"`
	// Load is the cluster load the lab carried (run.json's extra.load,
	// --lab-load); nil for a run without one.
	Load *results.LoadRecord `json:"load,omitempty"`
	// Disrupted is the summed disruption of every poller.
	Disrupted time.Duration `json:"disruptedNs"`
	// LongestRun is the most consecutive failed samples of one poller
	// (intervals of different error classes that follow each other count
	// as one run): 1 when every failure was a single request.
	LongestRun int64 `json:"longestRun"`
	// FailedPollers counts backend-connections with any failure; equal to
	// Pollers when every variant of every backend failed.
	FailedPollers int `json:"failedPollers"`
	// LBHealth says target health records were read (lbhealth.go), from
	// LBHealthSources; HealthyVsReady counts restarted nodes by when the
	// LB took them back against their apiserver's ready time.
	LBHealth        bool             `json:"lbHealth,omitempty"`
	LBHealthSources []string         `json:"lbHealthSources,omitempty"`
	HealthyVsReady  map[string]int64 `json:"healthyVsReady,omitempty"`
	// Outcomes grade the failures and give a client-go client's view
	// (report/outcomes.go); Discounted of them fell inside
	// UnreliableWindows measuring-side-unreliable windows.
	Outcomes          *report.PollerOutcomes `json:"outcomes,omitempty"`
	UnreliableWindows int                    `json:"unreliableWindows,omitempty"`
	// Signature is the one error class and connection type every failure
	// shares ("" when they differ, or with fewer than two failures).
	Signature string `json:"signature,omitempty"`
	// Signals is the server-side evidence beside the failures, from
	// results.SignalsFile; nil when the folder has none.
	Signals *SignalFigures `json:"signals,omitempty"`
	// ServerMetrics is what the servers' own metrics (signals.jsonl) say:
	// which apiservers' latency went up against their own baseline. A
	// shared stall predicts every apiserver, an etcd stall on one node that
	// one, a load-balancer mechanism none. Nil without signals.
	ServerMetrics *metrics.Figures `json:"serverMetrics,omitempty"`
	// serverSignals are the signals ServerMetrics is computed from,
	// between reading them and the timeline.
	serverSignals []results.Signal
	// lbSignals are the load balancer's target health records, kept for
	// lbHealth on the same pass.
	lbSignals []results.Signal
}

// SignalFigures are results.SignalsFile's signals within SignalWindow of
// a failure interval: those that say storage (etcd) or CPU was under
// pressure, counted per kind, and the sources they came from.
type SignalFigures struct {
	// Read counts every signal of the file; Near those within the window.
	Read int `json:"read"`
	Near int `json:"near"`
	// Pressure counts, per kind, the signals near a failure that pass
	// their kind's threshold (pressureThresholds); Sources names where
	// they came from.
	Pressure map[results.SignalKind]int `json:"pressure"`
	Sources  []string                   `json:"sources"`
	// Kinds lists every kind the file holds at all, so a check can say
	// which it lacked rather than that they were quiet.
	Kinds []results.SignalKind `json:"kinds"`
	// Unreliable counts measuring-side failures near the failures (CI's
	// network-liveness canaries): failures beside them are discounted.
	Unreliable int `json:"unreliable"`
}

// SignalWindow is how far from a failure a signal counts as beside it:
// TRT's window (openshift-eng/ai-helpers plugins/ci/skills/
// analyze-disruption parse_disruption.py --window 60).
const SignalWindow = 60 * time.Second

// pressureThresholds are the values at which a metric signal says
// pressure: etcd's own warnings (wal fsync over 1 s: "slow fdatasync";
// apply over its 100 ms expected duration: "apply request took too long";
// etcd-io/etcd server/storage/wal/wal.go, server/etcdserver/util.go), the
// 25 ms backend commit TRT reads as disk pressure
// (references/timeline-analysis.md), origin's CPUMonitor's 95 %, and any
// leader change. Signals origin recorded in CI ("ci:" sources) are
// events already over origin's thresholds and count as they are.
var pressureThresholds = map[results.SignalKind]float64{
	results.SignalEtcdWALFsync:       1,
	results.SignalEtcdSlowApply:      0.1,
	results.SignalEtcdBackendCommit:  0.025,
	results.SignalEtcdRequestLatency: 1,
	results.SignalEtcdLeaderChange:   1,
	results.SignalNodeCPU:            0.95,
}

// readSignals reads results.SignalsFile, a line at a time, keeping only
// the counts; a missing file leaves Signals nil.
func (f *Figures) readSignals(path string, ivs []report.Interval) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	sf := &SignalFigures{Pressure: map[results.SignalKind]int{}}
	kinds, sources := map[results.SignalKind]bool{}, map[string]bool{}
	// results.ForEachSignal is the one reader of the schema; the signals
	// ServerMetrics needs are kept for it on the way.
	_, err := results.ForEachSignal(path, func(s results.Signal) error {
		sf.Read++
		kinds[s.Kind] = true
		if serverMetricKinds[s.Kind] {
			f.serverSignals = append(f.serverSignals, s)
		}
		if s.Kind == results.SignalLBTargetHealth {
			f.lbSignals = append(f.lbSignals, s)
		}
		end := s.To
		if end.IsZero() {
			end = s.At
		}
		near := false
		for _, iv := range ivs {
			if !iv.SamplerOutage && !s.At.After(iv.To.Add(SignalWindow)) && !end.Before(iv.From.Add(-SignalWindow)) {
				near = true
				break
			}
		}
		if !near {
			return nil
		}
		sf.Near++
		if s.Kind == results.SignalMeasuringUnreliable {
			sf.Unreliable++
		}
		th, ok := pressureThresholds[s.Kind]
		if ok && (strings.HasPrefix(s.Source, "ci:") || s.Value >= th) {
			sf.Pressure[s.Kind]++
			sources[s.Source] = true
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%v (regenerate the file)", err)
	}
	for k := range kinds {
		sf.Kinds = append(sf.Kinds, k)
	}
	sort.Slice(sf.Kinds, func(i, j int) bool { return sf.Kinds[i] < sf.Kinds[j] })
	for s := range sources {
		sf.Sources = append(sf.Sources, s)
	}
	sort.Strings(sf.Sources)
	f.Signals = sf
	return nil
}

func (f *Figures) classList() string {
	m := map[string]int64{}
	for c, n := range f.Classes {
		m[string(c)] = n
	}
	return countList(m)
}

// Measure reads a results folder's figures: samples.jsonl (required),
// run.json, events.jsonl, placements.json and attribution.jsonl when
// present.
func Measure(dir string) (*Figures, error) {
	f, err := results.Open(dir)
	if err != nil {
		return nil, err
	}
	a, err := report.LoadSamples(f.Path(results.SamplesFile))
	if err != nil {
		return nil, err
	}
	fig := &Figures{ByConn: map[results.ConnectionType]int64{}, Classes: map[results.ErrorClass]int64{},
		Phases: map[string]int64{}, Servers: map[string]int64{}, ServedPhases: map[string]int64{}, AfterSIGTERM: map[string]int64{}, LBVerdicts: map[string]int64{}, Verdicts: map[string]int64{}, Samples: a.Samples}
	// The installer's NLB health check: 10 s interval, 2 failures
	// (openshift/installer pkg/asset/manifests/aws/cluster.go).
	fig.Detection, fig.DetectionFrom = 30*time.Second, "the installer's AWS health check, 10 s x 2"
	// origin's sampler: 34 s per request, 4/5 of it per phase.
	fig.HeaderTimeout = 34 * time.Second * 4 / 5
	if run, err := f.ReadRun(); err == nil && run != nil {
		if d := run.Settings.ProbeTimeout.D(); d > 0 {
			fig.HeaderTimeout = d * 4 / 5
		}
		fig.Load = run.Extra.Load
		if l := run.Extra.Lab; l != nil {
			fig.Lab = "healthy"
			if l.Profile != "" {
				fig.Lab = l.Profile
			}
			iv, ok1 := l.KnobDuration("lb-health-interval")
			n, ok2 := l.KnobInt("lb-unhealthy-threshold")
			if ok1 && ok2 && iv > 0 {
				fig.Detection, fig.DetectionFrom = iv*time.Duration(n+1), fmt.Sprintf("the lab's health check, %s x %d", iv, n)
			}
		}
	}
	seen := map[string]bool{}
	for _, p := range a.Pollers {
		fig.Pollers++
		if !seen[p.Backend] {
			seen[p.Backend] = true
			fig.Backends = append(fig.Backends, p.Backend)
		}
		d, _ := results.DescribeBackend(p.Backend)
		cache, aggregated := d.Cache, d.Aggregated
		fig.HasCache = fig.HasCache || cache
		fig.HasCore = fig.HasCore || (d.APIServer() && !d.Aggregated)
		fig.HasAggregated = fig.HasAggregated || aggregated
		var n int64
		for c, k := range p.Classes {
			if c == results.ClassDNS {
				continue
			}
			fig.Classes[c] += k
			n += k
		}
		fig.Failures += n
		fig.ByConn[p.Connection] += n
		if cache {
			fig.CacheFailures += n
		}
		if aggregated {
			fig.AggregatedFailures += n
		}
		if p.Connection == results.ReusedConnections && n > fig.MaxReusedPoller {
			fig.MaxReusedPoller = n
		}
		if n > fig.MaxPoller {
			fig.MaxPoller = n
		}
		if n > 0 {
			fig.FailedPollers++
		}
		fig.Disrupted += p.Disrupted
	}
	fig.LongestRun = longestRun(a.Intervals)
	if err := fig.readSignals(f.Path(results.SignalsFile), a.Intervals); err != nil {
		return nil, err
	}
	if err := fig.countUnanswered(f.Path(results.SamplesFile)); err != nil {
		return nil, err
	}
	tl, err := report.LoadTimeline(f)
	if err != nil {
		return nil, err
	}
	fig.Timeline = len(tl.Iterations) > 0
	fig.summarizeServerMetrics(tl)
	for _, it := range tl.Iterations {
		if len(it.Nodes) > fig.RolledNodes {
			fig.RolledNodes = len(it.Nodes)
		}
	}
	ps, err := placements(f, a, tl)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		fig.Phases[string(p.NodePhase)]++
	}
	// The lab LB's records name the apiserver of every connection, refused
	// ones included; attribution names only those that logged the request,
	// so its nodes stand in only where there are no LB records (live).
	{
		if _, err := os.Stat(f.Path(results.LBConnectionsFile)); err == nil {
			for _, p := range ps {
				for node, n := range parseServedBy(p.ServedBy) {
					fig.HasServedBy = true
					fig.Servers[node] += n
					fig.ServedPhases[phaseOf(tl, node, p.From)] += n
					fig.AfterSIGTERM[fig.sinceSIGTERM(tl, node, p.From)] += n
					if p.Node != "" && node == p.Node {
						fig.ToRolled += n
					} else {
						fig.ToOther += n
					}
				}
			}
		}
	}
	if err := fig.lbVerdicts(f.Path(results.LBConnectionsFile), tl); err != nil {
		return nil, err
	}
	health, sources := lbHealthRecords(fig.lbSignals)
	fig.lbSignals = nil
	fig.lbHealth(health, sources, tl)
	fig.outcomes(a)
	lbServed := fig.HasServedBy
	recs, err := readAttribution(f.Path(results.AttributionFile))
	if err != nil {
		return nil, err
	}
	if recs != nil {
		fig.HasAttribution = true
		for _, r := range recs {
			fig.Verdicts[r.Verdict]++
			if r.Node == "" || lbServed {
				continue
			}
			fig.HasServedBy = true
			fig.Servers[r.Node]++
			fig.ServedPhases[phaseOf(tl, r.Node, r.Start)]++
			fig.AfterSIGTERM[fig.sinceSIGTERM(tl, r.Node, r.Start)]++
			if rolled := rolledAt(ps, r.Poller, r.Start); rolled != "" && rolled == r.Node {
				fig.ToRolled++
			} else {
				fig.ToOther++
			}
		}
	}
	return fig, nil
}

// lbVerdicts reads the lab LB's resets of established connections
// (lb-connections.jsonl close records closed by "reset") and places the
// first after each rolled node's SIGTERM.
func (f *Figures) lbVerdicts(path string, tl *report.Timeline) error {
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	resets := map[string][]time.Time{}
	var rec struct {
		Event    string    `json:"event"`
		Target   string    `json:"target"`
		Closed   time.Time `json:"closed"`
		ClosedBy string    `json:"closedBy"`
	}
	_, err := results.ReadJSONL(path, func(line []byte) error {
		if !bytes.Contains(line, []byte(`"closedBy":"reset"`)) {
			return nil
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return err
		}
		if rec.Event == "close" && rec.ClosedBy == "reset" {
			resets[rec.Target] = append(resets[rec.Target], rec.Closed)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if len(resets) == 0 {
		return nil
	}
	f.HasLBVerdicts = true
	for _, it := range tl.Iterations {
		for _, w := range it.Nodes {
			if w.Terminating.IsZero() {
				continue
			}
			end := w.Ready
			var first time.Time
			for _, t := range resets[w.Node] {
				if t.Before(w.Terminating) || (!end.IsZero() && t.After(end)) {
					continue
				}
				if first.IsZero() || t.Before(first) {
					first = t
				}
			}
			f.LBVerdicts[f.lbVerdict(w.Terminating, first)]++
		}
	}
	return nil
}

// countUnanswered reads the failed samples of samples.jsonl for Unanswered.
func (f *Figures) countUnanswered(path string) error {
	wait := f.HeaderTimeout / 10
	var s results.Sample
	_, err := results.ReadJSONL(path, func(line []byte) error {
		if !bytes.Contains(line, []byte(`"error_class"`)) {
			return nil
		}
		s = results.Sample{}
		if err := s.UnmarshalJSON(line); err != nil {
			return nil // LoadSamples already judged the file; a cut last line is skipped there
		}
		switch s.ErrorClass {
		case results.ClassHeaderTimeout:
			f.Unanswered++
		case results.ClassReset, results.ClassEOF, results.ClassClientTimeout:
			if w := s.Phases.WroteRequest; w > 0 && s.Phases.FirstByte == 0 && s.Duration-w >= wait {
				f.Unanswered++
			}
		}
		return nil
	})
	return err
}

// phaseOf is node's phase at t in the iteration under way then.
func phaseOf(tl *report.Timeline, node string, t time.Time) string {
	it := tl.IterationAt(t)
	if it == nil {
		return "no-rollout"
	}
	for _, w := range it.Nodes {
		if w.Node == node {
			return string(w.PhaseAt(t))
		}
	}
	return string(report.NodePending)
}

// sinceSIGTERM says when t came relative to node's termination start in the
// iteration under way.
func (f *Figures) sinceSIGTERM(tl *report.Timeline, node string, t time.Time) string {
	if it := tl.IterationAt(t); it != nil {
		for _, w := range it.Nodes {
			if w.Node != node || w.Terminating.IsZero() || t.Before(w.Terminating) || (!w.Ready.IsZero() && !t.Before(w.Ready)) {
				continue
			}
			if t.Sub(w.Terminating) <= f.Detection {
				return "within-detection"
			}
			return "after-detection"
		}
	}
	return "outside"
}

// placements reads placements.json; a folder with a timeline but no
// placements.json (never rebuilt) is placed here, without apiservers.
func placements(f *results.Folder, a *report.Analysis, tl *report.Timeline) ([]report.Placement, error) {
	b, err := os.ReadFile(f.Path(results.PlacementsFile))
	if errors.Is(err, fs.ErrNotExist) {
		if len(tl.Events) == 0 {
			return nil, nil
		}
		return report.Place(a.Intervals, tl), nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Placements []report.Placement `json:"placements"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v; rebuild it with repro report %s", f.Path(results.PlacementsFile), err, f.Dir())
	}
	return doc.Placements, nil
}

// rolledAt names the node being rolled when poller's interval holding t
// started.
func rolledAt(ps []report.Placement, poller string, t time.Time) string {
	for _, p := range ps {
		if p.Name == poller && !t.Before(p.From) && t.Before(p.To) {
			return p.Node
		}
	}
	return ""
}

var servedByPart = regexp.MustCompile(`([^\s,()]+) \((\d+)\)`)

// parseServedBy reads report.Placement.ServedBy, "master-1 (3), master-2 (1)".
func parseServedBy(s string) map[string]int64 {
	out := map[string]int64{}
	for _, m := range servedByPart.FindAllStringSubmatch(s, -1) {
		n, _ := strconv.ParseInt(m[2], 10, 64)
		out[m[1]] += n
	}
	return out
}

// readAttribution reads attribution.jsonl with repro attribute's own
// reader: nil without the file, an empty list for a file without lines
// (attribution ran and nothing had failed).
func readAttribution(path string) ([]attribute.Record, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	recs, err := attribute.ReadRecords(path)
	if err != nil {
		return nil, fmt.Errorf("%v; remove or regenerate the file", err)
	}
	if recs == nil {
		recs = []attribute.Record{}
	}
	return recs, nil
}

// longestRun is the most consecutive failed samples of one poller: the
// interval rule starts a new interval when the error class changes, so
// intervals of one poller whose sequence numbers follow on are one run.
func longestRun(ivs []report.Interval) int64 {
	byPoller := map[string][]report.Interval{}
	for _, iv := range ivs {
		if iv.Disruption() && iv.Samples > 0 {
			byPoller[iv.Name] = append(byPoller[iv.Name], iv)
		}
	}
	var longest int64
	for _, list := range byPoller {
		sort.Slice(list, func(i, j int) bool { return list[i].FirstSeq < list[j].FirstSeq })
		var run int64
		for i, iv := range list {
			if i > 0 && iv.FirstSeq == list[i-1].LastSeq+1 {
				run += int64(iv.Samples)
			} else {
				run = int64(iv.Samples)
			}
			longest = max(longest, run)
		}
	}
	return longest
}

// serverMetricKinds are the signals ServerMetrics is computed from.
var serverMetricKinds = map[results.SignalKind]bool{
	results.SignalAPIServerLatency: true, results.SignalEtcdRequestLatency: true, results.SignalScrapeFailed: true,
}

// summarizeServerMetrics turns the server-metric signals readSignals kept
// into ServerMetrics, each instance's baseline ending at the first trigger.
func (f *Figures) summarizeServerMetrics(tl *report.Timeline) {
	if len(f.serverSignals) == 0 {
		return
	}
	var baselineEnd time.Time
	if len(tl.Iterations) > 0 {
		baselineEnd = tl.Iterations[0].Trigger
	}
	f.ServerMetrics = metrics.Summarize(f.serverSignals, baselineEnd)
	f.serverSignals = nil
}

// serverMetricsLine says in one line where the servers' latency went up,
// "" without server metrics.
func (f *Figures) serverMetricsLine() string {
	if f == nil || f.ServerMetrics == nil || len(f.ServerMetrics.APIServers) == 0 {
		return ""
	}
	m := f.ServerMetrics
	s := fmt.Sprintf("apiserver latency up on %d of %d apiservers", len(m.LatencyUp), len(m.APIServers))
	if len(m.LatencyUp) > 0 {
		s += " (" + strings.Join(m.LatencyUp, ", ") + ")"
	}
	s += fmt.Sprintf(", etcd latency up on %d", len(m.EtcdUp))
	if len(m.EtcdUp) > 0 {
		s += " (" + strings.Join(m.EtcdUp, ", ") + ")"
	}
	switch m.Shape {
	case "every-apiserver":
		s += ": a stall every apiserver shares (etcd, CPU, priority and fairness)"
	case "one-apiserver":
		s += ": one apiserver's own path (as an etcd stall on its node)"
	case "none":
		s += ": the servers answered as in the baseline"
		if f.Failures > 0 {
			s += ", so the failures lie between client and server (the load balancer)"
		}
	}
	return s
}
