package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/repro-tools/repro/results"
)

// WriteSummary writes summary.txt: what ran, then per backend-connection
// samples, failures, disrupted time, intervals, longest and error classes,
// then every interval. run may be nil.
func WriteSummary(w io.Writer, a *Analysis, run *results.Run) error {
	var b strings.Builder
	if run != nil {
		fmt.Fprintf(&b, "repro %s against %s\n", run.Command, orDash(run.Server))
		end := "-"
		if run.End != nil {
			end = run.End.Format(time.RFC3339)
		}
		fmt.Fprintf(&b, "run: %s to %s, status %s\n", run.Start.Format(time.RFC3339), end, run.Status)
		if len(run.Settings) > 0 {
			keys := make([]string, 0, len(run.Settings))
			for k := range run.Settings {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			parts := make([]string, len(keys))
			for i, k := range keys {
				parts[i] = fmt.Sprintf("%s=%v", k, run.Settings[k])
			}
			fmt.Fprintf(&b, "settings: %s\n", strings.Join(parts, " "))
		}
		if l := run.LabLine(); l != "" {
			fmt.Fprintf(&b, "lab: %s\n", l)
		}
	} else {
		b.WriteString("repro report (no run.json)\n")
	}
	fmt.Fprintf(&b, "samples: %d from %s to %s", a.Samples, a.From.Format("15:04:05.000"), a.To.Format("15:04:05.000"))
	if a.TruncatedLast {
		b.WriteString(" (last line of samples.jsonl was truncated and skipped)")
	}
	b.WriteString("\n\n")

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND-CONNECTION\tSAMPLES\tFAILURES\tDISRUPTED\tINTERVALS\tLONGEST\tSKIPPED\tERROR CLASSES")
	var unauthorized int64
	for _, p := range a.Pollers {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%s\t%d\t%s\n", p.Name, p.Samples, p.Failures,
			formatMs(p.Disrupted), p.Intervals, formatMs(p.Longest), p.Skipped, classList(p.Classes))
		unauthorized += p.Unauthorized
	}
	tw.Flush()
	b.WriteString("\nDISRUPTED is the sum of the intervals' lengths; SKIPPED counts scheduled ticks with no sample.\n")

	var notes []string
	for _, p := range a.Pollers {
		if p.SamplerOutage > 0 {
			notes = append(notes, fmt.Sprintf("%s: %s of DNS failures, a sampler outage, not counted as disruption", p.Name, formatMs(p.SamplerOutage)))
		}
		if p.Aborted > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d request(s) still in flight when the run was interrupted were ignored", p.Name, p.Aborted))
		}
	}
	if unauthorized > 0 {
		notes = append(notes, fmt.Sprintf("%d request(s) were answered 401/403: the credentials expired or lack permission to list the backends; those failures are not apiserver disruption", unauthorized))
	}
	if len(notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range notes {
			b.WriteString("  - " + n + "\n")
		}
	}

	writeOutcomes(&b, a)

	b.WriteString("\nIntervals:\n")
	if len(a.Intervals) == 0 {
		b.WriteString("  none: every request succeeded\n")
	}
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for i := range a.Intervals {
		iv := &a.Intervals[i]
		kind := string(iv.Class)
		if iv.SamplerOutage {
			kind += " (sampler outage)"
		}
		open := ""
		if iv.Open {
			open = " (still failing at the end)"
		}
		fmt.Fprintf(tw, "  %s\t+%s\t%s\t%s\t%d samples%s\taudit-id %s\t%s\n",
			iv.From.Format("15:04:05.000"), formatMs(iv.Duration()), iv.Name, kind, iv.Samples, open, iv.AuditID, oneLine(iv.Message, 160))
	}
	tw.Flush()
	writeVantages(&b, a)
	writeAttribution(&b, a.Attribution)
	_, err := io.WriteString(w, b.String())
	return err
}

func classList(m map[results.ErrorClass]int64) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, c := range results.ErrorClasses {
		if n := m[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", c, n))
		}
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, max int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
