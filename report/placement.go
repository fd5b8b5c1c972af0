package report

import (
	"fmt"
	"time"

	"github.com/repro-tools/repro/results"
)

// Anchor is a timeline event next to a disruption interval, with its offset
// from the interval's start (negative when the event came first).
type Anchor struct {
	Label    string    `json:"label"`
	Node     string    `json:"node,omitempty"`
	Time     time.Time `json:"time"`
	OffsetMs float64   `json:"offsetMs"`
}

// Placement says where one disruption interval sits in the rollout: the stage
// of the run, the node being rolled and its phase, and the nearest events on
// either side. Where is the same in one sentence.
type Placement struct {
	Name       string    `json:"name"`
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	DurationMs float64   `json:"durationMs"`
	Class      string    `json:"class"`
	Stage      string    `json:"stage,omitempty"`
	Iteration  int       `json:"iteration,omitempty"`
	Node       string    `json:"node,omitempty"`
	NodePhase  NodePhase `json:"nodePhase,omitempty"`
	Where      string    `json:"where"`
	Previous   *Anchor   `json:"previous,omitempty"`
	Next       *Anchor   `json:"next,omitempty"`
	// ServedBy names the apiservers the interval's failed requests were sent
	// to, from the lab load balancer's connection records ("" elsewhere).
	ServedBy string `json:"servedBy,omitempty"`
}

// phaseWords says what a node's phase means for a request hitting it.
var phaseWords = map[NodePhase]string{
	NodeTerminating: "while its apiserver was terminating, before the old process exited",
	NodeStarting:    "after the old apiserver exited, before the new pod was ready",
	NodeReady:       "after its new pod was ready",
}

// Place locates every disruption interval in the timeline. It is a pure
// function; an empty timeline places every interval nowhere in particular.
func Place(ivs []Interval, tl *Timeline) []Placement {
	out := make([]Placement, 0, len(ivs))
	for i := range ivs {
		iv := &ivs[i]
		if !iv.Disruption() {
			continue
		}
		p := Placement{
			Name: iv.Name, From: iv.From, To: iv.To,
			DurationMs: float64(iv.Duration().Microseconds()) / 1000, Class: string(iv.Class),
		}
		if st := tl.StageAt(iv.From); st != nil {
			p.Stage, p.Iteration = st.Name, st.Iteration
		}
		it := tl.IterationAt(iv.From)
		if p.Stage == results.PhaseBaseline {
			it = nil
		}
		if it != nil {
			p.Iteration = it.N
			placeInIteration(&p, it, tl, iv.From)
		} else {
			p.Where = "no rollout under way"
			if p.Stage != "" {
				p.Where = "in the " + p.Stage + ", no rollout under way"
			}
		}
		out = append(out, p)
	}
	return out
}

func placeInIteration(p *Placement, it *Iteration, tl *Timeline, t time.Time) {
	var active, lastReady *NodeWindow
	for i := range it.Nodes {
		w := &it.Nodes[i]
		switch w.PhaseAt(t) {
		case NodeTerminating, NodeStarting:
			if active == nil || w.Terminating.After(active.Terminating) {
				active = w
			}
		case NodeReady:
			if lastReady == nil || w.Ready.After(lastReady.Ready) {
				lastReady = w
			}
		}
	}
	node := ""
	switch {
	case active != nil:
		node = active.Node
		p.NodePhase = active.PhaseAt(t)
	case lastReady != nil:
		node = lastReady.Node
		p.NodePhase = NodeReady
	}
	p.Node = node
	p.Previous, p.Next = anchors(tl.Events, node, it.N, t)

	prefix := fmt.Sprintf("iteration %d, ", it.N)
	switch {
	case node == "":
		p.Where = prefix + "after the trigger, before any node started terminating"
	case p.Previous != nil:
		p.Where = fmt.Sprintf("%s%s: %s after %s, %s", prefix, node, seconds(-p.Previous.OffsetMs), p.Previous.Label, phaseWords[p.NodePhase])
	default:
		p.Where = fmt.Sprintf("%s%s: %s", prefix, node, phaseWords[p.NodePhase])
	}
	if p.NodePhase == NodeReady && !it.Complete.IsZero() && !t.Before(it.Complete) {
		p.Where += fmt.Sprintf(" (%s after the rollout completed)", seconds(float64(t.Sub(it.Complete).Microseconds())/1000))
	}
}

// anchors finds the nearest events of node (or of the cluster, for an empty
// node) in iteration n before and after t.
func anchors(evs []results.Event, node string, n int, t time.Time) (prev, next *Anchor) {
	for _, e := range evs {
		if e.Kind == results.KindPhase || (node != "" && e.Node != node) || (e.Iteration != 0 && e.Iteration != n) {
			continue
		}
		a := &Anchor{Label: eventLabel(e), Node: e.Node, Time: e.Time, OffsetMs: float64(e.Time.Sub(t).Microseconds()) / 1000}
		if !e.Time.After(t) {
			prev = a
		} else if next == nil {
			next = a
		}
	}
	return prev, next
}

// eventLabel names an event the way an engineer would: the Event reason
// (ShutdownInitiated) for cluster events, the kind otherwise.
func eventLabel(e results.Event) string {
	if e.Kind == results.KindClusterEvent && e.Reason != "" {
		return e.Reason
	}
	if e.Kind == results.KindCondition && e.Reason != "" {
		return string(e.Kind) + " " + e.Reason
	}
	return string(e.Kind)
}

// seconds renders milliseconds as seconds with one decimal, e.g. "10.2 s".
func seconds(ms float64) string { return fmt.Sprintf("%.1f s", ms/1000) }
