package htmlreport_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/htmlreport"
	"github.com/repro-tools/repro/report/write"
)

var dataRE = regexp.MustCompile(`const REPRO_DATA = "([A-Za-z0-9+/=]*)";`)

// pageOf reads the data embedded in an HTML page.
func pageOf(t testing.TB, html []byte) *htmlreport.Page {
	t.Helper()
	m := dataRE.FindSubmatch(html)
	if m == nil {
		t.Fatal("no REPRO_DATA in the page")
	}
	p, err := htmlreport.Decode(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRebuildWritesReport checks report.html of a synthetic run against the
// analysis write.Rebuild made of the same folder: one lane per
// backend-connection with every sample, one bar per interval with its
// exact length, one lane per node with its phases and termination events.
func TestRebuildWritesReport(t *testing.T) {
	dir := t.TempDir()
	synthetic(t, dir, 3*time.Minute, standardGaps(3*time.Minute))
	a, err := write.Rebuild(dir)
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, htmlreport.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"http://", "https://cdn", "<script src", "<link "} {
		if bytes.Contains(html, []byte(bad)) && bad != "http://" {
			t.Errorf("page refers to %q: not self-contained", bad)
		}
	}
	if bytes.Contains(html, []byte(`src="http`)) || bytes.Contains(html, []byte(`href="http`)) {
		t.Error("page loads something from the network")
	}
	p := pageOf(t, html)
	if len(p.Runs) != 1 || p.Compare {
		t.Fatalf("runs %d compare %v", len(p.Runs), p.Compare)
	}
	r := p.Runs[0]
	if len(r.Lanes) != len(a.Pollers) {
		t.Fatalf("%d lanes, want %d", len(r.Lanes), len(a.Pollers))
	}
	for i, pl := range a.Pollers {
		l := r.Lanes[i]
		if l.Name != pl.Name || int64(len(l.T)) != pl.Samples {
			t.Errorf("lane %d: %s with %d samples, want %s with %d", i, l.Name, len(l.T), pl.Name, pl.Samples)
		}
		var fails int64
		for _, c := range l.C {
			if c != 0 {
				fails++
			}
		}
		if fails != pl.Failures {
			t.Errorf("%s: %d failed marks, want %d", l.Name, fails, pl.Failures)
		}
		var bars []htmlreport.Bar
		bars = append(bars, l.Bars...)
		var want []report.Interval
		for _, iv := range a.Intervals {
			if iv.Name == pl.Name {
				want = append(want, iv)
			}
		}
		if len(bars) != len(want) {
			t.Fatalf("%s: %d bars, want %d", l.Name, len(bars), len(want))
		}
		for j, iv := range want {
			ms := float64(iv.Duration().Microseconds()) / 1000
			if math.Abs(bars[j].Ms-ms) > 0.0005 || math.Abs((bars[j].To-bars[j].From)-ms) > 0.002 {
				t.Errorf("%s bar %d: %.3f ms (%.3f..%.3f), want %.3f", l.Name, j, bars[j].Ms, bars[j].From, bars[j].To, ms)
			}
			if bars[j].Where == "" {
				t.Errorf("%s bar %d: not placed in the rollout", l.Name, j)
			}
		}
	}
	// The planned gaps, by length (samples start up to 6 ms late).
	wantMs := map[string]float64{"kube-api-new-connections": 900, "openshift-api-reused-connections": 3800, "oauth-api-new-connections": 100}
	for _, l := range r.Lanes {
		w, ok := wantMs[l.Name]
		if !ok {
			if len(l.Bars) != 0 {
				t.Errorf("%s: unexpected bars %+v", l.Name, l.Bars)
			}
			continue
		}
		if len(l.Bars) != 1 || math.Abs(l.Bars[0].Ms-w) > 7 {
			t.Errorf("%s: bars %+v, want one of about %.0f ms", l.Name, l.Bars, w)
			continue
		}
		if l.Name == "kube-api-new-connections" && l.Bars[0].ServedBy != "master-0 (9)" {
			t.Errorf("%s: served by %q, want master-0 (9)", l.Name, l.Bars[0].ServedBy)
		}
	}
	if len(r.Nodes) != 3 {
		t.Fatalf("%d node lanes, want 3", len(r.Nodes))
	}
	for i, n := range r.Nodes {
		var phases []string
		for _, s := range n.Spans {
			phases = append(phases, s.Phase)
		}
		if got := join(phases); got != "terminating,stopped,starting,ready" || n.Node != []string{"master-0", "master-1", "master-2"}[i] {
			t.Errorf("node lane %d %s: phases %s", i, n.Node, got)
		}
		if n.Spans[0].To-n.Spans[0].From != 11000 || n.Spans[1].To-n.Spans[1].From != 1000 {
			t.Errorf("%s: terminating %.0f ms, stopped %.0f ms; want 11000 and 1000", n.Node, n.Spans[0].To-n.Spans[0].From, n.Spans[1].To-n.Spans[1].From)
		}
		reasons := map[string]bool{}
		for _, e := range n.Events {
			reasons[e.Label] = true
		}
		for _, want := range []string{"ShutdownInitiated", "TerminationStoppedServing", "TerminationGracefulTerminationFinished"} {
			if !reasons[want] {
				t.Errorf("%s: no %s mark", n.Node, want)
			}
		}
	}
	var stages []string
	for _, s := range r.Stages {
		stages = append(stages, s.Name)
	}
	if join(stages) != "baseline,rollout 1,cool-down 1" {
		t.Errorf("stages %v", stages)
	}
	if len(r.Servers) == 0 {
		t.Error("no apiservers named from lb-connections.jsonl")
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

// TestCompareAlignsOnTrigger compares two synthetic runs of different
// lengths: both must have x = 0 at their trigger.
func TestCompareAlignsOnTrigger(t *testing.T) {
	d1, d2 := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	s1 := synthetic(t, d1, 90*time.Second, standardGaps(90*time.Second))
	s2 := synthetic(t, d2, 3*time.Minute, nil)
	var buf bytes.Buffer
	if err := write.WriteCompareHTML(&buf, []string{d1, d2}); err != nil {
		t.Fatal(err)
	}
	p := pageOf(t, buf.Bytes())
	if !p.Compare || len(p.Runs) != 2 {
		t.Fatalf("compare %v with %d runs", p.Compare, len(p.Runs))
	}
	for i, want := range []time.Time{s1.Add(30 * time.Second), s2.Add(time.Minute)} {
		r := p.Runs[i]
		if r.T0 != want.UnixMilli() {
			t.Errorf("run %d: t0 %d, want the trigger %d", i, r.T0, want.UnixMilli())
		}
		if r.From > -29000 || r.To < 50000 {
			t.Errorf("run %d: spans %.0f..%.0f ms around the trigger", i, r.From, r.To)
		}
		if len(r.Nodes) != 3 || r.Nodes[0].Spans[0].From != 50 {
			t.Errorf("run %d: first node span from %.0f, want 50 ms after the trigger", i, r.Nodes[0].Spans[0].From)
		}
	}
	if r := p.Runs[0]; r.Label != "a" || len(r.Lanes[0].Bars) != 1 {
		t.Errorf("run a: label %q, bars %d", r.Label, len(r.Lanes[0].Bars))
	}
	if err := write.WriteCompareHTML(&buf, nil); err == nil {
		t.Error("no folders: want an error")
	}
}
