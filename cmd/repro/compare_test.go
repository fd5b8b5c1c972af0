package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/report/compare"
	"github.com/repro-tools/repro/results"
)

// writeCompareFolder writes a results folder of a lab run with the given
// number of rollout iterations, each with a header-timeout gap of gap on
// kube-api over new and reused connections, through the results writers.
func writeCompareFolder(t *testing.T, dir string, iterations int, gap time.Duration) {
	t.Helper()
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	const iter = 15 * time.Second
	f, err := results.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := results.CreateJSONL(f.Path(results.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	write := func(at time.Time, k results.Kind, node, reason string, rev int32, n int) {
		if err := ev.Write(results.Event{Time: at, Observed: at, Kind: k, Node: node, Reason: reason, Revision: rev, Iteration: n}); err != nil {
			t.Fatal(err)
		}
	}
	write(base, results.KindPhase, "", results.PhaseBaseline, 0, 0)
	var gaps []time.Time
	for i := range iterations {
		n, rev, s := i+1, int32(i+2), base.Add(2*time.Second+time.Duration(i)*iter)
		write(s, results.KindPhase, "", results.PhaseRollout, 0, n)
		write(s.Add(time.Millisecond), results.KindTrigger, "", "", rev-1, n)
		write(s.Add(100*time.Millisecond), results.KindRevision, "", "", rev, n)
		write(s.Add(time.Second), results.KindNodeTarget, "master-0", "", rev, n)
		write(s.Add(8*time.Second), results.KindPodReady, "master-0", "", rev, n)
		write(s.Add(9*time.Second), results.KindConverged, "", "", rev, n)
		write(s.Add(9*time.Second), results.KindPhase, "", results.PhaseCoolDown, 0, n)
		gaps = append(gaps, s.Add(2*time.Second))
	}
	end := base.Add(2*time.Second + time.Duration(iterations)*iter)
	write(end, results.KindPhase, "", results.PhaseEnd, 0, 0)
	if err := ev.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := results.CreateJSONL(f.Path(results.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []results.ConnectionType{results.NewConnections, results.ReusedConnections} {
		for seq := 0; ; seq++ {
			start := base.Add(time.Duration(seq) * 100 * time.Millisecond)
			if !start.Before(end) {
				break
			}
			s := results.Sample{Backend: "kube-api", Connection: c, Seq: uint64(seq), Start: start, Duration: 10 * time.Millisecond, StatusCode: 200, Protocol: "HTTP/1.1"}
			for _, g := range gaps {
				if !start.Before(g) && start.Before(g.Add(gap)) {
					s.StatusCode, s.Protocol, s.ErrorClass, s.Error = 0, "", results.ClassHeaderTimeout, "net/http: timeout awaiting response headers"
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
	run := results.NewRun("run", []string{"repro", "run"}, base)
	run.Extra.Target = "lab"
	run.Finish(end, results.StatusComplete)
	if err := f.WriteRun(run); err != nil {
		t.Fatal(err)
	}
}

// runRepro runs the CLI in process and returns the exit code main would
// give and what was written to stdout.
func runRepro(t *testing.T, args ...string) (int, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	code := 0
	if err != nil {
		code = 1
		var ec exitCoder
		if errors.As(err, &ec) {
			code = ec.ExitCode()
		}
	}
	return code, out.String(), err
}

func TestCompareCLIExitCodes(t *testing.T) {
	root := t.TempDir()
	quiet := filepath.Join(root, "quiet")
	writeCompareFolder(t, quiet, 5, 0)
	quiet2 := filepath.Join(root, "quiet2")
	writeCompareFolder(t, quiet2, 5, 0)
	gappy := filepath.Join(root, "gappy")
	writeCompareFolder(t, gappy, 5, 5*time.Second)
	slight := filepath.Join(root, "slight")
	writeCompareFolder(t, slight, 5, 900*time.Millisecond)
	// A parent folder: its two results folders form one side.
	group := filepath.Join(root, "group")
	writeCompareFolder(t, filepath.Join(group, "r1"), 2, 5*time.Second)
	writeCompareFolder(t, filepath.Join(group, "r2"), 2, 5*time.Second)
	empty := filepath.Join(root, "empty")
	os.MkdirAll(empty, 0o755)

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"identical", []string{quiet, quiet2}, 0, "NO-DIFFERENCE"},
		{"worse", []string{quiet, gappy}, 3, "WORSE"},
		{"better", []string{gappy, quiet}, 0, "BETTER"},
		{"under the threshold", []string{quiet, slight}, 0, "slightly worse"},
		{"looser threshold", []string{"--threshold", "10s,20%", quiet, gappy}, 0, "more than 10s and more than 20%"},
		{"tighter threshold", []string{"--threshold", "500ms", quiet, slight}, 3, "WORSE"},
		{"group", []string{quiet, group}, 3, "2 runs, 4 iterations"},
		{"three sides", []string{quiet, quiet2, gappy}, 3, "Verdict C vs A: WORSE"},
		{"html", []string{"--html", filepath.Join(root, "compare.html"), quiet, group}, 3, "WORSE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, err := runRepro(t, append([]string{"compare"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d (%v), want %d with %q in:\n%s", code, err, tc.code, tc.want, out)
			}
		})
	}

	if page, err := os.ReadFile(filepath.Join(root, "compare.html")); err != nil || !bytes.Contains(page, []byte("<html")) {
		t.Errorf("--html page: %v, %d bytes", err, len(page))
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing folder", []string{quiet, filepath.Join(root, "nope")}, "no such folder"},
		{"no samples", []string{quiet, empty}, "no samples"},
		{"one side", []string{quiet}, "at least two"},
		{"bad threshold", []string{"--threshold", "fast", quiet, gappy}, "--threshold"},
		{"bad alpha", []string{"--alpha", "2", quiet, gappy}, "--alpha"},
		{"html into a missing folder", []string{"--html", filepath.Join(root, "nope", "x.html"), quiet, gappy}, "--html"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, err := runRepro(t, append([]string{"compare"}, tc.args...)...)
			if code != 1 || err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("exit %d, error %v; want exit 1 and one line with %q", code, err, tc.want)
			}
		})
	}
}

func TestCompareCLIJSON(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	writeCompareFolder(t, a, 4, 0)
	writeCompareFolder(t, b, 4, 5*time.Second)
	code, out, _ := runRepro(t, "compare", "--json", a, b)
	if code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	var c compare.Comparison
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("stdout is not one comparison: %v\n%s", err, out)
	}
	if c.Schema != compare.CompareSchema || !c.Worse || len(c.Sides) != 2 || c.Sides[1].Role != "B" || c.Sides[0].Label != "lab" {
		t.Errorf("comparison %+v", c)
	}
	if c.Threshold.Spec != "1s,20%" || c.Threshold.AbsoluteSeconds != 1 || c.Threshold.RelativePercent != 20 || c.Alpha != 0.05 {
		t.Errorf("threshold %+v alpha %v", c.Threshold, c.Alpha)
	}
	if len(c.Results) != 2 || c.Results[0].Name != "kube-api-new-connections" {
		t.Fatalf("results %+v", c.Results)
	}
	v := c.Results[0].Versus[0]
	if v.Verdict != compare.VerdictWorse || v.Basis != compare.BasisRankTest || v.Test.N1 != 4 || v.Test.P >= 0.05 {
		t.Errorf("versus %+v", v)
	}
	if s := c.Results[0].Sides[1]; s.N != 4 || s.MedianSeconds != 5 || len(s.Samples) != 4 || s.Samples[0].Iteration != 1 {
		t.Errorf("B stats %+v", s)
	}
	if len(c.Verdicts) != 1 || c.Verdicts[0].Verdict != compare.VerdictWorse || len(c.Verdicts[0].WorseOn) != 2 {
		t.Errorf("verdicts %+v", c.Verdicts)
	}
	// The field names are a contract: spot-check the raw keys.
	for _, k := range []string{`"schema"`, `"medianSeconds"`, `"p95Seconds"`, `"minAttainableP"`, `"probBGreater"`, `"worseOn"`, `"deltaPercent": null`} {
		if !strings.Contains(out, k) {
			t.Errorf("JSON lacks %s", k)
		}
	}
}
