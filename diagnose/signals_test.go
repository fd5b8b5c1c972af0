package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/internal/testkit"
	"github.com/repro-tools/repro/results"
)

func writeSignals(t *testing.T, dir string, ss ...results.Signal) {
	t.Helper()
	testkit.WriteJSONL(t, filepath.Join(dir, results.SignalsFile), ss)
}

func anyLine(l []string, sub string) string {
	for _, s := range l {
		if strings.Contains(s, sub) {
			return s
		}
	}
	return ""
}

// Every variant of every backend stalls at once, with etcd's slow applies
// beside it (as imported from a CI run): the shared stall's checks cite
// the signals they used and name the kinds that were not measured; a
// load-balancer mechanism's prediction of no pressure fails. Without the
// file, the checks say it is missing.
func TestSignalsAreCitedByTheStallChecks(t *testing.T) {
	stall := func(b string, c results.ConnectionType, seq uint64) (results.ErrorClass, int) {
		if seq >= 100 && seq < 110 {
			return results.ClassHeaderTimeout, 0
		}
		return results.ClassNone, 200
	}
	dir := synthFolder(t, results.BackendOrder, stall)
	r, err := Diagnose(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l := anyLine(assessment(t, r, "shared-stall").Untested, "etcd/CPU signals"); !strings.Contains(l, MissingSignals) {
		t.Errorf("without signals.jsonl the check does not say it is missing: %q", l)
	}
	base := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	writeSignals(t, dir,
		results.Signal{Kind: results.SignalEtcdSlowApply, Source: "ci:EtcdLog", Instance: "master-1", At: base.Add(9 * time.Second), Value: 1.8, Message: "apply request took too long"},
		results.Signal{Kind: results.SignalE2ETest, Source: "ci:E2ETest", Instance: "[sig-x] y", At: base, To: base.Add(time.Minute), Labels: map[string]string{"result": "failed"}},
		results.Signal{Kind: results.SignalMeasuringUnreliable, Source: "ci:Disruption", Instance: "ci-cluster-network-liveness-new-connections", At: base.Add(10 * time.Second), To: base.Add(12 * time.Second), Value: 1},
		// long before the failures: not beside them
		results.Signal{Kind: results.SignalNodeCPU, Source: "ci:CPUMonitor", Instance: "master-0", At: base.Add(-time.Hour), Value: 0.97},
	)
	r, err = Diagnose(dir)
	if err != nil {
		t.Fatal(err)
	}
	shared := assessment(t, r, "shared-stall")
	l := anyLine(shared.For, "etcd/CPU signals")
	if !strings.Contains(l, "etcd-slow-apply 1 (ci:EtcdLog)") || !strings.Contains(l, "not measured: etcd-wal-fsync") || strings.Contains(l, "node-cpu 1") {
		t.Errorf("shared-stall's signal check: %q (for %v, against %v)", l, shared.For, shared.Against)
	}
	if !strings.Contains(l, "measuring side itself failed 1 time") {
		t.Errorf("the canary's failure is not said: %q", l)
	}
	if l := anyLine(shared.For, "blast radius"); !strings.Contains(l, "12 of 12") {
		t.Errorf("blast radius: %q", l)
	}
	lb := assessment(t, r, "lb-routes-to-stopped-target")
	if l := anyLine(lb.Against, "etcd/CPU signals"); l == "" {
		t.Errorf("a load-balancer mechanism is not held against etcd pressure: for %v against %v", lb.For, lb.Against)
	}
	os.WriteFile(filepath.Join(dir, results.SignalsFile), []byte("{\"kind\":\n"), 0o644)
	if _, err := Diagnose(dir); err == nil || !strings.Contains(err.Error(), "signals.jsonl line 1") {
		t.Errorf("malformed signals: %v", err)
	}
}
