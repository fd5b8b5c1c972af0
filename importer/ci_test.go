package importer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/results"
)

const job417 = "periodic-ci-openshift-release-master-ci-4.17-upgrade-from-stable-4.16-e2e-aws-ovn-upgrade"
const job416 = "periodic-ci-openshift-release-master-ci-4.16-upgrade-from-stable-4.15-e2e-aws-ovn-upgrade"

// signalIv is an origin interval of a context source.
func signalIv(source, level string, keys map[string]string, reason, msg string, ann map[string]string, from, to int) origin.Interval {
	return origin.Interval{Level: level, Source: source, Display: true,
		Locator: origin.Locator{Type: "Node", Keys: keys},
		Message: origin.NewMessage(reason, msg, ann), From: at(from), To: at(to)}
}

func clusterVersionProgressing(from, to int) origin.Interval {
	return origin.Interval{Level: origin.LevelWarning, Source: "VersionState", Display: true,
		Locator: origin.Locator{Type: "ClusterVersion", Keys: map[string]string{"clusterversion": "cluster"}},
		Message: origin.NewMessage("", "Working towards 4.17.0-0.ci-2024-07-17-000000: 12 of 900 done", map[string]string{origin.AnnotationCondition: "Progressing", origin.AnnotationStatus: "True"}),
		From:    at(from), To: at(to)}
}

// ciRunFolder writes a prow-shaped run folder: <root>/origin-ci-test/logs/<job>/<build>.
func ciRunFolder(t *testing.T, root, job, build string, started time.Time, upgrade, conformance []origin.Interval, finishedOK bool) string {
	t.Helper()
	dir := filepath.Join(root, "origin-ci-test", "logs", job, build)
	junit := filepath.Join(dir, "artifacts", "e2e-aws-ovn-upgrade", "openshift-e2e-test", "artifacts", "junit")
	if err := os.MkdirAll(junit, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, v any) {
		data, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("prowjob.json", map[string]any{
		"metadata": map[string]any{"labels": map[string]string{"ci-operator.openshift.io/cloud": "aws", "job-release": "4.17", "prow.k8s.io/type": "periodic"}},
		"spec":     map[string]any{"job": job, "pod_spec": map[string]any{"containers": []any{map[string]any{"args": []string{"--gcs-upload-secret=/secrets/gcs", "--target=e2e-aws-ovn-upgrade"}}}}},
		"status":   map[string]any{"state": "success"},
	})
	write("started.json", map[string]any{"timestamp": started.Unix()})
	if finishedOK {
		write("finished.json", map[string]any{"timestamp": started.Add(3 * time.Hour).Unix(), "passed": true, "result": "SUCCESS"})
	}
	for i, ivs := range [][]origin.Interval{upgrade, conformance} {
		if ivs == nil {
			continue
		}
		suffix := started.Add(time.Duration(i) * time.Hour).Format("20060102-150405")
		writeRun(t, junit, "e2e-timelines_spyglass_"+suffix+".json", ivs, origin.FormatStructured)
		var buf bytes.Buffer
		origin.WriteBackendDisruption(&buf, origin.BackendDisruptionFor(ivs))
		os.WriteFile(filepath.Join(junit, "backend-disruption_"+suffix+".json"), buf.Bytes(), 0o644)
	}
	return dir
}

// stallRun: an etcd stall at 900 s takes every variant of kube-api, with
// etcd's own words, a firing alert and a failing test beside it; an
// ingress blip comes before the upgrade began.
func stallRun(secs int) []origin.Interval {
	var ivs []origin.Interval
	for _, b := range []string{"kube-api", "cache-kube-api"} {
		for _, c := range []string{"new", "reused"} {
			name := b + "-" + c + "-connections"
			ivs = append(ivs, ended(name, c, 0, 900))
			if secs > 0 {
				ivs = append(ivs, disruption(name, c, 900, 900+secs, headers), ended(name, c, 900+secs, 3000))
			} else {
				ivs[len(ivs)-1].To = at(3000)
			}
		}
	}
	ivs = append(ivs,
		clusterVersionProgressing(200, 2800),
		disruption("ingress-to-console-new-connections", "new", 100, 102, "EOF"),
		signalIv("EtcdLog", origin.LevelWarning, map[string]string{"node": "master-1"}, "", `apply request took too long: took 1.8s, expected-duration 100ms`, nil, 895, 896),
		signalIv("EtcdLog", origin.LevelWarning, map[string]string{"node": "master-1"}, "", `slow fdatasync took 1.2s`, nil, 1500, 1501),
		signalIv("Alert", origin.LevelWarning, map[string]string{"alert": "KubeAPIErrorBudgetBurn", "namespace": "openshift-kube-apiserver"}, "", "alert fired", map[string]string{"alertstate": "firing", "severity": "critical"}, 880, 1000),
		signalIv("Alert", origin.LevelWarning, map[string]string{"alert": "Watchdog"}, "", "always firing", map[string]string{"alertstate": "firing", "severity": "none"}, 0, 3000),
		signalIv("E2ETest", origin.LevelError, map[string]string{"e2e-test": "[sig-api-machinery] watch survives"}, "", "", nil, 850, 920),
		signalIv("E2ETest", origin.LevelInfo, map[string]string{"e2e-test": "[sig-network] services work"}, "", "", nil, 890, 930),
		signalIv("CPUMonitor", origin.LevelWarning, map[string]string{}, "", "CPU usage above 95% threshold: 97.5% on node master-1", nil, 2500, 2501),
	)
	return ivs
}

func TestOpenCIRunLabelsAndMissing(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2024, 7, 18, 9, 0, 0, 0, time.UTC)
	dir := ciRunFolder(t, root, job417, "1813938460914880512", t0, stallRun(5), stallRun(0), true)
	r, err := OpenCIRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Bucket != "origin-ci-test" || r.Job != job417 || r.Build != "1813938460914880512" || r.Target != "e2e-aws-ovn-upgrade" ||
		!r.Start.Equal(t0) || r.Result != "SUCCESS" || r.Platform != "aws" || r.FromVersion != "4.16" || r.ToVersion != "4.17" {
		t.Errorf("labels: %+v", r)
	}
	if len(r.Run.Files) != 2 || r.Run.Files[0].Phase != PhaseUpgrade || len(r.Missing) != 0 {
		t.Errorf("files %+v missing %v", r.Run.Files, r.Missing)
	}
	if r.BackendDisruption["kube-api-new-connections"] != 5 {
		t.Errorf("origin's figure: %v", r.BackendDisruption)
	}
	if want := "https://prow.ci.openshift.org/view/gs/origin-ci-test/logs/" + job417 + "/1813938460914880512"; r.ProwLink() != want {
		t.Errorf("prow %s", r.ProwLink())
	}
	bare := filepath.Join(root, "origin-ci-test", "logs", job417, "1811039682226556928")
	os.MkdirAll(bare, 0o755)
	os.WriteFile(filepath.Join(bare, "started.json"), []byte(`{"timestamp": 17`), 0o644) // truncated
	r2, err := OpenCIRun(bare)
	if err != nil {
		t.Fatal(err)
	}
	missing := strings.Join(r2.Missing, "|")
	for _, m := range []string{"prowjob.json", "finished.json", "e2e-timelines_spyglass_*.json", "truncated download"} {
		if !strings.Contains(missing, m) {
			t.Errorf("missing does not say %q: %s", m, missing)
		}
	}
	if _, err := OpenCIRun(filepath.Join(root, "nope")); err == nil {
		t.Error("a folder that is not there is not an error")
	}
}

func TestAnalyzeCIRunsEvidencePatternsAndCompare(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)
	var runs []*CIRun
	add := func(job string, n int, secs int) {
		dir := ciRunFolder(t, root, job, fmt.Sprint(1811000000000000000+n), t0.Add(time.Duration(n)*time.Hour), stallRun(secs), nil, true)
		r, err := OpenCIRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	for i, s := range []int{6, 7, 5, 0, 6, 4} {
		add(job417, i, s)
	}
	for i, s := range []int{1, 0, 2, 1, 0, 1} {
		add(job416, 100+i, s)
	}
	// a run with nothing readable is one line, not a stop
	empty := filepath.Join(root, "origin-ci-test", "logs", job417, "1811000000000000999")
	os.MkdirAll(empty, 0o755)
	re, _ := OpenCIRun(empty)
	runs = append(runs, re)
	a, b := JobSet(job416), JobSet(job417)
	rep, err := AnalyzeCIRuns(context.Background(), runs, CIOptions{A: &a, B: &b, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 13 || rep.Unreadable != 1 {
		t.Fatalf("runs %d unreadable %d", len(rep.Runs), rep.Unreadable)
	}
	first := rep.Runs[0]
	if len(first.Windows) != 2 {
		t.Fatalf("windows: %+v", first.Windows)
	}
	before, stall := first.Windows[0], first.Windows[1]
	if before.Pattern != PatternBeforeUpgrade || before.Backends[0] != "ingress-to-console-new-connections" {
		t.Errorf("before-upgrade window: %+v", before)
	}
	if len(stall.AllVariants) != 1 || stall.AllVariants[0] != "kube-api" || !stall.EveryAPIServerBackend || stall.Hint == "" {
		t.Errorf("blast radius: %+v", stall)
	}
	if stall.Signals[results.SignalEtcdSlowApply] != 1 || stall.Signals[results.SignalAlert] != 2 || stall.Signals[results.SignalEtcdWALFsync] != 0 {
		t.Errorf("signals: %v", stall.Signals)
	}
	if len(stall.TestsFailed) != 1 || len(stall.TestsPassed) != 1 {
		t.Errorf("tests: %v %v", stall.TestsFailed, stall.TestsPassed)
	}
	// the clean run of the job (build +3, 0 s) had Watchdog, the same
	// failing test and etcd's slow apply too: dismissed; the error-budget
	// alert was also there, so every signal of this synthetic pair is
	// dismissed but the ones the clean run lacks
	if first.Clean != "1811000000000000003" {
		t.Errorf("clean = %q", first.Clean)
	}
	if !strings.Contains(strings.Join(stall.Dismissed, ","), "alert/Watchdog") {
		t.Errorf("dismissed: %v", stall.Dismissed)
	}
	var any417 *PatternStats
	for i := range rep.Patterns {
		if rep.Patterns[i].Pattern == PatternRollout {
			t.Errorf("no rollout in these runs: %+v", rep.Patterns[i])
		}
	}
	for i := range rep.Compare.Rows {
		r := &rep.Compare.Rows[i]
		if r.Backend == AnyAPIServer && r.Pattern == PatternOther {
			any417 = &r.B
			if !r.Significant || r.ProbBGreater < 0.8 {
				t.Errorf("4.17 against 4.16: %+v", r)
			}
		}
	}
	if any417 == nil || any417.AtLeast != 5 || any417.Runs != 6 || any417.Median != 5 || any417.Max != 7 {
		t.Errorf("4.17 any apiserver: %+v", any417)
	}
	var text, page, js bytes.Buffer
	WriteCIText(&text, rep)
	WriteCIHTML(&page, rep)
	if err := WriteCIJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"before-upgrade", "all four variants of kube-api", "prow.ci.openshift.org/view/gs/origin-ci-test/logs/" + job417, "sippy-ng/job_runs/1811000000000000000/" + job417 + "/intervals", "e2e-timelines_spyglass_*.json"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q", want)
		}
	}
	if !strings.Contains(page.String(), "sippy intervals") || strings.Contains(page.String(), "<script") {
		t.Error("page")
	}
	out := t.TempDir()
	if err := WriteSignals(out, first); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(filepath.Join(out, results.SignalsFile))
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var s results.Signal
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil || !strings.HasPrefix(s.Source, "ci:") {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
	}
	if n == 0 {
		t.Error("no signals written")
	}
}

func TestLivenessVerdictAndBackendKinds(t *testing.T) {
	for n, want := range map[int]string{0: "clean", 1: "minor", 6: "degraded", 51: "unreliable"} {
		if got := LivenessVerdict(n); got != want {
			t.Errorf("%d: %s", n, got)
		}
	}
	for name, want := range map[string]results.BackendKind{
		"kube-api-new-connections":                    results.KindAPIServer,
		"cache-openshift-api-reused-connections":      results.KindAPIServer,
		"kube-api-http2-localhost-new-connections":    results.KindAPIServer,
		"ci-cluster-network-liveness-new-connections": results.KindCanary,
		"aws-network-liveness-new-connections":        results.KindCloud,
		"host-to-host-new-connections":                results.KindHostToHost,
		"image-registry-reused-connections":           results.KindIngress,
	} {
		if d, _ := results.DescribeBackend(name); d.Kind != want || d.Name != name {
			t.Errorf("%s: %+v", name, d)
		}
	}
}

// readNeeded keeps what origin's own decoder would, in every era's form,
// and a malformed file is still origin's one line with the position.
func TestReadNeededMatchesTheDecoder(t *testing.T) {
	dir := t.TempDir()
	ivs := append(stallRun(5), kubeEvent("master-0", "ShutdownInitiated", 700),
		origin.Interval{Level: "Info", Source: origin.SourceKubeEvent, Locator: origin.Locator{Type: "Pod", Keys: map[string]string{"namespace": "e2e-x", "pod": "p"}},
			Message: origin.NewMessage("Scheduled", "assigned", nil), From: at(5), To: at(6)})
	for _, f := range []origin.Format{origin.FormatStructured, origin.FormatDual, origin.FormatStrings} {
		p := writeRun(t, dir, fmt.Sprintf("e2e-timelines_spyglass_%d.json", f), ivs, f)
		all, err := origin.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want := needed(all)
		got, err := readNeeded(p)
		if err != nil || len(got) != len(want) || len(want) >= len(all) && f == origin.FormatStructured {
			t.Errorf("format %d: %d intervals, want %d of %d (%v)", f, len(got), len(want), len(all), err)
		}
	}
	p := filepath.Join(dir, "e2e-timelines_spyglass_bad.json")
	os.WriteFile(p, []byte("{\"items\": [\n {\"level\": \"Info\",\n"), 0o644)
	if _, err := readNeeded(p); err == nil || !strings.Contains(err.Error(), "line") || !strings.Contains(err.Error(), p) {
		t.Errorf("malformed: %v", err)
	}
}

// An analysed CI run is written as a results folder repro reads: samples
// of its apiserver backends, its placements, its evidence as
// signals.jsonl and its labels.
func TestWriteCIFolder(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2024, 7, 18, 9, 0, 0, 0, time.UTC)
	ivs := append(stallRun(5), shutdown("master-1", 880, 950))
	dir := ciRunFolder(t, root, job417, "1813938460914880512", t0, ivs, stallRun(0), true)
	r, err := OpenCIRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := AnalyzeCIRuns(context.Background(), []*CIRun{r}, CIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "out")
	if err := WriteCIFolder(out, rep.Runs[0], OutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{results.SamplesFile, results.SignalsFile, PlacementsFile, CIRunFile, results.EventsFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if p := rep.Runs[0].Windows[1]; p.Pattern != PatternRollout || p.Node != "master-1" {
		t.Errorf("window %+v", p)
	}
}

// A run the fetcher triaged out (no timelines on purpose) counts 0 s in
// the table and is not reported as unreadable or missing its timeline.
func TestTriagedRunCountsZero(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)
	dir := ciRunFolder(t, root, job417, "1813000000000000001", t0, stallRun(6), nil, true)
	tri := filepath.Join(root, "test-platform-results", "logs", job417, "1813000000000000002")
	os.MkdirAll(tri, 0o755)
	os.WriteFile(filepath.Join(tri, results.CIRunManifestFile), []byte(`{"bucket":"test-platform-results","job":"`+job417+`","build":"1813000000000000002","complete":true,"missing":[],"stages":["meta","disruption"]}`), 0o644)
	var runs []*CIRun
	for _, d := range []string{dir, tri} {
		r, err := OpenCIRun(d)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	if !runs[1].Triaged || strings.Contains(strings.Join(runs[1].Missing, ","), "e2e-timelines") {
		t.Errorf("triaged run: %+v", runs[1])
	}
	rep, err := AnalyzeCIRuns(context.Background(), runs, CIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Unreadable != 0 {
		t.Errorf("unreadable %d", rep.Unreadable)
	}
	for _, s := range rep.Patterns {
		if s.Backend == AnyAPIServer && (s.Runs != 2 || s.Affected != 1 || s.Median != 0 || s.Max != 6) {
			t.Errorf("%+v", s)
		}
	}
}

// A backend's variant family: the cache fact from its descriptor, the
// connection from origin's name.
func TestVariantStem(t *testing.T) {
	for _, c := range []struct {
		name, stem string
		cache      bool
		conn       string
	}{
		{"cache-kube-api-reused-connections", "kube-api", true, "reused"},
		{"kube-api-new-connections", "kube-api", false, "new"},
		{"cache-kube-api-http2-localhost-new-connections", "kube-api-http2-localhost", true, "new"},
		{"ingress-to-oauth-server-new-connections", "ingress-to-oauth-server", false, "new"},
	} {
		if stem, cache, conn := variantStem(c.name); stem != c.stem || cache != c.cache || conn != c.conn {
			t.Errorf("variantStem(%q) = %q %v %q, want %q %v %q", c.name, stem, cache, conn, c.stem, c.cache, c.conn)
		}
	}
}
