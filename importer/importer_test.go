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
	"github.com/repro-tools/repro/report/compare"
	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
)

var start = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return start.Add(time.Duration(sec) * time.Second) }

// disruption is a Disruption Error interval with origin's locator and
// message, for a legacy backend.
func disruption(name, conn string, from, to int, err string) origin.Interval {
	b := origin.Backend{Name: name, Connection: conn, Instance: "openshift-tests"}
	loc := b.Locator()
	return origin.Interval{Level: origin.LevelError, Source: origin.SourceDisruption, Display: true, Locator: loc,
		Message: origin.NewMessage(origin.ReasonDisruptionBegan, loc.OldLocator()+" stopped responding to GET requests over "+conn+" connections: "+err,
			map[string]string{origin.AnnotationRequestAuditID: "a1"}),
		From: at(from), To: at(to)}
}

func ended(name, conn string, from, to int) origin.Interval {
	b := origin.Backend{Name: name, Connection: conn, Instance: "openshift-tests"}
	loc := b.Locator()
	return origin.Interval{Level: origin.LevelInfo, Source: origin.SourceDisruption, Locator: loc,
		Message: origin.NewMessage(origin.ReasonDisruptionEnded, loc.OldLocator()+" started responding to GET requests over "+conn+" connections", nil),
		From:    at(from), To: at(to)}
}

func shutdown(node string, from, to int) origin.Interval {
	return origin.Interval{Level: origin.LevelInfo, Source: origin.SourceAPIServerGracefulShutdown, Display: true,
		Locator: origin.ServerLocator(node),
		Message: origin.NewMessage(origin.ReasonGracefulAPIServerShutdown, "", map[string]string{origin.AnnotationConstructed: "graceful-shutdown-analyzer"}),
		From:    at(from), To: at(to)}
}

func kubeEvent(node, reason string, sec int) origin.Interval {
	return origin.Interval{Level: origin.LevelInfo, Source: origin.SourceKubeEvent, Display: true,
		Locator: origin.KubeEventLocator(origin.KubeAPIServerNamespace, origin.PodName(node), reason),
		Message: origin.NewMessage(reason, reason, nil), From: at(sec), To: at(sec + 1)}
}

func nodeUpdate(node, phase string, from, to int) origin.Interval {
	return origin.Interval{Level: origin.LevelInfo, Source: origin.SourceNodeState, Display: true,
		Locator: origin.Locator{Type: origin.LocatorTypeNode, Keys: map[string]string{origin.KeyNode: node}},
		Message: origin.NewMessage(origin.ReasonNodeUpdate, "node "+phase, map[string]string{origin.AnnotationPhase: phase, origin.AnnotationRoles: "worker"}),
		From:    at(from), To: at(to)}
}

const headers = `Get "https://api.ci.example:6443/api/v1/namespaces/default": net/http: timeout awaiting response headers`

const imagestreamHeaders = `Get "https://api.ci.example:6443/apis/image.openshift.io/v1/namespaces/default/imagestreams": net/http: timeout awaiting response headers`

// ciRun is an upgrade phase as origin writes it: master-0 and master-1
// roll (shutdown windows 70 s each, 130 s apart), a worker drains and
// reboots later, and three disruptions: one during master-1's shutdown,
// one during the worker's reboot, one early with nothing near it.
func ciRun(rolloutSeconds int) []origin.Interval {
	ivs := []origin.Interval{
		ended("kube-api-new-connections", "new", 0, 900),
		disruption("kube-api-new-connections", "new", 900, 900+rolloutSeconds, headers),
		ended("kube-api-new-connections", "new", 900+rolloutSeconds, 3000),
		ended("openshift-api-reused-connections", "reused", 0, 100),
		disruption("openshift-api-reused-connections", "reused", 100, 102, imagestreamHeaders),
		ended("openshift-api-reused-connections", "reused", 102, 2000),
		disruption("openshift-api-reused-connections", "reused", 2000, 2003, `Get "https://api.ci.example:6443/apis/image.openshift.io/v1/namespaces/default/imagestreams": dial tcp 10.0.0.5:6443: connect: connection refused`),
		ended("openshift-api-reused-connections", "reused", 2003, 3000),
		shutdown("master-0", 700, 770),
		kubeEvent("master-0", "ShutdownInitiated", 700),
		kubeEvent("master-0", "TerminationGracefulTerminationFinished", 770),
		shutdown("master-1", 830, 900+80),
		kubeEvent("master-1", "ShutdownInitiated", 830),
		kubeEvent("master-1", "TerminationMinimalShutdownDurationFinished", 830+69),
		kubeEvent("master-1", "TerminationGracefulTerminationFinished", 910),
		nodeUpdate("worker-a", "Drain", 1900, 1990),
		nodeUpdate("worker-a", "Reboot", 1990, 2100),
	}
	// master-1's window ends at 910; the reused disruption started in its
	// "restarting" stretch would be 910..970.
	ivs[11].To = at(910)
	origin.Sort(ivs)
	return ivs
}

func writeRun(t *testing.T, dir, name string, ivs []origin.Interval, f origin.Format) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := origin.Encode(&buf, ivs, f); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, args ...string) ([]Run, []Placement) {
	t.Helper()
	runs, err := Find(args)
	if err != nil {
		t.Fatal(err)
	}
	var ps []Placement
	for i := range runs {
		if errs := runs[i].Load(); len(errs) > 0 {
			t.Fatal(errs)
		}
		ps = append(ps, Place(runs[i])...)
	}
	return runs, ps
}

func TestPlaceEverySerialization(t *testing.T) {
	formats := map[string]origin.Format{
		"structured": origin.FormatStructured, "dual": origin.FormatDual,
		"duplicate-keys": origin.FormatDuplicateKeys, "strings": origin.FormatStrings,
	}
	for name, f := range formats {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeRun(t, filepath.Join(dir, "artifacts", "junit"), "e2e-timelines_spyglass_20260304-100000.json", ciRun(6), f)
			runs, ps := load(t, dir)
			if len(runs) != 1 || runs[0].Files[0].Phase != "" {
				t.Fatalf("runs = %+v", runs)
			}
			if len(ps) != 3 {
				t.Fatalf("placements = %+v", ps)
			}
			want := []struct {
				backend, pattern, node, phase string
				offset                        float64
			}{
				{"openshift-api-reused-connections", PatternOther, "", "", 0},
				{"kube-api-new-connections", PatternRollout, "master-1", PhaseStoppedServing, 70},
				{"openshift-api-reused-connections", PatternNodeUpdate, "worker-a", "Reboot", 10},
			}
			for i, w := range want {
				p := ps[i]
				if p.Backend != w.backend || p.Pattern != w.pattern || p.Node != w.node || p.NodePhase != w.phase {
					t.Errorf("placement %d = %s %s %s %s, want %+v", i, p.Backend, p.Pattern, p.Node, p.NodePhase, w)
				}
				if w.pattern != PatternOther && (p.OffsetSeconds == nil || *p.OffsetSeconds != w.offset) {
					t.Errorf("placement %d offset = %v, want %v", i, p.OffsetSeconds, w.offset)
				}
			}
			if ps[1].Seconds != 6 || ps[1].Error != headers || ps[1].Connection != "new" {
				t.Errorf("rollout placement = %+v", ps[1])
			}
			if len(ps[0].Nearest) == 0 || !strings.Contains(ps[0].Nearest[0], "master-0's kube-apiserver shutdown began") {
				t.Errorf("nearest = %v", ps[0].Nearest)
			}
		})
	}
}

func TestRestartingAndBeforeBuffers(t *testing.T) {
	ivs := []origin.Interval{
		shutdown("master-2", 100, 170),
		disruption("kube-api-new-connections", "new", 96, 97, headers),   // 4 s before
		disruption("kube-api-new-connections", "new", 200, 201, headers), // 30 s after the end
		disruption("kube-api-new-connections", "new", 240, 241, headers), // 70 s after: too late
	}
	dir := t.TempDir()
	p := writeRun(t, dir, "e2e-timelines_spyglass_x.json", ivs, origin.FormatStructured)
	_, ps := load(t, p)
	got := []string{ps[0].NodePhase, ps[1].NodePhase, ps[2].Pattern}
	want := []string{PhaseBeforeShutdown, PhaseRestarting, PatternOther}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("placement %d: %q, want %q", i, got[i], want[i])
		}
	}
}

func TestTwoFileUpgradeRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "1234567890")
	junit := filepath.Join(dir, "artifacts", "e2e-aws-ovn-upgrade", "openshift-e2e-test", "artifacts", "junit")
	writeRun(t, junit, "e2e-timelines_spyglass_20260304-100000.json", ciRun(6), origin.FormatStructured)
	conformance := []origin.Interval{disruption("kube-api-new-connections", "new", 5000, 5002, headers)}
	writeRun(t, junit, "e2e-timelines_spyglass_20260304-120000.json", conformance, origin.FormatStructured)
	// the everything file of the same phase must not be read twice
	writeRun(t, junit, "e2e-timelines_everything_20260304-100000.json", ciRun(6), origin.FormatStructured)
	runs, ps := load(t, dir)
	if len(runs) != 1 || len(runs[0].Files) != 2 || runs[0].Name != "1234567890" {
		t.Fatalf("runs = %+v", runs)
	}
	if runs[0].Files[0].Phase != PhaseUpgrade || runs[0].Files[1].Phase != PhaseConformance {
		t.Errorf("phases = %s, %s", runs[0].Files[0].Phase, runs[0].Files[1].Phase)
	}
	if len(ps) != 4 || ps[3].Phase != PhaseConformance || ps[3].Pattern != PatternOther || ps[1].Phase != PhaseUpgrade {
		t.Errorf("placements = %+v", ps)
	}
	var text bytes.Buffer
	if err := WriteText(&text, runs, ps); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"upgrade", "conformance", "apiserver-rollout", "master-1's kube-apiserver"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, text.String())
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, ps); err != nil {
		t.Fatal(err)
	}
	var back []map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"backendDisruptionName", "connection", "from", "to", "pattern", "node", "nodePhase", "error"} {
		if _, ok := back[1][k]; !ok {
			t.Errorf("--json lacks %q: %v", k, back[1])
		}
	}
}

func TestMalformedFileIsOneLineAndOthersSurvive(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, filepath.Join(dir, "run-a"), "e2e-timelines_spyglass_1.json", ciRun(6), origin.FormatStructured)
	bad := filepath.Join(dir, "run-b", "e2e-timelines_spyglass_1.json")
	os.MkdirAll(filepath.Dir(bad), 0o755)
	os.WriteFile(bad, []byte("{\"items\": [\n  {\"level\": \"Error\",\n   \"from\": 12}\n]}"), 0o644)
	runs, err := Find([]string{dir})
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs = %v, %v", runs, err)
	}
	if errs := runs[0].Load(); len(errs) != 0 {
		t.Fatal(errs)
	}
	errs := runs[1].Load()
	if len(errs) != 1 || strings.Contains(errs[0].Error(), "\n") || !strings.Contains(errs[0].Error(), bad+": line 3") {
		t.Fatalf("errors = %v", errs)
	}
	if len(Place(runs[0])) != 3 {
		t.Error("the good run lost its placements")
	}
}

// TestRoundTripFromRepro: repro's own origin files, read back by the
// importer, give the disruptions repro computed by origin's rules.
func TestRoundTripFromRepro(t *testing.T) {
	dir := t.TempDir()
	f, err := results.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := start.Add(250 * time.Millisecond)
	var ss []results.Sample
	for i := 0; i < 300; i++ { // 30 s at 10 per second
		for _, conn := range []results.ConnectionType{results.NewConnections, results.ReusedConnections} {
			s := results.Sample{Backend: "kube-api", Connection: conn, Seq: uint64(i + 1), Start: t0.Add(time.Duration(i) * 100 * time.Millisecond), Duration: 5 * time.Millisecond, StatusCode: 200}
			if conn == results.NewConnections && i >= 100 && i < 143 {
				s.StatusCode, s.ErrorClass, s.Error = 0, results.ClassHeaderTimeout, headers
			}
			if conn == results.ReusedConnections && i >= 150 && i < 153 {
				s.StatusCode, s.ErrorClass, s.Error = 429, results.ClassHTTP429, "HTTP 429 Too Many Requests: TooManyRequests: shutting down"
			}
			ss = append(ss, s)
		}
	}
	testkit.WriteJSONL(t, f.Path(results.SamplesFile), ss)
	testkit.WriteJSONL(t, f.Path(results.EventsFile), []results.Event{
		{Time: t0.Add(9 * time.Second), Kind: results.KindClusterEvent, Node: "master-0", Reason: "ShutdownInitiated", Message: "shutting down"},
		{Time: t0.Add(20 * time.Second), Kind: results.KindClusterEvent, Node: "master-0", Reason: "TerminationGracefulTerminationFinished", Message: "done"},
	})
	if _, err := write.Rebuild(dir); err != nil {
		t.Fatal(err)
	}
	tlName, bdName := write.OriginFiles(write.OriginRunID(nil, dir))
	_, ps := load(t, dir)
	if len(ps) != 2 {
		t.Fatalf("placements = %+v", ps)
	}
	// 4.3 s of header timeouts from 10.25 s, 0.3 s of 429 from 15.25 s: the
	// file keeps whole seconds, each interval rounded out to them.
	if ps[0].Backend != "kube-api-new-connections" || !ps[0].From.Equal(start.Add(10*time.Second)) || !ps[0].To.Equal(start.Add(15*time.Second)) ||
		ps[0].Pattern != PatternRollout || ps[0].Node != "master-0" || ps[0].Error != headers {
		t.Errorf("first = %+v", ps[0])
	}
	if ps[1].Backend != "kube-api-reused-connections" || ps[1].Error != "error running request: 429 Too Many Requests: TooManyRequests: shutting down" {
		t.Errorf("second = %+v", ps[1])
	}
	var bd origin.BackendDisruptionList
	data, err := os.ReadFile(filepath.Join(dir, bdName))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &bd); err != nil {
		t.Fatal(err)
	}
	// origin: 4.3 s over seconds 10-14 -> 5 s; 0.3 s counts 1 s.
	if d := bd.BackendDisruptions["kube-api-new-connections"].DisruptedDuration.Duration; d != 5*time.Second {
		t.Errorf("new: %v", d)
	}
	if d := bd.BackendDisruptions["kube-api-reused-connections"].DisruptedDuration.Duration; d != time.Second {
		t.Errorf("reused: %v", d)
	}
	summary, _ := os.ReadFile(f.Path(results.SummaryFile))
	if !strings.Contains(string(summary), "Origin's figures ("+bdName+") differ") {
		t.Errorf("summary does not say how origin's figures differ:\n%s", summary)
	}
	if _, err := os.Stat(filepath.Join(dir, tlName)); err != nil {
		t.Error(err)
	}
}

// TestManyRunsComparedPerPattern imports a folder of 4.16 and 4.17 runs,
// one folder per run, keeping only the apiserver-rollout pattern, and
// compares the two versions with repro compare's own code.
func TestManyRunsComparedPerPattern(t *testing.T) {
	root := t.TempDir()
	for v, secs := range map[string][]int{"4.16": {1, 2, 1, 2}, "4.17": {6, 7, 5, 6}} {
		src := filepath.Join(root, "src-"+v)
		for i, s := range secs {
			writeRun(t, filepath.Join(src, v+"-run"+string(rune('a'+i)), "junit"), "e2e-timelines_spyglass_20260304-100000.json", ciRun(s), origin.FormatStructured)
		}
		runs, ps := load(t, src)
		if len(runs) != len(secs) {
			t.Fatalf("%s: %d runs", v, len(runs))
		}
		out := filepath.Join(root, "imported-"+v)
		for _, r := range runs {
			var mine []Placement
			for _, p := range ps {
				if p.Run == r.Name {
					mine = append(mine, p)
				}
			}
			d := FolderName(out, r, true)
			if err := WriteFolder(d, r, mine, OutOptions{Pattern: PatternRollout}); err != nil {
				t.Fatal(err)
			}
			if _, err := write.Rebuild(d); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, err := compare.LoadSide(filepath.Join(root, "imported-4.16"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := compare.LoadSide(filepath.Join(root, "imported-4.17"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := compare.Compare([]compare.Side{a, b}, compare.CompareOptions{Threshold: compare.DefaultThreshold})
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	compare.WriteCompare(&txt, c)
	if !c.Worse || len(c.Verdicts) != 1 || len(c.Verdicts[0].WorseOn) != 1 || c.Verdicts[0].WorseOn[0] != "kube-api-new-connections" {
		t.Fatalf("4.17 should be worse on kube-api-new-connections only:\n%s", txt.String())
	}
	// the other patterns' disruption stayed out of the compared folders
	if strings.Contains(txt.String(), "openshift-api-reused-connections") && strings.Contains(txt.String(), "worse") &&
		len(c.Verdicts[0].WorseOn) > 1 {
		t.Errorf("other patterns leaked in:\n%s", txt.String())
	}
	t.Log("\n" + txt.String())
}

// fixtureRun is the checked-in CI run under testdata: an upgrade job's two
// files (structured form), its upgrade phase the run ciRun describes.
const fixtureRun = "testdata/1900000000000000001"

var fixtureFiles = map[string]struct {
	ivs    func() []origin.Interval
	format origin.Format
}{
	fixtureRun + "/artifacts/e2e-aws-ovn-upgrade/openshift-e2e-test/artifacts/junit/e2e-timelines_spyglass_20260304-100000.json": {
		func() []origin.Interval { return ciRun(6) }, origin.FormatStructured},
	fixtureRun + "/artifacts/e2e-aws-ovn-upgrade/openshift-e2e-test/artifacts/junit/e2e-timelines_spyglass_20260304-120000.json": {
		func() []origin.Interval {
			return []origin.Interval{ended("kube-api-new-connections", "new", 4000, 5000), disruption("kube-api-new-connections", "new", 5000, 5002, headers), ended("kube-api-new-connections", "new", 5002, 6000)}
		}, origin.FormatStructured},
	"testdata/string-era/e2e-timelines_spyglass_20230101-000000.json": {
		func() []origin.Interval { return ciRun(4) }, origin.FormatStrings},
}

// TestFixtures keeps testdata equal to what the helpers write
// (UPDATE_GOLDEN=1 rewrites it) and places the string-era run like the
// structured one.
func TestFixtures(t *testing.T) {
	for path, fx := range fixtureFiles {
		var buf bytes.Buffer
		if err := origin.Encode(&buf, fx.ivs(), fx.format); err != nil {
			t.Fatal(err)
		}
		if os.Getenv("UPDATE_GOLDEN") != "" {
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, buf.Bytes()) {
			t.Errorf("%s differs from its helper (UPDATE_GOLDEN=1 rewrites it)", path)
		}
	}
	_, structured := load(t, fixtureRun)
	_, old := load(t, "testdata/string-era")
	if len(structured) != 4 || len(old) != 3 {
		t.Fatalf("placements: %d and %d", len(structured), len(old))
	}
	for i := range old {
		if old[i].Pattern != structured[i].Pattern || old[i].Node != structured[i].Node || old[i].NodePhase != structured[i].NodePhase {
			t.Errorf("string era %d = %+v, structured %+v", i, old[i], structured[i])
		}
	}
}
