package htmlreport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// smallRun is two pollers over 10 s, kube-api-new failing with
// connect-refused from 3.0 s to 3.5 s (closed by the success at 3.5 s).
func smallRun() *Run {
	var samples []results.Sample
	for _, conn := range results.ConnectionTypes {
		for i := 0; i < 100; i++ {
			s := results.Sample{Backend: "kube-api", Connection: conn, Seq: uint64(i), Start: t0.Add(time.Duration(i) * 100 * time.Millisecond),
				Duration: 5 * time.Millisecond, StatusCode: 200, AuditID: "a-" + string(conn) + "-" + strings.Repeat("x", i%3),
				Phases: results.Phases{ConnectDone: time.Millisecond, TLSDone: 3 * time.Millisecond, FirstByte: 4900 * time.Microsecond}, LocalAddr: "127.0.0.1:1"}
			if conn == results.NewConnections && i >= 30 && i < 35 {
				s.StatusCode, s.ErrorClass, s.Error, s.Phases = 0, results.ClassConnectRefused, "dial tcp: connection refused", results.Phases{}
			}
			samples = append(samples, s)
		}
	}
	return &Run{
		Label: "small",
		ForEachSample: func(fn func(*results.Sample)) error {
			// Reverse order: the page must sort by sequence.
			for i := len(samples) - 1; i >= 0; i-- {
				fn(&samples[i])
			}
			return nil
		},
		Pollers: []Poller{{Name: "kube-api-new-connections", Backend: "kube-api", Connection: "new", Samples: 100, Failures: 5, Intervals: 1,
			Disrupted: 500 * time.Millisecond, Longest: 500 * time.Millisecond, Classes: map[string]int64{"connect-refused": 5}},
			{Name: "kube-api-reused-connections", Backend: "kube-api", Connection: "reused", Samples: 100}},
		Intervals: []Interval{{Name: "kube-api-new-connections", From: t0.Add(3 * time.Second), To: t0.Add(3500*time.Millisecond + 123*time.Microsecond),
			Class: "connect-refused", Samples: 5, Message: "dial tcp: connection refused", Where: "iteration 1, master-0: ..."}},
		Stages: []Stage{{Name: "baseline", From: t0, To: t0.Add(2 * time.Second)}, {Name: "rollout", Iteration: 1, From: t0.Add(2 * time.Second), To: t0.Add(8 * time.Second)},
			{Name: "cool-down", Iteration: 1, From: t0.Add(8 * time.Second)}},
		Iterations: []Iteration{{N: 1, Trigger: t0.Add(2 * time.Second), Complete: t0.Add(8 * time.Second), Revision: 3,
			Nodes: []NodeWindow{{Node: "master-0", Terminating: t0.Add(2100 * time.Millisecond), Starting: t0.Add(4 * time.Second), Ready: t0.Add(6 * time.Second)}}}},
		Events: []results.Event{
			{Time: t0.Add(2100 * time.Millisecond), Kind: results.KindClusterEvent, Node: "master-0", Reason: "ShutdownInitiated"},
			{Time: t0.Add(2900 * time.Millisecond), Kind: results.KindClusterEvent, Node: "master-0", Reason: "TerminationStoppedServing"},
			{Time: t0.Add(6 * time.Second), Kind: results.KindPodReady, Node: "master-0", Revision: 3},
		},
		ServedBy: func(local string, t, _ time.Time) string {
			if t.Before(t0.Add(3 * time.Second)) {
				return "master-1"
			}
			return "master-0"
		},
	}
}

func TestBuildRun(t *testing.T) {
	rd, err := BuildRun(smallRun(), Classes(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if rd.T0 != t0.UnixMilli() || rd.From != 0 || rd.To != 9905 {
		t.Errorf("t0 %d from %.1f to %.1f", rd.T0, rd.From, rd.To)
	}
	if len(rd.Lanes) != 2 || rd.Lanes[0].Name != "kube-api-new-connections" || rd.Lanes[1].Name != "kube-api-reused-connections" {
		t.Fatalf("lanes %+v", rd.Lanes)
	}
	l := rd.Lanes[0]
	if len(l.T) != 100 || l.T[0] != 0 || l.T[31] != 3100 || l.Seq[99] != 99 {
		t.Errorf("T %v...", l.T[:3])
	}
	if l.D[0] != 50 || l.Conn[0] != 10 || l.TLS[0] != 30 || l.FB[0] != 49 || l.DNS[0] != 0 || l.S[0] != 0 {
		t.Errorf("sample 0: d %d conn %d tls %d fb %d dns %d s %d", l.D[0], l.Conn[0], l.TLS[0], l.FB[0], l.DNS[0], l.S[0])
	}
	refused := int8(1)
	for i, c := range Classes() {
		if c == "connect-refused" {
			refused = int8(i + 1)
		}
	}
	if l.C[30] != refused || l.S[30] != -1 || rd.Errors[l.Err[30]] != "dial tcp: connection refused" || l.C[35] != 0 {
		t.Errorf("failed sample 30: class %d status %d err %v", l.C[30], l.S[30], l.Err)
	}
	if rd.Servers[l.N[30]-1] != "master-0" || rd.Servers[l.N[0]-1] != "master-1" {
		t.Errorf("served by %v %v of %v", l.N[0], l.N[30], rd.Servers)
	}
	if !l.AllAudit || l.Audit[99] == "" {
		t.Error("small run: every audit ID must be kept")
	}
	if len(l.Bars) != 1 {
		t.Fatalf("bars %+v", l.Bars)
	}
	b := l.Bars[0]
	if b.From != 3000 || b.To != 3500.123 || b.Ms != 500.123 || b.ServedBy != "master-0 (5)" || b.Where == "" {
		t.Errorf("bar %+v", b)
	}
	if len(rd.Lanes[1].Bars) != 0 {
		t.Errorf("reused lane has bars %+v", rd.Lanes[1].Bars)
	}
	if len(rd.Nodes) != 1 {
		t.Fatalf("nodes %+v", rd.Nodes)
	}
	n := rd.Nodes[0]
	want := []NodeSpan{{"terminating", 2100, 2900, 1, 3}, {"stopped", 2900, 4000, 1, 3}, {"starting", 4000, 6000, 1, 3}, {"ready", 6000, 6000, 1, 3}}
	if len(n.Spans) != len(want) {
		t.Fatalf("spans %+v", n.Spans)
	}
	for i := range want {
		if n.Spans[i] != want[i] {
			t.Errorf("span %d: %+v, want %+v", i, n.Spans[i], want[i])
		}
	}
	if len(n.Events) != 3 || n.Events[0].Label != "ShutdownInitiated" || n.Events[2].Label != "pod-ready (revision 3)" {
		t.Errorf("events %+v", n.Events)
	}
	if len(rd.Stages) != 3 || rd.Stages[1].Name != "rollout 1" || rd.Stages[2].To != 9905 {
		t.Errorf("stages %+v", rd.Stages)
	}
	if len(rd.Marks) != 2 || rd.Marks[0].T != 2000 {
		t.Errorf("marks %+v", rd.Marks)
	}
	if rd.Rows[0].DisruptedMs != 500 || rd.Rows[0].Classes != "connect-refused 5" {
		t.Errorf("row %+v", rd.Rows[0])
	}
}

// bigLane is a lane of n samples every 100 ms with failures at the given
// indexes and a bar over [barFrom, barTo) sample indexes.
func bigLane(n int, fails []int, barFrom, barTo int) *Lane {
	l := &Lane{T: make([]int64, n), D: make([]int32, n), C: make([]int8, n)}
	for i := 0; i < n; i++ {
		l.T[i] = int64(i) * 100
		l.D[i] = int32(30 + (i*7919)%50)
	}
	for _, i := range fails {
		l.C[i] = 3
	}
	for i := barFrom; i < barTo; i++ {
		l.C[i] = 1
	}
	l.Bars = []Bar{{From: float64(l.T[barFrom]), To: float64(l.T[barTo])}}
	return l
}

func TestLevelsKeepFailuresAndNeighbours(t *testing.T) {
	const n = 36000 // one poller for an hour
	fails := []int{0, 1, 777, 12345, 20001, 35999}
	l := bigLane(n, fails, 18000, 18050)
	levels := Levels(l)
	if len(levels) < 3 {
		t.Fatalf("%d levels for %d samples", len(levels), n)
	}
	prev := int64(0)
	for _, lv := range levels {
		if lv.BucketMs <= prev {
			t.Errorf("levels not coarsening: %d after %d", lv.BucketMs, prev)
		}
		prev = lv.BucketMs
		has := map[int64]bool{}
		for i, x := range lv.Idx {
			if i > 0 && x <= lv.Idx[i-1] {
				t.Fatalf("level %d ms: indexes not increasing at %d", lv.BucketMs, i)
			}
			has[x] = true
		}
		must := []int{}
		for _, f := range fails {
			must = append(must, f-1, f, f+1)
		}
		for i := 18000 - 1; i <= 18050+1; i++ { // the bar, the sample before and the successes after
			must = append(must, i)
		}
		for _, i := range must {
			if i >= 0 && i < n && !has[int64(i)] {
				t.Errorf("level %d ms dropped sample %d (failed, neighbour or in a disruption)", lv.BucketMs, i)
			}
		}
		// The slowest sample of every bucket survives.
		slow := map[int64]int{}
		for i := 0; i < n; i++ {
			b := l.T[i] / lv.BucketMs
			if j, ok := slow[b]; !ok || l.D[i] > l.D[j] {
				slow[b] = i
			}
		}
		for b, i := range slow {
			if !has[int64(i)] && l.D[i] > 0 {
				// another sample of equal duration may stand for it
				found := false
				for _, x := range lv.Idx {
					if l.T[x]/lv.BucketMs == b && l.D[x] == l.D[i] {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("level %d ms lost the slowest sample of bucket %d", lv.BucketMs, b)
				}
			}
		}
		buckets := (l.T[n-1] + lv.BucketMs) / lv.BucketMs
		if int64(len(lv.Idx)) > 3*buckets+int64(len(must)) {
			t.Errorf("level %d ms keeps %d of %d samples: not downsampled", lv.BucketMs, len(lv.Idx), n)
		}
		t.Logf("level %6d ms: %5d of %d samples", lv.BucketMs, len(lv.Idx), n)
	}
	if got := Levels(bigLane(levelMinSamples-1, nil, 10, 12)); len(got) != 0 {
		t.Errorf("small lane got %d levels", len(got))
	}
}

func TestLargeRunKeepsAuditIDsWhereItMatters(t *testing.T) {
	var samples []results.Sample
	n := fullAuditLimit + 1000
	for i := 0; i < n; i++ {
		s := results.Sample{Backend: "kube-api", Connection: "new", Seq: uint64(i), Start: t0.Add(time.Duration(i) * 100 * time.Millisecond),
			Duration: 5 * time.Millisecond, StatusCode: 200, AuditID: "id"}
		if i == 500 {
			s.ErrorClass, s.StatusCode = results.ClassHeaderTimeout, 0
		}
		if i == 900 {
			s.Duration = 1500 * time.Millisecond
		}
		samples = append(samples, s)
	}
	in := &Run{ForEachSample: func(fn func(*results.Sample)) error {
		for i := range samples {
			fn(&samples[i])
		}
		return nil
	}, Intervals: []Interval{{Name: "kube-api-new-connections", From: samples[500].Start, To: samples[501].Start, Class: "header-timeout", Samples: 1}}}
	rd, err := BuildRun(in, Classes(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	l := rd.Lanes[0]
	if l.AllAudit {
		t.Error("large run keeps every audit ID")
	}
	for _, i := range []int{499, 500, 501, 900} {
		if l.Audit[i] == "" {
			t.Errorf("sample %d lost its audit ID", i)
		}
	}
	if len(l.Audit) > 20 {
		t.Errorf("%d audit IDs kept", len(l.Audit))
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	rd, err := BuildRun(smallRun(), Classes(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	p := &Page{Title: "t", Classes: Classes(), Runs: []RunData{*rd}}
	s, err := Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	l, m := rd.Lanes[0], back.Runs[0].Lanes[0]
	for i := range l.T {
		if l.T[i] != m.T[i] || l.Seq[i] != m.Seq[i] {
			t.Fatalf("sample %d: %d/%d, want %d/%d", i, m.T[i], m.Seq[i], l.T[i], l.Seq[i])
		}
	}
	if rd.Lanes[0].T[1] != 100 {
		t.Error("Encode changed its input")
	}
	var buf bytes.Buffer
	if err := Render(&buf, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<canvas id=\"chart\"", "const REPRO_DATA = \"" + s + "\";", "DecompressionStream"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("page lacks %.60q", want)
		}
	}
}
