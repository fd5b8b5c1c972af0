// Package load is the lab's cluster load (issue 28): the clients a real
// cluster's kube-apiservers carry (kubelets, kube-proxies, the controller
// manager's shared informers, a ReplicaSet controller's writes), each
// authenticated as its real counterpart, listing and watching through the
// lab's load balancer with client-go reflectors, plus writers at a steady
// rate. It runs in a process of its own (repro re-executed as `repro lab
// load`), started and stopped by the lab, so its CPU is not the prober's.
package load

import (
	"fmt"
	"strings"
	"time"
)

// None is the default load: the apiservers serve the pollers only.
const None = "none"

// Spec is one named load, its sizes as their sources give them for the
// cluster they describe, and the one factor the lab divides them by.
type Spec struct {
	Name string
	// Doc says what the load stands for, where each size comes from and
	// why the scale-down.
	Doc string
	// Nodes, PodsPerNode and Services are the cluster's objects at full
	// size; each node runs a kubelet and a kube-proxy.
	Nodes, PodsPerNode, Services int
	// LeaseRenew is each kubelet's node Lease renewal period.
	LeaseRenew time.Duration
	// PodChurnPerSecond is the ReplicaSet controller's pod creations per
	// second (each followed by the deletion of the oldest pod it made).
	PodChurnPerSecond float64
	// ScaleDown divides Nodes, Services and PodChurnPerSecond (PodsPerNode
	// and the per-client watch counts are kept: they are what one client
	// does).
	ScaleDown int
}

// Scaled is the spec's sizes after its scale-down: nodes, services (each
// at least 1) and pod churn.
func (s Spec) Scaled() (nodes, services int, churn float64) {
	f := max(s.ScaleDown, 1)
	nodes = max((s.Nodes+f/2)/f, 1)
	services = max((s.Services+f/2)/f, 1)
	return nodes, services, s.PodChurnPerSecond / float64(f)
}

// The watches each client kind holds, from the components' sources:
//   - kubelet: its pods (fieldSelector spec.nodeName, k8s.io/kubernetes
//     pkg/kubelet/config/apiserver.go), its own Node (metadata.name) and
//     all Services (pkg/kubelet/kubelet.go, NewMainKubelet);
//   - kube-proxy: Services, EndpointSlices and its own Node
//     (cmd/kube-proxy/app/server.go);
//   - kube-controller-manager: one shared informer per resource its
//     controllers read; the ones a pod workload exercises (pods, nodes,
//     services, endpointslices, replicasets, deployments, leases,
//     namespaces; pkg/controller/... each controller's informers).
var (
	kubeletWatches = []string{"pods", "nodes", "services"}
	proxyWatches   = []string{"services", "endpointslices", "nodes"}
	kcmWatches     = []string{"pods", "nodes", "services", "endpointslices", "replicasets", "deployments", "leases", "namespaces"}
)

var specs = []Spec{
	{
		Name: "cl2-load",
		Doc: "kubernetes/perf-tests ClusterLoader2's load test (clusterloader2/testing/load/config.yaml) on its smallest cluster: " +
			"100 nodes (NODES_PER_NAMESPACE 100, its assumed minimum), 30 pods a node (PODS_PER_NODE), services half its deployments " +
			"(3000 pods in big 250-, medium 30- and small 5-pod groups, a quarter, a quarter and a half of them: 3 + 25 + 300 deployments, 2 + 13 + 150 = 165 services), " +
			"pods created at LOAD_TEST_THROUGHPUT 10 a second; each node's kubelet renews its Lease every 10 s (a quarter of the kubelet's 40 s " +
			"nodeLeaseDurationSeconds, KEP-589 and k8s.io/kubernetes pkg/kubelet/kubelet.go nodeLeaseRenewIntervalFraction). " +
			"The reflectors list then watch (client-go's WatchListClient off, as in the client-go 0.29 and 0.30 of OpenShift 4.16 and 4.17: KEP-3157's streaming lists went beta in 1.32). " +
			"Scaled down by 10 for this machine: the lab runs three kube-apiservers, etcd, six aggregated servers, the prober and this load on 2 cores, " +
			"where CL2's 100 nodes are served by masters of their own; a tenth keeps the load's clients within what 2 shared cores can run beside the servers. " +
			"The factor is chosen for the machine, not worked back from any gap.",
		Nodes: 100, PodsPerNode: 30, Services: 165,
		LeaseRenew: 10 * time.Second, PodChurnPerSecond: 10, ScaleDown: 10,
	},
}

// Specs lists the loads other than None.
func Specs() []Spec { return append([]Spec(nil), specs...) }

// Names lists every load's name, None first.
func Names() []string {
	out := []string{None}
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// Lookup returns the named load; None and "" are no load (ok false, nil
// error). Its error is one line naming the loads that exist.
func Lookup(name string) (Spec, bool, error) {
	if name == "" || name == None {
		return Spec{}, false, nil
	}
	for _, s := range specs {
		if s.Name == name {
			return s, true, nil
		}
	}
	return Spec{}, false, fmt.Errorf("unknown lab load %q; valid: %s", name, strings.Join(Names(), ", "))
}

// ClientCount is how many clients the scaled load runs: a kubelet and a
// kube-proxy a node, the controller manager's informers and the
// ReplicaSet controller's writer.
func ClientCount(s Spec) int {
	nodes, _, _ := s.Scaled()
	return 2*nodes + 2
}
