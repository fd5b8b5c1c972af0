package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/repro-tools/repro/report"
)

// WriteCompareJSON writes the comparison as indented JSON (schema
// CompareSchema).
func WriteCompareJSON(w io.Writer, c *Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}

// WriteCompare writes the comparison for a human: the sides, the rule, a
// table with a row per backend-connection and side, the reason for each
// backend-connection's verdict per B side, then the overall verdicts and
// notes.
func WriteCompare(w io.Writer, c *Comparison) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, s := range c.Sides {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Role, s.Name, s.Label, sideCounts(s))
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nRule: %s.\n", c.Rule)
	b.WriteString("Figures are per iteration (rollout plus cool-down); a folder without a rollout counts as one sample of its whole run.\n\n")

	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND-CONNECTION\tSIDE\tN\tMEDIAN\tP95\tMAX\tINTERVALS\tERROR CLASSES\tWHERE")
	for _, r := range c.Results {
		for i, s := range r.Sides {
			name := ""
			if i == 0 {
				name = r.Name
			}
			if s.N == 0 {
				fmt.Fprintf(tw, "%s\t%s\t0\t-\t-\t-\t-\t-\t-\n", name, s.Role)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\n", name, s.Role, s.N,
				fmtSeconds(s.MedianSeconds), fmtSeconds(s.P95Seconds), fmtSeconds(s.MaxSeconds),
				s.Intervals, tallyText(s.Classes, nil), tallyText(s.Where, whereOrder))
		}
	}
	tw.Flush()
	writeCompareOutcomes(&b, c)
	for i, s := range c.Sides[1:] {
		fmt.Fprintf(&b, "\n%s vs A, per backend-connection:\n", s.Role)
		for _, r := range c.Results {
			fmt.Fprintf(&b, "  %s: %s\n", r.Name, r.Versus[i].Reason)
		}
	}

	b.WriteString("\n")
	for _, v := range c.Verdicts {
		mark := ""
		if v.Worse {
			mark = " (exit 3)"
		}
		fmt.Fprintf(&b, "Verdict %s vs A: %s — %s%s\n", v.Role, strings.ToUpper(v.Verdict), v.Summary, mark)
	}
	if len(c.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func sideCounts(s SideInfo) string {
	runs := "runs"
	if s.Runs == 1 {
		runs = "run"
	}
	its := "iterations"
	if s.Iterations == 1 {
		its = "iteration"
	}
	return fmt.Sprintf("%d %s, %d %s", s.Runs, runs, s.Iterations, its)
}

// tallyText renders tallies as "header-timeout 9 (45.100s), tls 1 (0.300s)",
// in the given key order (then the rest by name), or "-" when empty.
func tallyText(m map[string]Tally, order []string) string {
	if len(m) == 0 {
		return "-"
	}
	var keys []string
	done := map[string]bool{}
	for _, k := range order {
		if _, ok := m[k]; ok {
			keys = append(keys, k)
			done[k] = true
		}
	}
	var rest []string
	for k := range m {
		if !done[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	keys = append(keys, rest...)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d (%s)", k, m[k].Intervals, fmtSeconds(m[k].Seconds))
	}
	return strings.Join(parts, ", ")
}

// writeCompareOutcomes is compare's graded view: per side and
// backend-connection with failures, the failures summed over the side's
// folders, how they grade, and what a client-go client would have lost.
func writeCompareOutcomes(b *strings.Builder, c *Comparison) {
	type row struct{ name, role string }
	sums := map[row]*report.PollerOutcomes{}
	var order []row
	for _, s := range c.Sides {
		for _, f := range s.Folders {
			for _, name := range f.Pollers {
				po, ok := f.Outcomes[name]
				if !ok || po.Failures == 0 {
					continue
				}
				k := row{name, s.Role}
				t := sums[k]
				if t == nil {
					t = &report.PollerOutcomes{Name: name}
					sums[k] = t
					order = append(order, k)
				}
				t.Failures += po.Failures
				t.Retryable += po.Retryable
				t.Failed += po.Failed
				t.ClientLost += po.ClientLost
				t.ClientRecovered += po.ClientRecovered
				t.Discounted += po.Discounted
				t.MaxAddedWait = max(t.MaxAddedWait, po.MaxAddedWait)
			}
		}
	}
	if len(order) == 0 {
		return
	}
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].name != order[j].name {
			return order[i].name < order[j].name
		}
		return order[i].role < order[j].role
	})
	b.WriteString("\nOutcomes graded beside the disruption above (a 429 with Retry-After retryable, the rest failed), and what a client-go GET with its default retries would still have lost:\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND-CONNECTION\tSIDE\tFAILURES\tRETRYABLE\tFAILED\tCLIENT-GO LOST\tDISCOUNTED")
	for _, k := range order {
		t := sums[k]
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", k.name, k.role, t.Failures, t.Retryable, t.Failed, t.ClientLost, t.Discounted)
	}
	tw.Flush()
}
