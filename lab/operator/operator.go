// Package operator is the lab's stand-in for the installer part of OpenShift's
// cluster-kube-apiserver-operator. It works only through the API, with
// openshift/client-go, like the real one:
//
//   - it watches kubeapiservers.operator.openshift.io/cluster with an informer;
//   - when spec.forceRedeploymentReason differs from the reason recorded for
//     the latest revision (the revision-status-<n> ConfigMap, as the real
//     operator keeps), it creates revision n+1 and bumps
//     status.latestAvailableRevision;
//   - it rolls nodes to the latest revision one at a time: set the node's
//     targetRevision, run the installer (an installer-<rev>-<node> pod and
//     the Installer, which replaces the static pod and returns once it is
//     ready), set currentRevision, wait the minimum ready time, next node;
//   - it keeps status.nodeStatuses and the NodeInstallerProgressing,
//     NodeInstallerDegraded and StaticPodsAvailable conditions, and records
//     operator Events (RevisionTriggered, NodeTargetRevisionChanged,
//     NodeCurrentRevisionChanged) as library-go's controllers do.
//
// Its own apiservers restart under it, so every write retries transient
// errors.
package operator

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	operatorclient "github.com/openshift/client-go/operator/clientset/versioned"
	operatorinformers "github.com/openshift/client-go/operator/informers/externalversions"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// Name is the name of the singleton KubeAPIServer object.
const Name = "cluster"

// Installer replaces one node's kube-apiserver static pod with a revision:
// the installer pod's and the kubelet's part. It returns once the new
// apiserver is ready.
type Installer interface {
	Install(ctx context.Context, node string, revision int32) error
}

// Options configures the controller.
type Options struct {
	Config            *rest.Config
	Nodes             []string
	Installer         Installer
	MinReadyTime      time.Duration
	Namespace         string
	OperatorNamespace string
	Logger            *zap.Logger
}

// Controller is the installer controller.
type Controller struct {
	o        Options
	log      *zap.Logger
	op       operatorclient.Interface
	kube     kubernetes.Interface
	factory  operatorinformers.SharedInformerFactory
	informer cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
	synced   atomic.Bool
}

// New builds a controller; Run starts it.
func New(o Options) (*Controller, error) {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	cfg := rest.CopyConfig(o.Config)
	cfg.UserAgent = "kube-apiserver-operator (repro lab)"
	op, err := operatorclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c := &Controller{o: o, log: o.Logger, op: op, kube: kube,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 5*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "installer"}),
	}
	c.factory = operatorinformers.NewSharedInformerFactoryWithOptions(op, 10*time.Minute,
		operatorinformers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", Name).String()
		}))
	c.informer = c.factory.Operator().V1().KubeAPIServers().Informer()
	_, err = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.queue.Add(Name) },
		UpdateFunc: func(any, any) { c.queue.Add(Name) },
		DeleteFunc: func(any) { c.queue.Add(Name) },
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer c.queue.ShutDown()
	c.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
		return
	}
	c.synced.Store(true)
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		err := c.sync(ctx)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("installer sync failed, requeueing", zap.Error(err))
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// WaitSynced waits until the informer has synced.
func (c *Controller) WaitSynced(ctx context.Context) error {
	for !c.synced.Load() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the installer controller to sync: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// sync makes the latest revision match the spec and rolls every node to it.
func (c *Controller) sync(ctx context.Context) error {
	for {
		latest, err := c.ensureRevision(ctx)
		if err != nil {
			return err
		}
		if latest == 0 {
			return nil
		}
		obj, err := c.get(ctx)
		if err != nil {
			return err
		}
		node, from := c.nextNode(obj, latest)
		if node == "" {
			return c.updateStatus(ctx, func(s *operatorv1.KubeAPIServerStatus) { setConditions(s, c.o.Nodes) })
		}
		if err := c.rollNode(ctx, node, from, latest); err != nil {
			return err
		}
		// Another node still to go: hold the minimum ready time, as the
		// real installer does before touching the next apiserver.
		obj, err = c.get(ctx)
		if err != nil {
			return err
		}
		if next, _ := c.nextNode(obj, obj.Status.LatestAvailableRevision); next != "" {
			c.log.Info("waiting the minimum ready time before the next node", zap.Duration("minReadyTime", c.o.MinReadyTime))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(c.o.MinReadyTime):
			}
		}
	}
}

// nextNode picks the next node to roll: nodes not at the latest revision,
// in name order (the real installer also goes one node at a time).
func (c *Controller) nextNode(obj *operatorv1.KubeAPIServer, latest int32) (string, int32) {
	cur := map[string]int32{}
	for _, ns := range obj.Status.NodeStatuses {
		cur[ns.NodeName] = ns.CurrentRevision
	}
	for _, n := range c.o.Nodes {
		if cur[n] != latest {
			return n, cur[n]
		}
	}
	return "", 0
}

func (c *Controller) rollNode(ctx context.Context, node string, from, to int32) error {
	c.log.Info("rolling node", zap.String("node", node), zap.Int32("from", from), zap.Int32("to", to))
	err := c.updateStatus(ctx, func(s *operatorv1.KubeAPIServerStatus) {
		ns := nodeStatus(s, node)
		ns.TargetRevision = to
		setConditions(s, c.o.Nodes)
	})
	if err != nil {
		return err
	}
	c.event(ctx, "NodeTargetRevisionChanged", fmt.Sprintf("Updating node %q from revision %d to %d because node %s with revision %d is the oldest", node, from, to, node, from))
	installer := c.installerPod(ctx, node, to)
	if err := c.o.Installer.Install(ctx, node, to); err != nil {
		c.finishInstallerPod(ctx, installer, false)
		_ = c.updateStatus(ctx, func(s *operatorv1.KubeAPIServerStatus) {
			ns := nodeStatus(s, node)
			ns.LastFailedRevision = to
			ns.LastFailedTime = ptr.To(metav1.Now())
			ns.LastFailedReason = "InstallerFailed"
			ns.LastFailedCount++
			ns.LastFailedRevisionErrors = []string{err.Error()}
			setConditions(s, c.o.Nodes)
		})
		return fmt.Errorf("installing revision %d on %s: %w", to, node, err)
	}
	c.finishInstallerPod(ctx, installer, true)
	err = c.updateStatus(ctx, func(s *operatorv1.KubeAPIServerStatus) {
		ns := nodeStatus(s, node)
		ns.CurrentRevision = to
		ns.TargetRevision = 0
		ns.LastFailedRevision, ns.LastFailedTime, ns.LastFailedReason, ns.LastFailedCount, ns.LastFailedRevisionErrors = 0, nil, "", 0, nil
		setConditions(s, c.o.Nodes)
	})
	if err != nil {
		return err
	}
	c.event(ctx, "NodeCurrentRevisionChanged", fmt.Sprintf("Updated node %q from revision %d to %d because static pod is ready", node, from, to))
	return nil
}

// ensureRevision creates a new revision when the forced redeployment reason
// changed, and returns the latest revision.
func (c *Controller) ensureRevision(ctx context.Context) (int32, error) {
	obj, err := c.get(ctx)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	latest := obj.Status.LatestAvailableRevision
	if latest == 0 {
		return 0, nil // not installed yet: the lab's bootstrap writes revision 1
	}
	recorded, err := c.revisionReason(ctx, latest)
	if err != nil {
		return 0, err
	}
	reason := obj.Spec.ForceRedeploymentReason
	if reason == recorded {
		return latest, nil
	}
	next := latest + 1
	if err := c.recordRevision(ctx, next, reason); err != nil {
		return 0, err
	}
	cause := fmt.Sprintf("forced rollout: %q", reason)
	err = c.updateStatus(ctx, func(s *operatorv1.KubeAPIServerStatus) {
		if s.LatestAvailableRevision < next {
			s.LatestAvailableRevision = next
			s.LatestAvailableRevisionReason = cause
		}
		setConditions(s, c.o.Nodes)
	})
	if err != nil {
		return 0, err
	}
	c.log.Info("new revision", zap.Int32("revision", next), zap.String("reason", reason))
	c.event(ctx, "RevisionTriggered", fmt.Sprintf("new revision %d triggered by %q", next, cause))
	c.event(ctx, "RevisionCreate", fmt.Sprintf("Revision %d created because %s", next, cause))
	return next, nil
}

// RevisionConfigMap names the ConfigMap recording a revision, as the real
// operator's revision controller does.
func RevisionConfigMap(rev int32) string { return "revision-status-" + strconv.Itoa(int(rev)) }

func (c *Controller) revisionReason(ctx context.Context, rev int32) (string, error) {
	var out string
	err := retryTransient(ctx, func() error {
		cm, err := c.kube.CoreV1().ConfigMaps(c.o.Namespace).Get(ctx, RevisionConfigMap(rev), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			out = ""
			return nil
		}
		if err != nil {
			return err
		}
		out = cm.Data["forceRedeploymentReason"]
		return nil
	})
	return out, err
}

// RecordRevision writes the revision-status ConfigMap for rev; the lab's
// bootstrap uses it for revision 1.
func RecordRevision(ctx context.Context, kube kubernetes.Interface, namespace string, rev int32, reason string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: RevisionConfigMap(rev), Namespace: namespace},
		Data: map[string]string{
			"revision":                strconv.Itoa(int(rev)),
			"status":                  "InProgress",
			"forceRedeploymentReason": reason,
		},
	}
	return retryTransient(ctx, func() error {
		_, err := kube.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

func (c *Controller) recordRevision(ctx context.Context, rev int32, reason string) error {
	return RecordRevision(ctx, c.kube, c.o.Namespace, rev, reason)
}

func (c *Controller) get(ctx context.Context) (*operatorv1.KubeAPIServer, error) {
	var obj *operatorv1.KubeAPIServer
	err := retryTransient(ctx, func() error {
		var err error
		obj, err = c.op.OperatorV1().KubeAPIServers().Get(ctx, Name, metav1.GetOptions{})
		return err
	})
	return obj, err
}

// updateStatus applies mutate to a fresh copy and writes it, retrying
// conflicts and transient errors.
func (c *Controller) updateStatus(ctx context.Context, mutate func(*operatorv1.KubeAPIServerStatus)) error {
	return retryTransient(ctx, func() error {
		obj, err := c.op.OperatorV1().KubeAPIServers().Get(ctx, Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		up := obj.DeepCopy()
		mutate(&up.Status)
		up.Status.ObservedGeneration = up.Generation
		if equalStatus(obj.Status, up.Status) {
			return nil
		}
		_, err = c.op.OperatorV1().KubeAPIServers().UpdateStatus(ctx, up, metav1.UpdateOptions{})
		return err
	})
}

func equalStatus(a, b operatorv1.KubeAPIServerStatus) bool {
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b)
}

// retryTransient retries fn for up to a minute on any error but NotFound,
// Invalid and Forbidden: with apiservers restarting under it, connection
// errors, 429s, 503s and conflicts are all expected.
func retryTransient(ctx context.Context, fn func() error) error {
	backoff := 50 * time.Millisecond
	deadline := time.Now().Add(time.Minute)
	for {
		err := fn()
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
			return err
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// RetryTransient is retryTransient for the lab's bootstrap.
func RetryTransient(ctx context.Context, fn func() error) error { return retryTransient(ctx, fn) }

func nodeStatus(s *operatorv1.KubeAPIServerStatus, node string) *operatorv1.NodeStatus {
	for i := range s.NodeStatuses {
		if s.NodeStatuses[i].NodeName == node {
			return &s.NodeStatuses[i]
		}
	}
	s.NodeStatuses = append(s.NodeStatuses, operatorv1.NodeStatus{NodeName: node})
	return &s.NodeStatuses[len(s.NodeStatuses)-1]
}

// setConditions derives the static-pod operator conditions from the node
// statuses, with messages in library-go's form.
func setConditions(s *operatorv1.KubeAPIServerStatus, nodes []string) {
	byRev := map[int32]int{}
	progressing := false
	for _, n := range nodes {
		ns := nodeStatus(s, n)
		byRev[ns.CurrentRevision]++
		if ns.CurrentRevision != s.LatestAvailableRevision {
			progressing = true
		}
	}
	revs := make([]int32, 0, len(byRev))
	for r := range byRev {
		revs = append(revs, r)
	}
	sort.Slice(revs, func(i, j int) bool { return revs[i] < revs[j] })
	var parts []string
	for _, r := range revs {
		parts = append(parts, fmt.Sprintf("%s at revision %d", plural(byRev[r]), r))
	}
	atRevs := strings.Join(parts, "; ")
	if progressing {
		setCondition(s, "NodeInstallerProgressing", operatorv1.ConditionTrue, "NodeInstaller", atRevs)
	} else {
		setCondition(s, "NodeInstallerProgressing", operatorv1.ConditionFalse, "AllNodesAtLatestRevision",
			fmt.Sprintf("%s at revision %d", plural(len(nodes)), s.LatestAvailableRevision))
	}
	setCondition(s, "NodeInstallerDegraded", operatorv1.ConditionFalse, "AsExpected", "")
	setCondition(s, "InstallerControllerDegraded", operatorv1.ConditionFalse, "AsExpected", "")
	setCondition(s, "StaticPodsAvailable", operatorv1.ConditionTrue, "AsExpected",
		fmt.Sprintf("%d nodes are active; %s", len(nodes), atRevs))
}

func plural(n int) string {
	if n == 1 {
		return "1 node is"
	}
	return fmt.Sprintf("%d nodes are", n)
}

func setCondition(s *operatorv1.KubeAPIServerStatus, typ string, st operatorv1.ConditionStatus, reason, msg string) {
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if c.Type != typ {
			continue
		}
		if c.Status != st {
			c.LastTransitionTime = metav1.Now()
		}
		c.Status, c.Reason, c.Message = st, reason, msg
		return
	}
	s.Conditions = append(s.Conditions, operatorv1.OperatorCondition{Type: typ, Status: st, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()})
}

// InitialStatus sets the status of a freshly installed cluster with every
// node at revision rev.
func InitialStatus(s *operatorv1.KubeAPIServerStatus, nodes []string, rev int32) {
	s.LatestAvailableRevision = rev
	s.LatestAvailableRevisionReason = ""
	for _, n := range nodes {
		ns := nodeStatus(s, n)
		ns.CurrentRevision = rev
		ns.TargetRevision = 0
	}
	setConditions(s, nodes)
}

// installerPod creates installer-<rev>-<node> as the real operator does for
// each node and revision; it is bookkeeping for watchers, so failures are
// logged, not fatal.
func (c *Controller) installerPod(ctx context.Context, node string, rev int32) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("installer-%d-%s", rev, node),
			Namespace: c.o.Namespace,
			Labels:    map[string]string{"app": "installer"},
		},
		Spec: corev1.PodSpec{
			NodeName:      node,
			RestartPolicy: corev1.RestartPolicyNever,
			Tolerations:   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "installer", Image: "lab.local/cluster-kube-apiserver-operator:latest",
				Command: []string{"cluster-kube-apiserver-operator", "installer", "--revision=" + strconv.Itoa(int(rev))},
			}},
		},
	}
	var created *corev1.Pod
	err := retryTransient(ctx, func() error {
		var err error
		created, err = c.kube.CoreV1().Pods(c.o.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			created, err = c.kube.CoreV1().Pods(c.o.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		}
		return err
	})
	if err != nil {
		c.log.Warn("creating installer pod", zap.Error(err))
		return nil
	}
	c.setPodPhase(ctx, created, corev1.PodRunning)
	return created
}

func (c *Controller) finishInstallerPod(ctx context.Context, p *corev1.Pod, ok bool) {
	if p == nil {
		return
	}
	phase := corev1.PodSucceeded
	if !ok {
		phase = corev1.PodFailed
	}
	c.setPodPhase(ctx, p, phase)
}

func (c *Controller) setPodPhase(ctx context.Context, p *corev1.Pod, phase corev1.PodPhase) {
	err := retryTransient(ctx, func() error {
		cur, err := c.kube.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		up := cur.DeepCopy()
		up.Status.Phase = phase
		now := metav1.Now()
		if up.Status.StartTime == nil {
			up.Status.StartTime = &now
		}
		state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *up.Status.StartTime}}
		if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
			code, reason := int32(0), "Completed"
			if phase == corev1.PodFailed {
				code, reason = 1, "Error"
			}
			state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: *up.Status.StartTime, FinishedAt: now}}
		}
		up.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "installer", Image: p.Spec.Containers[0].Image, State: state, Ready: phase == corev1.PodRunning}}
		_, err = c.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, up, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		c.log.Warn("updating installer pod", zap.Error(err))
	}
}

// event records an operator Event in the operator's namespace, as
// library-go's recorder does (involved object: the operator Deployment).
func (c *Controller) event(ctx context.Context, reason, msg string) {
	now := time.Now()
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("kube-apiserver-operator.%x", now.UnixNano()), Namespace: c.o.OperatorNamespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Namespace: c.o.OperatorNamespace, Name: "kube-apiserver-operator", APIVersion: "apps/v1"},
		Reason:         reason, Message: msg, Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "kube-apiserver-operator-installer-controller"},
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Count: 1,
		EventTime: metav1.NewMicroTime(now), Action: reason,
		ReportingController: "kube-apiserver-operator", ReportingInstance: "kube-apiserver-operator-lab",
	}
	err := retryTransient(ctx, func() error {
		_, err := c.kube.CoreV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		c.log.Warn("recording event", zap.String("reason", reason), zap.Error(err))
	}
}
