package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/repro-tools/repro/results"
)

// AttributionRecord is the part of a line of attribution.jsonl (written by
// repro attribute) the report reads.
type AttributionRecord struct {
	Backend    string             `json:"backend"`
	Connection string             `json:"connection"`
	Poller     string             `json:"poller"`
	Seq        uint64             `json:"seq"`
	AuditID    string             `json:"audit_id"`
	Verdict    string             `json:"verdict"`
	Node       string             `json:"node"`
	Stage      string             `json:"stage"`
	Detail     string             `json:"detail"`
	Class      results.ErrorClass `json:"error_class"`
	Code       int                `json:"code"`
}

// Attribution is what attribution.jsonl says of a run's failed samples.
type Attribution struct {
	Records []AttributionRecord
}

// verdictOrder is the order verdicts are shown in.
var verdictOrder = []string{"answered", "received-not-answered", "not-received", "unknown"}

// LoadAttribution reads an attribution.jsonl; nil, nil when there is none
// (attribution did not run).
func LoadAttribution(path string) (*Attribution, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	at := &Attribution{}
	_, err := results.ReadJSONL(path, func(line []byte) error {
		var r AttributionRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.Poller == "" {
			r.Poller = results.PollerName(r.Backend, results.ConnectionType(r.Connection))
		}
		at.Records = append(at.Records, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", results.AttributionFile, err)
	}
	return at, nil
}

// ByAuditID returns the hover text of each attributed sample, by Audit-ID.
func (at *Attribution) ByAuditID() func(string) string {
	if at == nil {
		return nil
	}
	m := make(map[string]string, len(at.Records))
	for _, r := range at.Records {
		t := r.Verdict
		if r.Node != "" {
			t += " (" + r.Node + ")"
		}
		m[r.AuditID] = t + ": " + r.Detail
	}
	return func(id string) string { return m[id] }
}

// writeAttribution writes the section "Where the failed requests went":
// counts by verdict, then by verdict, node and backend-connection, and the
// logs that left verdicts unknown.
func writeAttribution(b *strings.Builder, at *Attribution) {
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
