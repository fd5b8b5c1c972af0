package origin

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/repro-tools/repro/results"
)

// originEventInterval is origin's serialized interval with origin's JSON
// field names and types, as openshift/origin pkg/monitor/serialization/
// serialize.go declares EventInterval (monitorapi.Locator and
// monitorapi.Message from pkg/monitor/monitorapi/types.go). Decoding with
// it fails the test when repro writes a field under another name.
type originEventInterval struct {
	Level   string `json:"level"`
	Source  string `json:"source,omitempty"`
	Display bool   `json:"display,omitempty"`
	Locator struct {
		Type string            `json:"type"`
		Keys map[string]string `json:"keys"`
	} `json:"locator"`
	Message struct {
		Reason       string            `json:"reason"`
		Cause        string            `json:"cause"`
		HumanMessage string            `json:"humanMessage"`
		Annotations  map[string]string `json:"annotations"`
	} `json:"message"`
	From metav1.Time `json:"from"`
	To   metav1.Time `json:"to"`
}

// decodeStrict decodes with origin's struct, refusing unknown fields so a
// misnamed field cannot pass silently.
func decodeStrict(t *testing.T, data []byte) []originEventInterval {
	t.Helper()
	var list struct {
		Items []originEventInterval `json:"items"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		t.Fatalf("origin's EventInterval cannot decode the file: %v\n%s", err, data)
	}
	return list.Items
}

var t0 = time.Date(2026, 3, 4, 10, 0, 0, 250e6, time.UTC)

// stream builds samples every step from t0: "" succeeds, anything else is
// the error text.
func stream(step time.Duration, errs ...string) []Sample {
	out := make([]Sample, len(errs))
	for i, e := range errs {
		out[i] = Sample{Start: t0.Add(time.Duration(i) * step), Err: e, AuditID: "id-" + string(rune('a'+i))}
	}
	return out
}

var kubeNew = Backend{Name: "kube-api-new-connections", Connection: "new", Instance: "repro"}

const timeout = `Get "https://api.example:6443/api/v1/namespaces/default": net/http: timeout awaiting response headers`

func TestDisruptionIntervalsErrorTextEndedAndRounding(t *testing.T) {
	tooMany := "error running request: 429 Too Many Requests: the server is shutting down"
	// 100 ms samples: ok, 3 timeouts, 2 "429"s, ok ok, one timeout, ok.
	ivs := DisruptionIntervals(kubeNew, stream(100*time.Millisecond, "", timeout, timeout, timeout, tooMany, tooMany, "", "", timeout, ""))
	type want struct {
		level, reason string
		from, to      int // sample indexes
	}
	wants := []want{
		{LevelInfo, ReasonDisruptionEnded, 0, 1},
		{LevelError, ReasonDisruptionBegan, 1, 4},
		{LevelError, ReasonDisruptionBegan, 4, 6},
		{LevelInfo, ReasonDisruptionEnded, 6, 8},
		{LevelError, ReasonDisruptionBegan, 8, 9},
		{LevelInfo, ReasonDisruptionEnded, 9, -1},
	}
	if len(ivs) != len(wants) {
		t.Fatalf("got %d intervals, want %d: %v", len(ivs), len(wants), ivs)
	}
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 100 * time.Millisecond) }
	for i, w := range wants {
		iv := ivs[i]
		to := at(w.to)
		if w.to < 0 {
			to = at(9).Add(SamplingInterval) // open at the end: last sample + 1 s
		}
		if iv.Level != w.level || iv.Message.Reason != w.reason || !iv.From.Equal(at(w.from)) || !iv.To.Equal(to) {
			t.Errorf("interval %d = %s %s %v..%v, want %s %s %v..%v", i, iv.Level, iv.Message.Reason, iv.From, iv.To, w.level, w.reason, at(w.from), to)
		}
		if iv.Display != (w.level == LevelError) {
			t.Errorf("interval %d display = %v", i, iv.Display)
		}
	}
	if !strings.HasSuffix(ivs[2].Message.HumanMessage, "stopped responding to GET requests over new connections: "+tooMany) {
		t.Errorf("message = %q", ivs[2].Message.HumanMessage)
	}
	if got := ivs[1].Message.Annotations[AnnotationRequestAuditID]; got != "id-b" {
		t.Errorf("audit id = %q, want the first failed request's", got)
	}
	bd := BackendDisruptionFor(ivs).BackendDisruptions[kubeNew.Name]
	// 300 ms + 200 ms + 100 ms: each counts 1 s.
	if bd.DisruptedDuration.Duration != 3*time.Second || len(bd.DisruptionMessages) != 3 {
		t.Errorf("DisruptedDuration = %v with %d messages, want 3s and 3", bd.DisruptedDuration.Duration, len(bd.DisruptionMessages))
	}
	if bd.ConnectionType != "New" || bd.BackendName != kubeNew.Name || bd.LoadBalancerType != "" || bd.Protocol != "" || bd.TargetAPI != "" {
		t.Errorf("entry = %+v", bd)
	}
	if !strings.HasPrefix(bd.DisruptionMessages[0], "Mar 04 10:00:00.350 - 300ms E backend-disruption-name/kube-api-new-connections connection/new disruption/repro reason/DisruptionBegan request-audit-id/id-b ") {
		t.Errorf("message line = %q", bd.DisruptionMessages[0])
	}
}

func TestDisruptedDurationRoundsTheTotal(t *testing.T) {
	// 2.6 s and 1.3 s: 3.9 s rounds to 4 s; a 0.4 s one adds 1 s.
	mk := func(from, d time.Duration) Interval {
		return Interval{Level: LevelError, From: t0.Add(from), To: t0.Add(from + d)}
	}
	cases := []struct {
		ivs  []Interval
		want time.Duration
	}{
		{[]Interval{mk(0, 2600*time.Millisecond), mk(10*time.Second, 1300*time.Millisecond)}, 4 * time.Second},
		{[]Interval{mk(0, 400*time.Millisecond)}, time.Second},
		{[]Interval{mk(0, 2400*time.Millisecond), mk(5*time.Second, 400*time.Millisecond)}, 3 * time.Second},
		{[]Interval{mk(0, 0)}, 0},
	}
	for i, c := range cases {
		if got := DisruptedDuration(c.ivs); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}

func TestNoFailuresStillListsTheBackend(t *testing.T) {
	ivs := DisruptionIntervals(kubeNew, stream(time.Second, "", "", ""))
	if len(ivs) != 1 || ivs[0].Message.Reason != ReasonDisruptionEnded || ivs[0].Level != LevelInfo {
		t.Fatalf("intervals = %v", ivs)
	}
	bd := BackendDisruptionFor(ivs)
	e := bd.BackendDisruptions[kubeNew.Name]
	if e == nil || e.DisruptedDuration.Duration != 0 || e.DisruptionMessages != nil {
		t.Fatalf("entry = %+v", e)
	}
	var buf bytes.Buffer
	if err := WriteBackendDisruption(&buf, bd); err != nil {
		t.Fatal(err)
	}
	// origin's field names, no tags: decode into its own shape.
	var back struct {
		BackendDisruptions map[string]struct {
			Name, BackendName, ConnectionType     string
			DisruptedDuration                     metav1.Duration
			DisruptionMessages                    []string
			LoadBalancerType, Protocol, TargetAPI string
		}
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil {
		t.Fatal(err)
	}
	if back.BackendDisruptions[kubeNew.Name].ConnectionType != "New" {
		t.Errorf("round trip = %+v", back)
	}
}

func TestDNSRuleOnlyLookupTimeouts(t *testing.T) {
	lookup := `Get "https://api.example:6443/api": dial tcp: lookup api.example on 10.0.0.10:53: read udp 10.0.0.2:40000->10.0.0.10:53: i/o timeout`
	noHost := `Get "https://api.example:6443/api": dial tcp: lookup api.example on 10.0.0.10:53: no such host`
	ivs := DisruptionIntervals(kubeNew, stream(time.Second, lookup, noHost, ""))
	if len(ivs) != 3 {
		t.Fatalf("intervals = %v", ivs)
	}
	if ivs[0].Level != LevelWarning || ivs[0].Message.Reason != ReasonDisruptionSamplerOutageBegan ||
		!strings.Contains(ivs[0].Message.HumanMessage, "likely a problem in cluster running tests") {
		t.Errorf("lookup timeout = %+v", ivs[0])
	}
	if ivs[1].Level != LevelError || ivs[1].Message.Reason != ReasonDisruptionBegan {
		t.Errorf("no such host is disruption in origin's rule: %+v", ivs[1])
	}
	if d := BackendDisruptionFor(ivs).BackendDisruptions[kubeNew.Name].DisruptedDuration.Duration; d != time.Second {
		t.Errorf("disrupted %v, want only the 1 s of no such host", d)
	}
}

func TestErrorText(t *testing.T) {
	if got := ErrorText("HTTP 429 Too Many Requests: TooManyRequests: shutting down", 429); got != "error running request: 429 Too Many Requests: TooManyRequests: shutting down" {
		t.Errorf("status: %q", got)
	}
	if got := ErrorText(timeout, 0); got != timeout {
		t.Errorf("transport: %q", got)
	}
}

func TestNewerBackendLocator(t *testing.T) {
	b := Backend{Name: "kube-api-http2-external-lb-new-connections", Connection: "new", Instance: "kube-api-http2-external-lb",
		LoadBalancer: "external-lb", Protocol: "http2", Target: "kube-api"}
	got := b.Locator().OldLocator()
	want := "backend-disruption-name/kube-api-http2-external-lb-new-connections connection/new disruption/kube-api-http2-external-lb load-balancer/external-lb protocol/http2 target/kube-api"
	if got != want {
		t.Errorf("locator = %q, want %q", got, want)
	}
}

// sampleFile is a small run in all kinds repro reads back: disruption,
// its end, a node update and a shutdown window.
func sampleFile() []Interval {
	ivs := DisruptionIntervals(kubeNew, stream(time.Second, "", timeout, timeout, ""))
	ivs = append(ivs,
		Interval{Level: LevelInfo, Source: SourceNodeState, Display: true,
			Locator: Locator{Type: LocatorTypeNode, Keys: map[string]string{KeyNode: "ip-10-0-1-5"}},
			Message: NewMessage(ReasonNodeUpdate, "drained node", map[string]string{AnnotationPhase: "Drain", AnnotationRoles: "master"}),
			From:    t0.Add(-time.Minute), To: t0.Add(-30 * time.Second)},
		shutdownInterval("ip-10-0-1-5", LevelInfo, ReasonGracefulAPIServerShutdown, t0.Add(-5*time.Second), t0.Add(2*time.Minute)),
	)
	Sort(ivs)
	return ivs
}

// wholeSeconds is what a written file keeps of the intervals.
func wholeSeconds(ivs []Interval) []Interval {
	out := make([]Interval, len(ivs))
	for i, iv := range ivs {
		iv.From, iv.To = iv.From.Truncate(time.Second), iv.To.Truncate(time.Second)
		out[i] = iv
	}
	return out
}

func TestEncodeDecodeAllSerializations(t *testing.T) {
	ivs := sampleFile()
	for _, f := range []struct {
		name   string
		format Format
		golden string
	}{
		{"structured", FormatStructured, "intervals-structured.json"},
		{"dual", FormatDual, "intervals-dual.json"},
		{"duplicate keys", FormatDuplicateKeys, "intervals-duplicate-keys.json"},
		{"strings", FormatStrings, "intervals-strings.json"},
	} {
		t.Run(f.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Encode(&buf, ivs, f.format); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", f.golden)
			if os.Getenv("UPDATE_GOLDEN") != "" {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s differs from what Encode writes (UPDATE_GOLDEN=1 rewrites it)", golden)
			}
			got, err := ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			exp := wholeSeconds(ivs)
			if len(got) != len(exp) {
				t.Fatalf("read %d intervals, want %d", len(got), len(exp))
			}
			for i := range exp {
				g, e := got[i], exp[i]
				if f.format == FormatStrings {
					// the string era had no source, display or locator type
					// of its own: Decode infers them from the keys.
					e.Display = false
				}
				if g.Level != e.Level || g.Source != e.Source || g.Display != e.Display ||
					g.Locator.OldLocator() != e.Locator.OldLocator() || g.Message.OldMessage() != e.Message.OldMessage() ||
					g.Message.Reason != e.Message.Reason || !g.From.Equal(e.From) || !g.To.Equal(e.To) {
					t.Errorf("item %d:\n got %+v\nwant %+v", i, g, e)
				}
			}
			if f.format == FormatStructured {
				items := decodeStrict(t, want)
				if items[0].Locator.Keys[KeyBackendDisruptionName] == "" && items[0].Source == "" {
					t.Errorf("first item lost its fields: %+v", items[0])
				}
			}
		})
	}
}

func TestPlainDecodeFailsOnOlderForms(t *testing.T) {
	for _, name := range []string{"intervals-dual.json", "intervals-duplicate-keys.json", "intervals-strings.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Items []originEventInterval `json:"items"`
		}
		if err := json.Unmarshal(data, &list); err == nil {
			t.Errorf("%s: a plain decode into today's struct succeeded; the fixture does not show the older form", name)
		}
	}
}

func TestDecodeMalformedNamesThePosition(t *testing.T) {
	data := []byte("{\"items\": [\n  {\"level\": \"Error\", \"from\": \"yesterday\"}\n]}")
	_, err := Decode(data)
	se, ok := err.(*SyntaxError)
	if !ok || se.Line != 2 || !strings.Contains(se.Msg, `"from"`) {
		t.Fatalf("err = %v", err)
	}
	_, err = Decode([]byte("{\"items\": [\n {\"level\": \"Error\",\n  \"to\": }]}"))
	if se, ok := err.(*SyntaxError); !ok || se.Line != 3 {
		t.Fatalf("err = %v", err)
	}
	if _, err := Decode([]byte(`{"kind": "List"}`)); err == nil || !strings.Contains(err.Error(), "not an interval file") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseOldForms(t *testing.T) {
	l := ParseOldLocator("ns/openshift-kube-apiserver pod/kube-apiserver-ip-1 node/ip-1")
	if l.Type != LocatorTypePod || l.Keys[KeyNamespace] != "openshift-kube-apiserver" || l.Keys[KeyNode] != "ip-1" {
		t.Errorf("locator = %+v", l)
	}
	if n := ParseOldLocator("disruption/kube-api connection/new").BackendDisruptionName(); n != "kube-api-new-connections" {
		t.Errorf("old disruption name = %q", n)
	}
	m := ParseOldMessage("reason/NodeUpdate phase/Drain roles/master drained node")
	if m.Reason != ReasonNodeUpdate || m.Annotations[AnnotationPhase] != "Drain" || m.HumanMessage != "drained node" {
		t.Errorf("message = %+v", m)
	}
	if l := ParseOldLocator(`e2e-test/"[sig-api] a b" status/Passed`); l.Keys[KeyE2ETest] != "[sig-api] a b" {
		t.Errorf("quoted = %+v", l.Keys)
	}
}

func TestRolloutIntervalsInChartGroups(t *testing.T) {
	ev := func(sec int, kind results.Kind, node, reason, msg string) results.Event {
		return results.Event{Time: t0.Add(time.Duration(sec) * time.Second), Kind: kind, Node: node, Reason: reason, Message: msg}
	}
	evs := []results.Event{
		ev(0, results.KindCondition, "", "NodeInstallerProgressing", "NodeInstallerProgressing=True: 1 node at revision 7"),
		ev(5, results.KindClusterEvent, "master-0", "ShutdownInitiated", "Received signal to terminate, becoming unready, but keeping serving"),
		ev(75, results.KindClusterEvent, "master-0", "TerminationStoppedServing", "Server has stopped listening"),
		ev(80, results.KindClusterEvent, "master-0", "TerminationGracefulTerminationFinished", "All pending requests processed"),
		ev(120, results.KindClusterEvent, "master-1", "ShutdownInitiated", "Received signal to terminate, becoming unready, but keeping serving"),
		ev(121, results.KindClusterEvent, "master-1", "LateConnections", "late"),
		ev(300, results.KindCondition, "", "NodeInstallerProgressing", "NodeInstallerProgressing=False"),
		ev(301, results.KindPodReady, "master-1", "", "ready"),
	}
	ivs := RolloutIntervals(evs, t0, t0.Add(400*time.Second))
	groups := map[string]int{}
	for _, iv := range ivs {
		g, shown := ChartGroup(iv)
		if !shown {
			t.Errorf("not drawn by the chart: %+v", iv)
		}
		groups[g]++
	}
	if groups["APIServerGracefulShutdown"] != 2 || groups["KubeEvent"] != 5 || groups["OperatorProgressing"] != 1 || len(groups) != 3 {
		t.Errorf("groups = %v", groups)
	}
	for _, iv := range ivs {
		switch iv.Source {
		case SourceAPIServerGracefulShutdown:
			if iv.Locator.OldLocator() != "namespace/openshift-kube-apiserver node/"+iv.Locator.Keys[KeyNode]+" pod/kube-apiserver-"+iv.Locator.Keys[KeyNode]+" server/kube-apiserver" {
				t.Errorf("server locator = %q", iv.Locator.OldLocator())
			}
			if iv.Locator.Keys[KeyNode] == "master-1" && (iv.Level != LevelError || iv.Message.Reason != ReasonIncompleteAPIServerShutdown || !iv.To.Equal(t0.Add(400*time.Second))) {
				t.Errorf("open shutdown = %+v", iv)
			}
			if iv.Locator.Keys[KeyNode] == "master-0" && (!iv.From.Equal(t0.Add(5*time.Second)) || !iv.To.Equal(t0.Add(80*time.Second))) {
				t.Errorf("closed shutdown = %+v", iv)
			}
		case SourceOperatorState:
			if !iv.From.Equal(t0) || !iv.To.Equal(t0.Add(300*time.Second)) || iv.Message.Annotations[AnnotationStatus] != "True" {
				t.Errorf("operator state = %+v", iv)
			}
		}
	}
	// a Disruption interval without display is not drawn, as sippy hides it.
	if _, shown := ChartGroup(DisruptionIntervals(kubeNew, stream(time.Second, ""))[0]); shown {
		t.Error("DisruptionEnded (no display) must not be drawn")
	}
}
