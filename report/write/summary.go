package write

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

// WriteSummary writes summary.txt: what ran, then per backend-connection
// samples, failures, disrupted time, intervals, longest and error classes,
// then every interval. run may be nil.
func WriteSummary(w io.Writer, a *report.Analysis, run *results.Run) error {
	var b strings.Builder
	withRows := *a
	withRows.Pollers = append([]report.PollerSummary(nil), a.Pollers...)
	withRows.AddUnsampledPollers(run)
	a = &withRows
	if run != nil {
		fmt.Fprintf(&b, "repro %s against %s\n", run.Command, orDash(run.Server))
		end := "-"
		if run.End != nil {
			end = run.End.Format(time.RFC3339)
		}
		fmt.Fprintf(&b, "run: %s to %s, status %s\n", run.Start.Format(time.RFC3339), end, run.Status)
		if l := Unfinished(run, a); l != "" {
			b.WriteString(l + "\n")
		}
		if parts := run.Settings.Pairs(); len(parts) > 0 {
			fmt.Fprintf(&b, "settings: %s\n", strings.Join(parts, " "))
		}
		if c := run.Extra.Cluster.Describe(); c != "" && run.Extra.Lab == nil {
			fmt.Fprintf(&b, "cluster: %s\n", c)
		}
		if ci := run.Extra.CI.String(); ci != "" {
			fmt.Fprintf(&b, "CI run: %s\n", ci)
		}
		if l := run.LabLine(); l != "" {
			fmt.Fprintf(&b, "lab: %s\n", l)
		}
		for _, l := range run.Extra.Load.Lines() {
			b.WriteString(l + "\n")
		}
	} else {
		b.WriteString("repro report (no run.json)\n")
	}
	fmt.Fprintf(&b, "samples: %d from %s to %s", a.Samples, a.From.Format("15:04:05.000"), a.To.Format("15:04:05.000"))
	if a.TruncatedLast {
		b.WriteString(" (last line of samples.jsonl was truncated and skipped)")
	}
	if a.Duplicates > 0 {
		fmt.Fprintf(&b, " (%d duplicated line(s), same poller and seq as an earlier one, were counted once)", a.Duplicates)
	}
	b.WriteString("\n")
	if l := MeasuringHost(a, run); l != "" {
		b.WriteString("measuring host: " + l + "\n")
	}
	b.WriteString("\n")

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
			notes = append(notes, fmt.Sprintf("%s: %d request(s) unanswered when the run stopped, the oldest sent at %s, the longest wait %s; not counted as disruption, as none had waited longer than the header timeout",
				p.Name, p.Aborted, p.AbortedSince.Format("15:04:05.000"), formatMs(p.AbortedLongest)))
		}
		if p.Samples == 0 {
			notes = append(notes, fmt.Sprintf("%s: no sample: the run ended before this poller's first request came due (first requests are spread over one interval)", p.Name))
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

// MeasuringHost is the control poller's verdict on the measuring host, one
// line: clean, or when it stalled and for how long, so that a reader can
// trust or discount every gap. It is "" for a folder that never had a
// control poller (an imported CI run: its canaries speak for it instead).
func MeasuringHost(a *report.Analysis, run *results.Run) string {
	var threshold time.Duration
	if run != nil {
		threshold = run.Extra.ControlStallThreshold.D()
	}
	switch {
	case a.ControlError != "":
		return "unknown: the control samples could not be read (" + a.ControlError + ")"
	case a.Control != nil:
		return a.Control.Verdict(threshold)
	case run != nil && run.Extra.MeasuringUnreliableWindows != nil:
		return "unknown: the control poller ran but its " + results.ControlFile + " is missing"
	case run != nil && run.Extra.ImportedFrom == "" && run.Extra.Scenario != "":
		return "unknown: no control poller ran (see repro.log for why it did not start), so a stall of this host cannot be told from the cluster's"
	}
	return ""
}

// Unfinished says, in one line, that run.json still says "running" though
// samples stopped: the process was killed (SIGKILL, out of memory, power
// loss) before it could record how the run ended, or it is still running.
// It names when the last sample was taken. It is "" for a run that
// recorded its end.
func Unfinished(run *results.Run, a *report.Analysis) string {
	if run == nil || run.Status != results.StatusRunning || run.End != nil {
		return ""
	}
	last := "no sample was taken"
	if a != nil && !a.To.IsZero() {
		last = "its last sample ended at " + a.To.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("run never finished: run.json still says %q (the process was killed, or is still running); %s; samples taken in the last %s before it stopped may be missing",
		results.StatusRunning, last, results.FlushInterval)
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
