package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
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
		p.Where = fmt.Sprintf("%s%s: %s after %s, %s", prefix, node, Seconds(-p.Previous.OffsetMs), p.Previous.Label, phaseWords[p.NodePhase])
	default:
		p.Where = fmt.Sprintf("%s%s: %s", prefix, node, phaseWords[p.NodePhase])
	}
	if p.NodePhase == NodeReady && !it.Complete.IsZero() && !t.Before(it.Complete) {
		p.Where += fmt.Sprintf(" (%s after the rollout completed)", Seconds(float64(t.Sub(it.Complete).Microseconds())/1000))
	}
}

// anchors finds the nearest events of node (or of the cluster, for an empty
// node) in iteration n before and after t.
func anchors(evs []results.Event, node string, n int, t time.Time) (prev, next *Anchor) {
	for _, e := range evs {
		if e.Kind == results.KindPhase || (node != "" && e.Node != node) || (e.Iteration != 0 && e.Iteration != n) {
			continue
		}
		a := &Anchor{Label: EventLabel(e), Node: e.Node, Time: e.Time, OffsetMs: float64(e.Time.Sub(t).Microseconds()) / 1000}
		if !e.Time.After(t) {
			prev = a
		} else if next == nil {
			next = a
		}
	}
	return prev, next
}

// EventLabel names an event the way an engineer would: the Event reason
// (ShutdownInitiated) for cluster events, the kind otherwise. Placements'
// anchors and the rollout's interval items use the same label.
func EventLabel(e results.Event) string {
	if e.Kind == results.KindClusterEvent && e.Reason != "" {
		return e.Reason
	}
	if e.Kind == results.KindCondition && e.Reason != "" {
		return string(e.Kind) + " " + e.Reason
	}
	return string(e.Kind)
}

// Seconds renders milliseconds as seconds with one decimal, e.g. "10.2 s",
// as Placement.Where and the summary's anchors say them.
func Seconds(ms float64) string { return fmt.Sprintf("%.1f s", ms/1000) }

// PlacementGroup sums the placements of one iteration, node and phase.
type PlacementGroup struct {
	Iteration int
	Node      string
	Phase     NodePhase
	// Intervals counts the placements; Total sums their lengths (over
	// every poller, so overlapping gaps of two pollers both count).
	Intervals int
	Total     time.Duration
	// From and To bound the group's placements.
	From, To time.Time
	// Pollers and Classes are the pollers and error classes seen, sorted.
	Pollers []string
	Classes []string
}

// GroupPlacements folds placements by iteration, node and phase, in order
// of first occurrence, so a rollout's many short gaps read as a few lines.
func GroupPlacements(ps []Placement) []PlacementGroup {
	var out []PlacementGroup
	index := map[string]int{}
	for _, p := range ps {
		key := fmt.Sprintf("%d/%s/%s", p.Iteration, p.Node, p.NodePhase)
		i, ok := index[key]
		if !ok {
			out = append(out, PlacementGroup{Iteration: p.Iteration, Node: p.Node, Phase: p.NodePhase, From: p.From, To: p.To})
			i = len(out) - 1
			index[key] = i
		}
		g := &out[i]
		g.Intervals++
		g.Total += p.To.Sub(p.From)
		if p.From.Before(g.From) {
			g.From = p.From
		}
		if p.To.After(g.To) {
			g.To = p.To
		}
		g.Pollers = addUnique(g.Pollers, p.Name)
		g.Classes = addUnique(g.Classes, p.Class)
	}
	for i := range out {
		sort.Strings(out[i].Pollers)
		sort.Strings(out[i].Classes)
	}
	return out
}

func addUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// AttributeServedBy fills Placement.ServedBy from the failed samples of each
// interval in f's samples.jsonl: which apiservers their connections went
// to, by the load balancer's connection records s (lb-connections.jsonl,
// the lab only), with counts. Without records it leaves ps as they are.
func AttributeServedBy(f *results.Folder, ps []Placement, s results.LBConnections) error {
	if len(s) == 0 || len(ps) == 0 {
		return nil
	}
	counts := make([]map[string]int, len(ps))
	byName := map[string][]int{}
	for i, p := range ps {
		byName[p.Name] = append(byName[p.Name], i)
		counts[i] = map[string]int{}
	}
	var probe struct {
		Backend    string    `json:"backend"`
		Connection string    `json:"connection"`
		Start      time.Time `json:"start"`
		DurationMs float64   `json:"duration_ms"`
		LocalAddr  string    `json:"local_addr"`
		ErrorClass string    `json:"error_class"`
		HTTP2      bool      `json:"http2"`
		Vantage    string    `json:"vantage"`
		Target     string    `json:"target"`
	}
	_, err := results.ReadJSONL(f.Path(results.SamplesFile), func(line []byte) error {
		// Only failed samples matter; skip the rest without decoding.
		if !bytes.Contains(line, []byte(`"error_class"`)) {
			return nil
		}
		probe.LocalAddr, probe.ErrorClass, probe.HTTP2, probe.Vantage, probe.Target = "", "", false, "", ""
		if err := json.Unmarshal(line, &probe); err != nil {
			return err
		}
		if probe.LocalAddr == "" {
			return nil
		}
		name := results.SamplerName(probe.Backend, probe.HTTP2, probe.Vantage, probe.Target, results.ConnectionType(probe.Connection))
		for _, i := range byName[name] {
			if !probe.Start.Before(ps[i].From) && probe.Start.Before(ps[i].To) {
				if t := s.Target(probe.LocalAddr, probe.Start, probe.Start.Add(time.Duration(probe.DurationMs*float64(time.Millisecond)))); t != "" {
					counts[i][t]++
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range ps {
		var parts []string
		for t, n := range counts[i] {
			parts = append(parts, fmt.Sprintf("%s (%d)", t, n))
		}
		sort.Strings(parts)
		ps[i].ServedBy = strings.Join(parts, ", ")
	}
	return nil
}
