// Package aggregated carries the lab's aggregated API server (package
// server below) as sources, and the binaries.Spec that builds them.
//
// The server links k8s.io/apiserver; repro must not, so this package embeds
// the server's non-test .go files with a go.mod of their own (go.mod.src,
// go.sum.src, pinning the main module's versions; hack/update-aggregated-module.sh
// regenerates them) and `repro lab build` compiles them into the cache as it
// does kube-apiserver and etcd. It imports nothing from Kubernetes; the
// server, built as a module of its own, imports nothing from the main
// module (so its groups' table, server.Roles, cannot be derived from
// package results; TestGroupsFollowTheBackends checks the two agree).
package aggregated

import (
	"embed"
	"io/fs"
	"time"

	"github.com/repro-tools/repro/lab/binaries"
	"github.com/repro-tools/repro/results"
)

//go:embed go.mod.src go.sum.src server/*.go server/cmd/*.go
var sources embed.FS

// Sources are the server's build module files (test files included in the
// embed are skipped by package binaries).
var Sources fs.FS = sources

// Spec builds the aggregated API server, one binary for both roles
// (--group image.openshift.io or oauth.openshift.io).
var Spec = binaries.Spec{
	Name:    "aggregated-apiserver",
	Version: "v0.35.2",
	Package: "./server/cmd",
	LDFlags: "-s -w",
	Sources: sources,
	// Measured: 3 min 4 s on 2 shared cores, 985 of its 1272 packages
	// compiled (the rest came from kube-apiserver's and etcd's builds);
	// 4 min 1 s after them on a fresh machine.
	ColdBuild: 4 * time.Minute,
}

// Groups are the aggregated APIs the lab serves, one role each: the
// groups, and the paths polled, of results.PolledBackends' aggregated
// backends (the quorum-read ones; the cache-* variants poll the same
// list), in their order, placed where OpenShift runs them.
var Groups = groups(results.PolledBackends)

// placements are where OpenShift runs each aggregated group's server: the
// namespace of its Service and pods, and its component (log folder) name
// (openshift/cluster-openshift-apiserver-operator,
// openshift/cluster-authentication-operator).
var placements = map[string]struct{ namespace, component string }{
	"image.openshift.io": {"openshift-apiserver", "openshift-apiserver"},
	"oauth.openshift.io": {"openshift-oauth-apiserver", "oauth-apiserver"},
}

// groups are the aggregated groups of ds the lab places (a group without a
// placement is left out, and TestGroupsFollowTheBackends says so).
func groups(ds []results.BackendDescriptor) []Group {
	var out []Group
	for _, d := range ds {
		p, ok := placements[d.Group]
		if !d.Aggregated || d.Cache || !ok {
			continue
		}
		out = append(out, Group{Name: d.Group, Namespace: p.namespace, Component: p.component, Path: d.Path})
	}
	return out
}

// Group is one aggregated API as the lab deploys it.
type Group struct {
	// Name is the API group, served at v1.
	Name string
	// Namespace holds its Service, Endpoints and pods, as on OpenShift.
	Namespace string
	// Component names its log folder on the node (openshift-apiserver/,
	// oauth-apiserver/), as `oc adm node-logs --path` reads them.
	Component string
	// Path is the list origin's disruption backend polls.
	Path string
}

// APIServiceName is the group's APIService object name.
func (g Group) APIServiceName() string { return "v1." + g.Name }
