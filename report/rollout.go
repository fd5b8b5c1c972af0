package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/results"
)

// PlacementsFile is the machine-readable twin of summary.txt's "where the
// gaps sit" section.
const PlacementsFile = "placements.json"

// JUnitFile is the junit report, one test case per backend-connection.
const JUnitFile = "junit.xml"

// Rollout interval sources and locator types, in origin's style.
const (
	SourceRollout      = "KubeAPIServerRollout"
	LocatorTypeNode    = "Node"
	LocatorTypePod     = "Pod"
	LocatorTypeCluster = "Cluster"
)

// RolloutItems renders the timeline for intervals.json beside the
// disruption: the run's stages, one bar per node and phase, and every
// termination event as an instant, so a chart shows both at once.
func RolloutItems(tl *Timeline) []origin.Interval {
	var items []origin.Interval
	for _, s := range tl.Stages {
		to := s.To
		if to.IsZero() {
			to = s.From
		}
		items = append(items, origin.Interval{
			Level: LevelInfo, Display: true, Source: SourceRollout,
			Locator: Locator{Type: LocatorTypeCluster, Keys: map[string]string{"stage": s.Name}},
			Message: Message{Reason: "Stage", HumanMessage: stageName(s), Annotations: map[string]string{"stage": s.Name, "iteration": fmt.Sprint(s.Iteration)}},
			From:    s.From, To: to,
		})
	}
	for _, it := range tl.Iterations {
		for _, w := range it.Nodes {
			bars := []struct {
				phase    NodePhase
				from, to time.Time
			}{
				{NodeTerminating, w.Terminating, firstNonZero(w.Starting, w.Ready)},
				{NodeStarting, w.Starting, w.Ready},
			}
			for _, b := range bars {
				if b.from.IsZero() {
					continue
				}
				to := b.to
				if to.IsZero() {
					to = b.from
				}
				items = append(items, origin.Interval{
					Level: LevelInfo, Display: true, Source: SourceRollout,
					Locator: Locator{Type: LocatorTypeNode, Keys: map[string]string{"node": w.Node}},
					Message: Message{Reason: string(b.phase), HumanMessage: fmt.Sprintf("%s %s towards revision %d", w.Node, b.phase, it.Revision),
						Annotations: map[string]string{"iteration": fmt.Sprint(it.N), "revision": fmt.Sprint(it.Revision)}},
					From: b.from, To: to,
				})
			}
		}
	}
	for _, e := range tl.Events {
		if e.Kind != results.KindClusterEvent && e.Kind != results.KindTrigger && e.Kind != results.KindConverged {
			continue
		}
		loc := Locator{Type: LocatorTypeCluster, Keys: map[string]string{"operator": "kube-apiserver"}}
		if e.Node != "" {
			loc = Locator{Type: LocatorTypePod, Keys: map[string]string{"namespace": "openshift-kube-apiserver", "pod": "kube-apiserver-" + e.Node, "node": e.Node}}
		}
		items = append(items, origin.Interval{
			Level: LevelInfo, Display: true, Source: SourceRollout, Locator: loc,
			Message: Message{Reason: eventLabel(e), HumanMessage: e.Message, Annotations: map[string]string{"iteration": fmt.Sprint(e.Iteration)}},
			From:    e.Time, To: e.Time,
		})
	}
	return items
}

func firstNonZero(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

func stageName(s Stage) string {
	if s.Iteration > 0 {
		return fmt.Sprintf("iteration %d: %s", s.Iteration, s.Name)
	}
	return s.Name
}

// loadServedBy reads lb-connections.jsonl; a folder without one (a live
// cluster) yields nil.
func loadServedBy(f *results.Folder) (results.LBConnections, error) {
	return results.ReadLBConnections(f.Path(results.LBConnectionsFile))
}

// attributeServedBy fills Placement.ServedBy from the failed samples of each
// interval: which apiservers their connections went to, with counts.
func attributeServedBy(f *results.Folder, ps []Placement, s results.LBConnections) error {
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

// WritePlacements writes the "where the gaps sit" section of summary.txt:
// per iteration the disruption of each backend-connection, then every
// interval with its place in the rollout.
func WritePlacements(w io.Writer, a *Analysis, tl *Timeline, ps []Placement) error {
	var b strings.Builder
	if len(tl.Iterations) > 0 {
		b.WriteString("\nRollouts:\n")
		for _, it := range tl.Iterations {
			took := "did not complete"
			if !it.Complete.IsZero() {
				took = "completed in " + formatMs(it.Complete.Sub(it.Trigger))
			}
			fmt.Fprintf(&b, "  iteration %d: triggered %s, revision %d, %s\n", it.N, it.Trigger.Format("15:04:05.000"), it.Revision, took)
			for _, n := range it.Nodes {
				fmt.Fprintf(&b, "    %-10s terminating %s  starting %s  ready %s\n", n.Node, clock(n.Terminating), clock(n.Starting), clock(n.Ready))
			}
		}
		b.WriteString("\nDisruption per iteration (rollout and its cool-down):\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "  BACKEND-CONNECTION")
		for _, it := range tl.Iterations {
			fmt.Fprintf(tw, "\tITERATION %d", it.N)
		}
		fmt.Fprintln(tw, "\tBASELINE")
		for _, p := range a.Pollers {
			fmt.Fprintf(tw, "  %s", p.Name)
			per := map[int]time.Duration{}
			var base time.Duration
			for _, pl := range ps {
				if pl.Name != p.Name {
					continue
				}
				if pl.Iteration == 0 {
					base += pl.To.Sub(pl.From)
				} else {
					per[pl.Iteration] += pl.To.Sub(pl.From)
				}
			}
			for _, it := range tl.Iterations {
				fmt.Fprintf(tw, "\t%s", formatMs(per[it.N]))
			}
			fmt.Fprintf(tw, "\t%s\n", formatMs(base))
		}
		tw.Flush()
	}
	if groups := groupPlacements(ps); len(groups) > 0 {
		b.WriteString("\nDisruption by node and phase:\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  ITERATION\tNODE\tPHASE\tINTERVALS\tDISRUPTED (SUM OVER POLLERS)\tFROM\tTO\tBACKEND-CONNECTIONS\tERROR CLASSES")
		for _, g := range groups {
			it := "-"
			if g.iteration > 0 {
				it = fmt.Sprint(g.iteration)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", it, orDash(g.node), orDash(string(g.phase)), g.intervals,
				formatMs(g.total), g.from.Format("15:04:05.000"), g.to.Format("15:04:05.000"), strings.Join(g.pollers, " "), strings.Join(g.classes, " "))
		}
		tw.Flush()
	}
	b.WriteString("\nWhere the gaps sit:\n")
	if len(ps) == 0 {
		b.WriteString("  no disruption\n")
	}
	for _, p := range ps {
		fmt.Fprintf(&b, "  %s +%s %s %s\n      %s\n", p.From.Format("15:04:05.000"), formatMs(p.To.Sub(p.From)), p.Name, p.Class, p.Where)
		if p.Next != nil {
			fmt.Fprintf(&b, "      next: %s %s later\n", p.Next.Label, seconds(p.Next.OffsetMs))
		}
		if p.ServedBy != "" {
			fmt.Fprintf(&b, "      failed requests went to: %s\n", p.ServedBy)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// placementGroup sums the placements of one iteration, node and phase.
type placementGroup struct {
	iteration int
	node      string
	phase     NodePhase
	intervals int
	total     time.Duration
	from, to  time.Time
	pollers   []string
	classes   []string
}

// groupPlacements folds placements by iteration, node and phase, in order
// of first occurrence, so a rollout's many short gaps read as a few lines.
func groupPlacements(ps []Placement) []placementGroup {
	var out []placementGroup
	index := map[string]int{}
	for _, p := range ps {
		key := fmt.Sprintf("%d/%s/%s", p.Iteration, p.Node, p.NodePhase)
		i, ok := index[key]
		if !ok {
			out = append(out, placementGroup{iteration: p.Iteration, node: p.Node, phase: p.NodePhase, from: p.From, to: p.To})
			i = len(out) - 1
			index[key] = i
		}
		g := &out[i]
		g.intervals++
		g.total += p.To.Sub(p.From)
		if p.From.Before(g.from) {
			g.from = p.From
		}
		if p.To.After(g.to) {
			g.to = p.To
		}
		g.pollers = addUnique(g.pollers, p.Name)
		g.classes = addUnique(g.classes, p.Class)
	}
	for i := range out {
		sort.Strings(out[i].pollers)
		sort.Strings(out[i].classes)
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

func clock(t time.Time) string {
	if t.IsZero() {
		return "-           "
	}
	return t.Format("15:04:05.000")
}

// writeRollout adds the rollout's derived files to a folder: placements.json
// and the extra summary section (returned for appending). ps are the
// intervals' placements in tl.
func writeRollout(f *results.Folder, a *Analysis, tl *Timeline, ps []Placement) ([]byte, error) {
	doc := struct {
		Iterations []Iteration `json:"iterations"`
		Stages     []Stage     `json:"stages"`
		Placements []Placement `json:"placements"`
	}{tl.Iterations, tl.Stages, ps}
	js, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := f.WriteFile(PlacementsFile, append(js, '\n')); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := WritePlacements(&buf, a, tl, ps); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
