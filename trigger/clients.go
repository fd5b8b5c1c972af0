// Package trigger forces a kube-apiserver revision rollout through the
// operator API and follows it node by node, recording every observation as a
// timeline event. It changes nothing on the cluster but
// spec.forceRedeploymentReason of kubeapiservers/cluster.
package trigger

import (
	"fmt"

	configclient "github.com/openshift/client-go/config/clientset/versioned"
	operatorclient "github.com/openshift/client-go/operator/clientset/versioned"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Namespace is where OpenShift runs the kube-apiserver static pods and where
// their termination events are recorded.
const Namespace = "openshift-kube-apiserver"

// OperatorName is the name of the singleton KubeAPIServer operator resource.
const OperatorName = "cluster"

// Clients are the typed clients the trigger uses. Config is optional: it is
// nil, or its API absent, on clusters without config.openshift.io (the lab).
type Clients struct {
	Kube     kubernetes.Interface
	Operator operatorclient.Interface
	Config   configclient.Interface
}

// NewClients builds typed clients for cfg.
func NewClients(cfg *rest.Config) (*Clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	op, err := operatorclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("operator client: %w", err)
	}
	conf, err := configclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("config client: %w", err)
	}
	return &Clients{Kube: kube, Operator: op, Config: conf}, nil
}
