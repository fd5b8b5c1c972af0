package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/repro-tools/repro/results"
)

// Namespace holds the load's pods and services.
const Namespace = "repro-load"

// Creds are one client's credentials: a client certificate, or a bearer
// token (a service account's, from the TokenRequest API).
type Creds struct {
	User    string `json:"user"`
	CertPEM []byte `json:"certPEM,omitempty"`
	KeyPEM  []byte `json:"keyPEM,omitempty"`
	Token   string `json:"token,omitempty"`
}

// Config is what the lab hands the load process, as a JSON file (0600: it
// holds keys).
type Config struct {
	Spec  string `json:"spec"`
	URL   string `json:"url"`
	CAPEM []byte `json:"caPEM"`
	// Kubelets are the nodes' credentials, one per scaled node, in order;
	// their node names are the users' after "system:node:".
	Kubelets []Creds `json:"kubelets"`
	// Proxy is kube-proxy's (system:kube-proxy), KCM the controller
	// manager's (system:kube-controller-manager), ReplicaSet the
	// ReplicaSet controller's service account, Admin the one that creates
	// the services (a user's, at setup).
	Proxy, KCM, ReplicaSet, Admin Creds
	// Events is the file the outcomes go to, one results.LoadEvent a line.
	Events string `json:"events"`
	// Ready is created once every reflector has synced.
	Ready string `json:"ready"`
}

// ReadConfig reads a Config file.
func ReadConfig(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	return c, json.Unmarshal(b, &c)
}

// recorder writes events, one line each in a single write, so a killed
// process leaves whole lines.
type recorder struct {
	mu sync.Mutex
	f  *os.File
}

func (r *recorder) emit(e results.LoadEvent) {
	e.Time = time.Now().UTC().Format(time.RFC3339Nano)
	b, _ := json.Marshal(e)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.f.Write(append(b, '\n'))
}

// client is one authenticated client with its own connection (client-go
// multiplexes its requests over one HTTP/2 connection, as a kubelet's).
type client struct {
	kind, user string
	// name tells clients sharing a user apart (every kube-proxy is
	// system:kube-proxy) in their watches' names.
	name    string
	cs      kubernetes.Interface
	local   atomic.Value // string: the latest connection's local address
	rec     *recorder
	watches atomic.Int64
}

func newClient(cfg Config, kind string, c Creds, rec *recorder) (*client, error) {
	cl := &client{kind: kind, user: c.User, name: c.User, rec: rec}
	cl.local.Store("")
	rc := &rest.Config{
		Host:            cfg.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAPEM, CertData: c.CertPEM, KeyData: c.KeyPEM},
		BearerToken:     c.Token,
		// The kubelet's default kubeAPIQPS/Burst (50/100) for every client.
		QPS: 50, Burst: 100,
		UserAgent: "repro-load/" + kind,
	}
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	rc.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err == nil {
			cl.local.Store(conn.LocalAddr().String())
		}
		return conn, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	cl.cs = cs
	return cl, nil
}

func (c *client) event(kind, resource string) results.LoadEvent {
	return results.LoadEvent{Kind: kind, Client: c.kind, Identity: c.user, Resource: resource, Local: c.local.Load().(string)}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// informer runs one reflector of c on resource, its lists and watches
// recorded: the first list is a list, later ones re-lists; a watch that
// ends without the reflector stopping it is cut.
func (c *client) informer(ctx context.Context, resource string, obj runtime.Object, list func(context.Context, metav1.ListOptions) (runtime.Object, error), wf func(context.Context, metav1.ListOptions) (watch.Interface, error)) cache.SharedIndexInformer {
	var listed atomic.Bool
	var n atomic.Int64
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			began := time.Now()
			out, err := list(ctx, o)
			kind := "list"
			if o.Continue == "" && listed.Swap(true) {
				kind = "relist"
			}
			e := c.event(kind, resource)
			e.LatencyMS, e.Error = float64(time.Since(began).Microseconds())/1000, errText(err)
			c.rec.emit(e)
			return out, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := wf(ctx, o)
			id := c.name + "/" + resource + "#" + strconv.FormatInt(n.Add(1), 10)
			e := c.event("watch-open", resource)
			e.Watch, e.Error = id, errText(err)
			if err != nil {
				e.Watch = ""
			}
			c.rec.emit(e)
			if err != nil {
				return nil, err
			}
			c.watches.Add(1)
			return newTracked(w, func(stopped bool) {
				kind := "watch-cut"
				if stopped {
					kind = "watch-stop"
				}
				e := c.event(kind, resource)
				e.Watch = id
				c.rec.emit(e)
				c.watches.Add(-1)
			}), nil
		},
	}
	return cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
}

// tracked is a watch whose end is reported once: stopped when the
// reflector stopped it, else cut.
type tracked struct {
	w      watch.Interface
	ch     chan watch.Event
	done   chan struct{}
	stop   sync.Once
	ended  func(stopped bool)
	closed atomic.Bool
}

func newTracked(w watch.Interface, ended func(stopped bool)) *tracked {
	t := &tracked{w: w, ch: make(chan watch.Event), done: make(chan struct{}), ended: ended}
	go func() {
		defer close(t.ch)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				// A 410 or another error ends this watch: the reflector
				// re-lists or re-watches.
				t.report(false)
			}
			select {
			case t.ch <- ev:
			case <-t.done:
				t.report(true)
				return
			}
		}
		select {
		case <-t.done:
			t.report(true)
		default:
			t.report(false)
		}
	}()
	return t
}

func (t *tracked) report(stopped bool) {
	if !t.closed.Swap(true) {
		t.ended(stopped)
	}
}

func (t *tracked) Stop() {
	t.stop.Do(func() { close(t.done); t.w.Stop() })
}

func (t *tracked) ResultChan() <-chan watch.Event { return t.ch }

// Run runs the load until ctx ends: it creates the nodes, services and
// pods, starts every reflector, creates cfg.Ready once all have synced, and
// runs the writers.
func Run(ctx context.Context, cfg Config, log *zap.Logger) error {
	spec, ok, err := Lookup(cfg.Spec)
	if err != nil || !ok {
		return fmt.Errorf("load %q: nothing to run (%v)", cfg.Spec, err)
	}
	f, err := os.OpenFile(cfg.Events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	rec := &recorder{f: f}
	nodes, services, churn := spec.Scaled()
	if len(cfg.Kubelets) < nodes {
		return fmt.Errorf("load %s needs %d kubelet credentials, got %d", spec.Name, nodes, len(cfg.Kubelets))
	}
	admin, err := newClient(cfg, "admin", cfg.Admin, rec)
	if err != nil {
		return err
	}
	rs, err := newClient(cfg, "replicaset-controller", cfg.ReplicaSet, rec)
	if err != nil {
		return err
	}
	kcm, err := newClient(cfg, "kube-controller-manager", cfg.KCM, rec)
	if err != nil {
		return err
	}
	var kubelets, proxies []*client
	var names []string
	for i := range nodes {
		k, err := newClient(cfg, "kubelet", cfg.Kubelets[i], rec)
		if err != nil {
			return err
		}
		p, err := newClient(cfg, "kube-proxy", cfg.Proxy, rec)
		if err != nil {
			return err
		}
		names = append(names, nodeName(cfg.Kubelets[i].User))
		p.name = "kube-proxy@" + names[i]
		kubelets, proxies = append(kubelets, k), append(proxies, p)
	}
	began := time.Now()
	if err := setup(ctx, admin, rs, kubelets, names, services, spec.PodsPerNode); err != nil {
		return fmt.Errorf("load setup: %w", err)
	}
	log.Info("load objects created", zap.Int("nodes", nodes), zap.Int("services", services), zap.Int("pods", nodes*spec.PodsPerNode), zap.Duration("took", time.Since(began)))

	var infs []cache.SharedIndexInformer
	for i, k := range kubelets {
		infs = append(infs, kubeletInformers(ctx, k, names[i])...)
		infs = append(infs, proxyInformers(ctx, proxies[i], names[i])...)
	}
	infs = append(infs, kcmInformers(ctx, kcm)...)
	for _, inf := range infs {
		go inf.RunWithContext(ctx)
	}
	for _, inf := range infs {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return ctx.Err()
		}
	}
	log.Info("load reflectors synced", zap.Int("reflectors", len(infs)), zap.Duration("took", time.Since(began)))
	if cfg.Ready != "" {
		if err := os.WriteFile(cfg.Ready, []byte(strconv.Itoa(len(infs))+"\n"), 0o644); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	for i, k := range kubelets {
		wg.Add(1)
		go func() { defer wg.Done(); renewLeases(ctx, k, names[i], spec.LeaseRenew, i, len(kubelets)) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); churnPods(ctx, rs, names, churn) }()
	<-ctx.Done()
	wg.Wait()
	// Let the reflectors' watches report their stop.
	time.Sleep(200 * time.Millisecond)
	return nil
}

func nodeName(user string) string {
	const p = "system:node:"
	if len(user) > len(p) && user[:len(p)] == p {
		return user[len(p):]
	}
	return user
}

func kubeletInformers(ctx context.Context, c *client, node string) []cache.SharedIndexInformer {
	core := c.cs.CoreV1()
	onNode := fields.OneTermEqualSelector("spec.nodeName", node).String()
	self := fields.OneTermEqualSelector("metadata.name", node).String()
	return []cache.SharedIndexInformer{
		c.informer(ctx, "pods", &corev1.Pod{},
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.FieldSelector = onNode
				return core.Pods("").List(ctx, o)
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = onNode
				return core.Pods("").Watch(ctx, o)
			}),
		selfNode(ctx, c, self),
		c.informer(ctx, "services", &corev1.Service{},
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return core.Services("").List(ctx, o)
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return core.Services("").Watch(ctx, o)
			}),
	}
}

func selfNode(ctx context.Context, c *client, self string) cache.SharedIndexInformer {
	core := c.cs.CoreV1()
	return c.informer(ctx, "nodes", &corev1.Node{},
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = self
			return core.Nodes().List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = self
			return core.Nodes().Watch(ctx, o)
		})
}

func proxyInformers(ctx context.Context, c *client, node string) []cache.SharedIndexInformer {
	core, disc := c.cs.CoreV1(), c.cs.DiscoveryV1()
	return []cache.SharedIndexInformer{
		c.informer(ctx, "services", &corev1.Service{},
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return core.Services("").List(ctx, o)
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return core.Services("").Watch(ctx, o)
			}),
		c.informer(ctx, "endpointslices", &discoveryv1.EndpointSlice{},
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return disc.EndpointSlices("").List(ctx, o)
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return disc.EndpointSlices("").Watch(ctx, o)
			}),
		selfNode(ctx, c, fields.OneTermEqualSelector("metadata.name", node).String()),
	}
}

func kcmInformers(ctx context.Context, c *client) []cache.SharedIndexInformer {
	cs := c.cs
	type lw struct {
		res  string
		obj  runtime.Object
		list func(context.Context, metav1.ListOptions) (runtime.Object, error)
		wf   func(context.Context, metav1.ListOptions) (watch.Interface, error)
	}
	all := []lw{
		{"pods", &corev1.Pod{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Pods("").List(ctx, o)
		},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return cs.CoreV1().Pods("").Watch(ctx, o)
			}},
		{"nodes", &corev1.Node{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Nodes().List(ctx, o)
		},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return cs.CoreV1().Nodes().Watch(ctx, o)
			}},
		{"services", &corev1.Service{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Services("").List(ctx, o)
		}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().Services("").Watch(ctx, o)
		}},
		{"endpointslices", &discoveryv1.EndpointSlice{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.DiscoveryV1().EndpointSlices("").List(ctx, o)
		}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.DiscoveryV1().EndpointSlices("").Watch(ctx, o)
		}},
		{"replicasets", &appsv1.ReplicaSet{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.AppsV1().ReplicaSets("").List(ctx, o)
		}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.AppsV1().ReplicaSets("").Watch(ctx, o)
		}},
		{"deployments", &appsv1.Deployment{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.AppsV1().Deployments("").List(ctx, o)
		}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.AppsV1().Deployments("").Watch(ctx, o)
		}},
		{"leases", &coordinationv1.Lease{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoordinationV1().Leases("").List(ctx, o)
		}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoordinationV1().Leases("").Watch(ctx, o)
		}},
		{"namespaces", &corev1.Namespace{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Namespaces().List(ctx, o)
		}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().Namespaces().Watch(ctx, o)
		}},
	}
	var out []cache.SharedIndexInformer
	for _, x := range all {
		out = append(out, c.informer(ctx, x.res, x.obj, x.list, x.wf))
	}
	return out
}

// setup creates what the load's clients read: each kubelet its own Node,
// the admin the namespace and services, the ReplicaSet controller the pods.
func setup(ctx context.Context, admin, rs *client, kubelets []*client, names []string, services, podsPerNode int) error {
	for i, k := range kubelets {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: names[i], Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
		if _, err := k.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("node %s: %w", names[i], err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := admin.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for i := range services {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc-" + strconv.Itoa(i)},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"svc": strconv.Itoa(i)}, Ports: []corev1.ServicePort{{Port: 80}}}}
		if _, err := admin.cs.CoreV1().Services(Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("service: %w", err)
		}
	}
	jobs := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if _, err := rs.cs.CoreV1().Pods(Namespace).Create(ctx, pod("seed-"+strconv.Itoa(i), names[i%len(names)], i%services), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range len(names) * podsPerNode {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("pods: %w", err)
	default:
	}
	return nil
}

// pod is one of ClusterLoader2's load pods (its deployment.yaml: one pause
// container), bound to node as the scheduler would have.
func pod(name, node string, svc int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"group": "load", "svc": strconv.Itoa(svc)}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.9"}},
		},
	}
}

// renewLeases renews node's Lease every period, as the kubelet's lease
// controller does; the i-th of n starts i/n of a period in, so the renewals
// are spread as independent kubelets' are.
func renewLeases(ctx context.Context, c *client, node string, period time.Duration, i, n int) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(period * time.Duration(i) / time.Duration(max(n, 1))):
	}
	leases := c.cs.CoordinationV1().Leases("kube-node-lease")
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		began := time.Now()
		now := metav1.NewMicroTime(began)
		l, err := leases.Get(ctx, node, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now}}, metav1.CreateOptions{})
		case err == nil:
			l.Spec.RenewTime = &now
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		}
		if ctx.Err() != nil {
			return
		}
		e := c.event("write", "leases")
		e.LatencyMS, e.Error = float64(time.Since(began).Microseconds())/1000, errText(err)
		c.rec.emit(e)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// churnPods creates perSecond pods a second across the nodes and deletes
// each one once the next few have been made, keeping the pod count steady.
func churnPods(ctx context.Context, c *client, nodes []string, perSecond float64) {
	if perSecond <= 0 {
		return
	}
	pods := c.cs.CoreV1().Pods(Namespace)
	t := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	defer t.Stop()
	var made []string
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		name := "churn-" + strconv.Itoa(i)
		began := time.Now()
		_, err := pods.Create(ctx, pod(name, nodes[i%len(nodes)], 0), metav1.CreateOptions{})
		if ctx.Err() != nil {
			return
		}
		e := c.event("write", "pods")
		e.LatencyMS, e.Error = float64(time.Since(began).Microseconds())/1000, errText(err)
		c.rec.emit(e)
		if err == nil {
			made = append(made, name)
		}
		if len(made) > 5 {
			began := time.Now()
			err := pods.Delete(ctx, made[0], metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if ctx.Err() != nil {
				return
			}
			e := c.event("write", "pods")
			e.LatencyMS, e.Error = float64(time.Since(began).Microseconds())/1000, errText(err)
			c.rec.emit(e)
			made = made[1:]
		}
	}
}
