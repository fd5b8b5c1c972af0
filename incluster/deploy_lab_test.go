package incluster_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/repro-tools/repro/incluster"
	"github.com/repro-tools/repro/lab"
)

// TestDeployOnLab creates, dry-runs, finds and removes a run's objects on a
// real kube-apiserver (the lab's, one node), and checks the pollers'
// ServiceAccount gets what `repro probe` reads and nothing else.
func TestDeployOnLab(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real kube-apiserver")
	}
	opts := lab.DefaultOptions()
	opts.Nodes = 1
	opts.Logger = zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	opts.BuildProgress = os.Stderr
	l, err := lab.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("lab.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Stop(); err != nil {
			t.Errorf("lab.Stop: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(l.RESTConfig())
	n := l.Nodes()[0]
	o := incluster.Options{
		RunID: "20261207T1300-test", Image: "repro.local/repro:dev", PullPolicy: corev1.PullNever,
		Nodes:         []incluster.Node{{Name: n.Name(), Master: true, LocalhostURL: n.URL()}},
		InternalLBURL: l.URL(), CABundle: []byte("not a real bundle"),
		ProbeArgs: []string{"--duration", "1m"},
	}
	objs, err := incluster.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	d := incluster.Deployer{Kube: kube, Log: zaptest.NewLogger(t), NoNamespaceController: true, StopTimeout: 2 * time.Second}

	// A dry run lists everything and leaves nothing behind.
	names, err := d.Create(ctx, objs, true)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if !slices.Equal(names, objs.List()) {
		t.Fatalf("dry run listed %v, want %v", names, objs.List())
	}
	if left, err := d.Leftovers(ctx, ""); err != nil || len(left) != 0 {
		t.Fatalf("after a dry run: leftovers %v, %v", left, err)
	}

	created, err := d.Create(ctx, objs, false)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Logf("created %d objects: %s", len(created), strings.Join(created, " "))
	pods, err := kube.CoreV1().Pods(objs.Namespace.Name).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("pods: %v, %v", pods, err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != n.Name() || !p.Spec.HostNetwork {
			t.Errorf("pod %s: node %q hostNetwork %v", p.Name, p.Spec.NodeName, p.Spec.HostNetwork)
		}
	}

	// The ServiceAccount may read the backends and may not read secrets.
	sa := "system:serviceaccount:" + objs.Namespace.Name + ":" + incluster.ServiceAccountName
	for _, c := range []struct {
		attr authv1.ResourceAttributes
		want bool
	}{
		{authv1.ResourceAttributes{Verb: "get", Resource: "namespaces", Name: "default"}, true},
		{authv1.ResourceAttributes{Verb: "list", Group: "image.openshift.io", Resource: "imagestreams", Namespace: "default"}, true},
		{authv1.ResourceAttributes{Verb: "list", Group: "oauth.openshift.io", Resource: "oauthclients"}, true},
		{authv1.ResourceAttributes{Verb: "get", Resource: "namespaces", Name: "kube-system"}, false},
		{authv1.ResourceAttributes{Verb: "list", Group: "image.openshift.io", Resource: "imagestreams", Namespace: "kube-system"}, false},
		{authv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: objs.Namespace.Name}, false},
	} {
		r, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authv1.SubjectAccessReview{Spec: authv1.SubjectAccessReviewSpec{
			User: sa, Groups: []string{"system:serviceaccounts"}, ResourceAttributes: &c.attr}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != c.want {
			t.Errorf("%s %s/%s %s: allowed %v, want %v", c.attr.Verb, c.attr.Group, c.attr.Resource, c.attr.Name, r.Status.Allowed, c.want)
		}
	}

	// The next run finds this one's objects by label, its own excepted.
	left, err := d.Leftovers(ctx, "another-run")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Namespace/" + objs.Namespace.Name, "ClusterRole/" + objs.ClusterRole.Name, "ClusterRoleBinding/" + objs.ClusterRoleBinding.Name,
		"Role/default/" + objs.DefaultRole.Name, "RoleBinding/default/" + objs.DefaultRoleBinding.Name}
	if !slices.Equal(left, want) {
		t.Fatalf("leftovers %v, want %v", left, want)
	}
	if own, _ := d.Leftovers(ctx, o.RunID); len(own) != 0 {
		t.Errorf("a run's own objects counted as leftovers: %v", own)
	}
	// No kubelet runs these pods (the lab's node is simulated): their
	// graceful deletion never completes, so Delete forces it after
	// StopTimeout, as for a node that is gone.
	if err := d.Delete(ctx, left, true); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if again, err := d.Leftovers(ctx, ""); err != nil || len(again) != 0 {
		t.Fatalf("after delete: leftovers %v, %v", again, err)
	}
	if _, err := kube.CoreV1().Namespaces().Get(ctx, objs.Namespace.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace still there: %v", err)
	}
}
