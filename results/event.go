package results

import "time"

// Kind names a kind of timeline event in events.jsonl.
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

// Phase names carried in Reason by KindPhase events: the scenario's own
// stages, which the report shades and splits figures by.
const (
	PhaseBaseline = "baseline"
	PhaseRollout  = "rollout"
	PhaseCoolDown = "cool-down"
	PhaseEnd      = "end"
)

// Event is one line of events.jsonl: an observation on a run's timeline,
// written by the rollout follower and by the scenario runner (KindPhase),
// read by the report to place disruption in the rollout. Time is when it happened as
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
