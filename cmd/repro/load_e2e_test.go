package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunUnderLoad runs the main scenario on the loaded profile (the
// lab's cluster load, --lab-load cl2-load): the run ends as a run does (0,
// or 3 for disruption over the limit), the load process is gone with repro,
// and the record names, per apiserver, the watches around each node's
// termination and the re-lists the survivors took. Then it logs the
// profile's prediction's outcome, which did not hold (see its doc).
func TestRunUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a loaded lab rollout")
	}
	labDir, labArgs := labDirArgs(t)
	out := filepath.Join(t.TempDir(), "results")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	res := repro(t, ctx, append([]string{"run", "--scenario", "apiserver-rollout", "--out", out, "--lab-profile", "loaded",
		"--baseline", "3s", "--cool-down", "5s", "--min-ready-time", "2s"}, labArgs...)...)
	noLabProcesses(t, labDir)
	if res.code != 0 && res.code != 3 {
		t.Fatalf("exit %d, want 0 or 3", res.code)
	}
	if _, err := os.Stat(filepath.Join(out, "load.jsonl")); err != nil {
		t.Fatalf("no load.jsonl: %v", err)
	}
	r := readRun(t, out)
	ld := r.Extra.Load
	if ld == nil || ld.Name != "cl2-load" || ld.ScaleDown != 10 {
		t.Fatalf("run.json extra.load = %+v, want cl2-load scaled by 10", ld)
	}
	if ld.Watches == 0 || ld.CPUSeconds == 0 || len(ld.APIServers) == 0 {
		t.Errorf("extra.load has no watches, CPU or apiservers: %+v", ld)
	}
	if len(ld.Terminations) != 3 {
		t.Fatalf("extra.load has %d terminations, want one per node", len(ld.Terminations))
	}
	relists := map[string]int{}
	for _, a := range ld.APIServers {
		relists[a.Name] = a.Relists
	}
	for _, tm := range ld.Terminations {
		if tm.WatchesBefore[tm.Node] == 0 {
			// The flow hash spreads 22 connections over 3 targets: none on
			// one is possible, but then nothing was cut there.
			t.Logf("%s held no load watch before its termination", tm.Node)
		}
		if tm.WatchesAfter[tm.Node] >= tm.WatchesBefore[tm.Node] && tm.WatchesBefore[tm.Node] > 0 {
			t.Errorf("%s held %d watches before its termination and %d after its successor was in service: its watches were not cut", tm.Node, tm.WatchesBefore[tm.Node], tm.WatchesAfter[tm.Node])
		}
	}
	var survivors int
	for _, n := range relists {
		if n > 0 {
			survivors++
		}
	}
	if survivors == 0 {
		t.Errorf("no apiserver served a re-list: %+v", ld.APIServers)
	}
	var writeErrors int
	for _, a := range ld.APIServers {
		writeErrors += a.WriteErrors
	}
	// The profile's prediction (no disruption, no failed load write) did
	// not hold on its first run (its doc says so): the outcome is logged,
	// not asserted, so the checks above stay in CI.
	t.Logf("loaded profile's prediction (exit 0, no failed load write): exit %d, %d failed writes", res.code, writeErrors)
	sum, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"load: cl2-load", "load on master-0: watches before->after", "re-lists"} {
		if !strings.Contains(string(sum), want) {
			t.Errorf("summary.txt lacks %q", want)
		}
	}
}
