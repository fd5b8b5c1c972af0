package importer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/internal/testkit"
	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
)

// TestRunStartsAtItsFirstInterval: a run whose sampler file holds only
// Error intervals (no DisruptionEnded), the first of them after
// master-0's shutdown began, is written with its rollout as a rollout, not
// as baseline (issue 23, 6a).
func TestRunStartsAtItsFirstInterval(t *testing.T) {
	root := t.TempDir()
	ivs := []origin.Interval{
		nodeUpdate("worker-a", "Drain", 0, 30),
		shutdown("master-0", 700, 770),
		kubeEvent("master-0", "ShutdownInitiated", 700),
		kubeEvent("master-0", "TerminationGracefulTerminationFinished", 770),
		disruption("kube-api-new-connections", "new", 720, 725, headers),
	}
	writeRun(t, filepath.Join(root, "run"), "e2e-timelines_spyglass_20260304-100000.json", ivs, origin.FormatStructured)
	runs, ps := load(t, filepath.Join(root, "run"))
	out := filepath.Join(root, "out")
	if err := WriteFolder(out, runs[0], ps, OutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := write.Rebuild(out); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, results.PlacementsFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Placements []report.Placement `json:"placements"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	rps := doc.Placements
	if len(rps) == 0 || rps[0].Iteration != 1 || rps[0].Node != "master-0" {
		t.Fatalf("the disruption inside master-0's shutdown is not placed in the rollout: %+v", rps)
	}
}

// TestNeverCompletedNodeUpdateHasItsPhase: origin's state tracker closes a
// phase still open at the end without a "phase" annotation; the phase is
// in "state" (newer origin) or the message (older) (issue 23, 6c).
func TestNeverCompletedNodeUpdateHasItsPhase(t *testing.T) {
	newer := origin.Interval{Level: origin.LevelWarning, Source: origin.SourceNodeState, Display: true,
		Locator: origin.Locator{Type: origin.LocatorTypeNode, Keys: map[string]string{origin.KeyNode: "worker-a", "row": "NodeUpdatePhases"}},
		Message: origin.NewMessage(origin.ReasonNodeUpdate, "never completed", map[string]string{"state": "OperatingSystemUpdate", origin.AnnotationConstructed: "node-lifecycle-constructor", origin.AnnotationRoles: "worker"}),
		From:    at(100), To: at(400)}
	older := newer
	older.Locator = origin.Locator{Type: origin.LocatorTypeNode, Keys: map[string]string{origin.KeyNode: "worker-b"}}
	older.Message = origin.NewMessage(origin.ReasonNodeUpdate, "roles/worker state/OperatingSystemUpdate never completed", nil)
	ivs := []origin.Interval{newer, older,
		disruption("ingress-to-console-new-connections", "new", 150, 152, "EOF")}
	dir := t.TempDir()
	writeRun(t, dir, "e2e-timelines_spyglass_20260304-100000.json", ivs, origin.FormatStructured)
	_, ps := load(t, dir)
	if len(ps) != 1 || ps[0].Pattern != PatternNodeUpdate || ps[0].NodePhase != "OperatingSystemUpdate" {
		t.Fatalf("placement = %+v", ps)
	}
	if p := NodeUpdatePhase(older); p != "OperatingSystemUpdate" {
		t.Errorf("older form: phase %q", p)
	}
}

// TestNonAPIServerBackendsArePlacedNotSampled: an ingress and a canary
// disruption are placed with their kind and origin's instance, but only
// kube-api becomes repro samples (issue 23, 6e).
func TestNonAPIServerBackendsArePlacedNotSampled(t *testing.T) {
	root := t.TempDir()
	canary := disruption("ci-cluster-network-liveness-new-connections", "new", 300, 302, "dial tcp: i/o timeout")
	canary.Locator.Keys[origin.KeyDisruption] = "ci-cluster-network-liveness"
	ivs := append(ciRun(5),
		disruption("ingress-to-oauth-server-new-connections", "new", 905, 910, "EOF"),
		canary)
	writeRun(t, filepath.Join(root, "run"), "e2e-timelines_spyglass_20260304-100000.json", ivs, origin.FormatStructured)
	runs, ps := load(t, filepath.Join(root, "run"))
	kinds := map[string]results.BackendKind{}
	for _, p := range ps {
		kinds[p.Backend] = p.Kind
		if p.Backend == "ci-cluster-network-liveness-new-connections" && p.Instance != "ci-cluster-network-liveness" {
			t.Errorf("instance %q", p.Instance)
		}
	}
	if kinds["kube-api-new-connections"] != results.KindAPIServer || kinds["ingress-to-oauth-server-new-connections"] != results.KindIngress ||
		kinds["ci-cluster-network-liveness-new-connections"] != results.KindCanary {
		t.Fatalf("kinds = %v", kinds)
	}
	out := filepath.Join(root, "out")
	if err := WriteFolder(out, runs[0], ps, OutOptions{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, results.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"ingress-to-oauth-server", "ci-cluster-network-liveness"} {
		if bytes.Contains(data, []byte(`"`+b+`"`)) {
			t.Errorf("samples.jsonl holds %s: the apiserver catalogue would read it as an apiserver failure", b)
		}
	}
	pl, _ := os.ReadFile(filepath.Join(out, PlacementsFile))
	if !bytes.Contains(pl, []byte("ingress-to-oauth-server-new-connections")) {
		t.Error("the ingress placement is lost from the folder")
	}
}

// TestOwnTimelinesAgreeWithBackendDisruption: repro's own origin files hold
// no zero-length Error interval, and backend-disruption_*.json agrees with
// the timeline file by origin's rule (issue 23, 6d).
func TestOwnTimelinesAgreeWithBackendDisruption(t *testing.T) {
	dir := t.TempDir()
	f, err := results.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := start.Add(100 * time.Millisecond)
	// 10 per second for 60 s; short failures of 200-300 ms with changing
	// error text, as an etcd stall gives
	var ss []results.Sample
	for i := 0; i < 600; i++ {
		s := results.Sample{Backend: "kube-api", Connection: results.NewConnections, Seq: uint64(i + 1), Start: t0.Add(time.Duration(i) * 100 * time.Millisecond), Duration: 5 * time.Millisecond, StatusCode: 200}
		if i%50 >= 3 && i%50 < 5 {
			s.StatusCode, s.ErrorClass, s.Error = 0, results.ClassHeaderTimeout, headers
		}
		if i%50 == 5 {
			s.StatusCode, s.ErrorClass, s.Error = 503, results.ClassHTTP5xx, "HTTP 503 Service Unavailable"
		}
		ss = append(ss, s)
	}
	testkit.WriteJSONL(t, f.Path(results.SamplesFile), ss)
	if _, err := write.Rebuild(dir); err != nil {
		t.Fatal(err)
	}
	tlName, bdName := write.OriginFiles(write.OriginRunID(nil, dir))
	ivs, err := origin.ReadFile(filepath.Join(dir, tlName))
	if err != nil {
		t.Fatal(err)
	}
	var errs []origin.Interval
	for _, iv := range ivs {
		if iv.IsDisruption() && iv.Level == origin.LevelError {
			if !iv.To.After(iv.From) {
				t.Errorf("zero-length Error interval: %s", iv.String())
			}
			errs = append(errs, iv)
		}
	}
	var bd origin.BackendDisruptionList
	data, _ := os.ReadFile(filepath.Join(dir, bdName))
	if err := json.Unmarshal(data, &bd); err != nil {
		t.Fatal(err)
	}
	got := bd.BackendDisruptions["kube-api-new-connections"].DisruptedDuration.Duration
	if want := origin.DisruptedDuration(errs); got != want || got == 0 {
		t.Errorf("backend-disruption says %v, the timeline file by origin's rule %v", got, want)
	}
	if !strings.Contains(bdName, "backend-disruption_") {
		t.Error(bdName)
	}
}

// TestUnsetEndIsZeroLength: origin writes an interval whose end was never
// set as "to": null and counts it as zero length (monitorapi
// Intervals.Duration). The text says so, the JSON gives its start (not year
// 1) and --out writes no failed sample for it, where it used to stretch the
// failure to the run's end (issue 23, 6b).
func TestUnsetEndIsZeroLength(t *testing.T) {
	root := t.TempDir()
	open := disruption("kube-api-new-connections", "new", 20, 0, headers)
	open.To = time.Time{}
	ivs := []origin.Interval{
		shutdown("master-0", 10, 80),
		kubeEvent("master-0", "ShutdownInitiated", 10),
		open,
		disruption("kube-api-reused-connections", "reused", 30, 32, headers),
		ended("kube-api-reused-connections", "reused", 32, 3000),
	}
	writeRun(t, filepath.Join(root, "run"), "e2e-timelines_spyglass_20260304-100000.json", ivs, origin.FormatStructured)
	runs, ps := load(t, filepath.Join(root, "run"))

	var text bytes.Buffer
	if err := WriteText(&text, runs, ps); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "+0s (no end recorded: origin counts it as zero)") {
		t.Errorf("the text does not say the unset end counts as zero:\n%s", text.String())
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, ps); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(js.String(), "0001-01-01") {
		t.Errorf("the JSON gives an unset end as year 1:\n%s", js.String())
	}
	var found bool
	for _, p := range ps {
		if p.Connection == "new" {
			found = true
			if !p.UnsetEnd || !p.To.Equal(p.From) || p.Seconds != 0 {
				t.Errorf("unset end placed as %+v, want To = From, 0 s, UnsetEnd", p)
			}
		}
	}
	if !found {
		t.Fatalf("the open interval was not placed: %+v", ps)
	}

	out := filepath.Join(root, "out")
	if err := WriteFolder(out, runs[0], ps, OutOptions{}); err != nil {
		t.Fatal(err)
	}
	failed := map[string]int{}
	if _, err := results.ReadJSONL(filepath.Join(out, results.SamplesFile), func(line []byte) error {
		var s results.Sample
		if err := s.UnmarshalJSON(line); err != nil {
			return err
		}
		if s.ErrorClass != "" {
			failed[string(s.Connection)]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if failed["new"] != 0 {
		t.Errorf("--out wrote %d failed samples for an interval with no end; origin counts it as zero", failed["new"])
	}
	if failed["reused"] != 2 {
		t.Errorf("--out wrote %d failed reused samples, want 2 (30-32 s)", failed["reused"])
	}
}

// TestSpanBeyondAnyCIRunIsRefused: --out writes a sample a second for the
// run's whole span, so a file whose times span years is refused in one line
// instead of writing without bound.
func TestSpanBeyondAnyCIRunIsRefused(t *testing.T) {
	root := t.TempDir()
	ivs := []origin.Interval{
		disruption("kube-api-new-connections", "new", 20, 22, headers),
		nodeUpdate("worker-a", "Drain", 0, 3*365*24*3600),
	}
	writeRun(t, filepath.Join(root, "run"), "e2e-timelines_spyglass_20260304-100000.json", ivs, origin.FormatStructured)
	runs, ps := load(t, filepath.Join(root, "run"))
	err := WriteFolder(filepath.Join(root, "out"), runs[0], ps, OutOptions{})
	if err == nil || !strings.Contains(err.Error(), "longer than any CI run") {
		t.Fatalf("a span of three years was not refused: %v", err)
	}
}
