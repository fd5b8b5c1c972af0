package report_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// mk builds a sample of a 100ms poller: tick seq, taking dur, with class.
func mk(backend string, conn results.ConnectionType, seq int, dur time.Duration, class results.ErrorClass) results.Sample {
	s := results.Sample{
		Backend: backend, Connection: conn, Seq: uint64(seq),
		Start:    t0.Add(time.Duration(seq)*100*time.Millisecond + 137*time.Microsecond),
		Duration: dur, ErrorClass: class,
		AuditID:  "00000000-0000-0000-0000-" + leftPad(seq),
		Protocol: "HTTP/1.1", StatusCode: 200,
	}
	switch class {
	case results.ClassNone:
	case results.ClassHeaderTimeout:
		s.Protocol, s.StatusCode = "", 0
		s.Error = `Get "https://api.example:6443/api/v1/namespaces/default": net/http: timeout awaiting response headers`
	case results.ClassReset:
		s.Protocol, s.StatusCode = "", 0
		s.Error = `Get "https://api.example:6443/api/v1/namespaces/default": read tcp 10.0.0.1:5555->10.0.0.2:6443: read: connection reset by peer`
	case results.ClassDNS:
		s.Protocol, s.StatusCode = "", 0
		s.Error = `Get "https://api.example:6443/api/v1/namespaces/default": dial tcp: lookup api.example: i/o timeout`
	case results.ClassHTTP429:
		s.StatusCode, s.RetryAfter = 429, "5"
		s.Error = "HTTP 429 Too Many Requests: TooManyRequests: The apiserver is shutting down, please try again later."
	case results.ClassHTTPOther:
		s.StatusCode = 401
		s.Error = "HTTP 401 Unauthorized: Unauthorized: Unauthorized"
	case results.ClassAborted:
		s.Protocol, s.StatusCode = "", 0
		s.Error = "context canceled"
	}
	return s
}

func leftPad(n int) string {
	s := "000000000000" + itoa(n)
	return s[len(s)-12:]
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// fixture is a small run: kube-api new connections see a header-timeout
// gap that turns into resets, a DNS blip and a gap still open at the end;
// reused connections see a 429 gap and an aborted request; openshift-api is
// healthy.
func fixture() []results.Sample {
	const ms = time.Millisecond
	ok, ht, rst, dns, r429, ab := results.ClassNone, results.ClassHeaderTimeout, results.ClassReset, results.ClassDNS, results.ClassHTTP429, results.ClassAborted
	n, r := results.NewConnections, results.ReusedConnections
	plan := []struct {
		conn  results.ConnectionType
		class results.ErrorClass
		dur   time.Duration
	}{}
	_ = plan
	var ss []results.Sample
	newSeq := []results.ErrorClass{ok, ok, ht, ht, ht, rst, ok, ok, dns, ok, ok, ht, ht}
	for i, c := range newSeq {
		d := 12 * ms
		if c == ht {
			d = 12 * time.Second
		}
		ss = append(ss, mk("kube-api", n, i, d, c))
	}
	reusedSeq := []results.ErrorClass{ok, ok, ok, r429, r429, ab, r429, ok, ok, ok, ok, ok, ok}
	for i, c := range reusedSeq {
		ss = append(ss, mk("kube-api", r, i, 3*ms, c))
	}
	for i := 0; i < 13; i++ {
		if i == 4 {
			continue // a skipped tick
		}
		ss = append(ss, mk("openshift-api", n, i, 15*ms, ok), mk("openshift-api", r, i, 4*ms, ok))
	}
	// completion order, not sequence order
	for i, j := 0, len(ss)-1; i < j; i, j = i+1, j-1 {
		ss[i], ss[j] = ss[j], ss[i]
	}
	return ss
}

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
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file (go test ./report -update to accept):\n%s", name, got)
	}
}

func TestGoldenIntervals(t *testing.T) {
	a := report.Analyze(fixture())
	var buf bytes.Buffer
	extra := []origin.Interval{{
		Level: report.LevelInfo, Source: "KubeAPIServerRollout",
		Locator: report.Locator{Type: "Node", Keys: map[string]string{"node": "master-0"}},
		Message: report.Message{Reason: "TerminationStart", HumanMessage: "extra items are merged and sorted", Annotations: map[string]string{"reason": "TerminationStart"}},
		From:    t0.Add(150 * time.Millisecond), To: t0.Add(150 * time.Millisecond),
	}}
	if err := report.WriteIntervals(&buf, report.IntervalItems(a.Intervals), extra); err != nil {
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
	if err := report.WriteBackendDisruption(&buf, report.BackendDisruptionFor(a, "")); err != nil {
		t.Fatal(err)
	}
	golden(t, "backend-disruption.json.golden", buf.Bytes())
	var l report.BackendDisruptionList
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
		Settings: map[string]any{"interval": "100ms", "probeTimeout": "15s"}}
	end := t0.Add(2 * time.Second)
	run.End = &end
	var buf bytes.Buffer
	if err := report.WriteSummary(&buf, a, run); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.txt.golden", buf.Bytes())
}

func writeSamples(t testing.TB, dir string, ss []results.Sample, tail string) {
	t.Helper()
	w, err := results.CreateJSONL(filepath.Join(dir, results.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range ss {
		if err := w.Write(&ss[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
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
	a, err := report.Rebuild(dir)
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
	if _, err := report.Rebuild(dir); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Errorf("missing samples.jsonl: %v", err)
	}
	os.WriteFile(filepath.Join(dir, results.SamplesFile), nil, 0o644)
	if _, err := report.Rebuild(dir); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Errorf("empty samples.jsonl: %v", err)
	}
	if _, err := report.Rebuild(filepath.Join(dir, "nope")); err == nil {
		t.Error("missing folder accepted")
	}
}

func TestRebuildCorruptMiddleLine(t *testing.T) {
	dir := t.TempDir()
	good := mk("kube-api", results.NewConnections, 0, time.Millisecond, results.ClassNone)
	line := string(good.AppendJSON(nil)) + "\n"
	os.WriteFile(filepath.Join(dir, results.SamplesFile), []byte(line+"garbage\n"+line), 0o644)
	if _, err := report.Rebuild(dir); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("want an error naming the bad line, got %v", err)
	}
}
