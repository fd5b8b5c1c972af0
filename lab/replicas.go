package lab

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/repro-tools/repro/lab/aggregated"
	"github.com/repro-tools/repro/lab/netproxy"
	"github.com/repro-tools/repro/lab/operator"
	"github.com/repro-tools/repro/lab/pki"
)

// The aggregated API servers: on OpenShift, image.openshift.io and
// oauth.openshift.io are served by openshift-apiserver and oauth-apiserver
// pods (three, one per master) that the kube-apiserver's aggregator proxies
// to through APIService objects. The lab runs its own k8s.io/apiserver
// program (lab/aggregated/server) in both roles, one process per role per
// node, each with its own etcd proxy, so requests really go LB →
// kube-apiserver → aggregator → replica.
//
// No controller manager runs in the lab, so the lab is the replicas'
// kubelet and endpoints controller: it keeps their pods
// (apiserver-<node>) and the Services' Endpoints and EndpointSlices in line
// with each replica's /readyz.

// aggregatedShutdownDelay is the replicas' --shutdown-delay-duration: long
// enough for the lab's endpoint update (immediate on SIGTERM) to reach every
// kube-apiserver's informer before a replica stops listening. A lab
// choice, not a figure read from OpenShift's manifests.
const aggregatedShutdownDelay = 2 * time.Second

// apiServiceGVR is apiregistration.k8s.io/v1 apiservices, written through
// the dynamic client so repro need not link kube-aggregator's types.
var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// aggregation is the lab's part for the aggregated API servers: their
// state, and what sets them up, keeps their endpoints and stops them.
type aggregation struct {
	l *Lab // the lab it is part of
	// bin is the aggregated server's binary; hostIP the host address the
	// replicas listen on (Endpoints refuse loopback); certs their
	// certificates.
	bin      string
	hostIP   net.IP
	certs    pki.Aggregation
	replicas []*Replica
	// epMu serialises the Endpoints and EndpointSlice writes; epClient
	// makes them.
	epMu     sync.Mutex
	epClient kubernetes.Interface
}

// Replica is one aggregated API server process's place: a role on a node,
// with a fixed port and etcd proxy across restarts.
type Replica struct {
	supervised
	group aggregated.Group
	node  *Node

	// kubeconfig is the replica's client configuration (its node's
	// kube-apiserver), kept for restarts.
	kubeconfig string

	history []*ReplicaRecord
}

// ReplicaRecord is one aggregated server process's life.
type ReplicaRecord struct {
	Group string `json:"group"`
	Node  string `json:"node"`
	// ProcessLife is its pid, log, start, readiness (recognising the
	// aggregator's identity) and termination.
	ProcessLife
}

// Group is the API group the replica serves.
func (r *Replica) Group() string { return r.group.Name }

// Namespace is where the replica's pod and Service are.
func (r *Replica) Namespace() string { return r.group.Namespace }

// NodeName is the node the replica runs on.
func (r *Replica) NodeName() string { return r.node.name }

// Addr is the replica's listening address (host address, own port).
func (r *Replica) Addr() string {
	return net.JoinHostPort(r.lab.aggr.hostIP.String(), strconv.Itoa(r.port))
}

// AuditLog is the replica's audit log on its node, where `oc adm node-logs
// NODE --path=openshift-apiserver/audit.log` (or oauth-apiserver/) reads it.
func (r *Replica) AuditLog() string {
	return filepath.Join(r.node.nodeLogDir(), r.group.Component, "audit.log")
}

// Processes returns a copy of every process the replica has run.
func (r *Replica) Processes() []ReplicaRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ReplicaRecord, len(r.history))
	for i, h := range r.history {
		out[i] = *h
	}
	return out
}

func (r *Replica) podName() string { return "apiserver-" + r.node.name }

// Replicas returns the aggregated API servers, by group then node.
func (l *Lab) Replicas() []*Replica { return append([]*Replica(nil), l.aggr.replicas...) }

// setupAggregation issues the aggregation layer's certificates and lays out
// the replicas (ports, etcd proxies, log folders); it runs before the
// kube-apiservers start, which need the front-proxy files.
func (a *aggregation) setupAggregation() error {
	l := a.l
	a.hostIP = hostAddress()
	if a.hostIP == nil {
		return fmt.Errorf("the lab's aggregated API servers need a non-loopback address (Endpoints refuse loopback ones) and this host has none: bring up a network interface with an address")
	}
	var names []string
	for _, g := range aggregated.Groups {
		names = append(names, "api."+g.Namespace+".svc", "api."+g.Namespace+".svc.cluster.local")
	}
	var err error
	if a.certs, err = l.pki.IssueAggregation(a.hostIP, names); err != nil {
		return fmt.Errorf("aggregation certificates: %w", err)
	}
	for _, g := range aggregated.Groups {
		for _, n := range l.nodes {
			port, err := freePortOn(a.hostIP)
			if err != nil {
				return err
			}
			px, err := netproxy.New("etcd-"+g.Component+"-"+n.name, "127.0.0.1:0", l.etcd.addr())
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Join(n.nodeLogDir(), g.Component), 0o755); err != nil {
				return err
			}
			r := &Replica{group: g, node: n, supervised: newSupervised(l, port, px,
				l.log.With(zap.String("node", n.name), zap.String("group", g.Name)),
				g.Component+" on "+n.name, "aggregated apiserver",
				"https://"+net.JoinHostPort(a.hostIP.String(), strconv.Itoa(port))+"/readyz")}
			r.endpoints = func(ctx context.Context) error { return a.syncEndpoints(ctx, g) }
			a.replicas = append(a.replicas, r)
		}
	}
	return nil
}

func freePortOn(ip net.IP) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// aggregatorArgs are kube-apiserver's aggregation flags: the front proxy's
// CA and client certificate, and routing to endpoints rather than the
// Service's cluster IP (nothing implements cluster IPs in the lab).
func (a *aggregation) aggregatorArgs() []string {
	if a.certs.FrontProxyCA == "" {
		return nil
	}
	return []string{
		"--requestheader-client-ca-file=" + a.certs.FrontProxyCA,
		"--requestheader-allowed-names=" + pki.FrontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + a.certs.ProxyClientCert,
		"--proxy-client-key-file=" + a.certs.ProxyClientKey,
		"--enable-aggregator-routing=true",
	}
}

// kubeconfigFor writes the replicas' kubeconfig for node: its own
// kube-apiserver, the replicas' client certificate.
func (a *aggregation) kubeconfigFor(n *Node) (string, error) {
	l := a.l
	p := filepath.Join(l.pki.Dir, "aggregated-"+n.name+".kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lab"] = &clientcmdapi.Cluster{Server: n.URL(), CertificateAuthority: l.pki.CACert}
	cfg.AuthInfos["aggregated"] = &clientcmdapi.AuthInfo{ClientCertificate: a.certs.ClientCert, ClientKey: a.certs.ClientKey}
	cfg.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "aggregated"}
	cfg.CurrentContext = "lab"
	return p, clientcmd.WriteToFile(*cfg, p)
}

func (r *Replica) args(kubeconfig string) []string {
	l := r.lab
	return append([]string{
		"--group=" + r.group.Name,
		"--etcd-servers=http://" + r.proxy.Addr(),
		"--bind-address=" + l.aggr.hostIP.String(),
		"--secure-port=" + strconv.Itoa(r.port),
		"--tls-cert-file=" + l.aggr.certs.ServingCert,
		"--tls-private-key-file=" + l.aggr.certs.ServingKey,
		"--cert-dir=" + filepath.Join(l.dir, "certs-"+r.group.Component+"-"+r.node.name),
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--audit-policy-file=" + l.auditPolicy,
		"--audit-log-path=" + r.AuditLog(),
		"--audit-log-format=json",
		"--audit-log-maxsize=" + auditMaxSizeMB,
		"--audit-log-maxbackup=" + auditMaxBackups,
		"--shutdown-delay-duration=" + aggregatedShutdownDelay.String(),
		"--shutdown-send-retry-after=true",
		"--profiling=false",
		"--v=1",
		// Per kube-apiserver release (versions.go).
	}, aggregatedArgsFor(l.kubeVersion.Minor)...)
}

// start execs the replica and waits until it is ready: its /readyz
// answers 200 and it recognises the aggregator's front-proxy identity.
func (r *Replica) start(ctx context.Context, kubeconfig string) error {
	l := r.lab
	r.kubeconfig = kubeconfig
	pc, err := l.aggr.frontProxyClient(l)
	if err != nil {
		return err
	}
	r.mu.Lock()
	seq := len(r.history) + 1
	r.mu.Unlock()
	rec := &ReplicaRecord{Group: r.group.Name, Node: r.node.name}
	return r.supervised.start(ctx, launch{
		bin: l.aggr.bin, args: r.args(kubeconfig),
		logPath: filepath.Join(l.dir, "logs", fmt.Sprintf("%s-%s-%d.log", r.group.Component, r.node.name, seq)),
		life:    &rec.ProcessLife,
		record:  func() { r.history = append(r.history, rec) },
		check: func(ctx context.Context, hc *http.Client) (int, error) {
			code, err := get(ctx, hc, r.readyz)
			if err == nil && code == http.StatusOK {
				// /readyz can pass before the replica trusts the
				// aggregator's front-proxy certificate: a request proxied
				// in that window was answered as system:anonymous (403
				// Forbidden). Ready, here, is when the aggregator's
				// identity is recognised.
				if code, err = proxiedGet(ctx, pc, "https://"+r.Addr()+r.group.Path); err == nil && code != http.StatusOK {
					err = fmt.Errorf("%s as the aggregator: %d", r.group.Path, code)
				}
			}
			return code, err
		},
	})
}

// startAggregated creates what OpenShift's operators create for the two
// aggregated APIs (namespaces, RBAC, Services, APIServices), starts every
// replica, publishes their endpoints and waits until both APIServices are
// Available. It runs once the kube-apiservers are in service.
func (a *aggregation) startAggregated(ctx context.Context) error {
	l := a.l
	began := time.Now()
	if err := a.bootstrapAggregated(ctx); err != nil {
		return err
	}
	kubeconfigs := map[string]string{}
	for _, n := range l.nodes {
		p, err := a.kubeconfigFor(n)
		if err != nil {
			return err
		}
		kubeconfigs[n.name] = p
	}
	errs := make(chan error, len(a.replicas))
	for _, r := range a.replicas {
		go func() { errs <- r.start(ctx, kubeconfigs[r.node.name]) }()
	}
	var startErr error
	for range a.replicas {
		if err := <-errs; err != nil && startErr == nil {
			startErr = err
		}
	}
	if startErr != nil {
		return startErr
	}
	for _, g := range aggregated.Groups {
		if err := a.syncEndpoints(ctx, g); err != nil {
			return err
		}
	}
	for _, r := range a.replicas {
		// The replica pod apiserver-<node> in its namespace, as the
		// kubelet reports a Deployment's pod.
		r.startLoops("replica pod", r.syncPod)
	}
	if err := a.waitAPIServicesAvailable(ctx); err != nil {
		return err
	}
	l.log.Info("aggregated APIs available", zap.Int("replicas", len(a.replicas)), zap.Duration("took", time.Since(began).Round(time.Millisecond)))
	return nil
}

func (a *aggregation) bootstrapAggregated(ctx context.Context) error {
	l := a.l
	kube := l.client
	retry := func(what string, fn func() error) error {
		if err := operator.RetryTransient(ctx, func() error {
			err := fn()
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}); err != nil {
			return fmt.Errorf("lab bootstrap: %s: %w", what, err)
		}
		return nil
	}
	// The replicas' user gets cluster-admin, as openshift-apiserver's and
	// oauth-apiserver's service accounts do: they read the requestheader
	// configmap, review tokens and access, and run admission informers.
	if err := retry("binding the aggregated servers' user", func() error {
		_, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "system:openshift:aggregated-apiservers"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: pki.AggregatedClientName}},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(l.cfg)
	if err != nil {
		return err
	}
	for _, g := range aggregated.Groups {
		if err := retry("creating namespace "+g.Namespace, func() error {
			_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
				Name:   g.Namespace,
				Labels: map[string]string{"openshift.io/run-level": "", "pod-security.kubernetes.io/enforce": "privileged"},
			}}, metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
		// A Service without a selector: the lab writes its endpoints.
		if err := retry("creating service "+g.Namespace+"/api", func() error {
			_, err := kube.CoreV1().Services(g.Namespace).Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "api", Labels: map[string]string{"app": g.Component}},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{
					Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolTCP}}},
			}, metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
		// Priorities place the groups after the built-in ones (a lab
		// choice; they only order discovery).
		svc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"metadata": map[string]any{"name": g.APIServiceName()},
			"spec": map[string]any{
				"group": g.Name, "version": "v1",
				"service":              map[string]any{"namespace": g.Namespace, "name": "api", "port": int64(443)},
				"caBundle":             base64.StdEncoding.EncodeToString(l.pki.CAPEM),
				"groupPriorityMinimum": int64(9900), "versionPriority": int64(15),
			},
		}}
		if err := retry("creating APIService "+g.APIServiceName(), func() error {
			_, err := dyn.Resource(apiServiceGVR).Create(ctx, svc, metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// syncEndpoints writes the group's Endpoints and EndpointSlices from the
// replicas' readiness, as the endpoints and endpointslice controllers
// would. Both: the aggregator resolves through Endpoints up to Kubernetes
// 1.32 and EndpointSlices since (kubernetes
// staging/src/k8s.io/kube-aggregator/pkg/apiserver/resolvers.go).
func (a *aggregation) syncEndpoints(ctx context.Context, g aggregated.Group) error {
	l := a.l
	a.epMu.Lock()
	defer a.epMu.Unlock()
	if a.epClient == nil {
		// Endpoints are deprecated since 1.33 and every write says so;
		// the lab writes them on purpose (1.29's aggregator reads them).
		c := rest.CopyConfig(l.cfg)
		c.WarningHandler = rest.NoWarnings{}
		var err error
		if a.epClient, err = kubernetes.NewForConfig(c); err != nil {
			return err
		}
	}
	kube := a.epClient
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: g.Namespace, Labels: map[string]string{"app": g.Component}}}
	var slices []*discoveryv1.EndpointSlice
	for _, r := range a.replicas {
		if r.group != g {
			continue
		}
		r.mu.Lock()
		ready, running := r.ready, r.proc != nil
		r.mu.Unlock()
		addr := corev1.EndpointAddress{IP: a.hostIP.String(), NodeName: ptr.To(r.node.name),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: g.Namespace, Name: r.podName()}}
		// Each replica has its own port, so each is its own subset (and
		// slice): an endpoint's ports are shared by its addresses.
		ss := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: "https", Port: int32(r.port), Protocol: corev1.ProtocolTCP}}}
		if ready {
			ss.Addresses = []corev1.EndpointAddress{addr}
		} else {
			ss.NotReadyAddresses = []corev1.EndpointAddress{addr}
		}
		ep.Subsets = append(ep.Subsets, ss)
		slices = append(slices, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "api-" + r.node.name, Namespace: g.Namespace, Labels: map[string]string{
				discoveryv1.LabelServiceName: "api", discoveryv1.LabelManagedBy: "repro-lab"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{
				Addresses:  []string{a.hostIP.String()},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(!running)},
				NodeName:   ptr.To(r.node.name),
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: g.Namespace, Name: r.podName()},
			}},
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(r.port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		})
	}
	if a.hostIP.To4() == nil {
		for _, s := range slices {
			s.AddressType = discoveryv1.AddressTypeIPv6
		}
	}
	return operator.RetryTransient(ctx, func() error {
		if err := upsert(ctx, kube.CoreV1().Endpoints(g.Namespace), ep); err != nil {
			return err
		}
		for _, s := range slices {
			if err := upsert(ctx, kube.DiscoveryV1().EndpointSlices(g.Namespace), s); err != nil {
				return err
			}
		}
		return nil
	})
}

// objectClient is the part of a typed client-go client upsert uses.
type objectClient[T metav1.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// upsert creates obj, or replaces the object of its name at that object's
// resourceVersion.
func upsert[T metav1.Object](ctx context.Context, c objectClient[T], obj T) error {
	cur, err := c.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.Create(ctx, obj, metav1.CreateOptions{})
	case err == nil:
		obj.SetResourceVersion(cur.GetResourceVersion())
		_, err = c.Update(ctx, obj, metav1.UpdateOptions{})
	}
	return err
}

// APIServiceStatus is one APIService's Available condition.
type APIServiceStatus struct {
	Name      string
	Available bool
	Reason    string
	Message   string
}

// APIServices reads the aggregated APIs' APIService objects.
func (l *Lab) APIServices(ctx context.Context) ([]APIServiceStatus, error) {
	dyn, err := dynamic.NewForConfig(l.cfg)
	if err != nil {
		return nil, err
	}
	var out []APIServiceStatus
	for _, g := range aggregated.Groups {
		u, err := dyn.Resource(apiServiceGVR).Get(ctx, g.APIServiceName(), metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		st := APIServiceStatus{Name: g.APIServiceName()}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Available" {
				st.Available = m["status"] == "True"
				st.Reason, _ = m["reason"].(string)
				st.Message, _ = m["message"].(string)
			}
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (a *aggregation) waitAPIServicesAvailable(ctx context.Context) error {
	l := a.l
	last := ""
	for {
		sts, err := l.APIServices(ctx)
		all := err == nil
		for _, s := range sts {
			if !s.Available {
				all = false
				last = fmt.Sprintf("%s: %s %s", s.Name, s.Reason, s.Message)
			}
		}
		if err != nil {
			last = err.Error()
		}
		if all {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the aggregated APIServices to be Available (last: %s): %w", last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (r *Replica) syncPod(ctx context.Context) error {
	pods := r.lab.client.CoreV1().Pods(r.group.Namespace)
	r.mu.Lock()
	rec, ready, running := r.life, r.ready, r.proc != nil
	var started, readyAt time.Time
	pid := 0
	if rec != nil {
		started, readyAt, pid = rec.Started, rec.Ready, rec.PID
	}
	r.mu.Unlock()
	cur, err := pods.Get(ctx, r.podName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if !running {
			return nil
		}
		cur, err = pods.Create(ctx, r.pod(), metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	now := time.Now()
	start := metav1.NewTime(started)
	hostIP := r.lab.aggr.hostIP.String()
	state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}
	if !running {
		state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: start, FinishedAt: metav1.NewTime(now)}}
	}
	want := runningPodStatus(hostIP, started, podConditions(cur, started, ready, readyAt, now, ""), corev1.ContainerStatus{
		Name: r.group.Component, Image: "lab.local/aggregated-apiserver:" + aggregated.Spec.Version,
		ImageID: "lab.local/aggregated-apiserver@pid-" + strconv.Itoa(pid),
		Ready:   ready, Started: ptr.To(running), State: state,
	})
	if cur.Annotations["repro.lab/pid"] != strconv.Itoa(pid) {
		up := cur.DeepCopy()
		if up.Annotations == nil {
			up.Annotations = map[string]string{}
		}
		up.Annotations["repro.lab/pid"] = strconv.Itoa(pid)
		if cur, err = pods.Update(ctx, up, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if podStatusEqual(cur.Status, want) && cur.Status.ContainerStatuses[0].Started != nil && *cur.Status.ContainerStatuses[0].Started == running {
		return nil
	}
	up := cur.DeepCopy()
	up.Status = want
	_, err = pods.UpdateStatus(ctx, up, metav1.UpdateOptions{})
	return err
}

func (r *Replica) pod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: r.podName(), Namespace: r.group.Namespace,
			Labels: map[string]string{"app": r.group.Component, "apiserver": "true"},
			Annotations: map[string]string{
				"repro.lab/binary": r.lab.aggr.bin,
			},
		},
		Spec: r.podSpec(r.node.name, r.group.Component, "lab.local/aggregated-apiserver:"+aggregated.Spec.Version,
			[]string{"aggregated-apiserver", "--group=" + r.group.Name}),
	}
}

// rollReplicasOn restarts n's replicas in the background (the
// aggregated-rollout knob).
func (a *aggregation) rollReplicasOn(n *Node) {
	l := a.l
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		if err := l.RollReplicas(l.ctx, n.name); err != nil && l.ctx.Err() == nil {
			l.log.Error("rolling the aggregated apiservers", zap.String("node", n.name), zap.Error(err))
		}
	}()
}

// RollReplicas restarts node's aggregated replicas gracefully, both groups
// at once (separate Deployments on OpenShift), as a Deployment rollout
// replaces a pod: out of the endpoints, SIGTERM, the shutdown delay, a new
// process, back in the endpoints once ready. It returns when both are back.
func (l *Lab) RollReplicas(ctx context.Context, node string) error {
	var hit []*Replica
	for _, r := range l.aggr.replicas {
		if r.node.name == node {
			hit = append(hit, r)
		}
	}
	if len(hit) == 0 {
		return fmt.Errorf("no aggregated replicas on %q", node)
	}
	errs := make(chan error, len(hit))
	for _, r := range hit {
		go func() {
			i := l.faults.add(FaultEvent{Fault: "aggregated-rollout", Node: node, Nodes: []string{r.group.Component + "/" + node}, From: time.Now()})
			defer func() { l.faults.end(i, time.Now()) }()
			r.log.Info("rolling the aggregated apiserver")
			if err := r.terminate(); err != nil {
				r.log.Warn("terminating the aggregated apiserver", zap.Error(err))
			}
			if err := r.start(ctx, r.kubeconfig); err != nil {
				errs <- err
				return
			}
			errs <- l.aggr.syncEndpoints(ctx, r.group)
		}()
	}
	var first error
	for range hit {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// stallReplicasOn holds the etcd links of n's replicas for
// AggregatedEtcdStall, EtcdStallAfter after n's kube-apiserver is back in
// service.
func (a *aggregation) stallReplicasOn(n *Node) {
	l := a.l
	var proxies []*netproxy.Proxy
	var names []string
	for _, r := range a.replicas {
		if r.node == n {
			proxies = append(proxies, r.proxy)
			names = append(names, r.group.Component+"/"+n.name)
		}
	}
	l.stallLinks(n, "aggregated-etcd-stall", "aggregated servers' link to etcd", l.opts.Faults.AggregatedEtcdStall, proxies, names)
}

// frontProxyClient is a client that speaks to a replica as kube-apiserver's
// aggregator does: with the front-proxy client certificate, the user in
// the request-header identity headers (--requestheader-* flags).
func (a *aggregation) frontProxyClient(l *Lab) (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(a.certs.ProxyClientCert, a.certs.ProxyClientKey)
	if err != nil {
		return nil, fmt.Errorf("front-proxy client certificate: %w", err)
	}
	c := l.tlsConfig(false)
	c.Certificates = []tls.Certificate{cert}
	return &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: c, DisableKeepAlives: true}}, nil
}

// proxiedGet GETs url as the aggregator proxies a system:admin request and
// returns the status.
func proxiedGet(ctx context.Context, c *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Remote-User", "system:admin")
	req.Header.Set("X-Remote-Group", "system:masters")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}
