package trigger

import (
	"github.com/repro-tools/repro/results"

	"fmt"
	"strconv"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
)

// observer turns successive states of the operator, the apiserver pods and
// the namespace's Events into timeline events. It holds no clients, so its
// decisions are tested on plain objects.
type observer struct {
	since     time.Time
	iteration int
	seen      map[string]int32 // Event UID -> count already reported
	// clockOffset is the cluster's clock minus ours; an Event's own
	// (server-stamped) time is moved onto our clock by it.
	clockOffset time.Duration
}

func newObserver(since time.Time, iteration int) *observer {
	return &observer{since: since, iteration: iteration, seen: map[string]int32{}}
}

func (o *observer) event(now time.Time, k results.Kind) results.Event {
	return results.Event{Time: now, Observed: now, Kind: k, Iteration: o.iteration}
}

// operator compares two states of kubeapiservers/cluster; old is nil for the first.
func (o *observer) operator(now time.Time, old, cur *operatorv1.KubeAPIServer) []results.Event {
	var out []results.Event
	var prev Status
	prevConds := map[string]operatorv1.OperatorCondition{}
	if old != nil {
		prev = StatusOf(old)
		for _, c := range old.Status.Conditions {
			prevConds[c.Type] = c
		}
	}
	st := StatusOf(cur)
	if old != nil && st.LatestAvailableRevision != prev.LatestAvailableRevision {
		e := o.event(now, results.KindRevision)
		e.Revision = st.LatestAvailableRevision
		e.Message = fmt.Sprintf("revision %d available (was %d)", st.LatestAvailableRevision, prev.LatestAvailableRevision)
		if cur.Status.LatestAvailableRevisionReason != "" {
			e.Message += ": " + cur.Status.LatestAvailableRevisionReason
		}
		out = append(out, e)
	}
	before := map[string]NodeState{}
	for _, n := range prev.Nodes {
		before[n.Name] = n
	}
	for _, n := range st.Nodes {
		b, known := before[n.Name]
		if old == nil {
			continue
		}
		if n.TargetRevision != 0 && n.TargetRevision != b.TargetRevision {
			e := o.event(now, results.KindNodeTarget)
			e.Node, e.Revision = n.Name, n.TargetRevision
			e.Message = fmt.Sprintf("%s: target revision %d (current %d)", n.Name, n.TargetRevision, n.CurrentRevision)
			out = append(out, e)
		}
		if known && n.CurrentRevision != b.CurrentRevision {
			e := o.event(now, results.KindNodeCurrent)
			e.Node, e.Revision = n.Name, n.CurrentRevision
			e.Message = fmt.Sprintf("%s: now on revision %d (was %d)", n.Name, n.CurrentRevision, b.CurrentRevision)
			out = append(out, e)
		}
		if n.LastFailedRevision != 0 && n.LastFailedRevision != b.LastFailedRevision {
			e := o.event(now, results.KindNodeFailed)
			e.Node, e.Revision = n.Name, n.LastFailedRevision
			e.Message = fmt.Sprintf("%s: revision %d failed", n.Name, n.LastFailedRevision)
			out = append(out, e)
		}
	}
	if old != nil {
		for _, c := range cur.Status.Conditions {
			if p, ok := prevConds[c.Type]; ok && p.Status == c.Status {
				continue
			}
			e := o.event(now, results.KindCondition)
			e.Reason = c.Type
			e.Message = fmt.Sprintf("%s=%s", c.Type, c.Status)
			if c.Message != "" {
				e.Message += ": " + c.Message
			}
			out = append(out, e)
		}
	}
	return out
}

// pod compares two states of one kube-apiserver pod; old is nil when the pod
// appeared, cur is nil when it was deleted.
func (o *observer) pod(now time.Time, old, cur *corev1.Pod) []results.Event {
	p := cur
	if p == nil {
		p = old
	}
	mk := func(k results.Kind, msg string) results.Event {
		e := o.event(now, k)
		e.Node, e.Revision = podNode(p), podRevision(p)
		e.Message = fmt.Sprintf("%s: %s", p.Name, msg)
		return e
	}
	switch {
	case cur == nil:
		return []results.Event{mk(results.KindPodDeleted, "deleted")}
	case old == nil:
		out := []results.Event{mk(results.KindPodCreated, fmt.Sprintf("created on revision %d", podRevision(cur)))}
		if podReady(cur) {
			out = append(out, mk(results.KindPodReady, fmt.Sprintf("ready on revision %d", podRevision(cur))))
		}
		return out
	}
	wasReady, isReady := podReady(old), podReady(cur)
	switch {
	case wasReady && !isReady:
		return []results.Event{mk(results.KindPodNotReady, "not ready")}
	case !wasReady && isReady, isReady && podRevision(old) != podRevision(cur):
		return []results.Event{mk(results.KindPodReady, fmt.Sprintf("ready on revision %d", podRevision(cur)))}
	}
	return nil
}

// clusterEvent turns an Event recorded in the namespace into a timeline event,
// once per occurrence; events from before the rollout are history and dropped.
func (o *observer) clusterEvent(now time.Time, ev *corev1.Event, nodeOf func(pod string) string) []results.Event {
	at, precise := eventTime(ev)
	if at.Before(o.since.Add(-time.Second)) {
		return nil
	}
	count := ev.Count
	if ev.Series != nil {
		count = ev.Series.Count
	}
	if c, ok := o.seen[string(ev.UID)]; ok && c >= count {
		return nil
	}
	o.seen[string(ev.UID)] = count
	e := o.event(now, results.KindClusterEvent)
	if precise {
		e.Time = at.Add(-o.clockOffset)
	}
	e.Reason = ev.Reason
	e.Message = ev.Message
	e.Node = eventNode(ev, nodeOf)
	return []results.Event{e}
}

// eventTime is an Event's own time; precise is true when it carries
// sub-second precision (eventTime), false for the second-granular timestamps.
func eventTime(ev *corev1.Event) (t time.Time, precise bool) {
	switch {
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time, true
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time, true
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time, false
	default:
		return ev.FirstTimestamp.Time, false
	}
}

const podPrefix = "kube-apiserver-"

// apiserverLabel marks the kube-apiserver static pods among the namespace's
// pods: guard (kube-apiserver-guard-<node>, app=guard), installer
// (installer-<rev>[-retry-<n>]-<node>, app=installer) and pruner
// (revision-pruner-<rev>-<node>, app=pruner) pods live next to them
// (library-go pkg/operator/staticpod/controller/{guard,installer,prune}).
const apiserverLabel = "apiserver"

// isAPIServerPod reports whether p is a kube-apiserver static pod rather than
// a guard, installer or pruner pod of the same namespace.
func isAPIServerPod(p *corev1.Pod) bool { return p.Labels[apiserverLabel] == "true" }

// eventNode names the node an Event is about: the node of the pod it
// involves (nodeOf, from the namespace's pods), else the host that reported
// it. A pod's name is never trimmed into a node name: the namespace holds
// kube-apiserver-guard-<node> and installer pods too.
func eventNode(ev *corev1.Event, nodeOf func(pod string) string) string {
	if ev.InvolvedObject.Kind == "Pod" && nodeOf != nil {
		if n := nodeOf(ev.InvolvedObject.Name); n != "" {
			return n
		}
	}
	return ev.Source.Host
}

// podNode is the node a pod runs on; "" for a pod not bound to one.
func podNode(p *corev1.Pod) string { return p.Spec.NodeName }

func podRevision(p *corev1.Pod) int32 {
	n, _ := strconv.ParseInt(p.Labels["revision"], 10, 32)
	return int32(n)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
