package incluster

import (
	"slices"
	"testing"
)

// TestBuildPollersPerNode checks which pollers each node gets: localhost on
// masters only, internal-lb and service-network everywhere, each bound to
// its node and labelled with what it measures.
func TestBuildPollersPerNode(t *testing.T) {
	objs, err := Build(Options{RunID: "Run_1", Image: "img",
		Nodes:         []Node{{Name: "worker-0"}, {Name: "master-0", Master: true, LocalhostURL: "https://localhost:6443"}},
		InternalLBURL: "https://api-int.example:6443", ServiceNetworkURL: "https://kubernetes.default.svc:443"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range objs.Pods {
		got = append(got, p.Name)
		pl, ok := objs.PollerOf(p.Name)
		if !ok || p.Spec.NodeName != pl.Node || p.Labels[LabelVantage] != pl.Vantage {
			t.Errorf("pod %s: node %q labels %v, poller %+v", p.Name, p.Spec.NodeName, p.Labels, pl)
		}
		if p.Spec.HostNetwork != (pl.Vantage != ServiceNetwork) {
			t.Errorf("pod %s: hostNetwork %v", p.Name, p.Spec.HostNetwork)
		}
	}
	want := []string{"poller-localhost-master-0", "poller-internal-lb-master-0", "poller-service-network-master-0",
		"poller-internal-lb-worker-0", "poller-service-network-worker-0"}
	if !slices.Equal(got, want) {
		t.Fatalf("pods %v, want %v", got, want)
	}
	if objs.Namespace.Name != "repro-incluster-run-1" || objs.Namespace.Labels[LabelManaged] != "true" {
		t.Errorf("namespace %s labels %v", objs.Namespace.Name, objs.Namespace.Labels)
	}
	// Without a CA bundle the pods trust the namespace's kube-root-ca.crt
	// and repro ships only the kubeconfigs.
	if len(objs.ConfigMaps) != 1 || objs.ConfigMaps[0].Name != KubeconfigsName || len(objs.ConfigMaps[0].Data) != 5 {
		t.Errorf("configmaps %+v", objs.ConfigMaps)
	}
	if _, err := Build(Options{RunID: "r", Image: "img", Nodes: []Node{{Name: "w"}}}); err == nil {
		t.Error("a run with nothing to poll built")
	}
}
