package write

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

// verdictOrder is the order verdicts are shown in.
var verdictOrder = []string{"answered", "received-not-answered", "not-received", "unknown"}

// writeAttribution writes the section "Where the failed requests went":
// counts by verdict, then by verdict, node and backend-connection, and the
// logs that left verdicts unknown.
func writeAttribution(b *strings.Builder, at *report.Attribution) {
	if at == nil {
		return
	}
	b.WriteString("\nWhere the failed requests went (attribution.jsonl, from the apiservers' audit logs):\n")
	if len(at.Records) == 0 {
		b.WriteString("  nothing to attribute: no request failed\n")
		return
	}
	counts := map[string]int{}
	type key struct{ verdict, node, poller string }
	rows := map[key]map[string]int{}
	unknown := map[string]int{}
	for _, r := range at.Records {
		counts[r.Verdict]++
		k := key{r.Verdict, r.Node, r.Poller}
		if rows[k] == nil {
			rows[k] = map[string]int{}
		}
		// What the client saw: its error class, or the status it got.
		what := string(r.Class)
		if r.Code > 0 && (strings.HasPrefix(what, "http-") || r.Class == results.ClassAuth) {
			what = fmt.Sprint(r.Code)
		}
		rows[k][what]++
		if r.Verdict == "unknown" {
			unknown[r.Detail]++
		}
	}
	var parts []string
	for _, v := range verdictOrder {
		if counts[v] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", v, counts[v]))
		}
	}
	fmt.Fprintf(b, "  %d failed: %s\n\n", len(at.Records), strings.Join(parts, ", "))
	keys := make([]key, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	rank := func(v string) int {
		for i, o := range verdictOrder {
			if o == v {
				return i
			}
		}
		return len(verdictOrder)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, c := keys[i], keys[j]
		if rank(a.verdict) != rank(c.verdict) {
			return rank(a.verdict) < rank(c.verdict)
		}
		if a.node != c.node {
			return a.node < c.node
		}
		return a.poller < c.poller
	})
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  VERDICT\tNODE\tBACKEND-CONNECTION\tFAILURES\tWHAT THE CLIENT SAW")
	for _, k := range keys {
		n := 0
		var what []string
		for w, c := range rows[k] {
			n += c
			what = append(what, fmt.Sprintf("%s=%d", w, c))
		}
		sort.Strings(what)
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\n", k.verdict, orDash(k.node), k.poller, n, strings.Join(what, " "))
	}
	tw.Flush()
	if len(unknown) > 0 {
		b.WriteString("\n  Unknown because:\n")
		ds := make([]string, 0, len(unknown))
		for d := range unknown {
			ds = append(ds, d)
		}
		sort.Slice(ds, func(i, j int) bool { return unknown[ds[i]] > unknown[ds[j]] })
		for i, d := range ds {
			if i == 5 {
				fmt.Fprintf(b, "    ... and %d more reasons\n", len(ds)-5)
				break
			}
			fmt.Fprintf(b, "    %d x %s\n", unknown[d], oneLine(d, 240))
		}
	}
}
