package scenarios

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	configfake "github.com/openshift/client-go/config/clientset/versioned/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/repro-tools/repro/results"
	"github.com/repro-tools/repro/trigger"
)

// --aws-lb stops the run with one line where it cannot work: on the lab,
// and on a cluster that is not on AWS; and nothing is done without it.
func TestAWSLBOnlyOnAWS(t *testing.T) {
	infra := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	infra.Status.InfrastructureName = "infra-x"
	infra.Status.PlatformStatus = &configv1.PlatformStatus{Type: configv1.GCPPlatformType}
	p := &prepared{clients: &trigger.Clients{Kube: fake.NewSimpleClientset(), Config: configfake.NewSimpleClientset(infra)},
		run: results.NewRun("run", nil, infra.CreationTimestamp.Time)}
	s := &Session{}
	if err := s.prepareAWSLB(context.Background(), p); err != nil || p.awslb != nil {
		t.Fatalf("without --aws-lb: %v %v", err, p.awslb)
	}
	s.Polling.AWSLB = true
	err := s.prepareAWSLB(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "drop --aws-lb") || !strings.Contains(err.Error(), "lab") {
		t.Errorf("on the lab: %v", err)
	}
	s.Target.Live = true
	err = s.prepareAWSLB(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "GCP") || strings.Contains(err.Error(), "\n") {
		t.Errorf("on GCP: %v", err)
	}
}
