package sweep

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the disruption of every backend-connection (median per
// iteration, seconds) against the swept value, each point's compare verdict
// against the previous one, and the findings.
func WriteTable(w io.Writer, res *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Sweep of %s over %s (disruption per iteration, median seconds)\n\n", res.Key, strings.Join(res.Values, ", "))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "BACKEND-CONNECTION")
	for _, p := range res.Points {
		fmt.Fprintf(tw, "\t%s=%s", res.Key, p.Value)
	}
	fmt.Fprintln(tw)
	for _, name := range res.Pollers {
		fmt.Fprint(tw, name)
		for _, p := range res.Points {
			fmt.Fprintf(tw, "\t%s", cell(p, name))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "TOTAL")
	for _, p := range res.Points {
		if p.Seconds == nil {
			fmt.Fprintf(tw, "\t%s", p.Status)
			continue
		}
		fmt.Fprintf(tw, "\t%.3f", p.Total)
	}
	fmt.Fprintln(tw)
	fmt.Fprint(tw, "VS PREVIOUS")
	for _, p := range res.Points {
		fmt.Fprintf(tw, "\t%s", orDash(p.Versus))
	}
	fmt.Fprintln(tw)
	tw.Flush()
	b.WriteString("\n")
	for _, p := range res.Points {
		line := fmt.Sprintf("  %s=%s: %s, exit %d, %s", res.Key, p.Value, p.Status, p.ExitCode, p.Dir)
		if p.Error != "" {
			line += ": " + p.Error
		}
		if p.VersusSummary != "" {
			line += "\n      vs previous: " + p.VersusSummary
		}
		b.WriteString(line + "\n")
	}
	if res.Interrupted {
		b.WriteString("  interrupted: later values were not run; the interrupted point keeps its partial results and is left out\n")
	}
	b.WriteString("\nFindings:\n")
	for _, f := range res.Findings {
		b.WriteString("  " + f + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func cell(p Point, name string) string {
	if p.Seconds == nil {
		return p.Status
	}
	v, ok := p.Seconds[name]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.3f", v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// palette colours the plot's lines (one per backend-connection).
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"}

// WriteSVG draws the table: one line per backend-connection (disruption
// against the swept value, values evenly spaced in sweep order) and the
// total, dashed.
func WriteSVG(w io.Writer, res *Result) {
	const width, height, left, right, top, bottom = 760.0, 380.0, 60.0, 230.0, 30.0, 50.0
	plotW, plotH := width-left-right, height-top-bottom
	max := 0.0
	for _, p := range res.Points {
		max = math.Max(max, p.Total)
	}
	if max == 0 {
		max = 1
	}
	n := len(res.Points)
	x := func(i int) float64 {
		if n <= 1 {
			return left + plotW/2
		}
		return left + plotW*float64(i)/float64(n-1)
	}
	y := func(v float64) float64 { return top + plotH*(1-v/max) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="13">disruption per iteration (median s) against %s</text>`+"\n", left, htmlEscape(res.Key))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000"/>`+"\n",
		left, top, left, top+plotH, left, top+plotH, left+plotW, top+plotH)
	for k := 0; k <= 4; k++ {
		v := max * float64(k) / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.2f</text><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n",
			left-4, y(v)+4, v, left, y(v), left+plotW, y(v))
	}
	for i, p := range res.Points {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(i), top+plotH+18, htmlEscape(p.Value))
		if p.Seconds == nil {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#a00">%s</text>`+"\n", x(i), top+plotH+32, htmlEscape(p.Status))
		}
	}
	line := func(name, colour, dash string, value func(Point) (float64, bool), row int) {
		var pts []string
		for i, p := range res.Points {
			if v, ok := value(p); ok {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`, x(i), y(v), colour)
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="%s" points="%s"/>`+"\n", colour, dash, strings.Join(pts, " "))
		ly := top + 14*float64(row)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			left+plotW+10, ly, left+plotW+30, ly, colour, dash, left+plotW+34, ly+4, htmlEscape(name))
	}
	line("total", "#000", "4 3", func(p Point) (float64, bool) { return p.Total, p.Seconds != nil }, 0)
	for i, name := range res.Pollers {
		line(name, palette[i%len(palette)], "none", func(p Point) (float64, bool) {
			v, ok := p.Seconds[name]
			return v, ok
		}, i+1)
	}
	b.WriteString("</svg>\n")
	_, _ = io.WriteString(w, b.String())
}
