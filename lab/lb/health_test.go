package lb

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

// signals are the health records written to s (syncBuf, lb_test.go).
func (s *syncBuf) signals(t *testing.T) []results.Signal {
	var out []results.Signal
	for _, line := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		if line == "" {
			continue
		}
		var sig results.Signal
		if err := json.Unmarshal([]byte(line), &sig); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, sig)
	}
	return out
}

func TestHealthRecordsAreSignals(t *testing.T) {
	a, b := newTCPBackend(t, "a"), newTCPBackend(t, "b")
	var buf syncBuf
	l, err := New(Options{Listen: "127.0.0.1:0", HealthRecords: &buf,
		Health:  HealthCheck{Protocol: HealthTCP, Interval: 40 * time.Millisecond, Timeout: 200 * time.Millisecond, HealthyThreshold: 2, UnhealthyThreshold: 2},
		Targets: []Target{{Name: "a", Addr: a.ln.Addr().String()}, {Name: "b", Addr: b.ln.Addr().String()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	waitFor(t, "both healthy", func() bool { return len(buf.signals(t)) == 2 })
	l.SetRegistered("b", false)
	a.stop()
	waitFor(t, "a unhealthy", func() bool { return unhealthy(l, "a") })
	got := map[string][]string{}
	for _, s := range buf.signals(t) {
		if s.Kind != results.SignalLBTargetHealth || s.Source != HealthSource || s.At.IsZero() {
			t.Fatalf("record %+v", s)
		}
		got[s.Instance] = append(got[s.Instance], s.Labels["state"]+" "+s.Labels["reason"])
	}
	if g := strings.Join(got["a"], ","); !strings.HasPrefix(g, "healthy ,unhealthy check:") {
		t.Errorf("a: %s", g)
	}
	if g := strings.Join(got["b"], ","); g != "healthy ,unused Target.NotRegistered" {
		t.Errorf("b: %s", g)
	}
}
