package write

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

// vantageOf names a poller's series within its backend and connection
// type: "external-lb" for origin's legacy name, else the part of origin's
// newer name between the backend and the connection type
// ("http1-direct-master-0", "http1-internal-lb").
func vantageOf(p report.PollerSummary) string {
	if p.Name == results.PollerName(p.Backend, p.Connection) {
		return results.VantageExternalLB
	}
	s := strings.TrimPrefix(p.Name, p.Backend+"-")
	return strings.TrimSuffix(s, "-"+string(p.Connection)+"-connections")
}

// writeVantages writes the section comparing the vantage points when a run
// polled from more than one: per backend and connection type, one column
// per vantage with its failures and disrupted time. "external-lb fails
// while direct to the same node answers" is the load balancer.
func writeVantages(b *strings.Builder, a *report.Analysis) {
	var cols []string
	seen := map[string]bool{}
	type row struct{ backend, conn string }
	var rows []row
	seenRow := map[row]bool{}
	cell := map[row]map[string]report.PollerSummary{}
	for _, p := range a.Pollers {
		v := vantageOf(p)
		if !seen[v] {
			seen[v] = true
			cols = append(cols, v)
		}
		r := row{p.Backend, string(p.Connection)}
		if !seenRow[r] {
			seenRow[r] = true
			rows = append(rows, r)
			cell[r] = map[string]report.PollerSummary{}
		}
		cell[r][v] = p
	}
	if len(cols) < 2 {
		return
	}
	b.WriteString("\nVantage points side by side (failures / disrupted):\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  BACKEND\tCONNECTIONS\t%s\n", strings.Join(cols, "\t"))
	for _, r := range rows {
		parts := make([]string, len(cols))
		for i, c := range cols {
			p, ok := cell[r][c]
			if !ok {
				parts[i] = "-"
				continue
			}
			parts[i] = fmt.Sprintf("%d / %s", p.Failures, formatMs(p.Disrupted))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", r.backend, r.conn, strings.Join(parts, "\t"))
	}
	tw.Flush()
}
