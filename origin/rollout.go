package origin

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/repro-tools/repro/results"
)

// KubeAPIServerNamespace is where the kube-apiserver pods and their
// termination events live.
const KubeAPIServerNamespace = "openshift-kube-apiserver"

// terminationEvents are the Event reasons a kube-apiserver records while it
// shuts down (openshift/kubernetes staging/src/k8s.io/apiserver/pkg/server
// genericapiserver.go; TerminationStart is the older name of
// ShutdownInitiated), and the two warnings of traffic arriving too late or
// too early.
var terminationEvents = map[string]bool{
	"ShutdownInitiated": true, "TerminationStart": true,
	"TerminationPreShutdownHooksFinished": true, "TerminationMinimalShutdownDurationFinished": true,
	"TerminationStoppedServing": true, "TerminationGracefulTerminationFinished": true,
	"LateConnections": true, "NonReadyRequests": true,
}

// warningEvents are the termination events of Event type Warning.
var warningEvents = map[string]bool{"LateConnections": true, "NonReadyRequests": true}

// IsShutdownStart reports whether an event reason starts a graceful
// shutdown window; IsShutdownEnd whether it ends one (origin's
// apiservergracefulrestart analyzer).
func IsShutdownStart(reason string) bool {
	return reason == "ShutdownInitiated" || reason == "TerminationStart"
}

// IsShutdownEnd reports whether an event reason ends a graceful shutdown.
func IsShutdownEnd(reason string) bool { return reason == "TerminationGracefulTerminationFinished" }

// IsTerminationEvent reports whether an event reason is one of the
// kube-apiserver's termination events.
func IsTerminationEvent(reason string) bool { return terminationEvents[reason] }

// PodName is the kube-apiserver static pod on a node.
func PodName(node string) string { return "kube-apiserver-" + node }

// ServerLocator is origin's LocateServer locator of an apiserver's
// shutdown window: server, node, namespace and pod keys.
func ServerLocator(node string) Locator {
	return Locator{Keys: map[string]string{
		KeyServer: "kube-apiserver", KeyNode: node, KeyNamespace: KubeAPIServerNamespace, KeyPod: PodName(node),
	}}
}

// KubeEventLocator is origin's KubeEvent locator for an event about a pod:
// type Kind, the pod and namespace, and hmsg, the first ten hex digits of
// the message's SHA-256 so repeats of one event share a row.
func KubeEventLocator(namespace, pod, message string) Locator {
	sum := sha256.Sum256([]byte(message))
	return Locator{Type: LocatorTypeKind, Keys: map[string]string{
		KeyHmsg: fmt.Sprintf("%x", sum)[:10], KeyNamespace: namespace, KeyPod: pod,
	}}
}

// RolloutIntervals renders a rollout timeline in origin's vocabulary:
//   - a KubeEvent interval per kube-apiserver termination event (1 s long,
//     as origin records an event's instant);
//   - an APIServerGracefulShutdown interval per apiserver and shutdown,
//     from ShutdownInitiated (or TerminationStart) to
//     TerminationGracefulTerminationFinished, Info; an end without a start
//     begins at from, a start without an end is an Error
//     IncompleteAPIServerShutdown closed at to (origin leaves it open);
//   - OperatorState intervals for the kube-apiserver operator's bad
//     conditions, Progressing=True, Degraded=True and Available=False,
//     each the union of the operator's conditions of that suffix as
//     library-go's status union forms the ClusterOperator's (openshift/
//     library-go pkg/operator/status/condition.go). Only changes seen
//     live are in events.jsonl, so a stretch starts at its first change.
//
// from and to bound the run.
func RolloutIntervals(evs []results.Event, from, to time.Time) []Interval {
	evs = append([]results.Event(nil), evs...)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time.Before(evs[j].Time) })
	var out []Interval
	started := map[string]time.Time{}
	for _, e := range evs {
		if e.Kind != results.KindClusterEvent || !terminationEvents[e.Reason] || e.Node == "" {
			continue
		}
		level := LevelInfo
		if warningEvents[e.Reason] {
			level = LevelWarning
		}
		out = append(out, Interval{
			Level: level, Source: SourceKubeEvent, Display: true,
			Locator: KubeEventLocator(KubeAPIServerNamespace, PodName(e.Node), e.Message),
			Message: NewMessage(e.Reason, e.Message, map[string]string{"node": e.Node}),
			From:    e.Time, To: e.Time.Add(time.Second),
		})
		switch {
		case IsShutdownStart(e.Reason):
			if _, ok := started[e.Node]; !ok {
				started[e.Node] = e.Time
			}
		case IsShutdownEnd(e.Reason):
			start, ok := started[e.Node]
			if !ok {
				start = from
			}
			delete(started, e.Node)
			out = append(out, shutdownInterval(e.Node, LevelInfo, ReasonGracefulAPIServerShutdown, start, e.Time))
		}
	}
	for node, start := range started {
		out = append(out, shutdownInterval(node, LevelError, ReasonIncompleteAPIServerShutdown, start, to))
	}
	out = append(out, operatorState(evs, to)...)
	Sort(out)
	return out
}

func shutdownInterval(node, level, reason string, from, to time.Time) Interval {
	return Interval{
		Level: level, Source: SourceAPIServerGracefulShutdown, Display: true,
		Locator: ServerLocator(node),
		Message: NewMessage(reason, "", map[string]string{AnnotationConstructed: "graceful-shutdown-analyzer"}),
		From:    from, To: to,
	}
}

// badStatus is the status of each ClusterOperator condition that origin
// charts as a stretch.
var badStatus = map[string]string{"Progressing": "True", "Degraded": "True", "Available": "False"}

// operatorState folds the operator's condition changes into stretches of
// the ClusterOperator's bad conditions.
func operatorState(evs []results.Event, end time.Time) []Interval {
	type state struct {
		bad   map[string]bool // condition type -> currently bad
		since time.Time
		msg   string
	}
	states := map[string]*state{}
	var out []Interval
	for _, e := range evs {
		if e.Kind != results.KindCondition || e.Reason == "" {
			continue
		}
		status := ""
		if _, rest, ok := strings.Cut(e.Message, "="); ok {
			status, _, _ = strings.Cut(rest, ":")
		}
		for cond, bad := range badStatus {
			if !strings.HasSuffix(e.Reason, cond) {
				continue
			}
			st := states[cond]
			if st == nil {
				st = &state{bad: map[string]bool{}}
				states[cond] = st
			}
			wasBad := len(st.bad) > 0
			if status == bad {
				st.bad[e.Reason] = true
			} else {
				delete(st.bad, e.Reason)
			}
			isBad := len(st.bad) > 0
			switch {
			case !wasBad && isBad:
				st.since, st.msg = e.Time, e.Message
			case wasBad && !isBad:
				out = append(out, operatorInterval(cond, bad, st.msg, st.since, e.Time))
			}
		}
	}
	for cond, st := range states {
		if len(st.bad) > 0 {
			out = append(out, operatorInterval(cond, badStatus[cond], st.msg, st.since, end))
		}
	}
	return out
}

func operatorInterval(cond, status, msg string, from, to time.Time) Interval {
	level := LevelWarning
	if cond != "Progressing" {
		level = LevelError
	}
	return Interval{
		Level: level, Source: SourceOperatorState, Display: true,
		Locator: Locator{Type: LocatorTypeClusterOperator, Keys: map[string]string{KeyClusterOperator: "kube-apiserver"}},
		Message: NewMessage(cond, msg, map[string]string{AnnotationCondition: cond, AnnotationStatus: status}),
		From:    from, To: to,
	}
}

// DefaultChartSources are the groups sippy's intervals chart shows by
// default (openshift/sippy sippy-ng/src/prow_job_runs/IntervalsChart.jsx,
// ProwJobRun.defaultProps.selectedSources).
var DefaultChartSources = []string{
	"OperatorAvailable", "OperatorProgressing", "OperatorDegraded", "KubeletLog", "EtcdLog",
	"EtcdLeadership", "Alert", "Disruption", "E2ETest", "APIServerGracefulShutdown", "KubeEvent", "NodeState",
}

// ChartGroup is the group sippy's intervals chart draws an interval in, and
// whether it draws it at all: intervals without display are dropped, the
// group is the source, OperatorState split by its condition annotation
// into OperatorAvailable, OperatorProgressing and OperatorDegraded
// (IntervalsChart.jsx, mutateIntervals and filterIntervals). Within a
// group, rows are the locator rendered with origin's key order.
func ChartGroup(iv Interval) (group string, shown bool) {
	if !iv.Display {
		return "", false
	}
	group = iv.Source
	if group == SourceOperatorState {
		switch iv.Message.Annotations[AnnotationCondition] {
		case "Available", "Progressing", "Degraded":
			group = "Operator" + iv.Message.Annotations[AnnotationCondition]
		}
	}
	for _, s := range DefaultChartSources {
		if s == group {
			return group, true
		}
	}
	return group, false
}
