package diagnose

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

// threeReusedTimeouts is the measured case of connections pinned to an
// unreachable target (--lab-set lb-reset-on-unhealthy=false --lab-set
// lb-blackhole=150s): three header timeouts, all on reused connections,
// each on its own poller.
func threeReusedTimeouts(b string, c results.ConnectionType, seq uint64) (results.ErrorClass, int) {
	if c != results.ReusedConnections {
		return results.ClassNone, 200
	}
	switch {
	case b == "kube-api" && seq == 100, b == "openshift-api" && seq == 140, b == "cache-oauth-api" && seq == 180:
		return results.ClassHeaderTimeout, 0
	}
	return results.ClassNone, 200
}

// A handful of failures that share one signature is evidence, not noise:
// healthy's baseline does not absorb it, and pinned-connections, whose
// prediction it is, ranks above it.
func TestOneSignatureIsNotHealthy(t *testing.T) {
	r, err := Diagnose(synthFolder(t, results.BackendOrder, threeReusedTimeouts))
	if err != nil {
		t.Fatal(err)
	}
	if r.Figures.Signature != "header-timeout on reused connections" {
		t.Errorf("signature %q", r.Figures.Signature)
	}
	h := assessment(t, r, "healthy")
	if h.Verdict != Inconsistent {
		logResult(t, r)
		t.Fatalf("healthy %s, want inconsistent: three reused header timeouts are a pattern", h.Verdict)
	}
	p := assessment(t, r, "pinned-connections")
	if p.Verdict != Consistent || p.Rank != 1 {
		logResult(t, r)
		t.Fatalf("pinned-connections %s at rank %d, want consistent first", p.Verdict, p.Rank)
	}
	for _, name := range []string{"etcd-stall", "short-shutdown-delay", "reset-on-unhealthy"} {
		if a := assessment(t, r, name); a.Verdict != Inconsistent {
			t.Errorf("%s %s on reused header timeouts", name, a.Verdict)
		}
	}
}

// The same failures inside a window where the measuring side itself was
// unreliable (the control poller stalled) are discounted: healthy holds
// and says why.
func TestFailuresInAnUnreliableWindowAreDiscounted(t *testing.T) {
	dir := synthFolder(t, results.BackendOrder, threeReusedTimeouts)
	base := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	w := results.Signal{Kind: results.SignalMeasuringUnreliable, Source: "control-poller", Instance: "repro-control", At: base, To: base.Add(time.Minute)}
	writeHealthSignals(t, dir, w)
	r, err := Diagnose(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := assessment(t, r, "healthy")
	if h.Verdict != Consistent || !strings.Contains(strings.Join(h.For, " "), "discounted") {
		logResult(t, r)
		t.Fatalf("healthy %s %v, want consistent with the failures discounted", h.Verdict, h.For)
	}
	if o := r.Figures.Outcomes; o == nil || o.Discounted != 3 || o.ClientLost != 3 {
		t.Errorf("outcomes %+v, want 3 discounted, 3 lost by client-go (timeouts are not retried)", o)
	}
}

// A new kube-apiserver ready before its path to the aggregated servers
// (OCPBUGS-100065): 503s on the aggregated backends only. The fixture has
// no timeline or served-by records, so the fingerprint is consistent as
// far as it can be tested, tied with the aggregator; a kube-api failure
// rules it out.
func TestAggregatedPathNotReady(t *testing.T) {
	r, err := Diagnose(synthFolder(t, results.BackendOrder, func(b string, c results.ConnectionType, seq uint64) (results.ErrorClass, int) {
		if (strings.HasSuffix(b, "openshift-api") || strings.HasSuffix(b, "oauth-api")) && seq >= 50 && seq < 70 {
			return results.ClassHTTP5xx, 503
		}
		return results.ClassNone, 200
	}))
	if err != nil {
		t.Fatal(err)
	}
	a := assessment(t, r, "aggregated-path-not-ready")
	if a.Verdict != Consistent || a.Rank != assessment(t, r, "aggregator").Rank {
		logResult(t, r)
		t.Fatalf("aggregated-path-not-ready %s rank %d", a.Verdict, a.Rank)
	}
	r2, err := Diagnose(synthFolder(t, results.BackendOrder, func(b string, c results.ConnectionType, seq uint64) (results.ErrorClass, int) {
		if seq >= 50 && seq < 70 {
			return results.ClassHTTP5xx, 503
		}
		return results.ClassNone, 200
	}))
	if err != nil {
		t.Fatal(err)
	}
	if a := assessment(t, r2, "aggregated-path-not-ready"); a.Verdict != Inconsistent {
		t.Errorf("with kube-api failing too: %s", a.Verdict)
	}
}

// Target health alone decides late-deregistration against early-healthy:
// when the LB took a restarted node back, against its apiserver's ready
// time; and its unhealthy verdict after SIGTERM. Either source reads the
// same.
func TestTargetHealthDecidesWhenTheLBTookANodeBack(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tl := &report.Timeline{Iterations: []report.Iteration{{N: 1, Nodes: []report.NodeWindow{
		{Node: "master-0", Terminating: at(10), Starting: at(130), Ready: at(160)},
		{Node: "master-1", Terminating: at(200), Starting: at(340), Ready: at(350)},
	}}}}
	for _, source := range []string{"lab-lb", "aws-elbv2"} {
		rec := func(node, state string, s int) results.Signal {
			return results.Signal{Kind: results.SignalLBTargetHealth, Source: source, Instance: node, Labels: map[string]string{"state": state}, At: at(s)}
		}
		dir := t.TempDir()
		// master-0: unhealthy 20 s after SIGTERM, back 20 s before ready
		// (early); master-1: unhealthy 60 s after, back 5 s before ready,
		// within one health-check interval (10 s) of it: not early, the
		// ready event lags /readyz.
		writeHealthSignals(t, dir, rec("master-0", "healthy", 0), rec("master-0", "unhealthy", 30), rec("master-0", "healthy", 140),
			rec("master-1", "healthy", 0), rec("master-1", "unhealthy", 260), rec("master-1", "healthy", 345))
		sigs, _, err := results.ReadSignals(filepath.Join(dir, results.SignalsFile))
		if err != nil {
			t.Fatal(err)
		}
		recs, sources := lbHealthRecords(sigs)
		f := &Figures{Detection: 30 * time.Second, Failures: 1}
		f.lbHealth(recs, sources, tl)
		if !f.LBHealth || f.HealthyVsReady["before-ready"] != 1 || f.HealthyVsReady["after-ready"] != 1 {
			t.Fatalf("%s: healthy vs ready %v", source, f.HealthyVsReady)
		}
		if f.LBVerdicts["within-detection"] != 1 || f.LBVerdicts["after-detection"] != 1 || !f.HasLBVerdicts {
			t.Fatalf("%s: verdicts %v", source, f.LBVerdicts)
		}
		if o := healthyVsReady(0.5, true).eval(f); !o.ok || !strings.Contains(o.evidence, source) {
			t.Errorf("%s: early check %+v", source, o)
		}
		if o := healthyVsReady(0.6, false).eval(f); o.ok {
			t.Errorf("%s: late check held on one of two nodes: %+v", source, o)
		}
	}
	if o := healthyVsReady(0.6, true).eval(&Figures{}); o.missing != MissingLBHealth {
		t.Errorf("without records: %+v", o)
	}
}

func writeHealthSignals(t *testing.T, dir string, sigs ...results.Signal) {
	t.Helper()
	var b strings.Builder
	for _, s := range sigs {
		line, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, results.SignalsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
