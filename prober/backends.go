package prober

import (
	"fmt"
	"sort"
	"strings"

	"github.com/repro-tools/repro/results"
)

// Backend is one API endpoint polled by a pair of pollers.
type Backend struct {
	// Name is origin's disruption backend name, e.g. "kube-api".
	Name string
	// Path is the request path (and query) appended to the server URL.
	Path string
}

// KnownBackends are the backends the prober can poll: results'
// PolledBackends, the one description of origin's API server disruption
// backends that the report, diagnose and import read too.
var KnownBackends = pollable(results.PolledBackends)

// DefaultBackendNames are the backends polled when none are chosen: all of
// origin's API backends, cache-* variants included, as origin's sampler
// polls them (test/extended/util/disruption/controlplane/known_backends.go).
// "Quorum reads fail while cache reads answer" points at storage.
var DefaultBackendNames = results.BackendNames(results.PolledBackends)

// pollable keeps the descriptors that have a path to poll.
func pollable(ds []results.BackendDescriptor) []Backend {
	var out []Backend
	for _, d := range ds {
		if d.Path != "" {
			out = append(out, Backend{Name: d.Name, Path: d.Path})
		}
	}
	return out
}

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
