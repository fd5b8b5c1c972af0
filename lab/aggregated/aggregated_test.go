package aggregated

import (
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/repro-tools/repro/lab/aggregated/server"
	"github.com/repro-tools/repro/results"
)

// requires reads a go.mod's require lines into module -> version.
func requires(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "require (":
			in = true
			continue
		case l == ")":
			in = false
			continue
		case strings.HasPrefix(l, "require "):
			l = strings.TrimPrefix(l, "require ")
		case !in:
			continue
		}
		if f := strings.Fields(l); len(f) >= 2 {
			out[f[0]] = f[1]
		}
	}
	return out
}

// The server is vetted and tested in the main module but built from
// go.mod.src: a k8s.io or openshift version that differs between the two
// would ship a server nobody tested. hack/update-aggregated-module.sh fixes it.
func TestBuildModulePinsTheMainModulesVersions(t *testing.T) {
	mainMod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	src, err := fs.ReadFile(Sources, "go.mod.src")
	if err != nil {
		t.Fatal(err)
	}
	main, build := requires(t, mainMod), requires(t, src)
	if build["k8s.io/apiserver"] == "" {
		t.Fatalf("go.mod.src does not require k8s.io/apiserver:\n%s", src)
	}
	checked := 0
	for m, v := range build {
		if !strings.HasPrefix(m, "k8s.io/") && !strings.HasPrefix(m, "github.com/openshift/") && !strings.HasPrefix(m, "sigs.k8s.io/") {
			continue
		}
		checked++
		if main[m] != v {
			t.Errorf("%s: go.mod.src pins %s, the main module %q (run hack/update-aggregated-module.sh)", m, v, main[m])
		}
	}
	if checked < 5 {
		t.Errorf("only %d k8s.io/openshift modules compared", checked)
	}
	if !strings.Contains(string(src), "module github.com/repro-tools/repro/lab/aggregated\n") {
		t.Errorf("go.mod.src's module path must match the server's import path")
	}
	if Spec.Version != build["k8s.io/apiserver"] {
		t.Errorf("Spec.Version %s, go.mod.src's k8s.io/apiserver %s", Spec.Version, build["k8s.io/apiserver"])
	}
}

func TestSourcesHoldTheServerAndItsCommand(t *testing.T) {
	for _, f := range []string{"server/server.go", "server/cmd/main.go", "go.sum.src"} {
		if _, err := fs.Stat(Sources, f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// Every aggregated backend repro polls is a group the lab serves, at the
// path the backend polls, and one the server has a role for.
func TestGroupsFollowTheBackends(t *testing.T) {
	want := map[string]string{}
	for _, d := range results.PolledBackends {
		if d.Aggregated && !d.Cache {
			want[d.Group] = d.Path
		}
	}
	if len(Groups) != len(want) {
		t.Fatalf("Groups %+v, the polled aggregated backends' groups %v: give a new group a placement", Groups, want)
	}
	for _, g := range Groups {
		if g.Path != want[g.Name] || g.Namespace == "" || g.Component == "" {
			t.Errorf("group %+v, polled path %q", g, want[g.Name])
		}
		r, ok := server.Roles[g.Name]
		if !ok {
			t.Errorf("the server has no role for %s (its groups: %v)", g.Name, server.GroupNames())
			continue
		}
		if !strings.HasPrefix(g.Path, "/apis/"+g.Name+"/v1/") || !strings.HasSuffix(g.Path, "/"+r.Resource) {
			t.Errorf("%s polls %s, which is not the server's %s", g.Name, g.Path, r.Resource)
		}
	}
}
