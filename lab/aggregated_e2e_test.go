package lab_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/lab/aggregated"
	"github.com/repro-tools/repro/lab/binaries"
	"github.com/repro-tools/repro/lab/netns"
)

// checkAggregatedAPIs checks issue 12's `repro lab up` items on a running
// lab (the rollout test's, so no extra lab start): both APIServices are
// Available; openshift-api and oauth-api requests through the load balancer
// are served by the aggregated replicas, not the kube-apiservers (the
// request's Audit-ID is in a replica's own audit log); the replicas' pods,
// Endpoints and EndpointSlices are in openshift-apiserver and
// openshift-oauth-apiserver.
func checkAggregatedAPIs(t *testing.T, l *lab.Lab) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svcs, err := l.APIServices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 2 {
		t.Fatalf("APIServices %+v, want v1.image.openshift.io and v1.oauth.openshift.io", svcs)
	}
	for _, s := range svcs {
		if !s.Available {
			t.Errorf("APIService %s not Available: %s %s", s.Name, s.Reason, s.Message)
		}
	}

	var rss []string
	for _, r := range l.Replicas() {
		rss = append(rss, fmt.Sprintf("%s/%s %d MiB", r.Group(), r.NodeName(), rssMiB(r.PID())))
	}
	t.Logf("FIGURE aggregated replicas' memory after start (RSS): %s", strings.Join(rss, ", "))

	// One request's Audit-ID per group and the node whose replica logged
	// it, to read back through the node's log endpoint.
	logged := map[string][2]string{}
	kasPIDs := map[int]bool{}
	for _, n := range l.Nodes() {
		kasPIDs[n.PID()] = true
	}
	cfg := l.RESTConfig()
	fresh := httpClient(t, cfg, true)
	for _, g := range aggregated.Groups {
		// Fresh connections spread over the kube-apiservers; the aggregator
		// picks a replica at random per request: a few requests reach
		// several replicas.
		servedBy := map[string]bool{}
		for i := 0; i < 9; i++ {
			id := fmt.Sprintf("agg-e2e-%s-%d-%d", g.Component, i, time.Now().UnixNano())
			req, _ := http.NewRequest(http.MethodGet, l.URL()+g.Path, nil)
			req.Header.Set("Audit-ID", id)
			resp, err := fresh.Do(req)
			if err != nil {
				t.Fatalf("GET %s: %v", g.Path, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), `List"`) {
				t.Fatalf("GET %s through the LB: %d %.200s", g.Path, resp.StatusCode, b)
			}
			r := replicaThatLogged(t, l, g.Name, id)
			if r == nil {
				t.Fatalf("Audit-ID %s of GET %s is in no %s replica's audit log", id, g.Path, g.Component)
			}
			if kasPIDs[r.PID()] || r.PID() == 0 {
				t.Fatalf("replica %s/%s has pid %d, a kube-apiserver's or none", g.Name, r.NodeName(), r.PID())
			}
			servedBy[r.NodeName()] = true
			logged[g.Component] = [2]string{r.NodeName(), id}
		}
		t.Logf("FIGURE %s: 9 requests through the LB served by %d of 3 replicas", g.Name, len(servedBy))
		if len(servedBy) < 2 {
			t.Errorf("%s: 9 requests all served by one replica %v: the aggregator should spread them", g.Name, servedBy)
		}
	}

	kube := kubernetes.NewForConfigOrDie(cfg)
	// Where users look for the servers' audit logs: oc adm node-logs NODE
	// --path=openshift-apiserver/audit.log reads the node's /logs/ through
	// the apiserver's node proxy.
	for comp, nodeID := range logged {
		if l.Node(nodeID[0]).KubeletAddr() == "" {
			t.Logf("no kubelet log endpoints on this host: node-logs of %s not checked", comp)
			continue
		}
		b, err := kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/" + nodeID[0] + "/proxy/logs/" + comp + "/audit.log").DoRaw(ctx)
		if err != nil || !strings.Contains(string(b), nodeID[1]) {
			t.Errorf("node-logs %s --path=%s/audit.log lacks Audit-ID %s: %v (%d bytes)", nodeID[0], comp, nodeID[1], err, len(b))
		}
	}
	for _, g := range aggregated.Groups {
		pods, err := kube.CoreV1().Pods(g.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "apiserver=true"})
		if err != nil {
			t.Fatal(err)
		}
		nodes := map[string]bool{}
		for _, p := range pods.Items {
			nodes[p.Spec.NodeName] = true
			if p.Name != "apiserver-"+p.Spec.NodeName || p.Status.Phase != corev1.PodRunning || !ready(&p) {
				t.Errorf("pod %s/%s: node %s phase %s ready %v", g.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, ready(&p))
			}
		}
		for _, r := range l.Replicas() {
			if r.Group() != g.Name {
				continue
			}
			p, err := kube.CoreV1().Pods(g.Namespace).Get(ctx, "apiserver-"+r.NodeName(), metav1.GetOptions{})
			if err != nil || p.Annotations["repro.lab/pid"] != strconv.Itoa(r.PID()) {
				t.Errorf("pod of replica %s on %s does not name its pid %d: %v %v", g.Name, r.NodeName(), r.PID(), err, p.Annotations)
			}
		}
		if len(pods.Items) != 3 || len(nodes) != 3 {
			t.Errorf("%s: %d pods on %d nodes, want 3 on 3", g.Namespace, len(pods.Items), len(nodes))
		}
		ep, err := kube.CoreV1().Endpoints(g.Namespace).Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		readyAddrs := 0
		for _, ss := range ep.Subsets {
			readyAddrs += len(ss.Addresses)
		}
		slices, err := kube.DiscoveryV1().EndpointSlices(g.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=api"})
		if err != nil {
			t.Fatal(err)
		}
		readySlices := 0
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					readySlices++
				}
			}
		}
		if readyAddrs != 3 || readySlices != 3 {
			t.Errorf("%s/api: %d ready Endpoints addresses, %d ready EndpointSlice endpoints, want 3 and 3", g.Namespace, readyAddrs, readySlices)
		}
	}

	// Discovery and OpenAPI as the real servers publish them, through the
	// aggregator.
	for path, want := range map[string]string{
		"/apis":                                  `"image.openshift.io"`,
		"/apis/oauth.openshift.io/v1":            `"oauthclients"`,
		"/openapi/v2":                            `com.github.openshift.api.image.v1.ImageStream`,
		"/openapi/v3/apis/oauth.openshift.io/v1": `com.github.openshift.api.oauth.v1.OAuthClient`,
		"/openapi/v3/apis/image.openshift.io/v1": `com.github.openshift.api.image.v1.ImageStream`,
	} {
		// The aggregator downloads the replicas' OpenAPI in the background
		// once their APIService is Available: give it a moment.
		began := time.Now()
		for {
			resp, err := fresh.Get(l.URL() + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(string(b), want) {
				t.Logf("FIGURE %s served through the aggregator %s after the check began", path, time.Since(began).Round(time.Millisecond))
				break
			}
			if time.Since(began) > 30*time.Second {
				t.Errorf("GET %s: %d, want %s in it (%d bytes)", path, resp.StatusCode, want, len(b))
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// replicaThatLogged returns the replica of group whose audit log holds id,
// waiting briefly for the log line.
func replicaThatLogged(t *testing.T, l *lab.Lab, group, id string) *lab.Replica {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, r := range l.Replicas() {
			if r.Group() != group {
				continue
			}
			b, _ := os.ReadFile(r.AuditLog())
			if strings.Contains(string(b), `"auditID":"`+id+`"`) {
				return r
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNoHostAddressIsOneClearLine starts the lab in a network namespace
// with loopback only (unshare -n): Endpoints refuse loopback addresses, so
// the aggregated servers cannot be published and the lab must say so in
// one line instead of failing later.
func TestNoHostAddressIsOneClearLine(t *testing.T) {
	if os.Getenv("REPRO_NO_NET_CHILD") == "1" {
		_, err := lab.Start(context.Background(), lab.Options{})
		fmt.Printf("STARTERR %q\n", fmt.Sprint(err))
		return
	}
	if testing.Short() {
		t.Skip("needs the lab binaries")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare")
	}
	// lo is down in a fresh namespace; etcd needs it.
	script := "ip link set lo up && exec " + os.Args[0] + " -test.run=^TestNoHostAddressIsOneClearLine$"
	cmd := exec.Command(unshare, "-n", "sh", "-c", script)
	// Not as repro's namespace child, and not moved into a namespace of
	// its own: either would give it an address on lo.
	cmd.Env = append(netns.OutsideEnv(os.Environ()), "REPRO_NO_NET_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "STARTERR") {
		t.Skipf("cannot run in a network namespace here: %v: %.300s", err, out)
	}
	var line string
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(l, "STARTERR "); ok {
			line, _ = strconv.Unquote(rest)
		}
	}
	if !strings.Contains(line, "non-loopback address") || strings.Contains(line, "\n") {
		t.Fatalf("lab.Start without a host address: %q, want one line naming the missing non-loopback address\n%s", line, out)
	}
}

// checkAggregatedRollout rolls master-0's replicas (both groups) while
// polling both aggregated APIs through the load balancer: a graceful
// replacement (out of the endpoints first, then SIGTERM and the shutdown
// delay) should cost no request.
func checkAggregatedRollout(t *testing.T, l *lab.Lab) {
	t.Helper()
	before := map[string]int{}
	for _, r := range l.Replicas() {
		before[r.Group()+"/"+r.NodeName()] = r.PID()
	}
	cfg := l.RESTConfig()
	ctx, cancel := context.WithCancel(context.Background())
	type tally struct{ ok, failed int }
	results := make(chan tally, 4)
	var firstErr = make(chan string, 4)
	for _, g := range aggregated.Groups {
		for _, fresh := range []bool{true, false} {
			hc := httpClient(t, cfg, fresh)
			path := g.Path
			go func() {
				var tl tally
				for ctx.Err() == nil {
					resp, err := hc.Get(l.URL() + path)
					var body []byte
					if err == nil {
						body, _ = io.ReadAll(io.LimitReader(resp.Body, 2048))
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					if err != nil || resp.StatusCode != 200 {
						tl.failed++
						// The answer's status, body and audit ID say which
						// server refused it and why (a 403 after a restart
						// was seen once with only the struct printed).
						what := fmt.Sprint(err)
						if err == nil {
							what = fmt.Sprintf("%s (Audit-ID %s): %s", resp.Status, resp.Header.Get("Audit-Id"), body)
						}
						select {
						case firstErr <- fmt.Sprintf("%s %s at %s", path, what, time.Now().UTC().Format("15:04:05.000")):
						default:
						}
					} else {
						tl.ok++
					}
					time.Sleep(20 * time.Millisecond)
				}
				results <- tl
			}()
		}
	}
	began := time.Now()
	err := l.RollReplicas(ctx, "master-0")
	took := time.Since(began)
	time.Sleep(500 * time.Millisecond)
	cancel()
	if err != nil {
		t.Fatalf("RollReplicas: %v", err)
	}
	var sum tally
	for i := 0; i < 4; i++ {
		tl := <-results
		sum.ok += tl.ok
		sum.failed += tl.failed
	}
	t.Logf("FIGURE graceful roll of master-0's two aggregated replicas: %s; %d requests through the LB meanwhile, %d failed", took.Round(time.Millisecond), sum.ok+sum.failed, sum.failed)
	if sum.failed > 0 {
		t.Errorf("%d of %d requests failed while master-0's aggregated replicas rolled, e.g. %s", sum.failed, sum.ok+sum.failed, <-firstErr)
	}
	for _, r := range l.Replicas() {
		k := r.Group() + "/" + r.NodeName()
		if changed := r.PID() != before[k]; changed != (r.NodeName() == "master-0") || r.PID() == 0 {
			t.Errorf("%s: pid %d before, %d after rolling master-0", k, before[k], r.PID())
		}
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range l.Replicas() {
		ns := ""
		for _, g := range aggregated.Groups {
			if g.Name == r.Group() {
				ns = g.Namespace
			}
		}
		for {
			p, err := kube.CoreV1().Pods(ns).Get(context.Background(), "apiserver-"+r.NodeName(), metav1.GetOptions{})
			if err == nil && p.Annotations["repro.lab/pid"] == strconv.Itoa(r.PID()) && ready(p) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("pod %s/apiserver-%s not Ready with pid %d after the roll: %v", ns, r.NodeName(), r.PID(), err)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// Without Go and without a cached build, the aggregated server's absence
// is one line saying how to get it (it has no --PATH flag to point at).
func TestAggregatedServerWithoutGoIsOneLine(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the lab binaries")
	}
	kas, err := binaries.Ensure(context.Background(), binaries.KubeAPIServer, binaries.Options{})
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := binaries.Ensure(context.Background(), binaries.Etcd, binaries.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("REPRO_CACHE_DIR", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	_, err = lab.Start(context.Background(), lab.Options{KubeAPIServer: kas, Etcd: etcd})
	// Inside the tests' network namespace nothing can be built at all, Go
	// or not: that is the other sentinel, with the same one-line advice.
	missing := errors.Is(err, binaries.ErrNoGoToolchain) || errors.Is(err, binaries.ErrNotBuilt)
	if !missing || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "repro lab build") {
		t.Fatalf("lab.Start without Go or a cached aggregated server: %v", err)
	}
}
