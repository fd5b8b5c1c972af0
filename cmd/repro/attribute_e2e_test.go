package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/attribute"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

// Attribution end to end on the lab: a run with --attribute reads the lab's
// audit logs (written with an OpenShift-shaped policy, RequestReceived
// omitted) through the apiservers' real node proxy to the lab's kubelet
// endpoints, and each profile's failures must land where its mechanism puts
// them.
//
// The check* helpers take a results folder of a run made with --attribute,
// and are called from the profile runs (profiles_e2e_test.go) and the
// healthy rollout (run_e2e_test.go) on the runs they already make, so no
// lab run happens twice in CI.

// attributionOf reads attribution.jsonl and checks its contract: one record
// per failed sample, each with a verdict, and the summary's section.
func attributionOf(t *testing.T, dir string) []attribute.Record {
	t.Helper()
	recs, err := attribute.ReadRecords(filepath.Join(dir, results.AttributionFile))
	if err != nil {
		t.Fatalf("attribution.jsonl: %v (was the run made with --attribute?)", err)
	}
	failed, err := attribute.ReadFailed(filepath.Join(dir, results.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(failed) {
		t.Errorf("%d attribution records for %d failed samples", len(recs), len(failed))
	}
	ids := map[string]bool{}
	for _, s := range failed {
		ids[s.AuditID] = true
	}
	counts := map[string]int{}
	for _, r := range recs {
		counts[r.Verdict]++
		if !ids[r.AuditID] {
			t.Errorf("record for %s, which is no failed sample", r.AuditID)
		}
		if r.Verdict == "" || r.Detail == "" || r.Backend == "" || r.Connection == "" {
			t.Errorf("incomplete record %+v", r)
		}
	}
	summary, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(summary), "Where the failed requests went") {
		t.Errorf("summary.txt has no attribution section")
	}
	t.Logf("FIGURE attribution verdicts: %v of %d failed samples", counts, len(failed))
	return recs
}

// checkAttributionHealthy: a healthy run has nothing to attribute (the
// healthy lab's rare instant at a listener's close aside, which must then be
// attributed like any failure).
func checkAttributionHealthy(t *testing.T, dir string) {
	t.Helper()
	recs := attributionOf(t, dir)
	if len(recs) == 0 {
		summary, _ := os.ReadFile(filepath.Join(dir, results.SummaryFile))
		if !strings.Contains(string(summary), "nothing to attribute") {
			t.Errorf("summary.txt does not say there was nothing to attribute")
		}
	}
}

// checkAttributionEtcdStall: the stall's header timeouts were received by
// master-1, whose apiserver logged them only once etcd answered again,
// after the client had given up.
func checkAttributionEtcdStall(t *testing.T, dir string) {
	t.Helper()
	n := 0
	for _, r := range attributionOf(t, dir) {
		if r.Class != results.ClassHeaderTimeout {
			continue
		}
		n++
		if r.Verdict != attribute.ReceivedNotAnswered || r.Node != "master-1" {
			t.Errorf("%s seq %d (%s): %s on %q, want received-not-answered on master-1: %s", r.Poller, r.Seq, r.AuditID, r.Verdict, r.Node, r.Detail)
		}
	}
	if n == 0 {
		t.Error("no header timeout attributed")
	}
}

// checkAttributionBlackhole: a handshake (or, through the kernel LB, a
// connect) the blackhole swallowed never carried a request, and no audit
// log has it.
func checkAttributionBlackhole(t *testing.T, dir string) {
	t.Helper()
	n := 0
	for _, r := range attributionOf(t, dir) {
		// The proxy completes the connect and the handshake goes
		// unanswered; through the kernel LB the SYN itself is dropped.
		if r.Class != results.ClassTLS && r.Class != results.ClassTLSHandshakeTimeout && r.Class != results.ClassConnectTimeout {
			continue
		}
		n++
		if r.Verdict != attribute.NotReceived {
			t.Errorf("%s seq %d (%s): %s, want not-received: %s", r.Poller, r.Seq, r.AuditID, r.Verdict, r.Detail)
		}
	}
	if n == 0 {
		t.Error("no handshake failure attributed")
	}
}

// checkAttributionShortShutdownDelay: each failure either never reached an
// apiserver (refused), or was answered 5xx/429 by a named node.
func checkAttributionShortShutdownDelay(t *testing.T, dir string) {
	t.Helper()
	recs := attributionOf(t, dir)
	if len(recs) == 0 {
		t.Error("nothing attributed")
	}
	for _, r := range recs {
		switch {
		case r.Verdict == attribute.NotReceived:
		case r.Verdict == attribute.Answered && (r.Code == 429 || r.Code >= 500) && r.Node != "":
		default:
			t.Errorf("%s seq %d (%s, %s): %s code %d on %q, want not-received or answered 5xx/429 with its node: %s", r.Poller, r.Seq, r.AuditID, r.Class, r.Verdict, r.Code, r.Node, r.Detail)
		}
	}
}

// TestRunVantageDirectOnTheLab: --vantage external-lb --vantage direct polls
// through the load balancer and each apiserver's own port, every direct
// poller named after its node, and the summary lists them side by side.
// The run is a probe-length baseline scenario: no rollout needed.
func TestRunVantageDirectOnTheLab(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the lab")
	}
	labDir, labArgs := labDirArgs(t)
	out := filepath.Join(t.TempDir(), "results")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"run", "--scenario", "baseline", "--out", out, "--baseline", "4s", "--cool-down", "1s",
		"--backends", "kube-api,cache-kube-api", "--vantage", "external-lb", "--vantage", "direct"}, labArgs...)
	res := repro(t, ctx, args...)
	noLabProcesses(t, labDir)
	if res.code != 0 {
		t.Fatalf("exit %d", res.code)
	}
	a, err := report.LoadSamples(filepath.Join(out, results.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range a.Pollers {
		names = append(names, p.Name)
		if p.Samples < 10 {
			t.Errorf("%s: %d samples", p.Name, p.Samples)
		}
	}
	want := []string{"kube-api-new-connections", "kube-api-reused-connections"}
	for _, n := range []string{"master-0", "master-1", "master-2"} {
		want = append(want, "kube-api-http1-direct-"+n+"-new-connections", "kube-api-http1-direct-"+n+"-reused-connections")
	}
	got := strings.Join(names, " ")
	if !strings.HasPrefix(got, strings.Join(want, " ")) {
		t.Errorf("pollers %v, want kube-api's first: %v", names, want)
	}
	summary, _ := os.ReadFile(filepath.Join(out, results.SummaryFile))
	for _, n := range want {
		if !strings.Contains(string(summary), n) {
			t.Errorf("summary.txt has no row for %s", n)
		}
	}
	// Each direct sample reached its own node: the remote address is that
	// apiserver's port, never the load balancer's.
	ports := map[string]string{}
	_, err = results.ReadJSONL(filepath.Join(out, results.SamplesFile), func(line []byte) error {
		var s results.Sample
		if err := s.UnmarshalJSON(line); err != nil {
			return err
		}
		if s.Vantage == "direct" && s.RemoteAddr != "" {
			if p, ok := ports[s.Target]; ok && p != s.RemoteAddr {
				t.Errorf("direct %s: samples went to %s and %s", s.Target, p, s.RemoteAddr)
			}
			ports[s.Target] = s.RemoteAddr
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 3 {
		t.Errorf("direct samples reached %v, want three nodes", ports)
	}
}
