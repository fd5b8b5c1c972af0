package main

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

// rolloutView follows the timeline events of a run for the live display:
// the current stage and each node's phase in the rollout under way.
type rolloutView struct {
	rollout bool

	mu        sync.Mutex
	stage     string
	iteration int
	since     time.Time
	revision  int32
	nodes     map[string]report.NodePhase
	changed   map[string]time.Time
}

func newRolloutView(rollout bool) *rolloutView {
	return &rolloutView{rollout: rollout, nodes: map[string]report.NodePhase{}, changed: map[string]time.Time{}}
}

// observe takes one timeline event; it is the scenario's OnEvent hook.
func (v *rolloutView) observe(e results.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch e.Kind {
	case results.KindPhase:
		v.stage, v.iteration, v.since = e.Reason, e.Iteration, e.Time
		return
	case results.KindTrigger:
		v.revision = 0
		for n := range v.nodes {
			v.nodes[n] = report.NodePending
		}
		return
	case results.KindRevision:
		v.revision = e.Revision
		return
	}
	if e.Node == "" || v.revision == 0 {
		return
	}
	cur, ok := v.nodes[e.Node]
	if !ok {
		cur = report.NodePending
	}
	if next := report.NextPhase(cur, e, v.revision); next != cur || !ok {
		v.nodes[e.Node] = next
		v.changed[e.Node] = e.Time
	}
}

// nodeCount is the number of nodes seen so far.
func (v *rolloutView) nodeCount() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.nodes)
}

// stageLine is the header line: stage, iteration and time in the stage.
func (v *rolloutView) stageLine(now time.Time) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stage == "" {
		return "starting"
	}
	return fmt.Sprintf("%s (%s)", v.stageLabel(), now.Sub(v.since).Truncate(time.Second))
}

// stageLabel names the stage, its iteration and target revision, e.g.
// "iteration 1: rollout to revision 2"; v.mu is held.
func (v *rolloutView) stageLabel() string {
	s := v.stage
	if v.iteration > 0 {
		s = fmt.Sprintf("iteration %d: %s", v.iteration, s)
	}
	if v.revision > 0 && v.stage == results.PhaseRollout {
		s += fmt.Sprintf(" to revision %d", v.revision)
	}
	return s
}

// nodeLines returns one line per node seen so far, e.g.
// "master-1  terminating  12s".
func (v *rolloutView) nodeLines(now time.Time) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	names := make([]string, 0, len(v.nodes))
	for n := range v.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, n := range names {
		p := v.nodes[n]
		out = append(out, fmt.Sprintf("%-10s %s %-11s %s", n, phaseBar(p), p, now.Sub(v.changed[n]).Truncate(time.Second)))
	}
	return out
}

// phaseSteps orders the phases for phaseBar.
var phaseSteps = map[report.NodePhase]int{report.NodePending: 0, report.NodeTerminating: 1, report.NodeStarting: 2, report.NodeReady: 3}

// phaseBar draws how far a node is through its rollout: "[######...]".
func phaseBar(p report.NodePhase) string {
	n := phaseSteps[p]
	return "[" + strings.Repeat("###", n) + strings.Repeat("...", 3-n) + "]"
}

// state is the stage and every node's phase, without times: it changes
// only when something happens, for the plain progress lines.
func (v *rolloutView) state() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stage == "" {
		return "starting"
	}
	s := v.stageLabel()
	names := make([]string, 0, len(v.nodes))
	for n := range v.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		sep := ", "
		if i == 0 {
			sep = "; "
		}
		s += sep + n + " " + string(v.nodes[n])
	}
	return s
}
