package report

import (
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// rolloutEvents is a one-iteration, two-node rollout as the follower records it.
func rolloutEvents() []results.Event {
	ev := func(ms int, k results.Kind, node, reason string, rev int32) results.Event {
		return results.Event{Time: at(ms), Kind: k, Node: node, Reason: reason, Revision: rev, Iteration: 1}
	}
	return []results.Event{
		{Time: at(0), Kind: results.KindPhase, Reason: results.PhaseBaseline},
		ev(10000, results.KindPhase, "", results.PhaseRollout, 0),
		ev(10001, results.KindTrigger, "", "repro-x-1", 5),
		ev(10400, results.KindRevision, "", "", 6),
		ev(11000, results.KindNodeTarget, "master-0", "", 6),
		ev(11050, results.KindClusterEvent, "master-0", "ShutdownInitiated", 0),
		ev(11100, results.KindPodNotReady, "master-0", "", 5),
		ev(21050, results.KindClusterEvent, "master-0", "TerminationStoppedServing", 0),
		ev(23000, results.KindClusterEvent, "master-0", "TerminationGracefulTerminationFinished", 0),
		ev(23100, results.KindPodDeleted, "master-0", "", 5),
		ev(23200, results.KindPodCreated, "master-0", "", 6),
		ev(26000, results.KindPodReady, "master-0", "", 6),
		ev(26100, results.KindNodeCurrent, "master-0", "", 6),
		ev(31200, results.KindNodeTarget, "master-1", "", 6),
		ev(31250, results.KindClusterEvent, "master-1", "ShutdownInitiated", 0),
		ev(44000, results.KindPodDeleted, "master-1", "", 5),
		ev(47000, results.KindPodReady, "master-1", "", 6),
		ev(48000, results.KindConverged, "", "", 6),
		ev(48000, results.KindPhase, "", results.PhaseCoolDown, 1),
		ev(58000, results.KindPhase, "", results.PhaseEnd, 0),
	}
}

func TestBuildTimeline(t *testing.T) {
	tl := BuildTimeline(rolloutEvents())
	if len(tl.Stages) != 3 || tl.Stages[0].Name != "baseline" || tl.Stages[2].Name != "cool-down" || !tl.Stages[2].To.Equal(at(58000)) {
		t.Fatalf("stages %+v", tl.Stages)
	}
	if len(tl.Iterations) != 1 {
		t.Fatalf("iterations %+v", tl.Iterations)
	}
	it := tl.Iterations[0]
	if it.Revision != 6 || !it.Complete.Equal(at(48000)) {
		t.Fatalf("iteration %+v", it)
	}
	want := []NodeWindow{
		{Node: "master-0", Terminating: at(11000), Starting: at(23000), Ready: at(26000)},
		{Node: "master-1", Terminating: at(31200), Starting: at(44000), Ready: at(47000)},
	}
	if len(it.Nodes) != len(want) {
		t.Fatalf("nodes %+v", it.Nodes)
	}
	for i, w := range want {
		if it.Nodes[i] != w {
			t.Errorf("node %d: got %+v, want %+v", i, it.Nodes[i], w)
		}
	}
}

func TestPlace(t *testing.T) {
	tl := BuildTimeline(rolloutEvents())
	iv := func(from, to int) Interval {
		return Interval{Name: "kube-api-new-connections", Backend: "kube-api", Connection: results.NewConnections,
			From: at(from), To: at(to), Class: results.ClassHeaderTimeout}
	}
	cases := []struct {
		iv        Interval
		node      string
		phase     NodePhase
		stage     string
		where     string
		prevLabel string
	}{
		{iv(5000, 5100), "", "", "baseline", "in the baseline, no rollout under way", ""},
		{iv(21250, 25700), "master-0", NodeTerminating, "rollout",
			"iteration 1, master-0: 0.2 s after TerminationStoppedServing, while its apiserver was terminating, before the old process exited", "TerminationStoppedServing"},
		{iv(24000, 25000), "master-0", NodeStarting, "rollout",
			"iteration 1, master-0: 0.8 s after pod-created, after the old apiserver exited, before the new pod was ready", "pod-created"},
		{iv(28000, 28500), "master-0", NodeReady, "rollout",
			"iteration 1, master-0: 1.9 s after node-revision-current, after its new pod was ready", "node-revision-current"},
		{iv(50000, 50100), "master-1", NodeReady, "cool-down",
			"iteration 1, master-1: 3.0 s after pod-ready, after its new pod was ready (2.0 s after the rollout completed)", "pod-ready"},
	}
	for _, tc := range cases {
		ps := Place([]Interval{tc.iv}, tl)
		if len(ps) != 1 {
			t.Fatalf("placements %+v", ps)
		}
		p := ps[0]
		if p.Node != tc.node || p.NodePhase != tc.phase || p.Stage != tc.stage || p.Where != tc.where {
			t.Errorf("interval at %v:\n got node=%q phase=%q stage=%q where=%q\nwant node=%q phase=%q stage=%q where=%q",
				tc.iv.From.Sub(t0), p.Node, p.NodePhase, p.Stage, p.Where, tc.node, tc.phase, tc.stage, tc.where)
		}
		if tc.prevLabel != "" && (p.Previous == nil || p.Previous.Label != tc.prevLabel || p.Previous.OffsetMs >= 0) {
			t.Errorf("previous anchor %+v, want %s before the interval", p.Previous, tc.prevLabel)
		}
		if p.DurationMs != float64(tc.iv.To.Sub(tc.iv.From).Milliseconds()) {
			t.Errorf("duration %v ms", p.DurationMs)
		}
	}
	if got := Place([]Interval{iv(24000, 25000)}, BuildTimeline(nil)); !strings.Contains(got[0].Where, "no rollout") {
		t.Errorf("with no timeline: %q", got[0].Where)
	}
}

func TestNextPhase(t *testing.T) {
	seq := []struct {
		e    results.Event
		want NodePhase
	}{
		{results.Event{Kind: results.KindPodReady, Revision: 5}, NodePending},
		{results.Event{Kind: results.KindNodeTarget, Revision: 6}, NodeTerminating},
		{results.Event{Kind: results.KindClusterEvent, Reason: "TerminationStoppedServing"}, NodeTerminating},
		{results.Event{Kind: results.KindClusterEvent, Reason: "TerminationGracefulTerminationFinished"}, NodeStarting},
		{results.Event{Kind: results.KindPodNotReady, Revision: 6}, NodeStarting},
		{results.Event{Kind: results.KindPodReady, Revision: 6}, NodeReady},
		{results.Event{Kind: results.KindClusterEvent, Reason: "ShutdownInitiated"}, NodeReady},
	}
	p := NodePending
	for i, s := range seq {
		p = NextPhase(p, s.e, 6)
		if p != s.want {
			t.Fatalf("step %d (%s %s): phase %s, want %s", i, s.e.Kind, s.e.Reason, p, s.want)
		}
	}
}

func TestGroupPlacements(t *testing.T) {
	tl := BuildTimeline(rolloutEvents())
	mk := func(name string, from, to int, class results.ErrorClass) Interval {
		return Interval{Name: name, From: at(from), To: at(to), Class: class}
	}
	ps := Place([]Interval{
		mk("kube-api-new-connections", 21250, 21350, results.ClassReset),
		mk("oauth-api-new-connections", 21450, 21650, results.ClassReset),
		mk("kube-api-reused-connections", 22000, 22100, results.ClassHTTP429),
		mk("kube-api-new-connections", 24000, 24100, results.ClassTLS),
	}, tl)
	g := GroupPlacements(ps)
	if len(g) != 2 {
		t.Fatalf("groups %+v", g)
	}
	if g[0].Node != "master-0" || g[0].Phase != NodeTerminating || g[0].Intervals != 3 || g[0].Total != 400*time.Millisecond ||
		!g[0].From.Equal(at(21250)) || !g[0].To.Equal(at(22100)) ||
		strings.Join(g[0].Pollers, " ") != "kube-api-new-connections kube-api-reused-connections oauth-api-new-connections" ||
		strings.Join(g[0].Classes, " ") != "http-429 reset" {
		t.Errorf("terminating group %+v", g[0])
	}
	if g[1].Phase != NodeStarting || g[1].Intervals != 1 || g[1].Total != 100*time.Millisecond {
		t.Errorf("starting group %+v", g[1])
	}
}
