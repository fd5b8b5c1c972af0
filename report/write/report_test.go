package write_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/internal/testkit"
	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/internal/reporttest"
	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The fixture is shared with report's tests of the interval rule.
var (
	t0      = reporttest.T0
	mk      = reporttest.Sample
	fixture = reporttest.Fixture
)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report/write -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file (go test ./report/write -update to accept):\n%s", name, got)
	}
}

func TestGoldenIntervals(t *testing.T) {
	a := report.Analyze(fixture())
	var buf bytes.Buffer
	extra := []origin.Interval{{
		Level: origin.LevelInfo, Source: "KubeAPIServerRollout",
		Locator: origin.Locator{Type: "Node", Keys: map[string]string{"node": "master-0"}},
		Message: origin.Message{Reason: "TerminationStart", HumanMessage: "extra items are merged and sorted", Annotations: map[string]string{"reason": "TerminationStart"}},
		From:    t0.Add(150 * time.Millisecond), To: t0.Add(150 * time.Millisecond),
	}}
	if err := write.WriteIntervals(&buf, write.IntervalItems(a.Intervals), extra); err != nil {
		t.Fatal(err)
	}
	golden(t, "intervals.json.golden", buf.Bytes())

	// The shape sippy reads.
	var sippy struct {
		Items []struct {
			Level   string `json:"level"`
			Display bool   `json:"display"`
			Source  string `json:"source"`
			Locator struct {
				Type string            `json:"type"`
				Keys map[string]string `json:"keys"`
			} `json:"locator"`
			Message struct {
				Reason       string            `json:"reason"`
				HumanMessage string            `json:"humanMessage"`
				Annotations  map[string]string `json:"annotations"`
			} `json:"message"`
			From *time.Time `json:"from"`
			To   *time.Time `json:"to"`
		} `json:"items"`
	}
	if err := json.Unmarshal(buf.Bytes(), &sippy); err != nil {
		t.Fatal(err)
	}
	first := sippy.Items[1] // items[0] is the extra item, which starts earlier
	if sippy.Items[0].Source != "KubeAPIServerRollout" {
		t.Errorf("extra item not merged in time order: %+v", sippy.Items[0])
	}
	if first.Locator.Type != "Disruption" || first.Locator.Keys["backend-disruption-name"] != "kube-api-new-connections" ||
		first.Locator.Keys["connection"] != "new" || first.Message.Reason != "DisruptionBegan" || first.Level != "Error" ||
		!first.Display || first.Source != "Disruption" || first.Message.Annotations["request-audit-id"] == "" {
		t.Errorf("first item not origin's disruption shape: %+v", first)
	}
}

func TestGoldenBackendDisruption(t *testing.T) {
	a := report.Analyze(fixture())
	var buf bytes.Buffer
	if err := write.WriteBackendDisruption(&buf, write.BackendDisruptionFor(a)); err != nil {
		t.Fatal(err)
	}
	golden(t, "backend-disruption.json.golden", buf.Bytes())
	var l origin.BackendDisruptionList
	if err := json.Unmarshal(buf.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	kn := l.BackendDisruptions["kube-api-new-connections"]
	if kn == nil || kn.DisruptedDuration.Duration != 12500*time.Millisecond || kn.ConnectionType != "New" || len(kn.DisruptionMessages) != 3 {
		t.Errorf("kube-api-new-connections: %+v", kn)
	}
	if !strings.Contains(buf.String(), `"DisruptedDuration": "12.5s"`) || !strings.Contains(buf.String(), `"DisruptedDuration": "0s"`) {
		t.Errorf("DisruptedDuration not a Go duration string as metav1.Duration writes it")
	}
}

func TestGoldenSummary(t *testing.T) {
	a := report.Analyze(fixture())
	run := &results.Run{Command: "probe", Server: "https://api.example:6443", Start: t0, Status: results.StatusComplete,
		Settings: results.Settings{Interval: results.Duration(100 * time.Millisecond), ProbeTimeout: results.Duration(15 * time.Second)}}
	end := t0.Add(2 * time.Second)
	run.End = &end
	var buf bytes.Buffer
	if err := write.WriteSummary(&buf, a, run); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.txt.golden", buf.Bytes())
}

// TestGoldenClusterSummary is the summary of a cluster run (the recorded
// 4.17 AWS run.json the HTML report's browser test opens too) whose
// measuring host stalled: it names the cluster and the control poller's
// verdict, each in one line.
func TestGoldenClusterSummary(t *testing.T) {
	f, err := results.Open(filepath.Join("..", "htmlreport", "testdata", "cluster-run"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := f.ReadRun()
	if err != nil {
		t.Fatal(err)
	}
	a := report.Analyze(fixture())
	a.Control = &report.Control{Requests: 2400, Failed: 1, Slowest: 1830 * time.Millisecond, Stalls: []results.Signal{
		{Kind: results.SignalMeasuringUnreliable, Source: results.ControlSource, Instance: "repro-control", At: t0.Add(500 * time.Millisecond), To: t0.Add(2330 * time.Millisecond)},
	}}
	var buf bytes.Buffer
	if err := write.WriteSummary(&buf, a, run); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cluster: OpenShift 4.17.3 (AWS, HighlyAvailable), Kubernetes v1.30.5\n", "measuring host: STALLED 1 time(s), 1.830s in all"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	golden(t, "summary-cluster.txt.golden", buf.Bytes())
}

func writeSamples(t testing.TB, dir string, ss []results.Sample, tail string) {
	t.Helper()
	testkit.WriteJSONL(t, filepath.Join(dir, results.SamplesFile), ss)
	if tail != "" {
		f, _ := os.OpenFile(filepath.Join(dir, results.SamplesFile), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(tail)
		f.Close()
	}
}

func TestRebuildToleratesTruncatedLastLine(t *testing.T) {
	dir := t.TempDir()
	ss := fixture()
	writeSamples(t, dir, ss, `{"backend":"kube-api","connection":"new","seq":13,"start":"2025-06-01T12:00:01.3`)
	a, err := write.Rebuild(dir)
	if err != nil {
		t.Fatalf("rebuild failed on a truncated last line: %v", err)
	}
	if !a.TruncatedLast || a.Samples != int64(len(ss)) {
		t.Errorf("truncated=%v samples=%d, want true and %d", a.TruncatedLast, a.Samples, len(ss))
	}
	for _, name := range []string{results.IntervalsFile, results.BackendDisruptionFile, results.SummaryFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	sum, _ := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if !strings.Contains(string(sum), "truncated") {
		t.Errorf("summary does not mention the truncated line:\n%s", sum)
	}
	// The same analysis as in memory: loading is faithful.
	want := report.Analyze(ss)
	if len(want.Intervals) != len(a.Intervals) || want.Pollers[0].Disrupted != a.Pollers[0].Disrupted {
		t.Errorf("loaded analysis differs from in-memory one")
	}
}

func TestRebuildWithoutSamples(t *testing.T) {
	dir := t.TempDir()
	if _, err := write.Rebuild(dir); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Errorf("missing samples.jsonl: %v", err)
	}
	os.WriteFile(filepath.Join(dir, results.SamplesFile), nil, 0o644)
	if _, err := write.Rebuild(dir); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Errorf("empty samples.jsonl: %v", err)
	}
	if _, err := write.Rebuild(filepath.Join(dir, "nope")); err == nil {
		t.Error("missing folder accepted")
	}
}

func TestRebuildCorruptMiddleLine(t *testing.T) {
	dir := t.TempDir()
	good := mk("kube-api", results.NewConnections, 0, time.Millisecond, results.ClassNone)
	line := string(good.AppendJSON(nil)) + "\n"
	os.WriteFile(filepath.Join(dir, results.SamplesFile), []byte(line+"garbage\n"+line), 0o644)
	if _, err := write.Rebuild(dir); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("want an error naming the bad line, got %v", err)
	}
}
