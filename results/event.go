package trigger

import "time"

// Kind names a kind of timeline event.
type Kind string

// The kinds of timeline event. Operator kinds come from kubeapiservers/cluster
// status, pod kinds from the kube-apiserver pods, KindClusterEvent from the
// Events recorded in openshift-kube-apiserver (Reason holds the event's reason,
// e.g. ShutdownInitiated), and the rest from repro itself.
const (
	KindTrigger      Kind = "trigger"
	KindRevision     Kind = "revision-created"
	KindNodeTarget   Kind = "node-target-set"
	KindNodeCurrent  Kind = "node-revision-current"
	KindNodeFailed   Kind = "node-revision-failed"
	KindCondition    Kind = "operator-condition"
	KindPodCreated   Kind = "pod-created"
	KindPodNotReady  Kind = "pod-not-ready"
	KindPodReady     Kind = "pod-ready"
	KindPodDeleted   Kind = "pod-deleted"
	KindClusterEvent Kind = "cluster-event"
	KindConverged    Kind = "rollout-complete"
	KindPhase        Kind = "phase"
)

// Event is one observation on a run's timeline. Time is when it happened as
// precisely as known: the cluster's own timestamp when that has sub-second
// precision (an Event's eventTime), else the moment repro observed it.
// Observed is always repro's own observation time.
type Event struct {
	Time      time.Time `json:"time"`
	Observed  time.Time `json:"observed"`
	Kind      Kind      `json:"kind"`
	Node      string    `json:"node,omitempty"`
	Revision  int32     `json:"revision,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Message   string    `json:"message,omitempty"`
	Iteration int       `json:"iteration,omitempty"`
}

// NodePhase is where one node is in its revision rollout.
type NodePhase string

// The phases a node goes through in a rollout, in order.
const (
	NodePending     NodePhase = "pending"
	NodeTerminating NodePhase = "terminating"
	NodeStarting    NodePhase = "starting"
	NodeReady       NodePhase = "ready"
)

// terminationStart are the event reasons that mark an apiserver beginning its
// graceful termination (TerminationStart is the name older releases used).
var terminationStart = map[string]bool{"ShutdownInitiated": true, "TerminationStart": true}

// terminationEnd marks an apiserver process that has finished terminating.
var terminationEnd = map[string]bool{"TerminationGracefulTerminationFinished": true}

// NextPhase returns the phase a node is in after e, given the phase it was in
// and the revision being rolled out. Events that say nothing about the node's
// phase leave it unchanged.
func NextPhase(cur NodePhase, e Event, revision int32) NodePhase {
	switch e.Kind {
	case KindNodeTarget:
		if cur == NodePending {
			return NodeTerminating
		}
	case KindPodNotReady:
		if cur == NodePending {
			return NodeTerminating
		}
	case KindClusterEvent:
		if terminationStart[e.Reason] && cur != NodeStarting {
			return NodeTerminating
		}
		if terminationEnd[e.Reason] {
			return NodeStarting
		}
	case KindPodDeleted:
		return NodeStarting
	case KindPodCreated:
		if e.Revision == revision && cur != NodeReady {
			return NodeStarting
		}
	case KindPodReady, KindNodeCurrent:
		if e.Revision == revision {
			return NodeReady
		}
	}
	return cur
}
