package lab

import (
	"context"
	"fmt"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	operatorclient "github.com/openshift/client-go/operator/clientset/versioned"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/repro-tools/repro/lab/crds"
	"github.com/repro-tools/repro/lab/operator"
)

// bootstrap creates what an OpenShift control plane has before its
// kube-apiserver operator runs: the CRDs, the namespaces, the Node objects,
// and kubeapiservers/cluster at revision 1. It talks to an apiserver
// directly (the first one ready), before any apiserver is in the load
// balancer's service.
func (l *Lab) bootstrap(ctx context.Context, via *Node) error {
	began := time.Now()
	cfg := l.restConfig(via.URL())
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	op, err := operatorclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	retry := func(what string, fn func() error) error {
		if err := operator.RetryTransient(ctx, fn); err != nil {
			return fmt.Errorf("lab bootstrap: %s: %w", what, err)
		}
		return nil
	}

	all, err := crds.All()
	if err != nil {
		return err
	}
	for _, c := range all {
		if err := retry("creating CRD "+c.Name, func() error {
			_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, c, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}); err != nil {
			return err
		}
	}
	for _, ns := range []string{Namespace, OperatorNamespace} {
		if err := retry("creating namespace "+ns, func() error {
			_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
				Name:   ns,
				Labels: map[string]string{"openshift.io/run-level": "0", "pod-security.kubernetes.io/enforce": "privileged"},
			}}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}); err != nil {
			return err
		}
	}
	// default is made by the apiserver's own bootstrap controller; wait so
	// /api/v1/namespaces/default answers 200 from the start.
	if err := retry("waiting for namespace default", func() error {
		_, err := kube.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("not yet created")
		}
		return err
	}); err != nil {
		return err
	}
	for _, n := range l.nodes {
		if err := retry("creating node "+n.name, func() error { return createNode(ctx, kube, n.name) }); err != nil {
			return err
		}
	}
	for _, c := range all {
		if err := l.waitEstablished(ctx, ext, c.Name); err != nil {
			return err
		}
	}
	// Right after a CRD is established its storage answers 429 for a moment:
	// retryTransient rides over it.
	if err := retry("creating kubeapiservers/cluster", func() error {
		_, err := op.OperatorV1().KubeAPIServers().Create(ctx, &operatorv1.KubeAPIServer{
			ObjectMeta: metav1.ObjectMeta{Name: operator.Name},
			Spec: operatorv1.KubeAPIServerSpec{StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{
				ManagementState: operatorv1.Managed, LogLevel: operatorv1.Normal, OperatorLogLevel: operatorv1.Normal,
			}}},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("CRD not served yet: %w", err)
		}
		return err
	}); err != nil {
		return err
	}
	if err := operator.RecordRevision(ctx, kube, Namespace, 1, ""); err != nil {
		return fmt.Errorf("lab bootstrap: recording revision 1: %w", err)
	}
	// The CRD forbids a node status born with a revision (the node
	// controller adds bare entries, the installer fills them), so two writes.
	for _, withRevisions := range []bool{false, true} {
		if err := retry("setting kubeapiservers/cluster status", func() error {
			obj, err := op.OperatorV1().KubeAPIServers().Get(ctx, operator.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if withRevisions {
				operator.InitialStatus(&obj.Status, l.NodeNames(), 1)
			} else {
				for _, n := range l.NodeNames() {
					obj.Status.NodeStatuses = append(obj.Status.NodeStatuses, operatorv1.NodeStatus{NodeName: n})
				}
			}
			obj.Status.ObservedGeneration = obj.Generation
			_, err = op.OperatorV1().KubeAPIServers().UpdateStatus(ctx, obj, metav1.UpdateOptions{})
			return err
		}); err != nil {
			return err
		}
	}
	l.log.Info("lab bootstrap done: CRDs, namespaces, nodes, kubeapiservers/cluster at revision 1", zap.Duration("took", time.Since(began).Round(time.Millisecond)))
	return nil
}

func (l *Lab) waitEstablished(ctx context.Context, ext apiextensionsclient.Interface, name string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, cond := range c.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s not established after 30s (last error: %v)", name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// createNode registers a control-plane Node object with a Ready condition,
// so node-scoped views (oc get nodes, pod nodeName) resolve as on a cluster.
func createNode(ctx context.Context, kube kubernetes.Interface, name string) error {
	node, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: name,
		Labels: map[string]string{
			"kubernetes.io/hostname":                name,
			"kubernetes.io/os":                      "linux",
			"node-role.kubernetes.io/master":        "",
			"node-role.kubernetes.io/control-plane": "",
		},
	}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "lab node (no kubelet: its static pod is managed by repro)", LastHeartbeatTime: now, LastTransitionTime: now}}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: name}}
	_, err = kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// installer adapts the lab's nodes to the operator's Installer.
type installer struct{ l *Lab }

func (i installer) Install(ctx context.Context, node string, rev int32) error {
	n := i.l.Node(node)
	if n == nil {
		return fmt.Errorf("no node %q", node)
	}
	return n.rollTo(ctx, rev)
}
