package lab_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	operatorclient "github.com/openshift/client-go/operator/clientset/versioned"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/lab/lb"
)

// originPaths are origin's disruption backends' paths.
var originPaths = []string{
	"/api/v1/namespaces/default",
	"/apis/image.openshift.io/v1/namespaces/default/imagestreams",
	"/apis/oauth.openshift.io/v1/oauthclients",
}

func startLab(t *testing.T, opts lab.Options) *lab.Lab {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real apiservers")
	}
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	}
	opts.BuildProgress = os.Stderr
	began := time.Now()
	l, err := lab.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("lab.Start: %v", err)
	}
	t.Logf("FIGURE lab start: %s", time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() { assertStopsClean(t, l) })
	return l
}

// assertStopsClean stops the lab and proves no process it started is left:
// no child of this test process remains in /proc.
func assertStopsClean(t *testing.T, l *lab.Lab) {
	t.Helper()
	var pids []int
	for _, n := range l.Nodes() {
		for _, p := range n.Processes() {
			pids = append(pids, p.PID)
		}
	}
	if err := l.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := l.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("apiserver pid %d still alive after Stop", pid)
		}
	}
	if kids := children(os.Getpid()); len(kids) > 0 {
		t.Errorf("child processes left after Stop: %v", kids)
	}
	if _, err := os.Stat(l.Dir()); !os.IsNotExist(err) {
		t.Errorf("lab dir %s not removed: %v", l.Dir(), err)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// children lists live processes whose parent is ppid, with their commands.
func children(ppid int) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		rest := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(rest) < 2 || rest[0] == "Z" {
			continue
		}
		if p, _ := strconv.Atoi(rest[1]); p == ppid {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmd), "\x00", " ")))
		}
	}
	return out
}

func httpClient(t *testing.T, cfg *rest.Config, fresh bool) *http.Client {
	t.Helper()
	tr, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fresh {
		tc, _ := rest.TLSConfigFor(cfg)
		ht := &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}
		return &http.Client{Transport: ht, Timeout: 10 * time.Second}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func TestLabServesOriginPathsThroughTheLoadBalancerAndRollsOut(t *testing.T) {
	l := startLab(t, lab.Options{})
	cfg := l.RESTConfig()
	fresh := httpClient(t, cfg, true)

	// Every backend path answers 200 through the LB, on fresh connections
	// spread over all three apiservers.
	for i := 0; i < 6; i++ {
		for _, p := range originPaths {
			resp, err := fresh.Get(l.URL() + p)
			if err != nil {
				t.Fatalf("GET %s: %v", p, err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s through the LB: %d", p, resp.StatusCode)
			}
		}
	}
	served := map[string]int{}
	for _, r := range l.Connections() {
		if r.Action == lb.ActionForward {
			served[r.Target]++
		}
	}
	for _, n := range l.NodeNames() {
		if served[n] == 0 {
			t.Errorf("no connection through the LB reached %s: %v", n, served)
		}
	}

	var rss []string
	for _, n := range l.Nodes() {
		rss = append(rss, fmt.Sprintf("%s %d MiB", n.Name(), rssMiB(n.PID())))
	}
	rss = append(rss, fmt.Sprintf("etcd %d MiB", rssMiB(l.EtcdPID())), fmt.Sprintf("test process (LB, proxies, operator) %d MiB", rssMiB(os.Getpid())))
	t.Logf("FIGURE memory after start (RSS): %s", strings.Join(rss, ", "))
	checkAggregatedAPIs(t, l)
	checkAggregatedRollout(t, l)

	kube := kubernetes.NewForConfigOrDie(cfg)
	ops := operatorclient.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	initial := map[string]types.UID{}
	pods, err := kube.CoreV1().Pods(lab.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "apiserver=true"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Labels["revision"] != "1" || !ready(&p) {
			t.Fatalf("initial pod %s: revision %s ready %v", p.Name, p.Labels["revision"], ready(&p))
		}
		initial[p.Name] = p.UID
	}
	if len(initial) != 3 {
		t.Fatalf("%d kube-apiserver pods, want 3", len(initial))
	}

	// Watch pods as a client on OpenShift would while the rollout runs.
	var mu sync.Mutex
	var podEvents []string
	// A RetryWatcher, as a real client uses: the watch's own apiserver is
	// among those restarting.
	w, err := watchtools.NewRetryWatcherWithContext(ctx, pods.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = "apiserver=true"
			return kube.CoreV1().Pods(lab.Namespace).Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			podEvents = append(podEvents, fmt.Sprintf("%s %s rev=%s ready=%v uid=%s", ev.Type, p.Name, p.Labels["revision"], ready(p), p.UID))
			mu.Unlock()
		}
	}()
	defer w.Stop()

	// Poll origin's paths through the LB during the whole rollout, over new
	// and reused connections, as origin's samplers do (faster).
	pollCtx, stopPolling := context.WithCancel(ctx)
	polls := startPolling(pollCtx, t, l, cfg)

	began := time.Now()
	patch := []byte(`{"spec":{"forceRedeploymentReason":"repro-test-1"}}`)
	if _, err := ops.OperatorV1().KubeAPIServers().Patch(ctx, "cluster", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching forceRedeploymentReason: %v", err)
	}
	var final *operatorv1.KubeAPIServer
	for {
		obj, err := ops.OperatorV1().KubeAPIServers().Get(ctx, "cluster", metav1.GetOptions{})
		if err == nil && converged(obj, 2) {
			final = obj
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("rollout did not converge: %+v (last error %v)", obj.Status, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("FIGURE three-node rollout with default timings: %s", time.Since(began).Round(time.Millisecond))
	if final.Status.LatestAvailableRevision != 2 {
		t.Fatalf("latestAvailableRevision %d, want 2", final.Status.LatestAvailableRevision)
	}

	stopPolling()
	checkPolls(t, l, polls.wait())

	// Every process restarted exactly once, one node at a time, in order,
	// each after the previous was ready plus the minimum ready time.
	opts := l.Options()
	var prevWarm time.Time
	for _, n := range l.Nodes() {
		ps := n.Processes()
		if len(ps) != 2 {
			t.Fatalf("%s ran %d processes, want 2 (one restart)", n.Name(), len(ps))
		}
		old, cur := ps[0], ps[1]
		if old.Revision != 1 || cur.Revision != 2 || n.Revision() != 2 {
			t.Errorf("%s revisions %d -> %d (now %d)", n.Name(), old.Revision, cur.Revision, n.Revision())
		}
		if old.Killed || old.ExitStatus != "exit status 0" {
			t.Errorf("%s old process ended %q killed=%v; want a graceful exit", n.Name(), old.ExitStatus, old.Killed)
		}
		if !prevWarm.IsZero() && old.Terminating.Sub(prevWarm) < opts.MinReadyTime {
			t.Errorf("%s terminated %s after the previous node was ready, want >= %s", n.Name(), old.Terminating.Sub(prevWarm), opts.MinReadyTime)
		}
		prevWarm = cur.Warmed
		var signals []string
		var initiated, delayDone time.Time
		for _, e := range old.Lifecycle {
			signals = append(signals, e.Signal)
			switch e.Signal {
			case "ShutdownInitiated":
				initiated = e.At
			case "AfterShutdownDelayDuration":
				delayDone = e.At
			}
		}
		// The times are when the lab read each log line: allow for the
		// pipe's scheduling jitter.
		if d := delayDone.Sub(initiated); d < opts.ShutdownDelay-100*time.Millisecond || d > opts.ShutdownDelay+time.Second {
			t.Errorf("%s shutdown delay observed %s, configured %s (signals %v)", n.Name(), d, opts.ShutdownDelay, signals)
		}
		t.Logf("%s: SIGTERM->exit %s, exit->ready %s, ready->warm %s (429s while warming: %d)", n.Name(),
			old.Exited.Sub(old.Terminating).Round(time.Millisecond), cur.Ready.Sub(old.Exited).Round(time.Millisecond),
			cur.Warmed.Sub(cur.Ready).Round(time.Millisecond), cur.Warmups)
	}

	// Termination Events per pod, with OpenShift's reasons, in order, at the
	// times the lab observed them.
	wantReasons := []string{"ShutdownInitiated", "TerminationPreShutdownHooksFinished", "TerminationMinimalShutdownDurationFinished",
		"TerminationStoppedServing", "TerminationGracefulTerminationFinished"}
	var evs *corev1.EventList
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs, err = kube.CoreV1().Events(lab.Namespace).List(ctx, metav1.ListOptions{})
		if err == nil && countTermination(evs) >= 15 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	byPod := map[string][]corev1.Event{}
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "Pod" && strings.HasPrefix(e.InvolvedObject.Name, "kube-apiserver-") {
			byPod[e.InvolvedObject.Name] = append(byPod[e.InvolvedObject.Name], e)
		}
	}
	for _, n := range l.Nodes() {
		es := byPod["kube-apiserver-"+n.Name()]
		sort.Slice(es, func(i, j int) bool { return es[i].EventTime.Time.Before(es[j].EventTime.Time) })
		var got []string
		for _, e := range es {
			got = append(got, e.Reason)
			obs, err := time.Parse(time.RFC3339Nano, e.Annotations[lab.ObservedAtAnnotation])
			if err != nil || e.EventTime.Time.Sub(obs).Abs() > time.Microsecond {
				t.Errorf("%s %s: eventTime %s vs observed %s", n.Name(), e.Reason, e.EventTime.Time, obs)
			}
			if e.Namespace != lab.Namespace || e.Source.Host != n.Name() {
				t.Errorf("%s event %s in %s from %s", n.Name(), e.Reason, e.Namespace, e.Source.Host)
			}
		}
		// ShutdownInitiated and the pre-shutdown hooks' end are signalled
		// concurrently by the apiserver: either may be logged first.
		if len(got) >= 2 && got[0] == wantReasons[1] && got[1] == wantReasons[0] {
			got[0], got[1] = got[1], got[0]
		}
		if fmt.Sprint(got) != fmt.Sprint(wantReasons) {
			t.Errorf("%s termination events %v, want %v", n.Name(), got, wantReasons)
		}
		old := n.Processes()[0]
		for _, e := range es {
			if e.EventTime.Time.Before(old.Terminating) || e.EventTime.Time.After(old.Exited.Add(time.Second)) {
				t.Errorf("%s %s at %s outside the process's termination [%s, %s]", n.Name(), e.Reason, e.EventTime.Time, old.Terminating, old.Exited)
			}
		}
	}

	// Pods: each old mirror pod was deleted and a new one (new uid,
	// revision=2) created and turned Ready, as static pods appear on
	// OpenShift.
	pods, err = kube.CoreV1().Pods(lab.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "apiserver=true"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Labels["revision"] != "2" || !ready(&p) || p.UID == initial[p.Name] {
			t.Errorf("final pod %s: revision %s ready %v uid %s (initial %s)", p.Name, p.Labels["revision"], ready(&p), p.UID, initial[p.Name])
		}
	}
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	seen := strings.Join(podEvents, "\n")
	mu.Unlock()
	for name, uid := range initial {
		for _, want := range []string{
			fmt.Sprintf("MODIFIED %s rev=1 ready=false uid=%s", name, uid),
			fmt.Sprintf("DELETED %s rev=1", name),
			fmt.Sprintf("ADDED %s rev=2 ready=false", name),
			fmt.Sprintf("MODIFIED %s rev=2 ready=true", name),
		} {
			if !strings.Contains(seen, want) {
				t.Errorf("pod watch never saw %q; saw:\n%s", want, seen)
			}
		}
	}

	// The LB saw each node go unhealthy and come back.
	down := map[string]bool{}
	for _, tr := range l.LB().Transitions() {
		if !tr.Healthy && tr.At.After(began) {
			down[tr.Target] = true
		}
	}
	if len(down) != 3 {
		t.Errorf("LB marked %v unhealthy during the rollout, want all three", down)
	}

	// Conditions as the real operator leaves them.
	for _, c := range final.Status.Conditions {
		if c.Type == "NodeInstallerProgressing" && c.Status != operatorv1.ConditionFalse {
			t.Errorf("NodeInstallerProgressing %s after convergence: %s", c.Status, c.Message)
		}
	}
	op, err := kube.CoreV1().Events(lab.OperatorNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, e := range op.Items {
		reasons[e.Reason]++
	}
	if reasons["RevisionTriggered"] != 1 || reasons["NodeTargetRevisionChanged"] != 3 || reasons["NodeCurrentRevisionChanged"] != 3 {
		t.Errorf("operator events %v", reasons)
	}
	for _, n := range l.NodeNames() {
		ip, err := kube.CoreV1().Pods(lab.Namespace).Get(ctx, "installer-2-"+n, metav1.GetOptions{})
		if err != nil || ip.Status.Phase != corev1.PodSucceeded {
			t.Errorf("installer pod for %s: %v %v", n, err, ip.Status.Phase)
		}
	}
	for _, p := range originPaths {
		resp, err := fresh.Get(l.URL() + p)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("after the rollout GET %s: %v %v", p, err, resp)
		}
		resp.Body.Close()
	}
}

func countTermination(evs *corev1.EventList) int {
	n := 0
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "Pod" {
			n++
		}
	}
	return n
}

func converged(obj *operatorv1.KubeAPIServer, rev int32) bool {
	if obj.Status.LatestAvailableRevision != rev || len(obj.Status.NodeStatuses) != 3 {
		return false
	}
	for _, ns := range obj.Status.NodeStatuses {
		if ns.CurrentRevision != rev || ns.TargetRevision != 0 {
			return false
		}
	}
	for _, c := range obj.Status.Conditions {
		if c.Type == "NodeInstallerProgressing" {
			return c.Status == operatorv1.ConditionFalse
		}
	}
	return false
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestNoProcessOutlivesAKilledRepro runs a lab in a child process, SIGKILLs
// that process (no cleanup code runs) and checks the parent-death signal
// takes every apiserver and etcd with it.
func TestNoProcessOutlivesAKilledRepro(t *testing.T) {
	if os.Getenv("REPRO_LAB_CHILD") == "1" {
		runChildLab()
		return
	}
	if testing.Short() {
		t.Skip("starts real apiservers")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoProcessOutlivesAKilledRepro$", "-test.v")
	cmd.Env = append(os.Environ(), "REPRO_LAB_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "LABPIDS "); ok {
			if err := json.Unmarshal([]byte(rest), &pids); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if len(pids) != 10 {
		t.Fatalf("child lab reported pids %v", pids)
	}
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("pid %d not running before the kill", p)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pids {
		for alive(p) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d outlived its SIGKILLed parent", p)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func runChildLab() {
	// A goroutine other than the one that calls Start, on purpose: the
	// parent-death signal must not depend on which thread forked.
	l, err := lab.Start(context.Background(), lab.Options{})
	if err != nil {
		fmt.Println("child lab failed:", err)
		os.Exit(1)
	}
	var pids []int
	for _, n := range l.Nodes() {
		pids = append(pids, n.PID())
	}
	for _, r := range l.Replicas() {
		pids = append(pids, r.PID())
	}
	pids = append(pids, l.EtcdPID())
	b, _ := json.Marshal(pids)
	fmt.Println("LABPIDS " + string(b))
	select {}
}

func TestClearErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the lab binaries")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = lab.Start(context.Background(), lab.Options{Listen: ln.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "is busy") {
		t.Fatalf("busy port: %v", err)
	}

	// A binary that will not start: the error carries its log's tail.
	script := t.TempDir() + "/kube-apiserver"
	os.WriteFile(script, []byte("#!/bin/sh\necho 'E0101 flag provided but not defined: --bogus' >&2\nexit 3\n"), 0o755)
	_, err = lab.Start(context.Background(), lab.Options{KubeAPIServer: script})
	if err == nil || !strings.Contains(err.Error(), "exited at start") || !strings.Contains(err.Error(), "flag provided but not defined") {
		t.Fatalf("broken binary: %v", err)
	}
	if kids := children(os.Getpid()); len(kids) > 0 {
		t.Fatalf("failed starts left processes: %v", kids)
	}
}

type pollResult struct {
	conn   string // new or reused
	path   string
	at     time.Time
	status int
	err    error
	local  string // client address, for LB attribution
}

type pollers struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	res []pollResult
}

func (p *pollers) wait() []pollResult {
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.res
}

// startPolling runs one poller per path and connection type every 100 ms,
// each remembering the local address of the connection that carried each
// request so the LB's records name the apiserver behind it.
func startPolling(ctx context.Context, t *testing.T, l *lab.Lab, cfg *rest.Config) *pollers {
	p := &pollers{}
	tc, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, connType := range []string{"new", "reused"} {
		for _, path := range originPaths {
			connType, path := connType, path
			var lastLocal sync.Map
			tr := &http.Transport{
				TLSClientConfig:   tc.Clone(),
				DisableKeepAlives: connType == "new",
				DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: -1}).DialContext(ctx, network, addr)
					if err == nil {
						lastLocal.Store("x", c.LocalAddr().String())
					}
					return c, err
				},
			}
			c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					r := pollResult{conn: connType, path: path, at: time.Now()}
					resp, err := c.Get(l.URL() + path)
					if err != nil {
						r.err = err
					} else {
						r.status = resp.StatusCode
						// Drain so the reused transport can reuse the connection.
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					if v, ok := lastLocal.Load("x"); ok {
						r.local = v.(string)
					}
					p.mu.Lock()
					p.res = append(p.res, r)
					p.mu.Unlock()
				}
			}()
		}
	}
	return p
}

// checkPolls asserts the healthy lab is as quiet as a healthy cluster: no
// failure on new connections; on reused connections only the 429 +
// Retry-After that kube-apiserver itself sends (--shutdown-send-retry-after)
// to a request on a kept connection after its shutdown delay.
func checkPolls(t *testing.T, l *lab.Lab, res []pollResult) {
	t.Helper()
	if len(res) < 200 {
		t.Fatalf("only %d polls during the rollout", len(res))
	}
	failed := map[string]int{}
	for _, r := range res {
		if r.err == nil && r.status >= 200 && r.status < 400 {
			continue
		}
		node := "?"
		if recs := l.LB().ConnectionsFrom(r.local); len(recs) > 0 {
			node = recs[len(recs)-1].Target
		}
		desc := fmt.Sprintf("%s %s at %s via %s: status %d err %v", r.conn, r.path, r.at.Format("15:04:05.000"), node, r.status, r.err)
		failed[r.conn]++
		if r.conn == "new" {
			t.Errorf("new-connection poll failed on the healthy lab: %s", desc)
			continue
		}
		if r.status != http.StatusTooManyRequests || !afterShutdownDelay(l, node, r.at) {
			t.Errorf("reused-connection poll failed other than by the shutdown 429: %s", desc)
			continue
		}
		t.Logf("expected: %s (kube-apiserver's Retry-After once its shutdown delay ended)", desc)
	}
	conns := map[string]map[string]bool{"new": {}, "reused": {}}
	for _, r := range res {
		conns[r.conn][r.local] = true
	}
	t.Logf("FIGURE healthy rollout polls: %d requests over %d new and %d reused connections, failures by connection type %v",
		len(res), len(conns["new"]), len(conns["reused"]), failed)
}

func afterShutdownDelay(l *lab.Lab, node string, at time.Time) bool {
	n := l.Node(node)
	if n == nil {
		return false
	}
	for _, p := range n.Processes() {
		for _, e := range p.Lifecycle {
			if e.Signal == "AfterShutdownDelayDuration" && !at.Before(e.At.Add(-100*time.Millisecond)) && (p.Exited.IsZero() || at.Before(p.Exited)) {
				return true
			}
		}
	}
	return false
}

func rssMiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kb / 1024
		}
	}
	return -1
}
