package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/lab/binaries"
	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/compare"
	"github.com/repro-tools/repro/results"
)

// TestRunOnKubernetes129 rolls out the lab on kube-apiserver v1.29.6, the
// Kubernetes of OpenShift 4.16: the release a 4.16 -> 4.17 regression is
// bisected from. `make test` builds it first (repro lab build
// --lab-kube-version v1.29.6); here it must be cached or the test skips, so
// `go test` alone never sits silent behind a five-minute build.
//
// The prediction, written before it was run: 1.29 has everything the healthy
// lab's quiet rollout rests on (--shutdown-delay-duration, /readyz failing at
// once on SIGTERM, Connection: close while draining, and
// --shutdown-send-retry-after, all from 1.24 or earlier), so the healthy
// profile measures no disruption on 1.29 either, with the same tolerance as
// the default release's run.
func TestRunOnKubernetes129(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a lab rollout")
	}
	spec, err := binaries.KubeAPIServerFor("v1.29.6")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := binaries.Path(spec, binaries.Options{}); err != nil || !ok {
		t.Skipf("kube-apiserver v1.29.6 is not built (repro lab build --lab-kube-version v1.29.6): %v", err)
	}
	labDir, labArgs := labDirArgs(t)
	out := filepath.Join(t.TempDir(), "results")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	res := repro(t, ctx, append([]string{"run", "--scenario", "apiserver-rollout", "--out", out, "--lab-kube-version", "v1.29.6",
		// The profile tests' short stages: the rollout is what is tested.
		"--baseline", "3s", "--cool-down", "5s", "--min-ready-time", "2s"}, labArgs...)...)
	noLabProcesses(t, labDir)
	if res.code != 0 {
		t.Fatalf("exit %d, want 0", res.code)
	}
	r := readRun(t, out)
	if r.Status != results.StatusComplete {
		t.Fatalf("run.json status %q", r.Status)
	}
	// /version as the run's client saw it, and the release as the binary
	// reported it, both 1.29.6.
	if cl := r.Extra.Cluster; cl == nil || cl.ServerVersion != "v1.29.6" {
		t.Errorf("the lab's /version says %+v, want v1.29.6", cl)
	}
	if l := r.Extra.Lab; l == nil || l.KubeVersion != "v1.29.6" || l.KubeDefault {
		t.Errorf("run.json lab record %+v, want kubeVersion v1.29.6, not the default", l)
	}
	if line := r.LabLine(); !strings.HasPrefix(line, "kube-apiserver v1.29.6, ") {
		t.Errorf("the summary's lab line does not name the release: %q", line)
	}
	tl := report.BuildTimeline(readEvents(t, out))
	if len(tl.Iterations) != 1 || tl.Iterations[0].Complete.IsZero() || tl.Iterations[0].Revision != 2 || len(tl.Iterations[0].Nodes) != 3 {
		t.Fatalf("the rollout did not complete on three nodes: %+v", tl.Iterations)
	}
	a, err := report.LoadSamples(filepath.Join(out, results.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	if label := compare.FiguresOf(out, r, a, tl).Label; !strings.Contains(label, "kube-apiserver v1.29.6") {
		t.Errorf("compare label %q does not name the release", label)
	}
	for _, p := range a.Pollers {
		if p.Disrupted > 3*prober.DefaultInterval || p.Classes[results.ClassHeaderTimeout] > 0 {
			t.Errorf("%s: %d failures, %v disrupted (%v) on the healthy lab on 1.29", p.Name, p.Failures, p.Disrupted, p.Classes)
		}
	}
}
