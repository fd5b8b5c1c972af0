// Package lab is repro's embedded control plane: real kube-apiserver
// processes ("nodes" master-0..2) on a real etcd, behind a load balancer that
// behaves like a cloud NLB, with an installer controller that rolls out
// kube-apiserver revisions the way OpenShift's operator does.
//
// image.openshift.io and oauth.openshift.io are aggregated APIs, as on
// OpenShift: every node also runs the lab's openshift-apiserver and
// oauth-apiserver stand-ins (lab/aggregated, on k8s.io/apiserver, each
// process with its own etcd link) behind APIServices (replicas.go).
//
// A client of the lab sees what it would see on OpenShift: the
// kubeapiservers.operator.openshift.io/cluster object, kube-apiserver-<node>
// pods in openshift-kube-apiserver with revision labels and Ready conditions,
// and the apiservers' termination Events, at the times they happened.
package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/repro-tools/repro/lab/aggregated"
	"github.com/repro-tools/repro/lab/binaries"
	"github.com/repro-tools/repro/lab/lb"
	"github.com/repro-tools/repro/lab/netns"
	"github.com/repro-tools/repro/lab/netproxy"
	"github.com/repro-tools/repro/lab/operator"
	"github.com/repro-tools/repro/lab/pki"
	"github.com/repro-tools/repro/lab/promserver"
)

// Namespace is where OpenShift runs the kube-apiserver static pods.
const Namespace = "openshift-kube-apiserver"

// OperatorNamespace is where OpenShift's kube-apiserver operator runs and
// records its own events.
const OperatorNamespace = "openshift-kube-apiserver-operator"

// Lab is a running lab.
type Lab struct {
	opts    Options
	log     *zap.Logger
	dir     string
	tempDir bool
	pki     *pki.Bundle
	kasBin  string
	// kubeVersion is what kasBin reports, which picks its flags.
	kubeVersion KubeVersion

	etcd   etcdMember
	lb     Balancer
	lbKind string
	// lbFiles are the load balancer's connection and health records
	// (Options.ConnRecords, LBHealthFile), closed at stop.
	lbFiles []*os.File
	nodes   []*Node

	cfg    *rest.Config
	client kubernetes.Interface
	events *eventSink

	ctx      context.Context
	cancel   context.CancelFunc
	bg       sync.WaitGroup
	op       *operator.Controller
	stopOnce sync.Once
	stopErr  error
	stopped  chan struct{}
	faults   faultLog

	// auditPolicy is the apiservers' audit policy file; kubeletClient
	// their kubelet client certificate (empty without kubelet endpoints).
	auditPolicy   string
	kubeletClient pki.KubeletClient

	// aggr is the aggregated API servers' state (replicas.go).
	aggr aggregation

	// prom is the lab's Prometheus (prometheus.go), nil without one.
	prom *promserver.Server

	// load is the load process (loadproc.go), nil without one.
	load *loadProc
}

// Balancer is what the lab needs of its load balancer; lab/lb's Go proxy
// and its kernel pass-through mode both provide it.
type Balancer interface {
	// Addr is the address clients connect to.
	Addr() string
	// Kind is lb.KindKernel or lb.KindProxy.
	Kind() string
	SetRegistered(name string, registered bool)
	WaitInService(ctx context.Context, names ...string) error
	Targets() []lb.TargetState
	Transitions() []lb.HealthTransition
	Connections() []lb.ConnRecord
	ConnectionsFrom(client string) []lb.ConnRecord
	Close() error
}

var _ Balancer = (*lb.LB)(nil)

// Start builds or locates the binaries, generates the PKI, starts etcd, the
// apiservers, the load balancer and the installer controller, and returns
// once every apiserver is ready, warm and in service behind the load
// balancer. Cancelling ctx stops the lab; so does Stop.
//
// It runs in phases, each a method below: prepare (binaries, directory,
// PKI), etcd, wire (nodes, load balancer, client), startNodes (apiservers
// and bootstrap), warmUp, serve (in service, pods, kubelets, aggregated
// APIs, Prometheus) and startOperator.
func Start(ctx context.Context, opts Options) (_ *Lab, err error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	l := &Lab{opts: opts, log: opts.Logger, stopped: make(chan struct{})}
	l.aggr.l = l
	l.ctx, l.cancel = context.WithCancel(context.Background())
	defer func() {
		// Any failure, and a panic on the way up, leaves nothing running.
		if r := recover(); r != nil {
			_ = l.Stop()
			panic(r)
		}
		if err != nil {
			_ = l.Stop()
		}
	}()
	began := time.Now()

	bins, err := l.prepare(ctx)
	if err != nil {
		return nil, err
	}
	if err := l.etcd.start(ctx, l.dir, l.log); err != nil {
		return nil, err
	}
	if err := l.wire(); err != nil {
		return nil, err
	}
	if err := l.startNodes(ctx); err != nil {
		return nil, err
	}
	if err := l.warmUp(ctx); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := l.serve(wctx, bins.Prometheus); err != nil {
		return nil, err
	}
	if err := l.startOperator(wctx); err != nil {
		return nil, err
	}
	if err := l.startLoad(ctx); err != nil {
		return nil, err
	}

	go func() {
		select {
		case <-ctx.Done():
			l.log.Info("lab context cancelled, stopping")
			_ = l.Stop()
		case <-l.stopped:
		}
	}()
	l.log.Info("lab is up", zap.String("url", l.URL()), zap.Duration("took", time.Since(began).Round(time.Millisecond)), zap.String("dir", l.dir))
	return l, nil
}

// prepare locates (or builds) the binaries, picks the load balancer kind,
// and makes the lab's directory and PKI.
func (l *Lab) prepare(ctx context.Context) (BinaryPaths, error) {
	opts := l.opts
	bins, err := Binaries(ctx, opts)
	if err != nil {
		return bins, err
	}
	l.kasBin, l.etcd.bin, l.aggr.bin = bins.KubeAPIServer, bins.Etcd, bins.Aggregated
	l.kubeVersion = binaryVersion(ctx, l.kasBin)
	l.log.Info("kube-apiserver", zap.String("binary", l.kasBin), zap.String("version", l.kubeVersion.String()),
		zap.String("featureGates", featureGatesFor(l.kubeVersion.Minor)))
	kind, why, err := ResolveLB(opts.LB)
	if err != nil {
		return bins, err
	}
	l.lbKind = kind
	if why != "" {
		l.log.Info(why)
	}
	if opts.Listen != "" {
		if err := checkListen(opts.Listen); err != nil {
			return bins, err
		}
	}
	if opts.Dir == "" {
		removeStaleLabDirs(l.log)
		if l.dir, err = os.MkdirTemp("", "repro-lab-"); err != nil {
			return bins, err
		}
		l.tempDir = true
		if err := writeOwner(l.dir); err != nil {
			return bins, err
		}
	} else {
		l.dir = opts.Dir
		if err := os.MkdirAll(l.dir, 0o700); err != nil {
			return bins, err
		}
	}
	if err := os.MkdirAll(filepath.Join(l.dir, "logs"), 0o755); err != nil {
		return bins, err
	}
	if l.pki, err = pki.Generate(filepath.Join(l.dir, "pki")); err != nil {
		return bins, fmt.Errorf("generating the lab PKI: %w", err)
	}
	return bins, nil
}

// wire makes the nodes (not yet started), their logs, the aggregation's
// certificates, the load balancer in front of the nodes, and the client
// that goes through it.
func (l *Lab) wire() error {
	opts := l.opts
	// Each node keeps its apiserver port and its etcd proxy across restarts,
	// as a node keeps its address.
	var targets []lb.Target
	for i := 0; i < opts.Nodes; i++ {
		name := "master-" + strconv.Itoa(i)
		port, err := freePort()
		if err != nil {
			return err
		}
		px, err := netproxy.New("etcd-"+name, "127.0.0.1:0", l.etcd.addr())
		if err != nil {
			return err
		}
		n := newNode(l, name, port, px)
		l.nodes = append(l.nodes, n)
		targets = append(targets, lb.Target{Name: name, Addr: n.addr()})
	}
	if err := l.setupNodeLogs(); err != nil {
		return err
	}
	if err := l.aggr.setupAggregation(); err != nil {
		return err
	}

	hc := opts.Health
	hc.TLS = l.tlsConfig(false)
	policy := opts.LBPolicy
	if policy == nil && opts.Faults.LB.Enabled() {
		policy = lb.Faulty(opts.Faults.LB)
	}
	lbOpts := lb.Options{Listen: opts.Listen, Targets: targets, Health: hc, Policy: policy, Logger: l.log.Named("lb"), Kernel: l.lbKind == LBKernel}
	if opts.ConnRecords != "" {
		f, err := os.Create(opts.ConnRecords)
		if err != nil {
			return err
		}
		l.lbFiles = append(l.lbFiles, f)
		lbOpts.Records = f
	}
	// The health checker's transitions, as results.Signal lines, in a file
	// of their own: a run copies them into its results' signals.
	hf, err := os.Create(filepath.Join(l.dir, LBHealthFile))
	if err != nil {
		return err
	}
	l.lbFiles = append(l.lbFiles, hf)
	lbOpts.HealthRecords = hf
	lbx, err := lb.New(lbOpts)
	if err != nil {
		return err
	}
	l.lb = lbx
	l.cfg = l.restConfig("https://" + l.lb.Addr())
	if l.client, err = kubernetes.NewForConfig(l.cfg); err != nil {
		return err
	}
	l.events = newEventSink(l)
	return nil
}

// startNodes starts every apiserver out of service and bootstraps the
// cluster (CRDs, namespaces) through whichever is ready first while the
// others finish starting: on two cores that overlap is most of a second.
// It waits for all of them; a start error wins over a bootstrap error.
func (l *Lab) startNodes(ctx context.Context) error {
	var starts errgroup.Group
	ready := make(chan *Node, len(l.nodes))
	for _, n := range l.nodes {
		l.lb.SetRegistered(n.name, false)
		starts.Go(func() error {
			err := n.start(ctx, 1)
			if err == nil {
				ready <- n
			}
			return err
		})
	}
	startErr := make(chan error, 1)
	go func() {
		startErr <- starts.Wait()
		close(ready)
	}()
	var bootErr error
	if first, ok := <-ready; ok {
		bootErr = l.bootstrap(ctx, first)
	}
	if err := <-startErr; err != nil {
		return err
	}
	return bootErr
}

// warmUp warms every apiserver's CRD storage now that the CRDs exist,
// before any is put in service.
func (l *Lab) warmUp(ctx context.Context) error {
	var warm errgroup.Group
	for _, n := range l.nodes {
		warm.Go(func() error { return n.warmUp(ctx) })
	}
	return warm.Wait()
}

// serve puts the apiservers in service and waits for them behind the load
// balancer, then for their pods, the kubelets, the aggregated APIs and
// (with prometheus, its binary) Prometheus.
func (l *Lab) serve(ctx context.Context, prometheus string) error {
	for _, n := range l.nodes {
		n.startLoops()
	}
	if err := l.lb.WaitInService(ctx); err != nil {
		return err
	}
	if err := l.waitPodsReady(ctx); err != nil {
		return err
	}
	if err := l.registerKubelets(ctx); err != nil {
		return err
	}
	if err := l.aggr.startAggregated(ctx); err != nil {
		return err
	}
	if prometheus != "" {
		return l.startPrometheus(ctx, prometheus)
	}
	return nil
}

// startOperator runs the installer controller for the lab's lifetime and
// waits for its first sync.
func (l *Lab) startOperator(ctx context.Context) error {
	var err error
	if l.op, err = operator.New(operator.Options{
		Config: l.cfg, Nodes: l.NodeNames(), Installer: installer{l}, MinReadyTime: l.opts.MinReadyTime,
		Namespace: Namespace, OperatorNamespace: OperatorNamespace, Logger: l.log.Named("operator"),
	}); err != nil {
		return err
	}
	l.bg.Add(1)
	go func() { defer l.bg.Done(); l.op.Run(l.ctx) }()
	return l.op.WaitSynced(ctx)
}

// BinaryPaths are the programs a lab runs.
type BinaryPaths struct {
	KubeAPIServer, Etcd, Aggregated string
	// Prometheus is "" unless Options.Prometheus.
	Prometheus string
}

// Binaries returns the programs a lab with opts runs, building into the
// cache (with opts.BuildProgress) whatever is not built yet. Call it before
// entering repro's network namespace: a build needs the module proxy, and
// the namespace has no network.
func Binaries(ctx context.Context, opts Options) (BinaryPaths, error) {
	var b BinaryPaths
	kas, err := KubeAPIServerSpec(opts.KubeVersion)
	if err != nil {
		return b, err
	}
	if b.KubeAPIServer, err = resolveBinary(ctx, opts.KubeAPIServer, kas, opts.BuildProgress); err != nil {
		return b, err
	}
	if b.Etcd, err = resolveBinary(ctx, opts.Etcd, binaries.Etcd, opts.BuildProgress); err != nil {
		return b, err
	}
	if b.Aggregated, err = resolveBinary(ctx, "", aggregated.Spec, opts.BuildProgress); err != nil {
		// It has no --PATH override (it is the lab's own program): say how
		// else to get it.
		if errors.Is(err, binaries.ErrNoGoToolchain) {
			return b, fmt.Errorf("the lab's aggregated API server %s is not built yet and building it needs a Go toolchain: %w (install Go 1.24 or newer, or run repro lab build once where Go is)", aggregated.Spec.Version, binaries.ErrNoGoToolchain)
		}
		return b, err
	}
	if opts.Prometheus {
		if b.Prometheus, err = resolveBinary(ctx, "", binaries.Prometheus, opts.BuildProgress); err != nil {
			return b, err
		}
	}
	return b, nil
}

// resolveBinary returns the given path after checking it runs, or the cached
// build, building it first if needed.
func resolveBinary(ctx context.Context, given string, spec binaries.Spec, progress io.Writer) (string, error) {
	if given != "" {
		st, err := os.Stat(given)
		if err != nil {
			return "", fmt.Errorf("--%s %s: %w", spec.Name, given, err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("--%s %s is not an executable file", spec.Name, given)
		}
		return filepath.Abs(given)
	}
	o := binaries.Options{}
	if progress != nil {
		o.Progress = progress
	}
	if netns.Inside() {
		// No network in here: a build would fail on its first download.
		p, ok, err := binaries.Path(spec, o)
		if err != nil || ok {
			return p, err
		}
		return "", fmt.Errorf("%s %s is %w, and repro's network namespace cannot reach the module proxy: run `repro lab build` first", spec.Name, spec.Version, binaries.ErrNotBuilt)
	}
	return binaries.Ensure(ctx, spec, o)
}

// checkListen fails with one clear line when a fixed port is taken.
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("load balancer address %q: %w", addr, err)
	}
	if port == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("load balancer port %s is busy (%v): pick another with --listen or stop what uses it", addr, errors.Unwrap(err))
	}
	return ln.Close()
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// KubeVersion is the release of the kube-apiserver the lab runs, as its
// binary reported it.
func (l *Lab) KubeVersion() KubeVersion { return l.kubeVersion }

// URL is the load balancer's URL: the lab's API endpoint.
func (l *Lab) URL() string { return "https://" + l.lb.Addr() }

// RESTConfig returns an admin (system:masters) config for the load
// balancer, verifying the apiservers against the lab's CA.
func (l *Lab) RESTConfig() *rest.Config { return rest.CopyConfig(l.cfg) }

// LBHealthFile, in the lab's directory, holds the load balancer's health
// records: one results.Signal line (source "lab-lb") per change.
const LBHealthFile = "lb-health.jsonl"

// LBHealthPath is the file of the load balancer's health records.
func (l *Lab) LBHealthPath() string { return filepath.Join(l.dir, LBHealthFile) }

// Dir is the lab's directory (PKI, etcd data, logs).
func (l *Lab) Dir() string { return l.dir }

// LB is the load balancer, for its targets, transitions and connection records.
func (l *Lab) LB() Balancer { return l.lb }

// LBKind is the load balancer that runs: LBKernel or LBProxy.
func (l *Lab) LBKind() string { return l.lbKind }

// Connections returns the load balancer's connection records so far.
func (l *Lab) Connections() []lb.ConnRecord { return l.lb.Connections() }

// Nodes returns the control-plane nodes in name order.
func (l *Lab) Nodes() []*Node { return append([]*Node(nil), l.nodes...) }

// Node returns the node with the given name, or nil.
func (l *Lab) Node(name string) *Node {
	for _, n := range l.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// NodeNames lists the node names in order.
func (l *Lab) NodeNames() []string {
	var out []string
	for _, n := range l.nodes {
		out = append(out, n.name)
	}
	return out
}

// Options returns the options the lab runs with, defaults filled in.
func (l *Lab) Options() Options { return l.opts }

func (l *Lab) restConfig(host string) *rest.Config {
	return &rest.Config{
		Host: host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   l.pki.CAPEM,
			CertData: l.pki.AdminCertPEM,
			KeyData:  l.pki.AdminKeyPEM,
		},
		QPS:       100,
		Burst:     200,
		Timeout:   10 * time.Second,
		UserAgent: "repro-lab",
	}
}

// WriteKubeconfig writes an admin kubeconfig for the load balancer to path
// (0600: it holds the admin key).
func (l *Lab) WriteKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lab"] = &clientcmdapi.Cluster{Server: l.URL(), CertificateAuthorityData: l.pki.CAPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: l.pki.AdminCertPEM, ClientKeyData: l.pki.AdminKeyPEM}
	cfg.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "lab"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// httpClient returns a client for talking to one apiserver directly;
// admin authenticates as system:admin, otherwise it is anonymous as a health
// checker is.
func (l *Lab) httpClient(admin bool, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{TLSClientConfig: l.tlsConfig(admin), DisableKeepAlives: true},
	}
}

// Stop stops everything the lab started and waits for every process to be
// gone. It is idempotent and safe to call concurrently.
func (l *Lab) Stop() error {
	l.stopOnce.Do(func() {
		defer close(l.stopped)
		l.cancel()
		// The load's clients go first: they are not part of what stops.
		l.StopLoad()
		errs0 := l.stopPrometheus()
		if l.events != nil {
			l.events.close()
		}
		// The lab is going away: no graceful drain, SIGKILL every apiserver
		// process (every process group), all at once.
		var procs []*supervised
		for _, n := range l.nodes {
			procs = append(procs, &n.supervised)
		}
		for _, r := range l.aggr.replicas {
			procs = append(procs, &r.supervised)
		}
		kills := make([]error, len(procs))
		var wg sync.WaitGroup
		for i, p := range procs {
			wg.Add(1)
			go func() { defer wg.Done(); kills[i] = p.kill() }()
		}
		wg.Wait()
		errs := slices.DeleteFunc(kills, func(err error) bool { return err == nil })
		l.bg.Wait()
		// The installer may have started a process between the first pass
		// and its own exit: kill again now that nothing else starts any.
		for _, p := range procs {
			errs = appendErr(errs, p.release())
		}
		errs = appendErr(errs, l.etcd.kill())
		if l.lb != nil {
			_ = l.lb.Close()
		}
		l.closeKubelets()
		for _, f := range l.lbFiles {
			_ = f.Close()
		}
		if l.tempDir && l.dir != "" {
			errs = appendErr(errs, os.RemoveAll(l.dir))
		}
		l.stopErr = errors.Join(append(errs, errs0)...)
	})
	return l.stopErr
}

func appendErr(errs []error, err error) []error {
	if err == nil {
		return errs
	}
	return append(errs, err)
}

// Done is closed once the lab has stopped.
func (l *Lab) Done() <-chan struct{} { return l.stopped }

// EtcdPID is etcd's process id.
func (l *Lab) EtcdPID() int {
	if l.etcd.proc == nil {
		return 0
	}
	return l.etcd.proc.PID()
}
