package write

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

// The rollout's interval items in intervals.json: repro's own source, and
// a locator type for run-wide items beside origin's Node and Pod.
const (
	SourceRollout      = "KubeAPIServerRollout"
	LocatorTypeCluster = "Cluster"
)

// RolloutItems renders the timeline for intervals.json beside the
// disruption: the run's stages, one bar per node and phase, and every
// termination event as an instant, so a chart shows both at once.
func RolloutItems(tl *report.Timeline) []origin.Interval {
	var items []origin.Interval
	for _, s := range tl.Stages {
		to := s.To
		if to.IsZero() {
			to = s.From
		}
		items = append(items, origin.Interval{
			Level: origin.LevelInfo, Display: true, Source: SourceRollout,
			Locator: origin.Locator{Type: LocatorTypeCluster, Keys: map[string]string{"stage": s.Name}},
			Message: origin.Message{Reason: "Stage", HumanMessage: stageName(s), Annotations: map[string]string{"stage": s.Name, "iteration": fmt.Sprint(s.Iteration)}},
			From:    s.From, To: to,
		})
	}
	for _, it := range tl.Iterations {
		for _, w := range it.Nodes {
			bars := []struct {
				phase    report.NodePhase
				from, to time.Time
			}{
				{report.NodeTerminating, w.Terminating, firstNonZero(w.Starting, w.Ready)},
				{report.NodeStarting, w.Starting, w.Ready},
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
					Level: origin.LevelInfo, Display: true, Source: SourceRollout,
					Locator: origin.Locator{Type: origin.LocatorTypeNode, Keys: map[string]string{"node": w.Node}},
					Message: origin.Message{Reason: string(b.phase), HumanMessage: fmt.Sprintf("%s %s towards revision %d", w.Node, b.phase, it.Revision),
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
		loc := origin.Locator{Type: LocatorTypeCluster, Keys: map[string]string{"operator": "kube-apiserver"}}
		if e.Node != "" {
			loc = origin.Locator{Type: origin.LocatorTypePod, Keys: map[string]string{"namespace": "openshift-kube-apiserver", "pod": "kube-apiserver-" + e.Node, "node": e.Node}}
		}
		items = append(items, origin.Interval{
			Level: origin.LevelInfo, Display: true, Source: SourceRollout, Locator: loc,
			Message: origin.Message{Reason: report.EventLabel(e), HumanMessage: e.Message, Annotations: map[string]string{"iteration": fmt.Sprint(e.Iteration)}},
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

func stageName(s report.Stage) string {
	if s.Iteration > 0 {
		return fmt.Sprintf("iteration %d: %s", s.Iteration, s.Name)
	}
	return s.Name
}

// WritePlacements writes the "where the gaps sit" section of summary.txt:
// per iteration the disruption of each backend-connection, then every
// interval with its place in the rollout.
func WritePlacements(w io.Writer, a *report.Analysis, tl *report.Timeline, ps []report.Placement) error {
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
	if groups := report.GroupPlacements(ps); len(groups) > 0 {
		b.WriteString("\nDisruption by node and phase:\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  ITERATION\tNODE\tPHASE\tINTERVALS\tDISRUPTED (SUM OVER POLLERS)\tFROM\tTO\tBACKEND-CONNECTIONS\tERROR CLASSES")
		for _, g := range groups {
			it := "-"
			if g.Iteration > 0 {
				it = fmt.Sprint(g.Iteration)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", it, orDash(g.Node), orDash(string(g.Phase)), g.Intervals,
				formatMs(g.Total), g.From.Format("15:04:05.000"), g.To.Format("15:04:05.000"), strings.Join(g.Pollers, " "), strings.Join(g.Classes, " "))
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
			fmt.Fprintf(&b, "      next: %s %s later\n", p.Next.Label, report.Seconds(p.Next.OffsetMs))
		}
		if p.ServedBy != "" {
			fmt.Fprintf(&b, "      failed requests went to: %s\n", p.ServedBy)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
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
func writeRollout(f *results.Folder, a *report.Analysis, tl *report.Timeline, ps []report.Placement) ([]byte, error) {
	doc := struct {
		Iterations []report.Iteration `json:"iterations"`
		Stages     []report.Stage     `json:"stages"`
		Placements []report.Placement `json:"placements"`
	}{tl.Iterations, tl.Stages, ps}
	js, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := f.WriteFile(results.PlacementsFile, append(js, '\n')); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := WritePlacements(&buf, a, tl, ps); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
