// Package incluster deploys repro's pollers into the cluster they measure
// (--vantage in-cluster): pods on every node, run by Kubernetes, as origin's
// in-cluster disruption monitors are (openshift/origin
// pkg/monitortests/kubeapiserver/disruptioninclusterapiserver, monitortest.go
// and manifests/). Masters run hostNetwork pollers of their own apiserver
// over localhost; every node polls the internal load balancer from its host
// network and the service network from a pod network. From every node at once, "the internal LB
// fails from every node while localhost answers" is the load balancer, and
// "localhost fails on master-1 only" is that apiserver.
//
// Where repro follows origin: a namespace of its own, found again by a label
// and removed at the start of the next run (origin's
// removeExistingMonitorNamespaces); a ServiceAccount the pollers run as;
// hostNetwork pollers on the masters, tolerating the master taint; pod
// security labels that admit them.
//
// Where it differs, and why:
//   - Pods are bound to their nodes (spec.nodeName), one per node and
//     vantage, instead of Deployments with anti-affinity: each sample must
//     say which node it came from, a Deployment's replicas may land two on
//     one node while it rolls, and binding needs neither the scheduler nor
//     the controller manager (the lab runs neither).
//   - The RBAC is what `repro probe` reads and no more: get on the default
//     namespace, list of imagestreams in default and of oauthclients.
//     Origin's pods also run privileged (its privileged SCC binding) for
//     the hostPath they write into; repro's pods write nothing on the node.
//   - Every object, the cluster-scoped ones too, carries the discovery
//     label, so a run killed before its cleanup leaves nothing a later run
//     cannot find: deleting the namespace does not delete ClusterRoles.
//   - The pods reach the API with their ServiceAccount token through
//     kubeconfigs repro writes into a ConfigMap (one per vantage and node),
//     each with its own server: origin's localhost poller reads the node's
//     node-kubeconfigs from a hostPath instead, a node's admin credential
//     repro has no reason to borrow.
package incluster

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Labels and names every run's objects share.
const (
	// LabelManaged marks every object repro creates for in-cluster
	// pollers; a later run lists by it to find a killed run's leftovers.
	LabelManaged = "repro.dev/in-cluster"
	// LabelRun names the run that created an object.
	LabelRun = "repro.dev/run-id"
	// LabelVantage and LabelNode say what a poller pod measures from.
	LabelVantage = "repro.dev/vantage"
	LabelNode    = "repro.dev/node"
	// NamespacePrefix begins every run's namespace name.
	NamespacePrefix = "repro-incluster-"
	// ServiceAccountName is the pollers' identity.
	ServiceAccountName = "repro-poller"
	// KubeconfigsName is the ConfigMap of the pollers' kubeconfigs.
	KubeconfigsName = "repro-poller-kubeconfigs"
	// CAName is the ConfigMap of the CA bundle the kubeconfigs trust, when
	// the run supplies one (the lab: the cluster's own kube-root-ca.crt
	// needs the controller manager, which the lab does not run).
	CAName = "repro-api-ca"
)

// The in-cluster vantages (origin's load balancer types).
const (
	Localhost      = "localhost"
	InternalLB     = "internal-lb"
	ServiceNetwork = "service-network"
)

// tokenDir is where the projected ServiceAccount token is mounted, the
// path client-go's in-cluster config reads.
const tokenDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// outDir is where a poller writes its results folder.
const outDir = "/var/run/repro"

// kubeconfigDir is where the pollers' kubeconfigs are mounted.
const kubeconfigDir = "/etc/repro/kubeconfigs"

// Node is one node pollers run on.
type Node struct {
	// Name is the Node object's name.
	Name string
	// Master is true for a control-plane node: it gets the localhost
	// poller.
	Master bool
	// LocalhostURL is this master's own apiserver as seen from the node
	// (https://localhost:6443 on OpenShift; the lab's per-node port).
	LocalhostURL string
}

// Options are what one run deploys.
type Options struct {
	// RunID names the run; it is in the namespace's name and every label.
	RunID string
	// Image is the pollers' image, whose entry point is `repro probe`.
	Image string
	// PullPolicy is the pods' image pull policy (Never for an image
	// imported into the nodes, as the lab's is).
	PullPolicy corev1.PullPolicy
	// Nodes are the nodes to poll from.
	Nodes []Node
	// InternalLBURL is the internal load balancer (api-int), "" for none.
	InternalLBURL string
	// ServiceNetworkURL is the API's service address; "" leaves the
	// service-network pollers out (the lab has no kube-proxy to carry it).
	ServiceNetworkURL string
	// CABundle, when set, is the PEM bundle the kubeconfigs trust, shipped
	// in a ConfigMap of repro's own; else the namespace's kube-root-ca.crt.
	CABundle []byte
	// ProbeArgs follow `repro probe` in every pod (--duration, --interval,
	// --backends...).
	ProbeArgs []string
	// HostOutputDir, when set, is a folder on every node the pods write
	// their results folders into (<dir>/<pod>/), as origin's pollers write
	// into /var/log/disruption-data: on the lab, whose nodes are this
	// machine, the run reads them from there. Else each pod's folder is in
	// an emptyDir and goes with the pod.
	HostOutputDir string
}

// Poller is one poller pod's identity.
type Poller struct {
	Vantage, Node string
}

// Objects are everything one run creates, in creation order.
type Objects struct {
	Namespace          *corev1.Namespace
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	DefaultRole        *rbacv1.Role
	DefaultRoleBinding *rbacv1.RoleBinding
	ConfigMaps         []*corev1.ConfigMap
	Pods               []*corev1.Pod
	pollersByPod       map[string]Poller
}

// PollerOf returns the vantage and node of one of these pods.
func (o Objects) PollerOf(pod string) (Poller, bool) {
	p, ok := o.pollersByPod[pod]
	return p, ok
}

// List names every object as kind/namespace/name, in creation order: what
// --dry-run prints.
func (o Objects) List() []string {
	var out []string
	add := func(kind, ns, name string) {
		if ns != "" {
			out = append(out, kind+"/"+ns+"/"+name)
		} else {
			out = append(out, kind+"/"+name)
		}
	}
	add("Namespace", "", o.Namespace.Name)
	add("ServiceAccount", o.ServiceAccount.Namespace, o.ServiceAccount.Name)
	add("ClusterRole", "", o.ClusterRole.Name)
	add("ClusterRoleBinding", "", o.ClusterRoleBinding.Name)
	add("Role", o.DefaultRole.Namespace, o.DefaultRole.Name)
	add("RoleBinding", o.DefaultRoleBinding.Namespace, o.DefaultRoleBinding.Name)
	for _, c := range o.ConfigMaps {
		add("ConfigMap", c.Namespace, c.Name)
	}
	for _, p := range o.Pods {
		add("Pod", p.Namespace, p.Name)
	}
	return out
}

// NamespaceName is the namespace of run id.
func NamespaceName(runID string) string { return NamespacePrefix + dnsLabel(runID) }

func (o Options) labels() map[string]string {
	return map[string]string{LabelManaged: "true", LabelRun: dnsLabel(o.RunID)}
}

func meta(name, ns string, l map[string]string) metav1.ObjectMeta {
	c := make(map[string]string, len(l))
	for k, v := range l {
		c[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: c}
}

// Build makes the run's objects; it reads nothing from the cluster.
func Build(o Options) (Objects, error) {
	if o.RunID == "" || o.Image == "" {
		return Objects{}, fmt.Errorf("in-cluster pollers need a run id and an image (--in-cluster-image)")
	}
	if len(o.Nodes) == 0 {
		return Objects{}, fmt.Errorf("in-cluster pollers need at least one node")
	}
	ns := NamespaceName(o.RunID)
	l := o.labels()
	nsObj := &corev1.Namespace{ObjectMeta: meta(ns, "", l)}
	// The service-network pollers are ordinary pods; the masters' are
	// hostNetwork, which the baseline pod security level refuses.
	for _, m := range []string{"enforce", "audit", "warn"} {
		nsObj.Labels["pod-security.kubernetes.io/"+m] = "privileged"
	}
	// OpenShift keeps management workloads on the reserved CPUs of a
	// workload-partitioned cluster only in namespaces that allow it (origin
	// sets the same annotation).
	nsObj.Annotations = map[string]string{"workload.openshift.io/allowed": "management"}

	// Cluster-scoped names carry the run id: two runs never share one.
	crName := "repro-incluster-poller-" + dnsLabel(o.RunID)
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName, Namespace: ns}
	objs := Objects{
		Namespace:      nsObj,
		ServiceAccount: &corev1.ServiceAccount{ObjectMeta: meta(ServiceAccountName, ns, l)},
		// What the pollers' backends read outside the default namespace
		// (results' backend paths): the default namespace itself and
		// oauthclients, which are cluster-scoped.
		ClusterRole: &rbacv1.ClusterRole{ObjectMeta: meta(crName, "", l), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{"default"}, Verbs: []string{"get"}},
			{APIGroups: []string{"oauth.openshift.io"}, Resources: []string{"oauthclients"}, Verbs: []string{"list"}},
		}},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{ObjectMeta: meta(crName, "", l), Subjects: []rbacv1.Subject{subject},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: crName}},
		// Imagestreams are listed in default only: a Role there, not a
		// cluster-wide grant.
		DefaultRole: &rbacv1.Role{ObjectMeta: meta(crName, "default", l), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"image.openshift.io"}, Resources: []string{"imagestreams"}, Verbs: []string{"list"}},
		}},
		DefaultRoleBinding: &rbacv1.RoleBinding{ObjectMeta: meta(crName, "default", l), Subjects: []rbacv1.Subject{subject},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: crName}},
		pollersByPod: map[string]Poller{},
	}

	caFile := tokenDir + "/ca.crt"
	caConfigMap := "kube-root-ca.crt"
	if len(o.CABundle) > 0 {
		caConfigMap = CAName
		objs.ConfigMaps = append(objs.ConfigMaps, &corev1.ConfigMap{ObjectMeta: meta(CAName, ns, l), Data: map[string]string{"ca.crt": string(o.CABundle)}})
	}
	kc := &corev1.ConfigMap{ObjectMeta: meta(KubeconfigsName, ns, l), Data: map[string]string{}}
	objs.ConfigMaps = append(objs.ConfigMaps, kc)

	nodes := append([]Node(nil), o.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		type want struct {
			vantage, server string
			host            bool
		}
		var ws []want
		if n.Master && n.LocalhostURL != "" {
			ws = append(ws, want{Localhost, n.LocalhostURL, true})
		}
		// Origin's internal-lb pollers have no node selector: every node,
		// workers too, reaches api-int from its host network.
		if o.InternalLBURL != "" {
			ws = append(ws, want{InternalLB, o.InternalLBURL, true})
		}
		if o.ServiceNetworkURL != "" {
			ws = append(ws, want{ServiceNetwork, o.ServiceNetworkURL, false})
		}
		for _, w := range ws {
			key := w.vantage + "-" + dnsLabel(n.Name) + ".kubeconfig"
			kc.Data[key] = kubeconfig(w.server, caFile)
			pod := pollerPod(o, ns, n.Name, w.vantage, w.host, key, caConfigMap)
			objs.Pods = append(objs.Pods, pod)
			objs.pollersByPod[pod.Name] = Poller{Vantage: w.vantage, Node: n.Name}
		}
	}
	if len(objs.Pods) == 0 {
		return Objects{}, fmt.Errorf("in-cluster pollers: no poller to run (no master with a localhost URL, no internal LB, no service network)")
	}
	return objs, nil
}

// kubeconfig is a poller's client configuration: server as given, the
// pod's own ServiceAccount token (tokenFile is re-read as the kubelet
// rotates it) and the mounted CA.
func kubeconfig(server, caFile string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: cluster
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: poller
  user:
    tokenFile: %s/token
contexts:
- name: poller
  context: {cluster: cluster, user: poller}
current-context: poller
`, server, caFile, tokenDir)
}

// pollerPod is one poller, bound to its node.
func pollerPod(o Options, ns, node, vantage string, hostNetwork bool, kubeconfigKey, caConfigMap string) *corev1.Pod {
	l := o.labels()
	l[LabelVantage] = vantage
	l[LabelNode] = dnsLabel(node)
	name := "poller-" + vantage + "-" + dnsLabel(node)
	args := append([]string{"--kubeconfig", kubeconfigDir + "/" + kubeconfigKey, "--out", outDir + "/" + name}, o.ProbeArgs...)
	out := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if o.HostOutputDir != "" {
		out = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: o.HostOutputDir, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}
	}
	pod := &corev1.Pod{
		ObjectMeta: meta(name, ns, l),
		Spec: corev1.PodSpec{
			NodeName:           node,
			HostNetwork:        hostNetwork,
			ServiceAccountName: ServiceAccountName,
			// The token is projected explicitly below, so the pod spec is
			// the same whether or not the ServiceAccount admission plugin
			// runs (the lab's apiservers run without it).
			AutomountServiceAccountToken: ptr.To(false),
			// A poller that crashes is restarted (its restarts go in the run
			// record); one that finishes its --duration stays finished.
			RestartPolicy:                 corev1.RestartPolicyOnFailure,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			// Origin tolerates the master taint so its pollers land on the
			// control plane; control-plane is its newer name. NoExecute
			// taints of a node going unready are tolerated for good: a
			// poller evicted mid-rollout is the measurement lost.
			Tolerations: []corev1.Toleration{
				{Key: "node-role.kubernetes.io/master", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
			},
			Containers: []corev1.Container{{
				Name:            "poller",
				Image:           o.Image,
				ImagePullPolicy: o.PullPolicy,
				Args:            args,
				Env: []corev1.EnvVar{
					{Name: "REPRO_VANTAGE", Value: vantage},
					{Name: "REPRO_NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "token", MountPath: tokenDir, ReadOnly: true},
					{Name: "kubeconfigs", MountPath: kubeconfigDir, ReadOnly: true},
					{Name: "out", MountPath: outDir},
				},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: caConfigMap},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}}}},
				{Name: "kubeconfigs", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: KubeconfigsName}}}},
				{Name: "out", VolumeSource: out},
			},
		},
	}
	return pod
}

// dnsLabel lowercases s and keeps it a valid DNS label (names and label
// values): anything else becomes '-', and it is cut to 40 characters so a
// prefix still fits.
func dnsLabel(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), "-")
	if len(out) > 40 {
		out = strings.Trim(out[:40], "-")
	}
	return out
}
