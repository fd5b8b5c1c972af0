package sweep

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The points run this test binary as their "repro run" (helperEnv set): it
// records its arguments and puts a real lab results folder (the diagnose
// package's trimmed testdata) where --out says: short-shutdown-delay's for
// shutdown-delay=0s, healthy's for any other value. Value "hang" waits for
// SIGINT, writes what it has and exits 130 as repro run does.
const helperEnv = "REPRO_SWEEP_TEST_RUN"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(fakeRun(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeRun(args []string) int {
	var out, set string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--out":
			out = args[i+1]
		case "--lab-set":
			if strings.HasPrefix(args[i+1], "shutdown-delay=") {
				set = args[i+1]
			}
		case "--lab-kube-version":
			// Stands for a release whose rollout loses requests.
			if args[i+1] == "v1.30.14" {
				set = "shutdown-delay=0s"
			}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 1
	}
	_ = os.WriteFile(filepath.Join(out, "args.txt"), []byte(strings.Join(args, " ")), 0o644)
	src := "healthy"
	switch set {
	case "shutdown-delay=0s":
		src = "short-shutdown-delay"
	case "shutdown-delay=stall-a":
		src = "etcd-stall-attributed"
	case "shutdown-delay=stall-b":
		src = "etcd-stall"
	case "shutdown-delay=hang":
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		_ = os.WriteFile(filepath.Join(out, "started"), nil, 0o644)
		select {
		case <-sig:
			_ = os.WriteFile(filepath.Join(out, "got-sigint"), nil, 0o644)
			return 130
		case <-time.After(time.Minute):
			return 1
		}
	}
	dir := filepath.Join("..", "diagnose", "testdata", src)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return 1
		}
		_ = os.WriteFile(filepath.Join(out, e.Name()), b, 0o644)
	}
	return 0
}

func options(t *testing.T, values ...string) Options {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Options{Binary: bin, Out: t.TempDir(), Scenario: "apiserver-rollout", Key: "shutdown-delay", Values: values,
		Iterations: 1, Forward: []string{"--lab-profile", "short-shutdown-delay", "--baseline", "3s"},
		Env: append(os.Environ(), helperEnv+"=1"), StopGrace: 10 * time.Second}
}

func TestSweepFindsWhereTheGapStops(t *testing.T) {
	o := options(t, "0s", "3s")
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := WriteTable(&table, res); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	if len(res.Points) != 2 || res.Points[0].Total <= 0 || res.Points[1].Total != 0 {
		t.Fatalf("points %+v", res.Points)
	}
	if got := strings.Join(res.Findings, "\n"); !strings.Contains(got, "shutdown-delay >= 3s: no disruption") ||
		!strings.Contains(got, "disappears between shutdown-delay=0s") {
		t.Fatalf("findings %q", got)
	}
	if res.Points[1].Versus == "" || res.Points[0].Versus != "" {
		t.Fatalf("neighbour verdicts %q %q", res.Points[0].Versus, res.Points[1].Versus)
	}
	args, err := os.ReadFile(filepath.Join(o.Out, "shutdown-delay=0s", "args.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"run --scenario apiserver-rollout --out ", "--lab --lab-set shutdown-delay=0s --iterations 1 --lab-profile short-shutdown-delay --baseline 3s"} {
		if !strings.Contains(string(args), want) {
			t.Errorf("point args %q, want %q", args, want)
		}
	}
	for _, f := range []string{TableFile, JSONFile, PlotFile, HTMLFile} {
		b, err := os.ReadFile(filepath.Join(o.Out, f))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(o.Out, PlotFile))
	if !strings.HasPrefix(string(svg), "<svg") || strings.Count(string(svg), "<polyline") != len(res.Pollers)+1 {
		t.Errorf("plot has %d lines for %d backend-connections and the total", strings.Count(string(svg), "<polyline"), len(res.Pollers))
	}
}

// Neighbours are compared by repro compare's rule with its default
// threshold: from etcd-stall-attributed's figures to etcd-stall's,
// kube-api-new-connections grows by 1.4 s (beyond 1 s and 20 %), while
// openshift-api-new-connections' 0.7 s is within it.
func TestSweepComparesNeighboursWithTheDefaultThreshold(t *testing.T) {
	res, err := Run(context.Background(), options(t, "stall-a", "stall-b"))
	if err != nil {
		t.Fatal(err)
	}
	p := res.Points[1]
	if p.Versus != "worse" || !strings.Contains(p.VersusSummary, "kube-api-new-connections") || strings.Contains(p.VersusSummary, "openshift-api-new-connections") {
		t.Fatalf("vs previous %q: %s", p.Versus, p.VersusSummary)
	}
}

// A release is swept through its own flag, each point named by it.
func TestSweepOverKubeVersions(t *testing.T) {
	o := options(t, "v1.29.6", "v1.30.14")
	o.Key, o.Flag = "lab-kube-version", "--lab-kube-version"
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 || res.Points[0].Total != 0 || res.Points[1].Total <= 0 {
		t.Fatalf("points %+v", res.Points)
	}
	if got := strings.Join(res.Findings, "\n"); !strings.Contains(got, "the gap appears between lab-kube-version=v1.29.6 (none) and lab-kube-version=v1.30.14") {
		t.Fatalf("findings %q", got)
	}
	args, err := os.ReadFile(filepath.Join(o.Out, "lab-kube-version=v1.30.14", "args.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(args), "--lab --lab-kube-version v1.30.14 --iterations 1") || strings.Contains(string(args), "--lab-set lab-kube-version") {
		t.Errorf("point args %q", args)
	}
}

// Ctrl-C during the second point: it gets one SIGINT and keeps what it has,
// the third never starts, the first is analysed.
func TestSweepInterrupted(t *testing.T) {
	o := options(t, "0s", "hang", "3s")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		started := filepath.Join(PointDir(o.Out, o.Key, "hang"), "started")
		for {
			if _, err := os.Stat(started); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || len(res.Points) != 2 || res.Points[0].Status != "complete" || res.Points[1].Status != "interrupted" || res.Points[1].ExitCode != 130 {
		t.Fatalf("result %+v", res)
	}
	if _, err := os.Stat(filepath.Join(PointDir(o.Out, o.Key, "hang"), "got-sigint")); err != nil {
		t.Fatalf("interrupted point did not get SIGINT: %v", err)
	}
	if _, err := os.Stat(PointDir(o.Out, o.Key, "3s")); err == nil {
		t.Fatal("the point after the interrupted one ran")
	}
	if res.Points[0].Total <= 0 {
		t.Fatalf("complete point not analysed: %+v", res.Points[0])
	}
}

func TestParseSet(t *testing.T) {
	k, v, err := ParseSet("shutdown-delay=0s, 3s,5s")
	if err != nil || k != "shutdown-delay" || strings.Join(v, "|") != "0s|3s|5s" {
		t.Fatalf("%q %q %v", k, v, err)
	}
	for _, bad := range []string{"shutdown-delay", "=1,2", "k=1,,2"} {
		if _, _, err := ParseSet(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestFindingsFloor: single lost requests below the floor are not a gap,
// and the finding says what was lost; more than the floor on one
// backend-connection is.
func TestFindingsFloor(t *testing.T) {
	pt := func(v string, secs map[string]float64) Point {
		p := Point{Value: v, Status: "complete", Seconds: secs}
		for _, x := range secs {
			p.Total += x
		}
		return p
	}
	res := &Result{Key: "shutdown-delay", FloorSeconds: DefaultFloor.Seconds(), Points: []Point{
		pt("0s", map[string]float64{"kube-api-new-connections": 1.4, "oauth-api-new-connections": 1.1}),
		pt("4s", map[string]float64{"kube-api-new-connections": 0.099, "oauth-api-new-connections": 0}),
		pt("8s", map[string]float64{"kube-api-new-connections": 0, "oauth-api-new-connections": 0}),
	}}
	got := strings.Join(findings(res), "\n")
	for _, want := range []string{
		"the gap disappears between shutdown-delay=0s (2.500 s) and shutdown-delay=4s (0.099 s in all, none over 0.300 s on a backend-connection)",
		"shutdown-delay >= 4s: no gap (at most 0.300 s on a backend-connection, single requests)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("findings:\n%s\nwant %q", got, want)
		}
	}
	res.Points[1].Seconds["oauth-api-new-connections"] = 0.4
	if got := strings.Join(findings(res), "\n"); !strings.Contains(got, "shutdown-delay >= 8s: no disruption") {
		t.Errorf("0.4 s on one backend-connection is a gap; findings:\n%s", got)
	}
}
