package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/repro-tools/repro/results"
)

// NodePhase is where one node is in its revision rollout.
type NodePhase string

// The phases a node goes through in a rollout, in order.
const (
	NodePending     NodePhase = "pending"
	NodeTerminating NodePhase = "terminating"
	NodeStarting    NodePhase = "starting"
	NodeReady       NodePhase = "ready"
)

// terminationStart are the event reasons that mark an apiserver beginning its
// graceful termination (TerminationStart is the name older releases used).
var terminationStart = map[string]bool{"ShutdownInitiated": true, "TerminationStart": true}

// terminationEnd marks an apiserver process that has finished terminating.
var terminationEnd = map[string]bool{"TerminationGracefulTerminationFinished": true}

// NextPhase returns the phase a node is in after e, given the phase it was in
// and the revision being rolled out. Events that say nothing about the node's
// phase leave it unchanged, and a node never goes back to an earlier phase
// within one rollout.
func NextPhase(cur NodePhase, e results.Event, revision int32) NodePhase {
	switch e.Kind {
	case results.KindNodeTarget, results.KindPodNotReady:
		if cur == NodePending {
			return NodeTerminating
		}
	case results.KindClusterEvent:
		if terminationStart[e.Reason] && cur == NodePending {
			return NodeTerminating
		}
		if terminationEnd[e.Reason] && (cur == NodePending || cur == NodeTerminating) {
			return NodeStarting
		}
	case results.KindPodDeleted:
		if cur == NodePending || cur == NodeTerminating {
			return NodeStarting
		}
	case results.KindPodCreated:
		if e.Revision == revision && (cur == NodePending || cur == NodeTerminating) {
			return NodeStarting
		}
	case results.KindPodReady, results.KindNodeCurrent:
		if e.Revision == revision {
			return NodeReady
		}
	}
	return cur
}

// NodeWindow is when one node went through the phases of one rollout; a
// zero time means the phase was not reached.
type NodeWindow struct {
	Node        string    `json:"node"`
	Terminating time.Time `json:"terminating,omitzero"`
	Starting    time.Time `json:"starting,omitzero"`
	Ready       time.Time `json:"ready,omitzero"`
}

// PhaseAt returns the node's phase at t.
func (w NodeWindow) PhaseAt(t time.Time) NodePhase {
	switch {
	case !w.Ready.IsZero() && !t.Before(w.Ready):
		return NodeReady
	case !w.Starting.IsZero() && !t.Before(w.Starting):
		return NodeStarting
	case !w.Terminating.IsZero() && !t.Before(w.Terminating):
		return NodeTerminating
	}
	return NodePending
}

// Stage is a stretch of a run: the baseline, one iteration's rollout, or its
// cool-down.
type Stage struct {
	Name      string    `json:"name"`
	Iteration int       `json:"iteration,omitempty"`
	From      time.Time `json:"from"`
	To        time.Time `json:"to,omitzero"`
}

// Iteration is one trigger-follow-cool-down cycle.
type Iteration struct {
	N        int       `json:"iteration"`
	Trigger  time.Time `json:"trigger"`
	Complete time.Time `json:"complete,omitzero"`
	Revision int32     `json:"revision,omitempty"`
	// Nodes in the order they started rolling.
	Nodes []NodeWindow `json:"nodes"`
}

// Timeline is a run's rollout timeline, rebuilt from events.jsonl.
type Timeline struct {
	Events     []results.Event `json:"-"`
	Stages     []Stage         `json:"stages"`
	Iterations []Iteration     `json:"iterations"`
}

// LoadTimeline reads events.jsonl of a results folder. A folder without one
// (a probe run) has an empty timeline; a truncated last line is skipped.
func LoadTimeline(f *results.Folder) (*Timeline, error) {
	if _, err := os.Stat(f.Path(results.EventsFile)); errors.Is(err, fs.ErrNotExist) {
		return BuildTimeline(nil), nil
	}
	var evs []results.Event
	_, err := results.ReadJSONL(f.Path(results.EventsFile), func(line []byte) error {
		var e results.Event
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		evs = append(evs, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", results.EventsFile, err)
	}
	return BuildTimeline(evs), nil
}

// BuildTimeline orders events by time and derives the stages, iterations and
// node windows from them. It is a pure function.
func BuildTimeline(evs []results.Event) *Timeline {
	tl := &Timeline{Events: append([]results.Event(nil), evs...)}
	sort.SliceStable(tl.Events, func(i, j int) bool { return tl.Events[i].Time.Before(tl.Events[j].Time) })

	closeStage := func(t time.Time) {
		if n := len(tl.Stages); n > 0 && tl.Stages[n-1].To.IsZero() {
			tl.Stages[n-1].To = t
		}
	}
	var it *Iteration
	phase := map[string]NodePhase{}
	window := map[string]int{}
	for _, e := range tl.Events {
		switch e.Kind {
		case results.KindPhase:
			closeStage(e.Time)
			if e.Reason != results.PhaseEnd {
				tl.Stages = append(tl.Stages, Stage{Name: e.Reason, Iteration: e.Iteration, From: e.Time})
			}
			continue
		case results.KindTrigger:
			tl.Iterations = append(tl.Iterations, Iteration{N: e.Iteration, Trigger: e.Time})
			it = &tl.Iterations[len(tl.Iterations)-1]
			phase, window = map[string]NodePhase{}, map[string]int{}
			continue
		}
		if it == nil {
			continue
		}
		switch e.Kind {
		case results.KindRevision:
			if it.Revision == 0 {
				it.Revision = e.Revision
			}
		case results.KindConverged:
			it.Complete = e.Time
			if it.Revision == 0 {
				it.Revision = e.Revision
			}
		}
		if e.Node == "" || it.Revision == 0 {
			continue
		}
		cur, ok := phase[e.Node]
		if !ok {
			cur = NodePending
		}
		next := NextPhase(cur, e, it.Revision)
		if next == cur {
			continue
		}
		phase[e.Node] = next
		i, ok := window[e.Node]
		if !ok {
			it.Nodes = append(it.Nodes, NodeWindow{Node: e.Node})
			i = len(it.Nodes) - 1
			window[e.Node] = i
		}
		w := &it.Nodes[i]
		switch next {
		case NodeTerminating:
			w.Terminating = e.Time
		case NodeStarting:
			w.Starting = e.Time
		case NodeReady:
			w.Ready = e.Time
		}
	}
	return tl
}

// StageAt returns the stage t falls in, or nil outside every stage.
func (tl *Timeline) StageAt(t time.Time) *Stage {
	for i := range tl.Stages {
		s := &tl.Stages[i]
		if !t.Before(s.From) && (s.To.IsZero() || t.Before(s.To)) {
			return s
		}
	}
	return nil
}

// IterationAt returns the iteration whose rollout or cool-down t falls in.
func (tl *Timeline) IterationAt(t time.Time) *Iteration {
	var found *Iteration
	for i := range tl.Iterations {
		if !t.Before(tl.Iterations[i].Trigger) {
			found = &tl.Iterations[i]
		}
	}
	return found
}
