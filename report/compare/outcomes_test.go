package compare

import (
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

func TestCompareShowsTheClientsView(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var ss []results.Sample
	for i := 0; i < 40; i++ {
		s := results.Sample{Backend: "kube-api", Connection: results.NewConnections, Seq: uint64(i), Start: t0.Add(time.Duration(i) * 100 * time.Millisecond), Duration: 5 * time.Millisecond}
		if i == 3 {
			s.ErrorClass, s.StatusCode, s.RetryAfter = results.ClassHTTP429, 429, "1"
		}
		if i == 4 {
			s.ErrorClass, s.Error = results.ClassHeaderTimeout, "net/http: timeout awaiting response headers"
		}
		ss = append(ss, s)
	}
	ff := FiguresOf("a", nil, report.Analyze(ss), nil)
	c := &Comparison{Sides: []SideInfo{{Role: "A", Folders: []FolderFigures{ff}}}}
	var b strings.Builder
	writeCompareOutcomes(&b, c)
	// 2 failures: 1 retryable (recovered by client-go a second later), 1
	// failed (a timeout, never retried).
	if !strings.Contains(b.String(), "kube-api-new-connections  A     2         1          1       1") {
		t.Fatalf("compare outcomes:\n%s", b.String())
	}
}
