package importer

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/repro-tools/repro/results"
)

// WriteCIJSON writes the report as one JSON document.
func WriteCIJSON(w io.Writer, rep *CIReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func kindCounts(m map[results.SignalKind]int) string {
	if len(m) == 0 {
		return "none"
	}
	ks := make([]string, 0, len(m))
	for k, n := range m {
		ks = append(ks, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// WriteCIText writes the report for a person: the pattern table, the
// comparison, then per disrupted run its windows and their evidence.
func WriteCIText(w io.Writer, rep *CIReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d run(s) analysed (%d without a readable timeline); evidence within ±%.0f s of each disruption\n\n", len(rep.Runs), rep.Unreadable, rep.WindowSeconds)
	b.WriteString("Per pattern and backend (seconds per run, undisrupted runs counting 0):\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  PATTERN\tBACKEND\tKIND\tRUNS\tAFFECTED\tMEDIAN\tP95\tMAX\t>= %.0f s\n", rep.AtLeast)
	for _, s := range rep.Patterns {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%.0f\t%.0f\t%.0f\t%d (%.0f%%)\n", s.Pattern, s.Backend, s.Kind, s.Runs, s.Affected, s.Median, s.P95, s.Max, s.AtLeast, 100*s.Share)
	}
	tw.Flush()
	if c := rep.Compare; c != nil {
		fmt.Fprintf(&b, "\nA: %s (%d runs)  against  B: %s (%d runs), Mann-Whitney U per pattern and backend:\n", c.A, c.NA, c.B, c.NB)
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  PATTERN\tBACKEND\tA MEDIAN\tA P95\tA >=N\tB MEDIAN\tB P95\tB >=N\tP(B>A)\tP\tVERDICT")
		for _, r := range c.Rows {
			verdict := "no difference shown"
			switch {
			case !r.Testable:
				verdict = "too few runs to test"
			case r.Significant:
				verdict = "differs"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%.0f\t%.0f\t%.0f%%\t%.0f\t%.0f\t%.0f%%\t%.2f\t%.3g\t%s\n", r.Pattern, r.Backend,
				r.A.Median, r.A.P95, 100*r.A.Share, r.B.Median, r.B.P95, 100*r.B.Share, r.ProbBGreater, r.P, verdict)
		}
		tw.Flush()
	}
	for _, rr := range rep.Runs {
		r := rr.Run
		if len(rr.Placements) == 0 && len(rr.Errors) == 0 && len(r.Missing) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s %s  %s  %s  %s->%s  %s\n", r.Name(), r.Job, r.Start.UTC().Format(time.RFC3339), orDash(r.Result), orDash(r.FromVersion), orDash(r.ToVersion), orDash(r.Platform))
		if l := r.ProwLink(); l != "" {
			fmt.Fprintf(&b, "  prow:  %s\n  sippy: %s\n", l, r.SippyLink())
		}
		if len(r.Missing) > 0 {
			fmt.Fprintf(&b, "  missing: %s\n", strings.Join(r.Missing, "; "))
		}
		for _, e := range rr.Errors {
			fmt.Fprintf(&b, "  unreadable: %s\n", e)
		}
		if rr.Liveness != "clean" {
			fmt.Fprintf(&b, "  network liveness: %s (%d canary failures): disruption measured beside them is discounted\n", rr.Liveness, rr.LivenessFailures)
		}
		if rr.Clean != "" {
			fmt.Fprintf(&b, "  compared with clean run %s: signals it also had are dismissed\n", rr.Clean)
		} else if rr.APIServerSeconds > 0 {
			b.WriteString("  no clean run of this job to compare with: no signal is dismissed\n")
		}
		for _, win := range rr.Windows {
			fmt.Fprintf(&b, "  %s-%s  %s %s %s  %d backend(s): %s\n", win.From.UTC().Format("15:04:05"), win.To.UTC().Format("15:04:05"),
				win.Pattern, win.Node, win.NodePhase, len(win.Backends), strings.Join(win.Backends, " "))
			if win.Hint != "" {
				fmt.Fprintf(&b, "      %s\n", win.Hint)
			}
			fmt.Fprintf(&b, "      signals: %s\n", kindCounts(win.Signals))
			if len(win.Dismissed) > 0 {
				fmt.Fprintf(&b, "      also in the clean run (not causes): %s\n", strings.Join(win.Dismissed, ", "))
			}
			if len(win.TestsFailed) > 0 {
				fmt.Fprintf(&b, "      tests failed: %s\n", strings.Join(win.TestsFailed, "; "))
			}
			if len(win.TestsPassed) > 0 {
				fmt.Fprintf(&b, "      tests passed: %s\n", strings.Join(win.TestsPassed, "; "))
			}
			for _, e := range win.Examples[:min(3, len(win.Examples))] {
				fmt.Fprintf(&b, "      %s\n", e)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// phaseColours gives each pattern and node phase its colour on the page.
var phaseColours = map[string]string{
	PatternRollout: "#d9534f", PatternNodeUpdate: "#f0ad4e", PatternBeforeUpgrade: "#5bc0de", PatternOther: "#999",
	PhaseBeforeShutdown: "#f7c6c5", PhaseShutdownDelay: "#e8837f", PhaseStoppedServing: "#c9302c", PhaseShutdown: "#d9534f", PhaseRestarting: "#8a1f1c",
}

var ciPage = template.Must(template.New("ci").Funcs(template.FuncMap{
	"colour": func(s string) string {
		if c, ok := phaseColours[s]; ok {
			return c
		}
		return "#777"
	},
	"pct":   func(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) },
	"f0":    func(x float64) string { return fmt.Sprintf("%.0f", x) },
	"p3":    func(x float64) string { return fmt.Sprintf("%.3g", x) },
	"kinds": kindCounts,
	"when":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") },
	"clock": func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"join":  strings.Join,
}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>repro: CI runs</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top;text-align:left}
th{background:#f3f3f3}
.chip{display:inline-block;color:#fff;border-radius:3px;padding:0 4px;margin:1px;font-size:12px}
.num{text-align:right}
.small{font-size:12px;color:#555}
</style></head><body>
<h1>CI runs: disruption per pattern</h1>
<p>{{len .Runs}} run(s); evidence within ±{{f0 .WindowSeconds}} s of each disruption. Seconds per run; undisrupted runs count 0.</p>
<table><tr><th>pattern</th><th>backend</th><th>kind</th><th>runs</th><th>affected</th><th>median</th><th>P95</th><th>max</th><th>≥ {{f0 .AtLeast}} s</th></tr>
{{range .Patterns}}<tr><td><span class="chip" style="background:{{colour .Pattern}}">{{.Pattern}}</span></td><td>{{.Backend}}</td><td>{{.Kind}}</td><td class="num">{{.Runs}}</td><td class="num">{{.Affected}}</td><td class="num">{{f0 .Median}}</td><td class="num">{{f0 .P95}}</td><td class="num">{{f0 .Max}}</td><td class="num">{{.AtLeast}} ({{pct .Share}})</td></tr>
{{end}}</table>
{{with .Compare}}<h2>A: {{.A}} ({{.NA}}) against B: {{.B}} ({{.NB}})</h2>
<table><tr><th>pattern</th><th>backend</th><th>A median</th><th>A P95</th><th>B median</th><th>B P95</th><th>P(B&gt;A)</th><th>p (Mann-Whitney U)</th><th></th></tr>
{{range .Rows}}<tr><td>{{.Pattern}}</td><td>{{.Backend}}</td><td class="num">{{f0 .A.Median}}</td><td class="num">{{f0 .A.P95}}</td><td class="num">{{f0 .B.Median}}</td><td class="num">{{f0 .B.P95}}</td><td class="num">{{p3 .ProbBGreater}}</td><td class="num">{{p3 .P}}</td><td>{{if not .Testable}}too few runs{{else if .Significant}}differs{{end}}</td></tr>
{{end}}</table>{{end}}
<h2>Runs</h2>
<table><tr><th>run</th><th>started</th><th>result</th><th>upgrade</th><th>disruption placed in the rollout</th><th>evidence</th><th>links</th></tr>
{{range .Runs}}<tr><td>{{.Run.Name}}<div class="small">{{.Run.Job}}</div></td><td>{{when .Run.Start}}</td><td>{{.Run.Result}}</td><td>{{.Run.FromVersion}} → {{.Run.ToVersion}}</td>
<td>{{range .Placements}}<span class="chip" style="background:{{colour .Pattern}}" title="{{.Where}}">{{.Pattern}}</span>{{if .NodePhase}}<span class="chip" style="background:{{colour .NodePhase}}" title="{{.Where}}">{{.Node}} {{.NodePhase}}</span>{{end}} {{clock .From}} {{f0 .Seconds}} s {{.Backend}}<br>{{else}}<span class="small">no disruption</span>{{end}}</td>
<td>{{range .Windows}}<div>{{clock .From}}: {{len .Backends}} backend(s){{if .Hint}}; <b>{{join .AllVariants ", "}}: all four variants</b>{{end}}<div class="small">{{kinds .Signals}}{{if .Dismissed}}; also in clean run: {{join .Dismissed ", "}}{{end}}</div></div>{{end}}{{if ne .Liveness "clean"}}<div class="small">network liveness: {{.Liveness}}</div>{{end}}{{if .Run.Missing}}<div class="small">missing: {{join .Run.Missing "; "}}</div>{{end}}</td>
<td>{{with .Run.ProwLink}}<a href="{{.}}">prow</a>{{end}} {{with .Run.SippyLink}}<a href="{{.}}">sippy intervals</a>{{end}}</td></tr>
{{end}}</table>
</body></html>
`))

// WriteCIHTML writes the report as one offline page: no script, no
// stylesheet or font fetched; links go out to prow and Sippy.
func WriteCIHTML(w io.Writer, rep *CIReport) error {
	return ciPage.Execute(w, rep)
}
