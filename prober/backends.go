package prober

import (
	"fmt"
	"sort"
	"strings"
)

// Backend is one API endpoint polled by a pair of pollers.
type Backend struct {
	// Name is origin's disruption backend name, e.g. "kube-api".
	Name string
	// Path is the request path (and query) appended to the server URL.
	Path string
}

// KnownBackends are origin's API server disruption backends
// (pkg/monitortests/kubeapiserver/disruptionlegacyapiservers). The cache-*
// variants ask for resourceVersion=0 so the apiserver answers from its watch
// cache without a quorum read from etcd.
var KnownBackends = []Backend{
	{Name: "kube-api", Path: "/api/v1/namespaces/default"},
	{Name: "openshift-api", Path: "/apis/image.openshift.io/v1/namespaces/default/imagestreams"},
	{Name: "oauth-api", Path: "/apis/oauth.openshift.io/v1/oauthclients"},
	{Name: "cache-kube-api", Path: "/api/v1/namespaces/default?resourceVersion=0"},
	{Name: "cache-openshift-api", Path: "/apis/image.openshift.io/v1/namespaces/default/imagestreams?resourceVersion=0"},
	{Name: "cache-oauth-api", Path: "/apis/oauth.openshift.io/v1/oauthclients?resourceVersion=0"},
}

// DefaultBackendNames are the backends polled when none are chosen: all of
// origin's API backends, cache-* variants included, as origin's sampler
// polls them (test/extended/util/disruption/controlplane/known_backends.go).
// "Quorum reads fail while cache reads answer" points at storage.
var DefaultBackendNames = []string{"kube-api", "openshift-api", "oauth-api", "cache-kube-api", "cache-openshift-api", "cache-oauth-api"}

// BackendNames returns the names of all known backends, sorted.
func BackendNames() []string {
	names := make([]string, 0, len(KnownBackends))
	for _, b := range KnownBackends {
		names = append(names, b.Name)
	}
	sort.Strings(names)
	return names
}

// LookupBackends resolves backend names to Backends, keeping the given
// order and dropping duplicates. An unknown name is an error that lists the
// valid ones.
func LookupBackends(names []string) ([]Backend, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("no backends chosen; valid backends: %s", strings.Join(BackendNames(), ", "))
	}
	seen := map[string]bool{}
	var out []Backend
	for _, raw := range names {
		name := strings.TrimSpace(raw)
		if name == "" || seen[name] {
			continue
		}
		found := false
		for _, b := range KnownBackends {
			if b.Name == name {
				out = append(out, b)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown backend %q; valid backends: %s", name, strings.Join(BackendNames(), ", "))
		}
		seen[name] = true
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no backends chosen; valid backends: %s", strings.Join(BackendNames(), ", "))
	}
	return out, nil
}
