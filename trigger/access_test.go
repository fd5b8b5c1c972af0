package trigger

import (
	"context"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"
)

func TestBackendPermission(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/default":                                  "get namespaces/default",
		"/api/v1/namespaces/default?resourceVersion=0":                "get namespaces/default",
		"/apis/image.openshift.io/v1/namespaces/default/imagestreams": "list imagestreams.image.openshift.io -n default",
		"/apis/oauth.openshift.io/v1/oauthclients":                    "list oauthclients.oauth.openshift.io",
		"/api/v1/nodes/master-0/proxy/logs":                           "get nodes/master-0",
		"/readyz":                                                     "get /readyz",
	} {
		if got := BackendPermission(path).String(); got != want {
			t.Errorf("BackendPermission(%q) = %q, want %q", path, got, want)
		}
	}
}

// allowOnly answers SelfSubjectAccessReviews the way an authorizer with
// exactly the allowed permissions would.
func allowOnly(kube *kubefake.Clientset, allowed map[string]bool) {
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		var p Permission
		if n := r.Spec.NonResourceAttributes; n != nil {
			p = Permission{Verb: n.Verb, NonResourceURL: n.Path}
		} else {
			ra := r.Spec.ResourceAttributes
			p = Permission{Verb: ra.Verb, Group: ra.Group, Resource: ra.Resource, Namespace: ra.Namespace, Name: ra.Name}
		}
		r.Status.Allowed = allowed[p.String()]
		return true, r, nil
	})
}

func TestMissingPermissions(t *testing.T) {
	perms := append(append([]Permission(nil), RolloutPermissions...), BackendPermission("/apis/oauth.openshift.io/v1/oauthclients"))
	all := map[string]bool{}
	for _, p := range perms {
		all[p.String()] = true
	}
	t.Run("cluster-admin", func(t *testing.T) {
		kube := kubefake.NewSimpleClientset()
		allowOnly(kube, all)
		missing, err := MissingPermissions(context.Background(), kube, perms)
		if err != nil || len(missing) != 0 {
			t.Fatalf("missing %v, %v; want none", missing, err)
		}
	})
	t.Run("a namespace admin without the operator or oauthclients", func(t *testing.T) {
		kube := kubefake.NewSimpleClientset()
		some := map[string]bool{}
		for k := range all {
			some[k] = !strings.Contains(k, "kubeapiservers") && !strings.Contains(k, "oauthclients")
		}
		allowOnly(kube, some)
		missing, err := MissingPermissions(context.Background(), kube, perms)
		if err != nil {
			t.Fatal(err)
		}
		msg := MissingError(missing).Error()
		lines := strings.Split(msg, "\n")
		// The heading, then the four kubeapiservers verbs and the oauthclients list, one per line.
		if len(lines) != 6 {
			t.Fatalf("error has %d lines, want 6:\n%s", len(lines), msg)
		}
		for _, want := range []string{"patch kubeapiservers.operator.openshift.io/cluster", "watch kubeapiservers.operator.openshift.io/cluster", "list oauthclients.oauth.openshift.io  (polling /apis/oauth.openshift.io/v1/oauthclients)", "repro rbac"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error lacks %q:\n%s", want, msg)
			}
		}
	})
}

// TestClusterRoleGrantsWhatTheCheckAsks reads the ClusterRole back and
// checks that every permission of the table is granted by one of its rules
// and that no rule grants more verbs than the table has for it.
func TestClusterRoleGrantsWhatTheCheckAsks(t *testing.T) {
	perms := append(append([]Permission(nil), RolloutPermissions...), BackendPermission("/api/v1/namespaces/default"))
	b, err := ClusterRoleYAML("repro", perms)
	if err != nil {
		t.Fatal(err)
	}
	var role struct {
		Kind  string
		Rules []struct {
			APIGroups       []string `json:"apiGroups"`
			Resources       []string `json:"resources"`
			ResourceNames   []string `json:"resourceNames"`
			NonResourceURLs []string `json:"nonResourceURLs"`
			Verbs           []string `json:"verbs"`
		}
	}
	if err := yaml.Unmarshal(b, &role); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	granted := map[string]bool{}
	for _, r := range role.Rules {
		for _, v := range r.Verbs {
			if len(r.NonResourceURLs) > 0 {
				granted[Permission{Verb: v, NonResourceURL: r.NonResourceURLs[0]}.String()] = true
				continue
			}
			name := ""
			if len(r.ResourceNames) > 0 {
				name = r.ResourceNames[0]
			}
			granted[Permission{Verb: v, Group: r.APIGroups[0], Resource: r.Resources[0], Name: name}.String()] = true
		}
	}
	want := map[string]bool{}
	for _, p := range perms {
		p.Namespace = "" // a ClusterRole's rule holds in every namespace
		want[p.String()] = true
		if !granted[p.String()] {
			t.Errorf("the ClusterRole does not grant %s:\n%s", p, b)
		}
	}
	for g := range granted {
		if !want[g] {
			t.Errorf("the ClusterRole grants %s, which the run never does", g)
		}
	}
	if role.Kind != "ClusterRole" {
		t.Errorf("kind %q", role.Kind)
	}
}

// The node logs API is the nodes/proxy subresource: asked as such in the
// review, granted as such in the ClusterRole.
func TestSubresourcePermission(t *testing.T) {
	p := AttributionPermissions[1]
	if p.String() != "get nodes/proxy" {
		t.Errorf("String: %q", p.String())
	}
	if ra := p.review().Spec.ResourceAttributes; ra == nil || ra.Resource != "nodes" || ra.Subresource != "proxy" || ra.Verb != "get" {
		t.Errorf("review attributes %+v", ra)
	}
	y, err := ClusterRoleYAML("repro", AttributionPermissions)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "- nodes/proxy\n") || !strings.Contains(string(y), "- nodes\n") {
		t.Errorf("ClusterRole:\n%s", y)
	}
}
