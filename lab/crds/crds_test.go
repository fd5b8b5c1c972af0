package crds

import "testing"

func TestEmbeddedCRDs(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"kubeapiservers.operator.openshift.io": "Cluster",
	}
	if len(all) != len(want) {
		t.Fatalf("%d CRDs, want %d", len(all), len(want))
	}
	for _, c := range all {
		scope, ok := want[c.Name]
		if !ok || string(c.Spec.Scope) != scope {
			t.Errorf("%s: scope %s, want %q", c.Name, c.Spec.Scope, scope)
		}
		if c.Name == "kubeapiservers.operator.openshift.io" {
			v := c.Spec.Versions[0]
			if v.Name != "v1" || v.Subresources == nil || v.Subresources.Status == nil {
				t.Errorf("KubeAPIServer CRD lacks v1 with a status subresource: %+v", v)
			}
		}
	}
}
