package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	operatorclient "github.com/openshift/client-go/operator/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
)

// These tests run the repro binary the way a user does, on a real lab. They
// need the lab's binaries (built on first use; `make test` builds them first).

var reproBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "repro-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	reproBin = filepath.Join(dir, "repro")
	build := exec.Command("go", "build", "-o", reproBin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building repro:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type runResult struct {
	code           int
	stdout, stderr string
}

// repro runs the binary with no kubeconfig in reach, so it uses the lab.
func repro(t *testing.T, ctx context.Context, args ...string) runResult {
	t.Helper()
	return reproEnv(t, ctx, labEnv(t), args...)
}

// reproEnv runs the binary in env.
func reproEnv(t *testing.T, ctx context.Context, env []string, args ...string) runResult {
	t.Helper()
	cmd := exec.CommandContext(ctx, reproBin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running repro: %v", err)
	}
	t.Logf("repro %s: exit %d\nstdout:\n%s\nstderr (tail):\n%s", strings.Join(args, " "), code, out.String(), tail(errb.String(), 3000))
	return runResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// labEnv is the test's environment without any way to a real cluster, and
// with the user's cache (where the lab's binaries are) kept.
func labEnv(t *testing.T) []string {
	home := t.TempDir()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "KUBERNETES_SERVICE_") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "XDG_CACHE_HOME="+cache)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// labProcesses lists the kube-apiserver, aggregated-apiserver, etcd and load processes whose command
// line mentions dir (the lab's directory, where their certificates are).
func labProcesses(t *testing.T, dir string) map[int]string {
	t.Helper()
	out := map[int]string{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		exe := filepath.Base(string(bytes.SplitN(b, []byte{0}, 2)[0]))
		// The load process is repro itself, its config in the lab's dir.
		isLoad := exe == "repro" && bytes.Contains(b, []byte("load-config.json"))
		if (exe == "kube-apiserver" || exe == "etcd" || exe == "aggregated-apiserver" || isLoad) && bytes.Contains(b, []byte(dir)) {
			out[pid] = exe
		}
	}
	return out
}

// noLabProcesses fails when a process of the lab in dir is still alive. repro
// has exited by then, so there is no grace: it must have waited for them.
func noLabProcesses(t *testing.T, dir string) {
	t.Helper()
	var left []string
	for pid, exe := range labProcesses(t, dir) {
		left = append(left, fmt.Sprintf("%s (pid %d)", exe, pid))
	}
	if len(left) > 0 {
		t.Fatalf("lab processes outlived repro: %v", left)
	}
}

// labDirArgs gives a run's lab a known directory, so its processes can be
// told from those of other labs on the machine.
func labDirArgs(t *testing.T) (string, []string) {
	dir := filepath.Join(t.TempDir(), "lab")
	return dir, []string{"--dir", dir}
}

func readEvents(t *testing.T, dir string) []results.Event {
	t.Helper()
	var evs []results.Event
	if _, err := results.ReadJSONL(filepath.Join(dir, results.EventsFile), func(line []byte) error {
		var e results.Event
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		evs = append(evs, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return evs
}

func readRun(t *testing.T, dir string) *results.Run {
	t.Helper()
	f, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.ReadRun()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRunRolloutOnTheLab(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a lab rollout")
	}
	labDir, labArgs := labDirArgs(t)
	out := filepath.Join(t.TempDir(), "results")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// An oc-login'ed ~/.kube/config is in reach but no cluster is named: the
	// run must go to the lab, say so, and never contact that server (port 1
	// would refuse it).
	env := labEnv(t)
	var home string
	for _, kv := range env {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = h
		}
	}
	found := filepath.Join(home, ".kube", "config")
	if err := os.MkdirAll(filepath.Dir(found), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(found, []byte(foundKubeconfigYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	res := reproEnv(t, ctx, env, append([]string{"run", "--scenario", "apiserver-rollout", "--out", out, "--attribute"}, labArgs...)...)
	noLabProcesses(t, labDir)
	if res.code != 0 {
		t.Fatalf("exit %d, want 0", res.code)
	}
	if want := "no cluster named (--kubeconfig, --context, --server or KUBECONFIG); " + found + " was found and not used: starting the lab"; !strings.Contains(res.stdout, want) {
		t.Errorf("the run did not say it started the lab and ignored %s (want %q)", found, want)
	}
	r := readRun(t, out)
	if r.Status != results.StatusComplete {
		t.Fatalf("run.json status %q", r.Status)
	}
	// What could distort the numbers: the lab's admin certificate, no proxy
	// (net/http never proxies loopback), and a clock measured against our
	// own (the lab runs on this machine), to well under 100 ms.
	if r.Auth != "client-certificate" || r.Proxy != "" || r.Clock == nil || !r.Clock.Consistent || r.Clock.Offset.Abs() > r.Clock.Resolution+time.Millisecond || r.Clock.Resolution > 100*time.Millisecond {
		t.Errorf("run.json auth %q, proxy %q, clock %+v; want client-certificate, none, a consistent offset of 0 within its resolution", r.Auth, r.Proxy, r.Clock)
	}
	// Without a terminal, progress is plain lines: one per stage or node
	// change; the lab's process chatter is in repro.log, not on the screen.
	for _, want := range []string{"progress: iteration 1: rollout to revision 2; master-0 terminating", "progress: iteration 1: cool-down", "pollers (samples/failures/disrupted)"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks the plain progress line %q", want)
		}
	}
	logText, err := os.ReadFile(filepath.Join(out, "repro.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(logText, []byte("\tlab")) {
		t.Errorf("repro.log holds no line of the lab's")
	}
	if n := strings.Count(res.stderr, "INFO\tlab"); n > 0 {
		t.Errorf("%d lines of the lab's chatter on the screen, want them in repro.log", n)
	}

	// Nothing failed, so nothing to attribute, and the summary says so.
	checkAttributionHealthy(t, out)
	checkDiagnosis(t, out, "healthy")

	// AWS's connection termination acted (the load balancer reset
	// connections to each apiserver that turned unhealthy: the lab's own
	// watches) and cost the pollers nothing, as the healthy profile
	// predicts: they had left the draining apiserver on its Connection:
	// close.
	if n := readLBResets(t, out); n == 0 {
		t.Error("the load balancer reset no established connection when a target turned unhealthy (AWS's connection termination)")
	}

	// Three node restarts, one at a time, in order, each to revision 2.
	tl := report.BuildTimeline(readEvents(t, out))
	if len(tl.Iterations) != 1 {
		t.Fatalf("iterations: %+v", tl.Iterations)
	}
	it := tl.Iterations[0]
	if it.Complete.IsZero() || it.Revision != 2 {
		t.Fatalf("iteration did not complete on revision 2: %+v", it)
	}
	want := []string{"master-0", "master-1", "master-2"}
	if len(it.Nodes) != len(want) {
		t.Fatalf("nodes rolled: %+v", it.Nodes)
	}
	var prevReady time.Time
	for i, w := range it.Nodes {
		if w.Node != want[i] || w.Terminating.IsZero() || w.Starting.IsZero() || w.Ready.IsZero() {
			t.Fatalf("node %d: %+v, want %s through terminating, starting, ready", i, w, want[i])
		}
		if !w.Terminating.After(prevReady) {
			t.Errorf("%s started terminating at %v, before the previous node was ready at %v", w.Node, w.Terminating, prevReady)
		}
		prevReady = w.Ready
	}
	shutdowns := map[string]int{}
	for _, e := range tl.Events {
		if e.Kind == results.KindClusterEvent && e.Reason == "ShutdownInitiated" {
			shutdowns[e.Node]++
		}
	}
	for _, n := range want {
		if shutdowns[n] != 1 {
			t.Errorf("%s: %d ShutdownInitiated events, want 1", n, shutdowns[n])
		}
	}

	// Every poller sampled the whole run: from before the trigger to after
	// the rollout completed, without a hole in its schedule.
	a, err := report.LoadSamples(filepath.Join(out, results.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	// Two pollers (new and reused connections) per default backend.
	if want := 2 * len(prober.DefaultBackendNames); len(a.Pollers) != want {
		t.Fatalf("%d pollers, want %d", len(a.Pollers), want)
	}
	for _, p := range a.Pollers {
		if !p.First.Before(it.Trigger) || !p.Last.After(it.Complete) {
			t.Errorf("%s sampled %v to %v, not the whole rollout (%v to %v)", p.Name, p.First, p.Last, it.Trigger, it.Complete)
		}
		if p.Skipped > p.Samples/100 {
			t.Errorf("%s skipped %d of %d ticks", p.Name, p.Skipped, p.Samples)
		}
		// The healthy lab drains each apiserver for 12.9 s while the load
		// balancer needs 2 s to see /readyz fail, and warms a restarted
		// apiserver before it takes traffic. The failures with a cause are
		// single requests: a reused one caught in the instant the old
		// apiserver stops listening (its 429 "shutting down"), and one on a
		// connection the LB opened to the rolled node just before its
		// unhealthy verdict, reset by AWS's connection termination. Each
		// is one sample and rare (0 or 1 a run, measured): tolerance three
		// poll intervals per poller, and never a header timeout.
		if p.Disrupted > 3*prober.DefaultInterval || p.Classes[results.ClassHeaderTimeout] > 0 {
			t.Errorf("%s: %d failures, %v disrupted (%v) on the healthy lab", p.Name, p.Failures, p.Disrupted, p.Classes)
		}
	}
	for _, f := range []string{results.IntervalsFile, results.BackendDisruptionFile, results.JUnitFile, results.PlacementsFile, results.SummaryFile, results.LBConnectionsFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("results folder lacks %s: %v", f, err)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(out, "apiserver-logs", "*.log"))
	if len(logs) != 6 {
		t.Errorf("%d apiserver logs kept, want 6 (two processes per node)", len(logs))
	}
}

func TestRunInterruptedKeepsPartialResults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a lab rollout")
	}
	labDir, labArgs := labDirArgs(t)
	out := filepath.Join(t.TempDir(), "results")
	cmd := exec.Command(reproBin, append([]string{"run", "--scenario", "apiserver-rollout", "--out", out, "--baseline", "2s"}, labArgs...)...)
	cmd.Env = labEnv(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt in the middle of the rollout: once a node is terminating.
	deadline := time.Now().Add(3 * time.Minute)
	for !eventSeen(filepath.Join(out, results.EventsFile), `"ShutdownInitiated"`) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the rollout never started; stderr:\n%s", tail(stderr.String(), 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("repro did not stop after Ctrl-C; stderr:\n%s", tail(stderr.String(), 3000))
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), tail(stderr.String(), 2000))
	noLabProcesses(t, labDir)
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d, want %d", code, exitInterrupted)
	}
	if r := readRun(t, out); r.Status != results.StatusInterrupted || r.End == nil {
		t.Fatalf("run.json: status %q end %v, want interrupted with an end", r.Status, r.End)
	}
	a, err := write.Rebuild(out)
	if err != nil {
		t.Fatalf("the partial folder does not rebuild: %v", err)
	}
	if a.Samples == 0 {
		t.Fatal("no samples kept")
	}
	// The pollers stop before the lab does: the teardown is not measured.
	for _, p := range a.Pollers {
		if p.Failures != 0 {
			t.Errorf("%s: %d failures in an interrupted healthy run", p.Name, p.Failures)
		}
	}
}

func eventSeen(path, needle string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), needle) {
			return true
		}
	}
	return false
}

func TestRunDryRunChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a lab")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	l, err := lab.Start(ctx, lab.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := l.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	op, err := operatorclient.NewForConfig(l.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	before, err := op.OperatorV1().KubeAPIServers().Get(ctx, "cluster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	cmd := exec.CommandContext(ctx, reproBin, "run", "--scenario", "apiserver-rollout", "--kubeconfig", kubeconfig, "--dry-run")
	cmd.Dir = work
	cmd.Env = labEnv(t)
	outb, err := cmd.CombinedOutput()
	t.Logf("%s", outb)
	if err != nil {
		t.Fatalf("dry run failed: %v", err)
	}
	for _, want := range []string{`{"spec":{"forceRedeploymentReason":"repro-`, "accepted the patch in a server-side dry run", "nothing was changed"} {
		if !bytes.Contains(outb, []byte(want)) {
			t.Errorf("dry run output lacks %q", want)
		}
	}
	for _, want := range []string{"about to force 1 kube-apiserver rollout(s) on this cluster", "server:         https://127.0.0.1:", "auth:           client-certificate"} {
		if !bytes.Contains(outb, []byte(want)) {
			t.Errorf("dry run output lacks the preview line %q", want)
		}
	}
	// A live run without a terminal and without --yes prints what it would
	// roll out, after every check, and stops before the patch.
	liveOut := filepath.Join(t.TempDir(), "live")
	live := reproEnv(t, ctx, labEnv(t), "run", "--scenario", "apiserver-rollout", "--kubeconfig", kubeconfig, "--out", liveOut)
	if live.code != 1 || !strings.Contains(live.stderr, "a live rollout needs --yes when there is no terminal") || !strings.Contains(live.stdout, "about to force 1 kube-apiserver rollout(s)") {
		t.Errorf("live run without --yes: exit %d; want exit 1, the preview and the --yes line", live.code)
	}
	if _, err := os.Stat(liveOut); !os.IsNotExist(err) {
		t.Errorf("the unconfirmed run left %s (%v)", liveOut, err)
	}
	// Give the lab's installer a moment: had the patch applied, it would bump the revision.
	time.Sleep(2 * time.Second)
	after, err := op.OperatorV1().KubeAPIServers().Get(ctx, "cluster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Spec.ForceRedeploymentReason != before.Spec.ForceRedeploymentReason || after.Status.LatestAvailableRevision != before.Status.LatestAvailableRevision || after.Generation != before.Generation {
		t.Fatalf("the dry run changed kubeapiservers/cluster: reason %q -> %q, revision %d -> %d",
			before.Spec.ForceRedeploymentReason, after.Spec.ForceRedeploymentReason, before.Status.LatestAvailableRevision, after.Status.LatestAvailableRevision)
	}
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Errorf("the dry run wrote files: %v", ents)
	}
}

func TestRunBadInput(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--scenario", "nope"}, `unknown scenario "nope": choose one of apiserver-rollout, baseline`},
		{[]string{"run"}, `required flag(s) "scenario" not set`},
		{[]string{"run", "--scenario", "baseline", "--interval", "1ms"}, "below the minimum"},
		{[]string{"run", "--scenario", "baseline", "--backends", "kube-api,bogus"}, "bogus"},
		{[]string{"run", "--scenario", "apiserver-rollout", "--iterations", "0"}, "--iterations must be 1..1000, got 0"},
		{[]string{"run", "--scenario", "apiserver-rollout", "--max-disruption", "-1s"}, "--max-disruption must not be negative, got -1s"},
		{[]string{"run", "--scenario", "apiserver-rollout", "--baseline", "-5s"}, "--baseline must not be negative"},
		{[]string{"run", "--scenario", "apiserver-rollout", "--cool-down", "-1s"}, "--cool-down must not be negative"},
		{[]string{"run", "--scenario", "apiserver-rollout", "--follow-timeout", "-1m"}, "--follow-timeout must not be negative"},
		{[]string{"run", "--scenario", "baseline", "--interval", "0s"}, "--interval 0s is below the minimum"},
		{[]string{"run", "--scenario", "baseline", "--probe-timeout", "0s"}, "--probe-timeout 0s is below the minimum of 100ms"},
		{[]string{"run", "--scenario", "baseline", "--probe-timeout", "-2s"}, "--probe-timeout -2s is below the minimum of 100ms"},
		{[]string{"probe", "--duration", "-1s"}, "--duration is required and must be positive"},
		{[]string{"probe", "--duration", "1m", "--interval", "0s"}, "--interval 0s is below the minimum"},
		{[]string{"probe", "--duration", "1m", "--probe-timeout", "0s"}, "--probe-timeout 0s is below the minimum of 100ms"},
		{[]string{"run", "--scenario", "baseline", "--log-level", "loud"}, `--log-level "loud": use debug, info, warn or error`},
	} {
		res := repro(t, ctx, tc.args...)
		lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
		if res.code != 1 || !strings.Contains(res.stderr, tc.want) || len(lines) != 1 {
			t.Errorf("repro %v: exit %d, stderr %q; want exit 1 and one line with %q", tc.args, res.code, res.stderr, tc.want)
		}
	}
}

// foundKubeconfigYAML is an oc-login'ed kubeconfig of a cluster that must
// never be contacted: its server is a closed port.
const foundKubeconfigYAML = `apiVersion: v1
kind: Config
clusters:
- cluster:
    server: https://127.0.0.1:1
  name: shared-cluster
contexts:
- context:
    cluster: shared-cluster
    user: dev
  name: shared
current-context: shared
users:
- name: dev
  user:
    token: sha256~not-a-real-token
`
