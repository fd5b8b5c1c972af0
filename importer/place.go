package importer

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/results"
)

// Patterns a disruption is given.
const (
	// PatternRollout: during or near a kube-apiserver graceful shutdown.
	PatternRollout = "apiserver-rollout"
	// PatternNodeUpdate: during a node's update (drain, OS update, reboot).
	PatternNodeUpdate = "node-update"
	// PatternBeforeUpgrade: neither, and before the upgrade began (the
	// original report's "bar earlier in the job runs"): the cluster was
	// not being upgraded, so no rollout of the upgrade can explain it.
	PatternBeforeUpgrade = "before-upgrade"
	// PatternOther: none of the above.
	PatternOther = "other"
)

// Patterns lists the patterns in the order tables show them.
var Patterns = []string{PatternRollout, PatternNodeUpdate, PatternBeforeUpgrade, PatternOther}

// Buffers of repro's "during a graceful shutdown" rule. Origin's
// faulty-load-balancer monitor (openshift/origin
// pkg/monitortests/kubeapiserver/faultyloadbalancer) counts a client error
// only when it starts inside a closed kube-apiserver APIServerGracefulShutdown
// window; its single-node tolerance (pkg/monitortests/testframework/
// alerts) widens the window by 5 s before it. repro takes both: 5 s before
// the window, and RestartBuffer after it, while the new process starts and
// the load balancer's health checks (2 × 10 s on AWS, openshift/installer)
// have yet to see it ready.
const (
	BeforeBuffer  = 5 * time.Second
	RestartBuffer = 60 * time.Second
	// NearestWithin bounds the events named for an "other" disruption.
	NearestWithin = 10 * time.Minute
)

// Node phases of a kube-apiserver rollout a disruption can start in.
const (
	PhaseBeforeShutdown = "before-shutdown"   // up to 5 s before ShutdownInitiated
	PhaseShutdownDelay  = "shutdown-delay"    // not ready, still serving
	PhaseStoppedServing = "stopped-serving"   // listener closed, draining
	PhaseShutdown       = "graceful-shutdown" // inside the window, no finer events
	PhaseRestarting     = "restarting"        // after the old process finished
)

// Placement is one Disruption interval of a run, placed.
type Placement struct {
	Run        string    `json:"run"`
	Phase      string    `json:"phase,omitempty"`
	File       string    `json:"file"`
	Backend    string    `json:"backendDisruptionName"`
	Connection string    `json:"connection"`
	From       time.Time `json:"from"`
	// To is the interval's end; for origin's unset end ("to": null) it is
	// From, and UnsetEnd says so: origin counts such an interval as zero
	// length (openshift/origin pkg/monitor/monitorapi Intervals.Duration).
	To       time.Time `json:"to"`
	UnsetEnd bool      `json:"unsetEnd,omitempty"`
	Seconds  float64   `json:"seconds"`
	Pattern  string    `json:"pattern"`
	// Node and NodePhase: whose apiserver and which of its phases
	// (apiserver-rollout), or which node's update phase (node-update).
	Node      string `json:"node,omitempty"`
	NodePhase string `json:"nodePhase,omitempty"`
	// OffsetSeconds is the disruption's start from the window's start.
	OffsetSeconds *float64 `json:"offsetSeconds,omitempty"`
	Where         string   `json:"where"`
	Error         string   `json:"error"`
	// Kind is what the backend measures (results.DescribeBackend): only
	// "apiserver" placements are apiserver failures; the others are placed
	// and shown, never fed to the apiserver catalogue.
	Kind results.BackendKind `json:"kind"`
	// Instance is origin's disruption instance name (the locator's
	// "disruption" key: who sampled), kept as origin wrote it.
	Instance string `json:"instance,omitempty"`
	// AuditID is the failed request's audit ID when the sampler set one.
	AuditID string `json:"auditID,omitempty"`
	// Nearest names the events closest to an "other" disruption.
	Nearest []string `json:"nearest,omitempty"`
}

// window is a stretch on one node: a kube-apiserver shutdown or a node
// update phase.
type window struct {
	node, phase string
	from, to    time.Time
	events      []origin.Interval // termination events of that apiserver inside it
}

// evidence is what a run's intervals say about its rollouts and nodes.
type evidence struct {
	shutdowns, updates []window
	others             []window // other apiservers' shutdowns, for "nearest"
	events             []origin.Interval
	end                time.Time
	// upgradeStart is when the cluster's upgrade began, zero when the file
	// does not say (see upgradeStart).
	upgradeStart time.Time
}

func nodeOf(iv origin.Interval) string {
	if n := iv.Locator.Keys[origin.KeyNode]; n != "" {
		return n
	}
	return strings.TrimPrefix(iv.Locator.Keys[origin.KeyPod], "kube-apiserver-")
}

func isKubeAPIServerEvent(iv origin.Interval) bool {
	return iv.Locator.Keys[origin.KeyNamespace] == origin.KubeAPIServerNamespace && origin.IsTerminationEvent(iv.Message.Reason)
}

// gather collects the evidence; without APIServerGracefulShutdown
// intervals (older runs) the windows are rebuilt from the termination
// events as origin's analyzer builds them.
func gather(ivs []origin.Interval) *evidence {
	ev := &evidence{}
	for _, iv := range ivs {
		if iv.To.After(ev.end) {
			ev.end = iv.To
		}
		if iv.From.After(ev.end) {
			ev.end = iv.From
		}
	}
	for _, iv := range ivs {
		switch {
		case iv.Source == origin.SourceAPIServerGracefulShutdown:
			to := iv.To
			if to.IsZero() {
				to = ev.end
			}
			w := window{node: nodeOf(iv), from: iv.From, to: to}
			if s := iv.Locator.Keys[origin.KeyServer]; s == "" || s == "kube-apiserver" {
				ev.shutdowns = append(ev.shutdowns, w)
			} else {
				w.phase = s
				ev.others = append(ev.others, w)
			}
		case iv.Source == origin.SourceNodeState && iv.Message.Reason == origin.ReasonNodeUpdate:
			to := iv.To
			if to.IsZero() {
				to = ev.end
			}
			ev.updates = append(ev.updates, window{node: nodeOf(iv), phase: NodeUpdatePhase(iv), from: iv.From, to: to})
		case isKubeAPIServerEvent(iv):
			ev.events = append(ev.events, iv)
		}
	}
	ev.upgradeStart = upgradeStart(ivs)
	sort.SliceStable(ev.events, func(i, j int) bool { return ev.events[i].From.Before(ev.events[j].From) })
	if len(ev.shutdowns) == 0 {
		started := map[string]time.Time{}
		for _, e := range ev.events {
			n := nodeOf(e)
			switch {
			case origin.IsShutdownStart(e.Message.Reason):
				if _, ok := started[n]; !ok {
					started[n] = e.From
				}
			case origin.IsShutdownEnd(e.Message.Reason):
				if s, ok := started[n]; ok {
					ev.shutdowns = append(ev.shutdowns, window{node: n, from: s, to: e.From})
					delete(started, n)
				}
			}
		}
		for n, s := range started {
			ev.shutdowns = append(ev.shutdowns, window{node: n, from: s, to: ev.end})
		}
	}
	for i := range ev.shutdowns {
		w := &ev.shutdowns[i]
		for _, e := range ev.events {
			if nodeOf(e) == w.node && !e.From.Before(w.from) && !e.From.After(w.to) {
				w.events = append(w.events, e)
			}
		}
	}
	sort.Slice(ev.shutdowns, func(i, j int) bool { return ev.shutdowns[i].from.Before(ev.shutdowns[j].from) })
	sort.Slice(ev.updates, func(i, j int) bool { return ev.updates[i].from.Before(ev.updates[j].from) })
	return ev
}

// shutdownPhase names where in an apiserver's shutdown t falls, from its
// own termination events when the file has them.
func shutdownPhase(w window, t time.Time) string {
	switch {
	case t.Before(w.from):
		return PhaseBeforeShutdown
	case !t.Before(w.to):
		return PhaseRestarting
	}
	phase := PhaseShutdown
	for _, e := range w.events {
		if e.From.After(t) {
			break
		}
		switch e.Message.Reason {
		case "ShutdownInitiated", "TerminationStart", "TerminationPreShutdownHooksFinished":
			phase = PhaseShutdownDelay
		case "TerminationMinimalShutdownDurationFinished", "TerminationStoppedServing":
			phase = PhaseStoppedServing
		}
	}
	return phase
}

// NodeUpdatePhase names a NodeUpdate interval's phase. Origin annotates
// each completed phase ("phase": Drain, OperatingSystemUpdate, Reboot,
// Update), but a phase still open when monitoring stopped is closed by the
// state tracker's CloseAllIntervals without that annotation: newer origin
// writes the phase as the "state" annotation with the message "never
// completed", older origin only as "state/<phase> never completed" in the
// message (openshift/origin pkg/monitortestlibrary/statetracker,
// pkg/monitortests/node/nodestateanalyzer). The phase is taken from
// whichever the interval has.
func NodeUpdatePhase(iv origin.Interval) string {
	if p := iv.Message.Annotations[origin.AnnotationPhase]; p != "" {
		return p
	}
	if p := iv.Message.Annotations["state"]; p != "" {
		return p
	}
	for _, f := range strings.Fields(iv.Message.HumanMessage) {
		if p, ok := strings.CutPrefix(f, "state/"); ok && p != "" {
			return p
		}
	}
	return ""
}

// upgradeStart is when the upgrade began, by origin's ClusterVersion
// intervals: the start of the first interval that says the cluster
// version began progressing or updating. Zero when the file has none
// (an install-only job, or the conformance file of an upgrade job).
func upgradeStart(ivs []origin.Interval) time.Time {
	var t time.Time
	for _, iv := range ivs {
		if !isClusterVersion(iv) || iv.From.IsZero() {
			continue
		}
		m := iv.Message
		progressing := m.Annotations[origin.AnnotationCondition] == "Progressing" && m.Annotations[origin.AnnotationStatus] != "False"
		upgrade := strings.Contains(m.Reason, "Upgrade") || strings.Contains(m.Reason, "Updat") ||
			strings.Contains(m.HumanMessage, "Working towards") || strings.Contains(m.HumanMessage, "Updating to") ||
			strings.Contains(m.HumanMessage, "upgrade to")
		if (progressing || upgrade) && (t.IsZero() || iv.From.Before(t)) {
			t = iv.From
		}
	}
	return t
}

// isClusterVersion says an interval is about the ClusterVersion (origin's
// VersionState and ClusterVersion intervals, and KubeEvents on it).
func isClusterVersion(iv origin.Interval) bool {
	k := iv.Locator.Keys
	return k["clusterversion"] != "" || iv.Source == "VersionState" || iv.Source == "ClusterVersion" ||
		(iv.Locator.Keys[origin.KeyClusterOperator] == "version")
}

func contains(w window, t time.Time) bool { return !t.Before(w.from) && t.Before(w.to) }

// errorText takes the sampler's error out of its message ("... over new
// connections: <error>").
func errorText(m origin.Message) string {
	h := m.HumanMessage
	if _, after, ok := strings.Cut(h, " connections: "); ok {
		h = after
	}
	return strings.TrimSuffix(h, " (likely a problem in cluster running tests, not the cluster under test)")
}

func secs(d time.Duration) float64 { return float64(d.Round(time.Millisecond).Milliseconds()) / 1000 }

// Place places every Disruption interval (Error level: disruption, not
// sampler outages) of the run. Files are placed against their own
// evidence, as each phase's file carries its own intervals.
func Place(r Run) []Placement {
	var out []Placement
	for _, f := range r.Files {
		ev := gather(f.Intervals)
		for _, iv := range f.Intervals {
			if !iv.IsDisruption() || iv.Level != origin.LevelError {
				continue
			}
			p := Placement{
				Run: r.Name, Phase: f.Phase, File: f.Path,
				Backend: iv.Locator.BackendDisruptionName(), Connection: iv.Locator.Keys[origin.KeyConnection],
				From: iv.From, To: iv.To, Seconds: secs(iv.Duration()),
				Error:    errorText(iv.Message),
				Kind:     BackendKind(iv),
				Instance: iv.Locator.Keys[origin.KeyDisruption],
				AuditID:  iv.Message.Annotations[origin.AnnotationRequestAuditID],
			}
			if iv.To.IsZero() {
				p.To, p.UnsetEnd = iv.From, true
			}
			place(&p, ev)
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].From.Before(out[j].From) })
	return out
}

func place(p *Placement, ev *evidence) {
	t := p.From
	var upd *window
	for i := range ev.updates {
		if contains(ev.updates[i], t) {
			upd = &ev.updates[i]
		}
	}
	var sd *window
	for i := range ev.shutdowns {
		w := ev.shutdowns[i]
		if !t.Before(w.from.Add(-BeforeBuffer)) && t.Before(w.to.Add(RestartBuffer)) {
			// the latest-starting window that t is in or near
			sd = &ev.shutdowns[i]
		}
	}
	if sd != nil && upd != nil && upd.node == sd.node {
		// the apiserver went down because its node was being updated
		sd = nil
	}
	switch {
	case sd != nil:
		p.Pattern, p.Node = PatternRollout, sd.node
		p.NodePhase = shutdownPhase(*sd, t)
		off := secs(t.Sub(sd.from))
		p.OffsetSeconds = &off
		p.Where = fmt.Sprintf("%s's kube-apiserver, %s, %+.0f s from its ShutdownInitiated (a %s window from %s)",
			sd.node, p.NodePhase, off, secsString(sd.to.Sub(sd.from)), sd.from.UTC().Format("15:04:05"))
	case upd != nil:
		p.Pattern, p.Node, p.NodePhase = PatternNodeUpdate, upd.node, upd.phase
		off := secs(t.Sub(upd.from))
		p.OffsetSeconds = &off
		p.Where = fmt.Sprintf("%s's update, phase %s, %+.0f s from the phase's start", upd.node, orUnknown(upd.phase), off)
	case !ev.upgradeStart.IsZero() && t.Before(ev.upgradeStart):
		p.Pattern = PatternBeforeUpgrade
		p.Nearest = nearest(ev, t)
		p.Where = fmt.Sprintf("before the upgrade began (%s, %.0f s later)", ev.upgradeStart.UTC().Format("15:04:05"), ev.upgradeStart.Sub(t).Seconds())
	default:
		p.Pattern = PatternOther
		p.Nearest = nearest(ev, t)
		p.Where = "no kube-apiserver shutdown or node update under way"
		if len(p.Nearest) > 0 {
			p.Where += "; nearest: " + p.Nearest[0]
		}
	}
}

// BackendKind is what a Disruption interval's backend measures, from
// origin's backend name (results.DescribeBackend).
func BackendKind(iv origin.Interval) results.BackendKind {
	d, _ := results.DescribeBackend(iv.Locator.BackendDisruptionName())
	return d.Kind
}

func secsString(d time.Duration) string { return fmt.Sprintf("%.0f s", d.Seconds()) }

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// nearest names the shutdown windows, node updates and apiserver events
// closest to t (within NearestWithin), closest first.
func nearest(ev *evidence, t time.Time) []string {
	type cand struct {
		d    time.Duration
		text string
	}
	var cs []cand
	add := func(at time.Time, what string) {
		d := at.Sub(t)
		if d < 0 {
			d = -d
		}
		if d > NearestWithin {
			return
		}
		rel := "after"
		if at.Before(t) {
			rel = "before"
		}
		cs = append(cs, cand{d, fmt.Sprintf("%s %.0f s %s", what, d.Seconds(), rel)})
	}
	for _, w := range ev.shutdowns {
		add(w.from, w.node+"'s kube-apiserver shutdown began")
		add(w.to, w.node+"'s kube-apiserver shutdown ended")
	}
	for _, w := range ev.others {
		add(w.from, w.node+"'s "+w.phase+" shutdown began")
	}
	for _, w := range ev.updates {
		add(w.from, w.node+"'s "+orUnknown(w.phase)+" began")
		add(w.to, w.node+"'s "+orUnknown(w.phase)+" ended")
	}
	for _, e := range ev.events {
		if (origin.IsShutdownStart(e.Message.Reason) || origin.IsShutdownEnd(e.Message.Reason)) && len(ev.shutdowns) > 0 {
			continue // the windows above already say it
		}
		add(e.From, nodeOf(e)+" "+e.Message.Reason)
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].text)
	}
	return out
}
