package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/diagnose"
	"github.com/repro-tools/repro/sweep"
)

// checkDiagnosis runs `repro diagnose --json DIR` on a profile's results
// folder and holds the ranking against the profile: its own mechanism first
// and consistent. The same diagnosis must end the folder's summary.txt,
// which the run's report wrote.
func checkDiagnosis(t *testing.T, dir, wantFirst string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := repro(t, ctx, "diagnose", "--json", dir)
	if res.code != 0 {
		t.Fatalf("repro diagnose: exit %d: %s", res.code, res.stderr)
	}
	var r diagnose.Result
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("repro diagnose --json: %v", err)
	}
	if len(r.Mechanisms) == 0 {
		t.Fatal("repro diagnose: no mechanisms")
	}
	// Mechanisms the folder's figures cannot order share rank 1; the
	// profile's own must be among them.
	first := r.Mechanisms[0]
	if !slices.Contains(r.RankedFirst(), wantFirst) || first.Verdict != diagnose.Consistent {
		for _, a := range r.Mechanisms {
			t.Logf("%d %s %s for=%v against=%v untested=%v", a.Rank, a.Name, a.Verdict, a.For, a.Against, a.Untested)
		}
		t.Fatalf("diagnosis ranks %v (%s) first, want %s among them, consistent", r.RankedFirst(), first.Verdict, wantFirst)
	}
	if tied := r.RankedFirst(); len(tied) > 1 {
		t.Logf("%s shares rank 1 with %v: the figures cannot tell them apart", wantFirst, tied)
	}
	summary, err := os.ReadFile(filepath.Join(dir, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(summary), "Diagnosis: "+r.Headline) {
		t.Fatalf("summary.txt has no diagnosis section %q", r.Headline)
	}
}

// TestSweepShortShutdownDelay sweeps the shutdown delay on the
// short-shutdown-delay profile, two points on the fast scale: 0 s, below the
// LB's detection, gives refusals; 4 s, above it, gives no gap, so the sweep
// must say the gap disappears at 4 s. The detection is two failed checks 1 s
// apart after one that just passed, up to 3 s: at exactly 3 s one request in
// a run was still refused (measured), so the point above it is 4 s. What is
// left at 4 s is at most the healthy lab's single requests (a 429 at a
// listener's close, a reset by AWS's connection termination: measured once,
// 0.099 s on one poller), under the sweep's 300 ms floor.
func TestSweepShortShutdownDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two lab rollouts")
	}
	out := filepath.Join(t.TempDir(), "sweep")
	keepIfFailed(t, out)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	started := time.Now()
	// --max-disruption and --attribute go on to each point's repro run: the
	// 0 s point is also the short-shutdown-delay profile's own test.
	res := repro(t, ctx, "sweep", "--scenario", "apiserver-rollout", "--lab-profile", "short-shutdown-delay",
		"--lab-set", "shutdown-delay=0s,4s", "--out", out, "--baseline", "3s", "--cool-down", "5s", "--min-ready-time", "2s",
		"--max-disruption", "1ms", "--attribute")
	t.Logf("sweep took %s", time.Since(started).Round(time.Second))
	if res.code != 0 {
		t.Fatalf("repro sweep: exit %d", res.code)
	}
	b, err := os.ReadFile(filepath.Join(out, sweep.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var sr sweep.Result
	if err := json.Unmarshal(b, &sr); err != nil {
		t.Fatal(err)
	}
	if len(sr.Points) != 2 || sr.Points[0].Status != "complete" || sr.Points[1].Status != "complete" {
		t.Fatalf("points %+v", sr.Points)
	}
	floor := sweep.DefaultFloor.Seconds()
	gap := func(p sweep.Point) bool {
		for _, v := range p.Seconds {
			if v > floor {
				return true
			}
		}
		return false
	}
	if sr.Points[0].ExitCode != exitOverLimit {
		t.Errorf("the 0s point exited %d, want %d: its disruption is over --max-disruption 1ms", sr.Points[0].ExitCode, exitOverLimit)
	}
	checkShortShutdownDelay(t, loadProfileRun(t, sr.Points[0].Dir, "short-shutdown-delay"))
	if !gap(sr.Points[0]) || gap(sr.Points[1]) {
		t.Fatalf("disruption 0s: %v, 4s: %v; want a gap over %.1f s, then none", sr.Points[0].Seconds, sr.Points[1].Seconds, floor)
	}
	if sr.Points[1].Versus != "better" && sr.Points[1].Versus != "no-difference" {
		t.Errorf("4s vs 0s: %q", sr.Points[1].Versus)
	}
	want := "shutdown-delay >= 4s: no "
	if !strings.Contains(res.stdout, want) || !strings.Contains(strings.Join(sr.Findings, "\n"), want) {
		t.Fatalf("findings %v, want %q in them and in the table", sr.Findings, want)
	}
	for _, f := range []string{sweep.PlotFile, sweep.TableFile, sweep.HTMLFile} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	// Each point is a whole results folder of its own, diagnosed as such
	// (the 0 s point by checkShortShutdownDelay).
	checkDiagnosis(t, sr.Points[1].Dir, "healthy")
}

// The sweep's own flags are taken out; every other flag goes to repro run
// as given, and a --lab-set with commas is the knob swept.
func TestParseSweepArgs(t *testing.T) {
	o, help, err := parseSweepArgs([]string{"--scenario=apiserver-rollout", "--lab-profile", "short-shutdown-delay",
		"--lab-set", "lb-health-interval=2s", "--lab-set", "shutdown-delay=0s,4s", "--iterations", "2", "--out", "x", "--baseline", "3s"})
	if err != nil || help {
		t.Fatal(err, help)
	}
	if o.Scenario != "apiserver-rollout" || o.Key != "shutdown-delay" || strings.Join(o.Values, ",") != "0s,4s" || o.Iterations != 2 || o.Out != "x" {
		t.Fatalf("%+v", o)
	}
	if got := strings.Join(o.Forward, " "); got != "--lab-profile short-shutdown-delay --lab-set lb-health-interval=2s --baseline 3s" {
		t.Fatalf("forwarded %q", got)
	}
	for _, bad := range [][]string{
		{"--lab-set", "shutdown-delay=0s,4s"},
		{"--scenario", "apiserver-rollout"},
		{"--scenario", "apiserver-rollout", "--lab-set", "nope=1,2"},
		{"--scenario", "apiserver-rollout", "--lab-set", "shutdown-delay=0s,4s", "--iterations", "0"},
		{"--scenario", "apiserver-rollout", "--lab-set", "shutdown-delay=0s,4s", "--lab-set", "grace-period=1s,2s"},
	} {
		if _, _, err := parseSweepArgs(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line", bad, err)
		}
	}
}
