package importer

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/results"
)

// The evidence beside a CI run's disruptions: origin's own intervals of
// the signals TRT's disruption analysis reads within a window of each
// disruption (openshift-eng/ai-helpers plugins/ci/skills/analyze-disruption
// parse_disruption.py CONTEXT_SOURCES and references/timeline-analysis.md:
// etcd logs and disk durations, CPU, firing alerts, OVS stalls, node,
// machine and operator state, the e2e tests running), in repro's signal
// schema (results.Signal) so that one diagnose check reads them as it
// reads server metrics.

// DefaultEvidenceWindow is TRT's window around a disruption (parse_disruption.py --window 60).
const DefaultEvidenceWindow = 60 * time.Second

// Origin interval sources read as evidence (openshift/origin
// pkg/monitor/monitorapi types.go IntervalSource).
const (
	sourceEtcdLog            = "EtcdLog"
	sourceEtcdLeadership     = "EtcdLeadership"
	sourceEtcdDiskCommit     = "EtcdDiskCommitDuration"
	sourceEtcdDiskWalFsync   = "EtcdDiskWalFsyncDuration"
	sourceCPUMonitor         = "CPUMonitor"
	sourceAlert              = "Alert"
	sourceOVSVswitchdLog     = "OVSVswitchdLog"
	sourceNodeMonitor        = "NodeMonitor"
	sourceMachineMonitor     = "MachineMonitor"
	sourceKubeletLog         = "KubeletLog"
	sourceClusterOperator    = "ClusterOperator"
	sourceClusterOpMonitor   = "ClusterOperatorMonitor"
	sourceClusterVersion     = "ClusterVersion"
	sourceVersionState       = "VersionState"
	sourceE2ETest            = "E2ETest"
	maxSignalMessage         = 300
	maxSignalsPerRun         = 20000
	cpuMonitorThresholdRatio = 0.95 // CPUMonitor reports nodes above 95 % (timeline-analysis.md)
)

var (
	numberUnit = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*(ms|s)\b`)
	percent    = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*%`)
	ovsLong    = regexp.MustCompile(`long (\d+)\s*ms`)
	onNode     = regexp.MustCompile(`on node (\S+)`)
)

// firstSeconds reads the first "1.2s" or "350ms" of a message, seconds.
func firstSeconds(msg string) float64 {
	m := numberUnit.FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	if m[2] == "ms" {
		v /= 1000
	}
	return v
}

func capMessage(s string) string {
	if len(s) > maxSignalMessage {
		return s[:maxSignalMessage]
	}
	return s
}

// SignalOf maps one of origin's intervals to a signal; ok is false for an
// interval that is not evidence (CloudMetrics, Azure's disk metrics, has
// no kind of its own in the schema and is left out).
func SignalOf(iv origin.Interval) (results.Signal, bool) {
	k := iv.Locator.Keys
	msg := iv.Message.HumanMessage
	s := results.Signal{Source: "ci:" + iv.Source, At: iv.From, To: iv.To, Message: capMessage(msg), Instance: k[origin.KeyNode]}
	low := strings.ToLower(msg)
	switch iv.Source {
	case sourceEtcdLog:
		switch {
		case strings.Contains(low, "took too long"):
			s.Kind = results.SignalEtcdSlowApply
		case strings.Contains(low, "fdatasync"):
			s.Kind = results.SignalEtcdWALFsync
		case strings.Contains(low, "leader"):
			s.Kind, s.Value = results.SignalEtcdLeaderChange, 1
			return s, true
		default: // ReadIndex delays and other slow requests
			s.Kind = results.SignalEtcdRequestLatency
		}
		s.Value = firstSeconds(msg)
	case sourceEtcdLeadership:
		s.Kind, s.Value = results.SignalEtcdLeaderChange, 1
	case sourceEtcdDiskCommit:
		s.Kind, s.Value = results.SignalEtcdBackendCommit, firstSeconds(msg)
	case sourceEtcdDiskWalFsync:
		s.Kind, s.Value = results.SignalEtcdWALFsync, firstSeconds(msg)
	case sourceCPUMonitor:
		s.Kind, s.Value = results.SignalNodeCPU, cpuMonitorThresholdRatio
		if m := percent.FindStringSubmatch(msg); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			s.Value = v / 100
		}
		if m := onNode.FindStringSubmatch(msg); m != nil && s.Instance == "" {
			s.Instance = m[1]
		}
	case sourceAlert:
		// origin's AlertFiring filter: annotation alertstate=firing
		if st := iv.Message.Annotations["alertstate"]; st == "pending" {
			return s, false
		}
		s.Kind, s.Value = results.SignalAlert, 1
		s.Labels = map[string]string{"alertname": k["alert"]}
		if sev := iv.Message.Annotations["severity"]; sev != "" {
			s.Labels["severity"] = sev
		}
		if ns := k[origin.KeyNamespace]; ns != "" {
			s.Labels["namespace"] = ns
		}
	case sourceOVSVswitchdLog:
		s.Kind = results.SignalOVSStall
		if m := ovsLong.FindStringSubmatch(msg); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			s.Value = v / 1000
		}
	case sourceNodeMonitor, sourceMachineMonitor, origin.SourceNodeState:
		s.Kind, s.Value = results.SignalNodeState, 1
		s.Labels = map[string]string{"reason": iv.Message.Reason}
		if m := k["machine"]; m != "" && s.Instance == "" {
			s.Instance = m
		}
		if iv.Message.Reason == origin.ReasonNodeUpdate {
			s.Labels["phase"] = NodeUpdatePhase(iv)
		}
	case sourceKubeletLog:
		if iv.Level == origin.LevelInfo {
			return s, false
		}
		s.Kind, s.Value = results.SignalNodeState, 1
		s.Labels = map[string]string{"reason": iv.Message.Reason}
	case sourceClusterOperator, sourceClusterOpMonitor, origin.SourceOperatorState, sourceClusterVersion, sourceVersionState:
		s.Kind, s.Value = results.SignalOperatorState, 1
		op := k[origin.KeyClusterOperator]
		if op == "" && k["clusterversion"] != "" {
			op = "version"
		}
		s.Instance = op
		s.Labels = map[string]string{"operator": op, "condition": iv.Message.Annotations[origin.AnnotationCondition], "status": iv.Message.Annotations[origin.AnnotationStatus]}
	case sourceE2ETest:
		// TRT: any level but Error counts as passed (summarize_e2e_tests)
		res := "passed"
		if iv.Level == origin.LevelError {
			res = "failed"
		}
		s.Kind, s.Value, s.Instance = results.SignalE2ETest, 1, k[origin.KeyE2ETest]
		s.Labels = map[string]string{"result": res}
		s.Message = ""
	case origin.SourceDisruption:
		if iv.Level == origin.LevelInfo || !isLivenessBackend(iv.Locator.BackendDisruptionName()) {
			return s, false
		}
		s.Kind, s.Value, s.Instance = results.SignalMeasuringUnreliable, 1, iv.Locator.BackendDisruptionName()
	default:
		return s, false
	}
	return s, true
}

// isLivenessBackend: the network-liveness backends TRT's verdict counts
// (parse_disruption.py extract_network_liveness: any name containing
// "network-liveness", the CI cluster's canary and the clouds').
func isLivenessBackend(name string) bool { return strings.Contains(name, "network-liveness") }

// LivenessVerdict is TRT's run-level verdict on the measuring side from
// the count of network-liveness failures (parse_disruption.py
// generate_summary: more than 50 unreliable, more than 5 degraded, any
// minor).
func LivenessVerdict(failures int) string {
	switch {
	case failures > 50:
		return "unreliable"
	case failures > 5:
		return "degraded"
	case failures > 0:
		return "minor"
	}
	return "clean"
}

// signalKey names a signal for the clean-run comparison: the kind and
// what it is about (the alert, operator, test, node reason), not when or
// where, so the same alert firing in the clean run dismisses it.
func signalKey(s results.Signal) string {
	switch s.Kind {
	case results.SignalAlert:
		return string(s.Kind) + "/" + s.Labels["alertname"]
	case results.SignalOperatorState:
		return string(s.Kind) + "/" + s.Labels["operator"] + "/" + s.Labels["condition"]
	case results.SignalE2ETest:
		return string(s.Kind) + "/" + s.Instance + "/" + s.Labels["result"]
	case results.SignalNodeState:
		return string(s.Kind) + "/" + s.Labels["reason"]
	}
	return string(s.Kind)
}

// DisruptionWindow is one stretch of a run in which disruption intervals
// overlapped: its blast radius and the evidence beside it.
type DisruptionWindow struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Pattern, Node and NodePhase are those of the window's first
	// apiserver placement (else its first placement).
	Pattern   string `json:"pattern"`
	Node      string `json:"node,omitempty"`
	NodePhase string `json:"nodePhase,omitempty"`
	// Backends failed together in the window (origin's names).
	Backends []string `json:"backends"`
	// AllVariants names the backends whose four variants (new and
	// reused, cached and not) all failed in the window.
	AllVariants []string `json:"allVariants,omitempty"`
	// EveryAPIServerBackend says every apiserver backend the run sampled
	// failed in the window: what a shared stall predicts.
	EveryAPIServerBackend bool `json:"everyAPIServerBackend"`
	// Hint is TRT's reading of the blast radius, when it has one.
	Hint string `json:"hint,omitempty"`
	// Signals counts the evidence within the window per kind; Dismissed
	// lists the signal keys also present in the paired clean run, which
	// are not causes.
	Signals   map[results.SignalKind]int `json:"signals"`
	Dismissed []string                   `json:"dismissed,omitempty"`
	// Examples are a few of the signals' own words.
	Examples []string `json:"examples,omitempty"`
	// TestsFailed and TestsPassed are the e2e tests running in the window.
	TestsFailed []string `json:"testsFailed,omitempty"`
	TestsPassed []string `json:"testsPassed,omitempty"`
	// Unreliable says a network-liveness canary failed in the window.
	Unreliable bool `json:"unreliable,omitempty"`

	keys map[string]bool
}

// variantStem is a backend's name without its connection and cache
// variant: kube-api for cache-kube-api-reused-connections. Whether it is a
// watch-cache variant is the backend's descriptor's to say
// (results.DescribeBackend). The name is parsed only for origin's naming:
// the connection suffix (results.SplitPollerName) and the "cache-" prefix
// of origin's watch-cache variants (openshift/origin
// pkg/monitortests/kubeapiserver/disruptionlegacyapiservers).
func variantStem(name string) (stem string, cache bool, conn string) {
	stem, c := results.SplitPollerName(name)
	if d, _ := results.DescribeBackend(name); d.Cache {
		return strings.TrimPrefix(stem, "cache-"), true, string(c)
	}
	return stem, false, string(c)
}

// windows groups a run's placements into windows of overlapping
// disruption (a second apart at most, origin's resolution).
func windows(ps []Placement, sampled map[string]bool) []*DisruptionWindow {
	sorted := append([]Placement(nil), ps...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].From.Before(sorted[j].From) })
	var out []*DisruptionWindow
	var cur *DisruptionWindow
	var lead *Placement
	seen := map[string]bool{}
	finish := func() {
		if cur == nil {
			return
		}
		cur.Pattern, cur.Node, cur.NodePhase = lead.Pattern, lead.Node, lead.NodePhase
		for b := range seen {
			cur.Backends = append(cur.Backends, b)
		}
		sort.Strings(cur.Backends)
		variants := map[string]map[string]bool{}
		for _, b := range cur.Backends {
			stem, cache, conn := variantStem(b)
			if variants[stem] == nil {
				variants[stem] = map[string]bool{}
			}
			variants[stem][strconv.FormatBool(cache)+conn] = true
		}
		for stem, v := range variants {
			if len(v) == 4 {
				cur.AllVariants = append(cur.AllVariants, stem)
			}
		}
		sort.Strings(cur.AllVariants)
		every := false
		for b := range sampled {
			every = true
			if !seen[b] {
				every = false
				break
			}
		}
		cur.EveryAPIServerBackend = every
		if len(cur.AllVariants) > 0 {
			cur.Hint = "all four variants of " + strings.Join(cur.AllVariants, ", ") +
				" failed together: TRT reads this as control-plane resource exhaustion (disk I/O, etcd stalls, apiserver timeouts), not networking"
		}
		out = append(out, cur)
		cur, lead, seen = nil, nil, map[string]bool{}
	}
	for i := range sorted {
		p := &sorted[i]
		to := p.To
		if to.Before(p.From) {
			to = p.From
		}
		if cur != nil && p.From.After(cur.To.Add(origin.SamplingInterval)) {
			finish()
		}
		if cur == nil {
			cur = &DisruptionWindow{From: p.From, To: to, Signals: map[results.SignalKind]int{}, keys: map[string]bool{}}
			lead = p
		}
		if to.After(cur.To) {
			cur.To = to
		}
		if lead.Kind != results.KindAPIServer && p.Kind == results.KindAPIServer {
			lead = p
		}
		seen[p.Backend] = true
	}
	finish()
	return out
}

// attach adds a signal to every window it overlaps (widened by w); it
// reports whether any took it.
func attach(ws []*DisruptionWindow, s results.Signal, w time.Duration) bool {
	end := s.To
	if end.IsZero() || end.Before(s.At) {
		end = s.At
	}
	took := false
	// windows are sorted by From; skip those that end before the signal
	i := sort.Search(len(ws), func(i int) bool { return !ws[i].To.Add(w).Before(s.At) })
	for ; i < len(ws); i++ {
		win := ws[i]
		if win.From.Add(-w).After(end) {
			break
		}
		took = true
		win.Signals[s.Kind]++
		win.keys[signalKey(s)] = true
		switch s.Kind {
		case results.SignalE2ETest:
			if s.Labels["result"] == "failed" {
				win.TestsFailed = appendCapped(win.TestsFailed, s.Instance)
			} else {
				win.TestsPassed = appendCapped(win.TestsPassed, s.Instance)
			}
		case results.SignalMeasuringUnreliable:
			win.Unreliable = true
		default:
			if s.Message != "" {
				who := s.Instance
				if who == "" {
					who = s.Labels["alertname"]
				}
				win.Examples = appendCapped(win.Examples, s.At.UTC().Format("15:04:05")+" "+s.Source+" "+who+": "+s.Message)
			}
		}
	}
	return took
}

const maxListed = 10

func appendCapped(l []string, s string) []string {
	if len(l) >= maxListed {
		return l
	}
	for _, x := range l {
		if x == s {
			return l
		}
	}
	return append(l, s)
}
