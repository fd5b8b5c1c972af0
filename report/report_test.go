package report_test

import (
	"testing"
	"time"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/internal/reporttest"
	"github.com/repro-tools/repro/results"
)

// The fixture is shared with report/write's golden tests.
var (
	t0      = reporttest.T0
	mk      = reporttest.Sample
	fixture = reporttest.Fixture
)

func TestIntervalRules(t *testing.T) {
	a := report.Analyze(fixture())
	type want struct {
		name    string
		class   results.ErrorClass
		from    int // seq whose start opens it
		to      time.Time
		samples int
		outage  bool
		open    bool
	}
	at := func(seq int) time.Time { return t0.Add(time.Duration(seq)*100*time.Millisecond + 137*time.Microsecond) }
	wants := []want{
		{"kube-api-new-connections", results.ClassHeaderTimeout, 2, at(5), 3, false, false},
		{"kube-api-reused-connections", results.ClassHTTP429, 3, at(7), 3, false, false},
		{"kube-api-new-connections", results.ClassReset, 5, at(6), 1, false, false},
		{"kube-api-new-connections", results.ClassDNS, 8, at(9), 1, true, false},
		// open at the end: closes at the last sample's end (seq 12 + 12s)
		{"kube-api-new-connections", results.ClassHeaderTimeout, 11, at(12).Add(12 * time.Second), 2, false, true},
	}
	if len(a.Intervals) != len(wants) {
		for _, iv := range a.Intervals {
			t.Logf("%s %s %v %v", iv.Name, iv.Class, iv.From, iv.To)
		}
		t.Fatalf("got %d intervals, want %d", len(a.Intervals), len(wants))
	}
	for i, w := range wants {
		iv := a.Intervals[i]
		if iv.Name != w.name || iv.Class != w.class || !iv.From.Equal(at(w.from)) || !iv.To.Equal(w.to) ||
			iv.Samples != w.samples || iv.SamplerOutage != w.outage || iv.Open != w.open {
			t.Errorf("interval %d: got %s %s %v..%v samples=%d outage=%v open=%v, want %+v",
				i, iv.Name, iv.Class, iv.From, iv.To, iv.Samples, iv.SamplerOutage, iv.Open, w)
		}
	}
	byName := map[string]report.PollerSummary{}
	for _, p := range a.Pollers {
		byName[p.Name] = p
	}
	kn := byName["kube-api-new-connections"]
	wantDisrupted := 300*time.Millisecond + 100*time.Millisecond + (100*time.Millisecond + 12*time.Second)
	if kn.Disrupted != wantDisrupted || kn.Intervals != 3 || kn.SamplerOutage != 100*time.Millisecond || kn.Longest != 12100*time.Millisecond {
		t.Errorf("kube-api-new-connections summary: %+v", kn)
	}
	kr := byName["kube-api-reused-connections"]
	if kr.Aborted != 1 || kr.Failures != 3 || kr.Disrupted != 400*time.Millisecond {
		t.Errorf("aborted sample must not count nor split the interval: %+v", kr)
	}
	if os := byName["openshift-api-new-connections"]; os.Skipped != 1 || os.Disrupted != 0 {
		t.Errorf("openshift-api: %+v", os)
	}
	if got := a.Pollers[0].Name; got != "kube-api-new-connections" {
		t.Errorf("poller order starts with %s", got)
	}
}
