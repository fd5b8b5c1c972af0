package compare_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/compare"
	"github.com/repro-tools/repro/results"
)

// synthRun describes a synthetic results folder: iterations of a one-node
// rollout, and in each a gap starting while the node's apiserver terminates.
type synthRun struct {
	// iterations 0 makes a probe folder: no events.jsonl, one 20 s stretch
	// with the gap of iteration 0 at 5 s.
	iterations int
	// gap returns the gap of a poller in an iteration (0-based), rounded to
	// the poller's 100 ms interval.
	gap func(iter int, conn results.ConnectionType) time.Duration
	// cluster, when set, is run.json's extra "cluster"; lab marks a lab run.
	cluster *results.ClusterRecord
	lab     bool
	// baselineGap is a gap during the baseline, outside every iteration.
	baselineGap time.Duration
}

const (
	synthInterval  = 100 * time.Millisecond
	synthBaseline  = 5 * time.Second
	synthIteration = 20 * time.Second
	synthGapAt     = 2 * time.Second // after the iteration starts: master-0 terminating
)

var synthBase = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

var synthConns = []results.ConnectionType{results.NewConnections, results.ReusedConnections}

// writeSynth writes run.json, samples.jsonl and (for rollout runs)
// events.jsonl into dir with the results package's writers.
func writeSynth(t testing.TB, dir string, r synthRun) {
	t.Helper()
	f, err := results.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	run := results.NewRun("run", []string{"repro", "run"}, synthBase)
	if r.cluster != nil {
		run.Extra.Cluster = r.cluster
	}
	if r.lab {
		run.Extra.Target = "lab"
	}

	type window struct{ from, to time.Time }
	gaps := map[results.ConnectionType][]window{}
	var end time.Time
	if r.iterations == 0 {
		end = synthBase.Add(synthIteration)
		for _, c := range synthConns {
			from := synthBase.Add(5 * time.Second)
			gaps[c] = append(gaps[c], window{from, from.Add(r.gap(0, c))})
		}
	} else {
		ev, err := results.CreateJSONL(f.Path(results.EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		write := func(at time.Time, k results.Kind, node, reason string, rev int32, it int) {
			if err := ev.Write(results.Event{Time: at, Observed: at, Kind: k, Node: node, Reason: reason, Revision: rev, Iteration: it}); err != nil {
				t.Fatal(err)
			}
		}
		write(synthBase, results.KindPhase, "", results.PhaseBaseline, 0, 0)
		for i := 0; i < r.iterations; i++ {
			n, rev := i+1, int32(i+2)
			s := synthBase.Add(synthBaseline + time.Duration(i)*synthIteration)
			ms := func(v int) time.Time { return s.Add(time.Duration(v) * time.Millisecond) }
			write(s, results.KindPhase, "", results.PhaseRollout, 0, n)
			write(ms(1), results.KindTrigger, "", "repro-test-"+strconv.Itoa(n), rev-1, n)
			write(ms(100), results.KindRevision, "", "", rev, n)
			write(ms(1000), results.KindNodeTarget, "master-0", "", rev, n)
			write(ms(1050), results.KindClusterEvent, "master-0", "ShutdownInitiated", 0, n)
			write(ms(9000), results.KindClusterEvent, "master-0", "TerminationGracefulTerminationFinished", 0, n)
			write(ms(9200), results.KindPodCreated, "master-0", "", rev, n)
			write(ms(11000), results.KindPodReady, "master-0", "", rev, n)
			write(ms(12000), results.KindConverged, "", "", rev, n)
			write(ms(12000), results.KindPhase, "", results.PhaseCoolDown, 0, n)
			for _, c := range synthConns {
				from := s.Add(synthGapAt)
				gaps[c] = append(gaps[c], window{from, from.Add(r.gap(i, c))})
			}
		}
		end = synthBase.Add(synthBaseline + time.Duration(r.iterations)*synthIteration)
		write(end, results.KindPhase, "", results.PhaseEnd, 0, 0)
		if err := ev.Close(); err != nil {
			t.Fatal(err)
		}
		if r.baselineGap > 0 {
			for _, c := range synthConns {
				from := synthBase.Add(time.Second)
				gaps[c] = append(gaps[c], window{from, from.Add(r.baselineGap)})
			}
		}
	}

	w, err := results.CreateJSONL(f.Path(results.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range synthConns {
		for seq := 0; ; seq++ {
			start := synthBase.Add(time.Duration(seq) * synthInterval)
			if !start.Before(end) {
				break
			}
			s := results.Sample{Backend: "kube-api", Connection: c, Seq: uint64(seq), Start: start,
				Duration: 10 * time.Millisecond, Protocol: "HTTP/1.1", StatusCode: 200}
			for _, g := range gaps[c] {
				if !start.Before(g.from) && start.Before(g.to) {
					s.Duration, s.Protocol, s.StatusCode = 80*time.Millisecond, "", 0
					s.ErrorClass = results.ClassHeaderTimeout
					s.Error = `Get "https://api.example:6443/api/v1/namespaces/default": net/http: timeout awaiting response headers`
				}
			}
			if err := w.Write(&s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	end2 := end
	run.End, run.Status = &end2, results.StatusComplete
	if err := f.WriteRun(run); err != nil {
		t.Fatal(err)
	}
}

// constGap is the same gap in every iteration on both connection types.
func constGap(d time.Duration) func(int, results.ConnectionType) time.Duration {
	return func(int, results.ConnectionType) time.Duration { return d }
}

// seqGap takes iteration i's gap from ds (in seconds) on both connection
// types.
func seqGap(ds ...float64) func(int, results.ConnectionType) time.Duration {
	return func(i int, _ results.ConnectionType) time.Duration {
		return time.Duration(ds[i%len(ds)] * float64(time.Second))
	}
}

// compareDirs writes one synthetic folder per side and compares them through
// the loading path the CLI uses.
func compareDirs(t *testing.T, opts compare.CompareOptions, runs ...synthRun) *compare.Comparison {
	t.Helper()
	root := t.TempDir()
	var sides []compare.Side
	for i, r := range runs {
		dir := filepath.Join(root, string(rune('a'+i)))
		writeSynth(t, dir, r)
		s, err := compare.LoadSide(dir)
		if err != nil {
			t.Fatal(err)
		}
		sides = append(sides, s)
	}
	if opts.Threshold == (compare.Threshold{}) {
		opts.Threshold = compare.DefaultThreshold
	}
	c, err := compare.Compare(sides, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func versusOf(t *testing.T, c *compare.Comparison, name string) compare.Versus {
	t.Helper()
	for _, r := range c.Results {
		if r.Name == name {
			return r.Versus[0]
		}
	}
	t.Fatalf("no result for %s in %v", name, c.BackendConnections)
	return compare.Versus{}
}

func text(t *testing.T, c *compare.Comparison) string {
	t.Helper()
	var b bytes.Buffer
	if err := compare.WriteCompare(&b, c); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

const kubeNew = "kube-api-new-connections"

func TestCompareIdentical(t *testing.T) {
	for _, g := range []time.Duration{0, 2 * time.Second} {
		r := synthRun{iterations: 5, gap: constGap(g), lab: true}
		c := compareDirs(t, compare.CompareOptions{}, r, r)
		if c.Worse || c.Verdicts[0].Verdict != compare.VerdictNoDifference {
			t.Fatalf("gap %v: identical sides judged %+v", g, c.Verdicts[0])
		}
		for _, res := range c.Results {
			v := res.Versus[0]
			if v.Verdict != compare.VerdictNoDifference || v.Test.P != 1 || v.DeltaMedianSeconds != 0 {
				t.Errorf("gap %v, %s: %+v", g, res.Name, v)
			}
			if res.Sides[0].N != 5 || res.Sides[0].MedianSeconds != g.Seconds() {
				t.Errorf("gap %v, %s: stats %+v", g, res.Name, res.Sides[0])
			}
		}
		if c.Sides[0].Label != "lab" {
			t.Errorf("label %q, want lab", c.Sides[0].Label)
		}
	}
}

func TestCompareClearlyWorse(t *testing.T) {
	a := synthRun{iterations: 6, gap: constGap(0), cluster: &results.ClusterRecord{OpenShift: true, Version: "4.16.12", Platform: "AWS"}}
	b := synthRun{iterations: 6, gap: constGap(5 * time.Second), cluster: &results.ClusterRecord{OpenShift: true, Version: "4.17.3", Platform: "AWS"}}
	c := compareDirs(t, compare.CompareOptions{}, a, b)
	if !c.Worse || c.Verdicts[0].Verdict != compare.VerdictWorse || len(c.Verdicts[0].WorseOn) != 2 {
		t.Fatalf("verdict %+v", c.Verdicts[0])
	}
	v := versusOf(t, c, kubeNew)
	if v.Verdict != compare.VerdictWorse || v.Basis != compare.BasisRankTest || !v.Test.Significant {
		t.Errorf("versus %+v", v)
	}
	// 6 against 6, complete separation: the exact two-sided p is 2/C(12,6).
	if want := 2.0 / 924; v.Test.P > 0.01 || v.Test.MinAttainableP < want*0.999 || v.Test.MinAttainableP > want*1.001 {
		t.Errorf("p=%v min=%v, want small and min %v", v.Test.P, v.Test.MinAttainableP, want)
	}
	if v.Test.ProbBGreater != 1 || v.DeltaPercent != nil || v.DeltaMedianSeconds != 5 {
		t.Errorf("effect %+v", v)
	}
	bs := c.Results[0].Sides[1]
	if bs.N != 6 || bs.MedianSeconds != 5 || bs.P95Seconds != 5 || bs.MaxSeconds != 5 || bs.Intervals != 6 {
		t.Errorf("B stats %+v", bs)
	}
	if bs.Classes["header-timeout"].Intervals != 6 || bs.Where["terminating"].Intervals != 6 || bs.Where["terminating"].Seconds != 30 {
		t.Errorf("B classes %v where %v", bs.Classes, bs.Where)
	}
	if c.Sides[0].Label != "OpenShift 4.16.12 (AWS)" || c.Sides[1].Label != "OpenShift 4.17.3 (AWS)" {
		t.Errorf("labels %q %q", c.Sides[0].Label, c.Sides[1].Label)
	}
	out := text(t, c)
	for _, want := range []string{"OpenShift 4.17.3 (AWS)", "WORSE", "p=0.002", "terminating 6 (30.000s)", "header-timeout 6", "more than 1s and more than 20%"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	// The other way round B is better, and nothing is worse.
	c = compareDirs(t, compare.CompareOptions{}, b, a)
	if c.Worse || c.Verdicts[0].Verdict != compare.VerdictBetter {
		t.Errorf("reversed: %+v", c.Verdicts[0])
	}
}

func TestCompareNoise(t *testing.T) {
	// Both sides draw from the same few values; B's median happens to be
	// 2.5 s (125%) higher, beyond the threshold, but the ranks overlap.
	a := synthRun{iterations: 8, gap: seqGap(0, 0, 0, 4, 5, 6, 0, 5)}
	b := synthRun{iterations: 8, gap: seqGap(0, 5, 6, 0, 4, 6, 5, 0)}
	c := compareDirs(t, compare.CompareOptions{}, a, b)
	v := versusOf(t, c, kubeNew)
	if v.BeyondThreshold != compare.VerdictWorse {
		t.Fatalf("the fixture should put the medians beyond the threshold: %+v", v)
	}
	if c.Worse || v.Verdict != compare.VerdictNotSignificant || v.Test.Significant || v.Test.P < 0.2 {
		t.Errorf("noise judged %+v", v)
	}
	if !strings.Contains(v.Reason, "may be noise") {
		t.Errorf("reason %q", v.Reason)
	}
	// Similar distributions within the threshold: no difference.
	c = compareDirs(t, compare.CompareOptions{}, synthRun{iterations: 6, gap: seqGap(1, 1.5, 2, 1.2, 1.8, 1.4)},
		synthRun{iterations: 6, gap: seqGap(1.3, 1.9, 1.1, 1.6, 2, 1.5)})
	if v := versusOf(t, c, kubeNew); c.Worse || v.Verdict != compare.VerdictNoDifference {
		t.Errorf("similar judged %+v", v)
	}
}

func TestCompareTooFewIterations(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		c := compareDirs(t, compare.CompareOptions{}, synthRun{iterations: n, gap: constGap(0)}, synthRun{iterations: n, gap: constGap(5 * time.Second)})
		v := versusOf(t, c, kubeNew)
		if !c.Worse || v.Verdict != compare.VerdictWorse || v.Basis != compare.BasisThresholdOnly || v.Test.Testable {
			t.Errorf("n=%d: %+v", n, v)
		}
		if !strings.Contains(v.Reason, "too few iterations") || !strings.Contains(v.Reason, "threshold alone") {
			t.Errorf("n=%d: reason %q", n, v.Reason)
		}
	}
	// 3 against 3 can never give p below 0.1.
	c := compareDirs(t, compare.CompareOptions{}, synthRun{iterations: 3, gap: constGap(0)}, synthRun{iterations: 3, gap: constGap(500 * time.Millisecond)})
	v := versusOf(t, c, kubeNew)
	if c.Worse || v.Verdict != compare.VerdictNoDifference || v.Basis != compare.BasisThresholdOnly || v.Test.MinAttainableP != 0.1 {
		t.Errorf("3+3 within threshold: %+v", v)
	}
	if !strings.Contains(v.Reason, "n=3+3") || !strings.Contains(v.Reason, "0.100") {
		t.Errorf("reason %q", v.Reason)
	}
	// 4 against 4 can (2/70 < 0.05).
	c = compareDirs(t, compare.CompareOptions{}, synthRun{iterations: 4, gap: constGap(0)}, synthRun{iterations: 4, gap: constGap(5 * time.Second)})
	if v := versusOf(t, c, kubeNew); v.Basis != compare.BasisRankTest || !v.Test.Significant {
		t.Errorf("4+4: %+v", v)
	}
}

func TestCompareThresholdEdges(t *testing.T) {
	cases := []struct {
		name        string
		a, b        float64
		th          compare.Threshold
		beyond      string
		verdict     string
		significant bool
	}{
		// 1.1 s worse but only 18% of A's 6 s: significant, within threshold.
		{"1.1s but 18%", 6, 7.1, compare.DefaultThreshold, "", compare.VerdictSlightlyWorse, true},
		// 180% worse but only 0.9 s.
		{"180% but 0.9s", 0.5, 1.4, compare.DefaultThreshold, "", compare.VerdictSlightlyWorse, true},
		// Exactly 1 s and exactly 20% is not more than either.
		{"exactly 1s 20%", 5, 6, compare.DefaultThreshold, "", compare.VerdictSlightlyWorse, true},
		// Just over both.
		{"1.1s and 22%", 5, 6.1, compare.DefaultThreshold, compare.VerdictWorse, compare.VerdictWorse, true},
		// A looser threshold lets it pass.
		{"under 2s,50%", 4, 5.5, compare.Threshold{Absolute: 2 * time.Second, Relative: 0.5}, "", compare.VerdictSlightlyWorse, true},
		// Absolute part only.
		{"1s only", 10, 11.2, compare.Threshold{Absolute: time.Second}, compare.VerdictWorse, compare.VerdictWorse, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := compareDirs(t, compare.CompareOptions{Threshold: tc.th},
				synthRun{iterations: 5, gap: seqGap(tc.a)}, synthRun{iterations: 5, gap: seqGap(tc.b)})
			v := versusOf(t, c, kubeNew)
			if v.BeyondThreshold != tc.beyond || v.Verdict != tc.verdict || v.Test.Significant != tc.significant {
				t.Errorf("got beyond=%q verdict=%q significant=%v (%s)", v.BeyondThreshold, v.Verdict, v.Test.Significant, v.Reason)
			}
			if c.Worse != (tc.verdict == compare.VerdictWorse) {
				t.Errorf("Worse=%v", c.Worse)
			}
		})
	}
}

func TestCompareGroupsAndWholeRuns(t *testing.T) {
	root := t.TempDir()
	// A: a parent folder holding two runs of 3 iterations and a stray
	// folder without samples; B: a probe folder (one whole-run sample).
	writeSynth(t, filepath.Join(root, "runs-a", "r1"), synthRun{iterations: 3, gap: constGap(time.Second), lab: true, baselineGap: 700 * time.Millisecond})
	writeSynth(t, filepath.Join(root, "runs-a", "r2"), synthRun{iterations: 3, gap: constGap(3 * time.Second), lab: true})
	os.MkdirAll(filepath.Join(root, "runs-a", "notes"), 0o755)
	writeSynth(t, filepath.Join(root, "probe"), synthRun{gap: constGap(4 * time.Second)})

	a, err := compare.LoadSide(filepath.Join(root, "runs-a"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Folders) != 2 || a.Folders[0].Kind != compare.KindIterations || a.Folders[0].Iterations != 3 {
		t.Fatalf("group %+v", a.Folders)
	}
	if got := a.Folders[0].Outside[kubeNew]; got != 0.7 {
		t.Errorf("baseline disruption %v, want 0.7", got)
	}
	b, err := compare.LoadSide(filepath.Join(root, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Folders[0].Kind != compare.KindWholeRun || b.Folders[0].Iterations != 1 || b.Folders[0].Label != "probe" {
		t.Fatalf("probe %+v", b.Folders[0])
	}
	c, err := compare.Compare([]compare.Side{a, b}, compare.CompareOptions{Threshold: compare.DefaultThreshold})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sides[0].Runs != 2 || c.Sides[0].Iterations != 6 || c.Sides[0].Label != "lab" {
		t.Errorf("side A %+v", c.Sides[0])
	}
	as := c.Results[0].Sides[0]
	if as.N != 6 || as.MedianSeconds != 2 || as.MaxSeconds != 3 || as.Intervals != 6 {
		t.Errorf("pooled A %+v", as)
	}
	if bs := c.Results[0].Sides[1]; bs.N != 1 || bs.MedianSeconds != 4 || bs.Where[compare.WhereNoRollout].Intervals != 1 {
		t.Errorf("probe B %+v", bs)
	}
	out := text(t, c)
	for _, want := range []string{"baseline", "whole-run samples", "2 runs, 6 iterations"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

func TestCompareBadInput(t *testing.T) {
	root := t.TempDir()
	empty := filepath.Join(root, "empty")
	os.MkdirAll(filepath.Join(empty, "sub"), 0o755)
	noSamples := filepath.Join(root, "nosamples")
	os.MkdirAll(noSamples, 0o755)
	os.WriteFile(filepath.Join(noSamples, results.SamplesFile), nil, 0o644)
	file := filepath.Join(root, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, tc := range []struct{ dir, want string }{
		{filepath.Join(root, "missing"), "no such folder"},
		{empty, "no samples"},
		{noSamples, "no samples"},
		{file, "not a folder"},
	} {
		_, err := compare.LoadSide(tc.dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", tc.dir, err, tc.want)
		}
	}
	if _, err := compare.Compare([]compare.Side{{Name: "a"}}, compare.CompareOptions{}); err == nil {
		t.Error("one side accepted")
	}
}

func TestParseThreshold(t *testing.T) {
	good := map[string]compare.Threshold{
		"1s,20%":     {Absolute: time.Second, Relative: 0.2},
		"20%, 500ms": {Absolute: 500 * time.Millisecond, Relative: 0.2},
		"2s":         {Absolute: 2 * time.Second},
		"12.5%":      {Relative: 0.125},
	}
	for in, want := range good {
		got, err := compare.ParseThreshold(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "1s,", "abc", "-1s", "x%", "1s,2s", "5%,6%"} {
		if _, err := compare.ParseThreshold(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	if s := compare.DefaultThreshold.String(); s != "1s,20%" {
		t.Errorf("default renders %q", s)
	}
}

func TestCompareJSONShape(t *testing.T) {
	c := compareDirs(t, compare.CompareOptions{}, synthRun{iterations: 2, gap: constGap(0)}, synthRun{iterations: 2, gap: constGap(0)})
	var b bytes.Buffer
	if err := compare.WriteCompareJSON(&b, c); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "rule", "threshold", "alpha", "sides", "backendConnections", "results", "verdicts", "worse", "notes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if m["schema"] != compare.CompareSchema {
		t.Errorf("schema %v", m["schema"])
	}
	res := m["results"].([]any)[0].(map[string]any)
	vs := res["versus"].([]any)[0].(map[string]any)
	for _, k := range []string{"deltaMedianSeconds", "deltaPercent", "beyondThreshold", "test", "verdict", "basis", "reason"} {
		if _, ok := vs[k]; !ok {
			t.Errorf("versus lacks %q", k)
		}
	}
	st := res["sides"].([]any)[0].(map[string]any)
	for _, k := range []string{"n", "medianSeconds", "p95Seconds", "maxSeconds", "intervals", "classes", "where", "samples"} {
		if _, ok := st[k]; !ok {
			t.Errorf("stats lack %q", k)
		}
	}
}

func TestCompareLabels(t *testing.T) {
	a := report.Analyze(nil)
	mkRun := func(x results.Extra) *results.Run {
		r := results.NewRun("run", nil, synthBase)
		r.Extra = x
		return r
	}
	for _, tc := range []struct {
		run  *results.Run
		want string
	}{
		{nil, "folder-x"},
		{mkRun(results.Extra{}), "folder-x"},
		{mkRun(results.Extra{Target: "lab", Cluster: &results.ClusterRecord{ServerVersion: "v1.34.4"}}), "lab (kube-apiserver v1.34.4)"},
		{mkRun(results.Extra{Target: "lab", Lab: &results.LabRecord{Profile: "etcd-stall", Sets: []string{"etcd-stall=0s"}, Timing: "aws"}}), "lab (etcd-stall, etcd-stall=0s, aws timing)"},
		{mkRun(results.Extra{Target: "lab", Lab: &results.LabRecord{Profile: "etcd-stall", KubeVersion: "v1.30.14", KubeDefault: false, LB: "proxy"}}), "lab (etcd-stall, kube-apiserver v1.30.14, proxy LB)"},
		{mkRun(results.Extra{Target: "lab", Lab: &results.LabRecord{Timing: "fast", KubeVersion: "v1.34.4", KubeDefault: true}}), "lab (healthy, kube-apiserver v1.34.4)"},
		{mkRun(results.Extra{Target: "lab", Lab: &results.LabRecord{Profile: "healthy", KubeVersion: "v1.29.6"}}), "lab (healthy, kube-apiserver v1.29.6)"},
		{mkRun(results.Extra{Target: "cluster", Cluster: &results.ClusterRecord{Version: "4.17.3", Platform: "AWS"}}), "OpenShift 4.17.3 (AWS)"},
		{mkRun(results.Extra{Target: "cluster", Cluster: &results.ClusterRecord{OpenShift: true, Version: "4.16.9", Platform: "AWS", ControlPlaneTopology: "HighlyAvailable", ServerVersion: "v1.29.7+4510e9c"}}),
			"OpenShift 4.16.9 (AWS, HighlyAvailable), Kubernetes v1.29.7+4510e9c"},
		{mkRun(results.Extra{Target: "cluster", Cluster: &results.ClusterRecord{ServerVersion: "v1.31.2"}}), "Kubernetes v1.31.2"},
	} {
		if got := compare.FiguresOf("/tmp/folder-x/", tc.run, a, nil).Label; got != tc.want {
			t.Errorf("%+v: label %q, want %q", tc.run, got, tc.want)
		}
	}
}
