package write_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/htmlreport"
	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
)

// With an attribution.jsonl beside the samples, the summary says where the
// failed requests went, and the page's hover carries each verdict.
func TestSummaryAttributionSection(t *testing.T) {
	dir := t.TempDir()
	ss := []results.Sample{
		mk("kube-api", results.NewConnections, 1, 10*time.Millisecond, results.ClassNone),
		mk("kube-api", results.NewConnections, 2, 2700*time.Millisecond, results.ClassHeaderTimeout),
		mk("kube-api", results.NewConnections, 3, 2700*time.Millisecond, results.ClassHeaderTimeout),
		mk("kube-api", results.ReusedConnections, 4, 3*time.Millisecond, results.ClassHTTP429),
		mk("kube-api", results.ReusedConnections, 5, 3*time.Millisecond, results.ClassReset),
	}
	writeSamples(t, dir, ss, "")
	lines := []string{
		`{"backend":"kube-api","connection":"new","seq":2,"audit_id":"` + ss[1].AuditID + `","verdict":"received-not-answered","node":"master-1","stage":"ResponseComplete","detail":"kube-apiserver master-1 logged ResponseComplete 200 only 3.3 s after the client gave up","poller":"kube-api-new-connections","error_class":"header-timeout"}`,
		`{"backend":"kube-api","connection":"new","seq":3,"audit_id":"` + ss[2].AuditID + `","verdict":"received-not-answered","node":"master-1","stage":"ResponseComplete","detail":"x","poller":"kube-api-new-connections","error_class":"header-timeout"}`,
		`{"backend":"kube-api","connection":"reused","seq":4,"audit_id":"` + ss[3].AuditID + `","verdict":"answered","node":"master-2","detail":"answered 429","poller":"kube-api-reused-connections","error_class":"http-429","code":429}`,
		`{"backend":"kube-api","connection":"reused","seq":5,"audit_id":"` + ss[4].AuditID + `","verdict":"unknown","detail":"in no audit log read; kube-apiserver on master-0 unreadable (403)","poller":"kube-api-reused-connections","error_class":"reset"}`,
	}
	if err := os.WriteFile(filepath.Join(dir, results.AttributionFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := write.Rebuild(dir); err != nil {
		t.Fatal(err)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	s := string(sum)
	for _, want := range []string{
		"Where the failed requests went",
		"4 failed: answered 1, received-not-answered 2, unknown 1",
		"received-not-answered  master-1  kube-api-new-connections     2         header-timeout=2",
		"answered               master-2  kube-api-reused-connections  1         429=1",
		"1 x in no audit log read; kube-apiserver on master-0 unreadable (403)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, htmlreport.FileName))
	m := regexp.MustCompile(`const REPRO_DATA = "([A-Za-z0-9+/=]*)";`).FindSubmatch(html)
	if m == nil {
		t.Fatal("no data in report.html")
	}
	page, err := htmlreport.Decode(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	hover := map[string]bool{}
	for _, l := range page.Runs[0].Lanes {
		for _, v := range l.Verdict {
			hover[v] = true
		}
	}
	if len(hover) != 4 || !hover["received-not-answered (master-1): kube-apiserver master-1 logged ResponseComplete 200 only 3.3 s after the client gave up"] {
		t.Errorf("report.html hover verdicts: %v", hover)
	}

	// Attribution that found nothing to attribute says so.
	os.WriteFile(filepath.Join(dir, results.AttributionFile), nil, 0o644)
	if _, err := write.Rebuild(dir); err != nil {
		t.Fatal(err)
	}
	sum, _ = os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if !strings.Contains(string(sum), "nothing to attribute") {
		t.Errorf("empty attribution:\n%s", sum)
	}
}

// Each vantage point is its own row, after the external load balancer's,
// new before reused within each.
func TestVantagePollersStayApart(t *testing.T) {
	var ss []results.Sample
	for i, tg := range []struct{ vantage, node string }{{"", ""}, {"direct", "master-1"}, {"direct", "master-0"}} {
		for _, c := range results.ConnectionTypes {
			s := mk("kube-api", c, i+1, time.Millisecond, results.ClassNone)
			s.Vantage, s.Target = tg.vantage, tg.node
			ss = append(ss, s)
		}
	}
	a := report.Analyze(ss)
	var names []string
	for _, p := range a.Pollers {
		names = append(names, p.Name)
	}
	want := "kube-api-new-connections kube-api-reused-connections " +
		"kube-api-http1-direct-master-0-new-connections kube-api-http1-direct-master-0-reused-connections " +
		"kube-api-http1-direct-master-1-new-connections kube-api-http1-direct-master-1-reused-connections"
	if strings.Join(names, " ") != want {
		t.Errorf("pollers %v", names)
	}
	var b strings.Builder
	if err := write.WriteSummary(&b, a, nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Vantage points side by side", "BACKEND   CONNECTIONS  external-lb  http1-direct-master-0  http1-direct-master-1", "kube-api  new          0 / 0.000s   0 / 0.000s             0 / 0.000s"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, b.String())
		}
	}
}
