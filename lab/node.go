package lab

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/repro-tools/repro/lab/netproxy"
)

// Node is one control-plane node: a kube-apiserver process on its own
// loopback port (fixed across restarts) with its own proxy to etcd.
type Node struct {
	supervised
	name string

	// cur is the running (or last) process's record; history every one.
	cur     *ProcessRecord
	history []*ProcessRecord
	warm    bool
	// kubelet is the node's /logs/ endpoint (nil without one).
	kubelet *kubeletEndpoint
}

// ProcessRecord is one kube-apiserver process's life as the lab observed it.
type ProcessRecord struct {
	Node     string `json:"node"`
	Revision int32  `json:"revision"`
	// ProcessLife is its pid, log, start, readiness (/readyz first
	// answered 200) and termination.
	ProcessLife
	// Warmed is when its CRD storage had been warmed and it entered the
	// load balancer's service.
	Warmed time.Time `json:"warmed,omitzero"`
	// Lifecycle lists the graceful-termination events read from the
	// apiserver's log, with the time the lab read each line.
	Lifecycle []LifecycleEvent `json:"lifecycle,omitempty"`
	// Warmups counts 429 answers seen while warming CRD storage.
	Warmups int `json:"warmup429s"`
}

// LifecycleEvent is one graceful-termination step of an apiserver.
type LifecycleEvent struct {
	// Signal is the upstream lifecycle signal name (ShutdownInitiated,
	// AfterShutdownDelayDuration, ...).
	Signal string `json:"signal"`
	// Reason is the OpenShift Event reason it maps to ("" if none).
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at"`
}

func newNode(l *Lab, name string, port int, px *netproxy.Proxy) *Node {
	url := "https://127.0.0.1:" + strconv.Itoa(port)
	return &Node{name: name, supervised: newSupervised(l, port, px, l.log.With(zap.String("node", name)),
		name+": kube-apiserver", "kube-apiserver", url+"/readyz")}
}

// Name is the node name, e.g. master-0.
func (n *Node) Name() string { return n.name }

func (n *Node) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// URL is the node's apiserver URL, bypassing the load balancer.
func (n *Node) URL() string { return "https://" + n.addr() }

// Revision is the revision of the running (or last) apiserver process.
func (n *Node) Revision() int32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cur == nil {
		return 0
	}
	return n.cur.Revision
}

// Processes returns a copy of every apiserver process this node has run.
func (n *Node) Processes() []ProcessRecord {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]ProcessRecord, len(n.history))
	for i, r := range n.history {
		out[i] = *r
		out[i].Lifecycle = append([]LifecycleEvent(nil), r.Lifecycle...)
	}
	return out
}

// args are the apiserver's flags. Every revision runs the same
// configuration: the revision is the operator's bookkeeping, and what a
// rollout exercises is the restart itself.
func (n *Node) args() []string {
	p := n.lab.pki
	o := n.lab.opts
	args := []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(n.port),
		"--etcd-servers=http://" + n.proxy.Addr(),
		"--tls-cert-file=" + p.ServingCert,
		"--tls-private-key-file=" + p.ServingKey,
		"--client-ca-file=" + p.CACert,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + p.SAPub,
		"--service-account-signing-key-file=" + p.SAKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=Node,RBAC",
		// No controller-manager runs: the ServiceAccount admission plugin
		// would refuse pods for want of token controllers. The lab's pods are
		// mirror pods, which that plugin would leave alone anyway.
		"--disable-admission-plugins=ServiceAccount",
		// Loopback advertise addresses make the endpoint reconciler fail
		// every 10 s; OpenShift's endpoints are managed elsewhere too.
		"--endpoint-reconciler-type=none",
		// OpenShift's graceful-termination settings, scaled.
		"--shutdown-delay-duration=" + o.ShutdownDelay.String(),
		"--shutdown-send-retry-after=true",
		"--cert-dir=" + filepath.Join(n.lab.dir, "certs-"+n.name),
		"--profiling=false",
		// Per release (versions.go): identity leases off, and what an
		// older release needs to serve the lab's CRDs.
		"--feature-gates=" + featureGatesFor(n.lab.kubeVersion.Minor),
		// -v=1 makes the apiserver log its [graceful-termination] steps,
		// which the lab turns into OpenShift's termination Events.
		"--v=1",
	}
	if t := o.Faults.EtcdCheckTimeout; t > 0 {
		args = append(args, "--etcd-healthcheck-timeout="+t.String(), "--etcd-readycheck-timeout="+t.String())
	}
	args = append(args, n.auditArgs()...)
	args = append(args, n.lab.kubeletArgs()...)
	args = append(args, n.lab.aggr.aggregatorArgs()...)
	return append(args, o.ExtraAPIServerArgs...)
}

// start execs the apiserver for rev and waits until /readyz answers 200.
// Warming (which needs the CRDs to exist) is separate. Its output goes
// through readLog, for its graceful-termination lines.
func (n *Node) start(ctx context.Context, rev int32) error {
	n.mu.Lock()
	seq := len(n.history) + 1
	n.mu.Unlock()
	rec := &ProcessRecord{Node: n.name, Revision: rev}
	return n.supervised.start(ctx, launch{
		bin: n.lab.kasBin, args: n.args(),
		logPath: filepath.Join(n.lab.dir, "logs", fmt.Sprintf("kube-apiserver-%s-r%d-%d.log", n.name, rev, seq)),
		life:    &rec.ProcessLife,
		follow:  func(r io.ReadCloser, logf *os.File) { n.readLog(r, logf, rec) },
		record: func() {
			n.cur, n.warm = rec, false
			n.history = append(n.history, rec)
		},
		fields: []zap.Field{zap.Int32("revision", rev)},
	})
}

// warmPaths are the CRD-served resources whose storage a restarted
// apiserver initialises on first use, answering 429 meanwhile. Only the
// KubeAPIServer operator CRD is left (image and oauth are aggregated APIs,
// served by lab/aggregated's replicas): the lab's operator and repro trigger
// read it through the load balancer, so a new apiserver enters service once
// it answers it.
var warmPaths = []string{
	"/apis/operator.openshift.io/v1/kubeapiservers",
}

// warmUp requests each CRD-served list directly on this apiserver until it
// answers 200, then puts the node in the load balancer's service.
func (n *Node) warmUp(ctx context.Context) error {
	n.mu.Lock()
	rec := n.cur
	n.mu.Unlock()
	hc := n.lab.httpClient(true, 5*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	count := 0
	for _, path := range warmPaths {
		for {
			code, err := get(ctx, hc, n.URL()+path)
			if err == nil && code == http.StatusOK {
				break
			}
			if err == nil && code == http.StatusTooManyRequests {
				count++
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: %s did not answer 200 within 30s (last: %d %v)", n.name, path, code, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	n.mu.Lock()
	rec.Warmed = time.Now()
	rec.Warmups = count
	n.warm = true
	n.mu.Unlock()
	n.lab.lb.SetRegistered(n.name, true)
	n.notify()
	n.log.Info("warmed the KubeAPIServer CRD directly on this apiserver before it enters service",
		zap.Int("resources", len(warmPaths)), zap.Int("answered429", count))
	return nil
}

func get(ctx context.Context, hc *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// lifecycleMap maps the apiserver's [graceful-termination] log lines to
// upstream signal names and OpenShift's Event reasons and messages (the
// events OpenShift's kube-apiserver emits itself).
var lifecycleMap = []struct {
	match, signal, reason, message string
}{
	{`name="ShutdownInitiated"`, "ShutdownInitiated", "ShutdownInitiated", "Received signal to terminate, becoming unready, but keeping serving"},
	{`pre-shutdown hooks completed`, "PreShutdownHooksStopped", "TerminationPreShutdownHooksFinished", "All pre-shutdown hooks have been finished"},
	{`name="AfterShutdownDelayDuration"`, "AfterShutdownDelayDuration", "TerminationMinimalShutdownDurationFinished", "The minimal shutdown duration of %s finished"},
	{`name="NotAcceptingNewRequest"`, "NotAcceptingNewRequest", "", ""},
	{`name="InFlightRequestsDrained"`, "InFlightRequestsDrained", "", ""},
	{`name="HTTPServerStoppedListening"`, "HTTPServerStoppedListening", "TerminationStoppedServing", "Server has stopped listening"},
	{`[graceful-termination] apiserver is exiting`, "Exiting", "TerminationGracefulTerminationFinished", "All pending requests processed"},
}

// readLog copies the apiserver's output to its log file and turns
// graceful-termination lines into lifecycle events as they are read.
func (n *Node) readLog(r io.ReadCloser, logf *os.File, rec *ProcessRecord) {
	defer n.readers.Done()
	defer logf.Close()
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			at := time.Now()
			_, _ = logf.WriteString(line)
			if strings.Contains(line, "graceful-termination") {
				for _, m := range lifecycleMap {
					if !strings.Contains(line, m.match) {
						continue
					}
					msg := m.message
					if strings.Contains(msg, "%s") {
						msg = fmt.Sprintf(msg, n.lab.opts.ShutdownDelay)
					}
					ev := LifecycleEvent{Signal: m.signal, Reason: m.reason, Message: msg, At: at}
					n.mu.Lock()
					rec.Lifecycle = append(rec.Lifecycle, ev)
					n.mu.Unlock()
					n.log.Info("apiserver graceful-termination step", zap.String("signal", m.signal), zap.Int32("revision", rec.Revision))
					if m.reason != "" {
						n.lab.events.termination(n.name, rec.Revision, ev)
					}
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// rollTo replaces the running apiserver with one at rev: the kubelet's part
// of a static pod revision change.
func (n *Node) rollTo(ctx context.Context, rev int32) error {
	if err := n.terminate(); err != nil {
		return err
	}
	// Held out of the load balancer's service until warm, while /readyz
	// health checks still govern once it is back; unless a fault keeps it
	// registered, leaving the health check alone to decide.
	if !n.lab.opts.Faults.KeepRegistered {
		n.lab.lb.SetRegistered(n.name, false)
	}
	if err := n.start(ctx, rev); err != nil {
		return err
	}
	if err := n.warmUp(ctx); err != nil {
		return err
	}
	n.lab.rejoined(n)
	return nil
}
