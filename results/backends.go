package results

import "strings"

// BackendKind says what a backend's disruption measures, so that readers never
// work it out from the name. Only apiserver backends are fed to the apiserver
// catalogue; the others are placed and shown, never counted as apiserver
// failures. TRT's disruption analysis sorts backends the same way (cache,
// non-cache, canary, cloud: openshift-eng/ai-helpers
// plugins/ci/skills/analyze-disruption).
type BackendKind string

// Backend kinds.
const (
	// KindAPIServer is served through kube-apiserver: kube-api, and the
	// aggregated openshift-api and oauth-api.
	KindAPIServer BackendKind = "apiserver"
	// KindIngress goes through the cluster's ingress routers (origin's
	// ingress-to-* and image-registry backends).
	KindIngress BackendKind = "ingress"
	// KindHostToHost measures the pod and host network between nodes
	// (origin's pod-network disruption backends).
	KindHostToHost BackendKind = "host-to-host"
	// KindCanary is a network-liveness canary outside the cluster: when it
	// fails, the measuring side's network failed, and the run is unreliable.
	KindCanary BackendKind = "canary"
	// KindCloud is a cloud provider's own endpoint.
	KindCloud BackendKind = "cloud"
	// KindControl is repro's own control target, polled beside the backends
	// to show when the measuring host itself stalled.
	KindControl BackendKind = "control"
	// KindOther is a backend whose name says none of the above.
	KindOther BackendKind = "other"
)

// BackendDescriptor is the one description of a backend that the prober,
// report, diagnose, attribute and import all use.
type BackendDescriptor struct {
	// Name is origin's disruption backend name, e.g. "kube-api".
	Name string `json:"name"`
	// Path is the request path (and query) repro polls; empty for a backend
	// repro only imports.
	Path string `json:"path,omitempty"`
	// Kind says what the backend's disruption measures.
	Kind BackendKind `json:"kind"`
	// Cache is true for the ?resourceVersion=0 variants answered from the
	// apiserver's watch cache, without a quorum read from etcd.
	Cache bool `json:"cache,omitempty"`
	// Aggregated is true when kube-apiserver's aggregator proxies the request
	// to an aggregated API server.
	Aggregated bool `json:"aggregated,omitempty"`
	// Group is the API group that serves it ("" for the core group).
	Group string `json:"group,omitempty"`
}

// APIServer reports whether the backend's failures are apiserver failures.
func (b BackendDescriptor) APIServer() bool { return b.Kind == KindAPIServer }

// PolledBackends are origin's API server disruption backends
// (openshift/origin pkg/monitortests/kubeapiserver/disruptionlegacyapiservers),
// in the order reports show them. The cache-* variants ask for
// resourceVersion=0 so the apiserver answers from its watch cache.
var PolledBackends = []BackendDescriptor{
	{Name: "kube-api", Path: "/api/v1/namespaces/default", Kind: KindAPIServer},
	{Name: "openshift-api", Path: "/apis/image.openshift.io/v1/namespaces/default/imagestreams", Kind: KindAPIServer, Aggregated: true, Group: "image.openshift.io"},
	{Name: "oauth-api", Path: "/apis/oauth.openshift.io/v1/oauthclients", Kind: KindAPIServer, Aggregated: true, Group: "oauth.openshift.io"},
	{Name: "cache-kube-api", Path: "/api/v1/namespaces/default?resourceVersion=0", Kind: KindAPIServer, Cache: true},
	{Name: "cache-openshift-api", Path: "/apis/image.openshift.io/v1/namespaces/default/imagestreams?resourceVersion=0", Kind: KindAPIServer, Cache: true, Aggregated: true, Group: "image.openshift.io"},
	{Name: "cache-oauth-api", Path: "/apis/oauth.openshift.io/v1/oauthclients?resourceVersion=0", Kind: KindAPIServer, Cache: true, Aggregated: true, Group: "oauth.openshift.io"},
}

// BackendNames returns the descriptors' names, in their order.
func BackendNames(ds []BackendDescriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}

// DescribeBackend returns the descriptor of a backend name: a polled backend's
// own, or for a name repro only imports (origin's other disruption backends),
// one worked out from origin's naming. ok is false for a name that matched no
// rule (its kind is then KindOther).
func DescribeBackend(name string) (d BackendDescriptor, ok bool) {
	for _, b := range PolledBackends {
		if b.Name == name {
			return b, true
		}
	}
	return describeImported(name)
}

// describeImported classifies origin's backend names repro does not poll.
// Origin names a backend-connection "<backend>-<new|reused>-connections"
// (pkg/monitor/backenddisruption LocateDisruptionCheck), and its newer
// apiserver samplers "<backend>-<http1|http2>-<load balancer>-..." (e.g.
// kube-api-http2-localhost-new-connections, pkg/disruption/ci
// TestDescriptor), so a name whose stem is a polled backend, alone or
// followed by a protocol, is that backend's. TRT's parser separates the
// ci-cluster-network-liveness canary (the test infrastructure's network)
// from the cloud network-liveness backends (the cloud provider's)
// (openshift-eng/ai-helpers plugins/ci/skills/analyze-disruption
// parse_disruption.py classify_backend).
func describeImported(name string) (BackendDescriptor, bool) {
	d := BackendDescriptor{Name: name, Kind: KindOther}
	n := strings.ToLower(name)
	stem, _ := SplitPollerName(n)
	for _, b := range PolledBackends {
		if stem == b.Name || strings.HasPrefix(stem, b.Name+"-http1") || strings.HasPrefix(stem, b.Name+"-http2") {
			b.Name, b.Path = name, ""
			return b, true
		}
	}
	switch {
	case strings.Contains(n, "ci-cluster-network-liveness"):
		d.Kind = KindCanary
	case strings.Contains(n, "network-liveness"):
		d.Kind = KindCloud
	case strings.HasPrefix(n, "cloud-") || strings.Contains(n, "-cloud-"):
		d.Kind = KindCloud
	case strings.HasPrefix(n, "ingress-") || strings.Contains(n, "image-registry") || strings.Contains(n, "-route"):
		d.Kind = KindIngress
	case strings.Contains(n, "host-to-") || strings.Contains(n, "pod-to-") || strings.Contains(n, "-to-host") || strings.Contains(n, "-to-pod") || strings.Contains(n, "-to-service"):
		d.Kind = KindHostToHost
	case n == "control" || strings.HasPrefix(n, "repro-control"):
		d.Kind = KindControl
	default:
		return d, false
	}
	return d, true
}
