package lab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// desiredPod is what the kubelet would report for the node's static pod.
type desiredPod struct {
	exists   bool
	revision int32
	hash     string
	started  time.Time
	ready    bool
	readyAt  time.Time
}

func (n *Node) desired() desiredPod {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || n.cur == nil {
		// Between the old process's exit and the new one's start the
		// static pod has no mirror: the kubelet removed it.
		return desiredPod{}
	}
	d := desiredPod{exists: true, revision: n.cur.Revision, started: n.cur.Started}
	d.hash = podHash(n.name, n.cur.Revision, n.cur.Started)
	d.ready = n.ready && n.warm
	if d.ready {
		d.readyAt = n.cur.Warmed
	}
	return d
}

// podHash stands for kubernetes.io/config.hash: the static pod manifest's
// hash, new for every revision (and every restart of one, which the lab only
// does on a new revision).
func podHash(node string, rev int32, started time.Time) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%d", node, rev, started.UnixNano())))
	return hex.EncodeToString(h[:])[:32]
}

// startLoops starts the node's readiness probe and its kubelet, which
// keeps the mirror pod kube-apiserver-<node> in line with the node's
// process: created when a process starts, status updated as readiness
// changes, deleted once the process has exited (a static pod's mirror is
// replaced, not updated, when its revision changes; OpenShift clients see
// the pod vanish and reappear with a new uid and revision).
func (n *Node) startLoops() {
	var cur *corev1.Pod // last pod written or read; re-read after a failure
	n.supervised.startLoops("mirror pod", func(ctx context.Context) error {
		var err error
		cur, err = n.syncPod(ctx, cur)
		return err
	})
}

func (n *Node) podName() string { return "kube-apiserver-" + n.name }

func (n *Node) syncPod(ctx context.Context, cur *corev1.Pod) (*corev1.Pod, error) {
	pods := n.lab.client.CoreV1().Pods(Namespace)
	d := n.desired()
	if cur == nil {
		p, err := pods.Get(ctx, n.podName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		default:
			cur = p
		}
	}
	if cur != nil && (!d.exists || cur.Annotations["kubernetes.io/config.hash"] != d.hash) {
		uid := cur.UID
		err := pods.Delete(ctx, cur.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return nil, err
		}
		n.log.Debug("mirror pod deleted", zap.String("pod", cur.Name), zap.String("revision", cur.Labels["revision"]))
		cur = nil
	}
	if !d.exists {
		return nil, nil
	}
	if cur == nil {
		p, err := pods.Create(ctx, n.mirrorPod(d), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil, err // re-read and reconcile next round
		}
		if err != nil {
			return nil, err
		}
		cur = p
	}
	want := n.podStatus(d, cur)
	if podStatusEqual(cur.Status, want) {
		return cur, nil
	}
	up := cur.DeepCopy()
	up.Status = want
	p, err := pods.UpdateStatus(ctx, up, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (n *Node) mirrorPod(d desiredPod) *corev1.Pod {
	rev := strconv.Itoa(int(d.revision))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      n.podName(),
			Namespace: Namespace,
			Labels:    map[string]string{"app": "openshift-kube-apiserver", "apiserver": "true", "revision": rev},
			Annotations: map[string]string{
				"kubernetes.io/config.mirror": d.hash,
				"kubernetes.io/config.hash":   d.hash,
				"kubernetes.io/config.source": "file",
				"kubernetes.io/config.seen":   d.started.UTC().Format(time.RFC3339Nano),
				"repro.lab/binary":            n.lab.kasBin,
			},
		},
		Spec: n.mirrorPodSpec(),
	}
}

// mirrorPodSpec is the static pod's: on the host network, its port a host
// port, unready after one failed probe.
func (n *Node) mirrorPodSpec() corev1.PodSpec {
	spec := n.podSpec(n.name, "kube-apiserver", "lab.local/kube-apiserver:v1.34.4", []string{"kube-apiserver"})
	spec.HostNetwork = true
	c := &spec.Containers[0]
	c.Ports[0].HostPort = int32(n.port)
	c.ReadinessProbe.FailureThreshold = 1
	return spec
}

func (n *Node) podStatus(d desiredPod, cur *corev1.Pod) corev1.PodStatus {
	return runningPodStatus("127.0.0.1", d.started, podConditions(cur, d.started, d.ready, d.readyAt, time.Now(), "kube-apiserver"), corev1.ContainerStatus{
		Name:    "kube-apiserver",
		Image:   "lab.local/kube-apiserver:v1.34.4",
		ImageID: "lab.local/kube-apiserver@" + d.hash,
		Ready:   d.ready,
		Started: ptr.To(true),
		State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(d.started)}},
	})
}

func podStatusEqual(a, b corev1.PodStatus) bool {
	if a.Phase != b.Phase || len(a.Conditions) != len(b.Conditions) || len(a.ContainerStatuses) != len(b.ContainerStatuses) {
		return false
	}
	idx := map[corev1.PodConditionType]corev1.ConditionStatus{}
	for _, c := range a.Conditions {
		idx[c.Type] = c.Status
	}
	for _, c := range b.Conditions {
		if idx[c.Type] != c.Status {
			return false
		}
	}
	for i := range a.ContainerStatuses {
		if a.ContainerStatuses[i].Ready != b.ContainerStatuses[i].Ready {
			return false
		}
	}
	return true
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitPodsReady waits until every node's mirror pod is Ready, so Start
// returns a lab whose pods already look like a settled cluster's.
func (l *Lab) waitPodsReady(ctx context.Context) error {
	for {
		all := true
		for _, n := range l.nodes {
			p, err := l.client.CoreV1().Pods(Namespace).Get(ctx, n.podName(), metav1.GetOptions{})
			if err != nil || !podReady(p) || p.Labels["revision"] != strconv.Itoa(int(n.Revision())) {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the kube-apiserver pods to be Ready: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
