package vantage

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	configfake "github.com/openshift/client-go/config/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/repro-tools/repro/prober"
)

func TestParse(t *testing.T) {
	got, err := Parse([]string{"direct", "external-lb", "direct"})
	if err != nil || strings.Join(got, ",") != "external-lb,direct" {
		t.Errorf("Parse: %v %v", got, err)
	}
	if got, _ := Parse(nil); strings.Join(got, ",") != "external-lb" {
		t.Errorf("default: %v", got)
	}
	if _, err := Parse([]string{"localhost"}); err == nil || !strings.Contains(err.Error(), "want one of external-lb, internal-lb, direct, service-network") {
		t.Errorf("bad name: %v", err)
	}
}

// An OpenShift cluster's objects as the installer and kube-apiserver leave
// them: the Infrastructure's internal API URL, one EndpointSlice listing
// every apiserver on 6443 without node names, nodes with InternalIPs.
func clusterClients() Clients {
	kube := fake.NewSimpleClientset(
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.0.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
				{Addresses: []string{"10.0.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
				{Addresses: []string{"10.0.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
			},
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](6443)}},
		},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-5"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-7"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}}}},
	)
	cfg := configfake.NewSimpleClientset(&configv1.Infrastructure{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Status:     configv1.InfrastructureStatus{APIServerInternalURL: "https://api-int.ci.example.com:6443"},
	})
	return Clients{Kube: kube, Config: cfg}
}

func TestResolve(t *testing.T) {
	ts, err := Resolve(context.Background(), clusterClients(), "https://api.ci.example.com:6443", []string{ExternalLB, InternalLB, Direct})
	if err != nil {
		t.Fatal(err)
	}
	want := []prober.Target{
		{},
		{Vantage: "internal-lb", URL: "https://api-int.ci.example.com:6443"},
		{Vantage: "direct", Node: "10.0.0.9", URL: "https://10.0.0.9:6443", ServerName: "api.ci.example.com"},
		{Vantage: "direct", Node: "ip-10-0-0-5", URL: "https://10.0.0.5:6443", ServerName: "api.ci.example.com"},
		{Vantage: "direct", Node: "ip-10-0-0-7", URL: "https://10.0.0.7:6443", ServerName: "api.ci.example.com"},
	}
	if len(ts) != len(want) {
		t.Fatalf("targets %+v, want %+v", ts, want)
	}
	for i := range want {
		if ts[i] != want[i] {
			t.Errorf("target %d: %+v, want %+v", i, ts[i], want[i])
		}
	}
}

func TestResolveErrorsAreOneLine(t *testing.T) {
	empty := Clients{Kube: fake.NewSimpleClientset(), Config: configfake.NewSimpleClientset()}
	for _, tc := range []struct{ vantage, want string }{
		{InternalLB, "no infrastructures.config.openshift.io/cluster"},
		{Direct, "list no apiserver address"},
		{ServiceNetwork, "only inside the cluster"},
	} {
		t.Setenv("KUBERNETES_SERVICE_HOST", "")
		_, err := Resolve(context.Background(), empty, "https://api.example.com:6443", []string{tc.vantage})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", tc.vantage, err, tc.want)
		}
	}
}
