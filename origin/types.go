package origin

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Interval levels, as origin serializes monitorapi.IntervalLevel.
const (
	LevelInfo    = "Info"
	LevelWarning = "Warning"
	LevelError   = "Error"
)

// Interval sources origin uses (monitorapi.IntervalSource) that repro
// writes or reads.
const (
	SourceDisruption                = "Disruption"
	SourceAPIServerGracefulShutdown = "APIServerGracefulShutdown"
	SourceKubeEvent                 = "KubeEvent"
	SourceOperatorState             = "OperatorState"
	SourceNodeState                 = "NodeState"
)

// Locator types (monitorapi.LocatorType).
const (
	LocatorTypeDisruption      = "Disruption"
	LocatorTypeNode            = "Node"
	LocatorTypePod             = "Pod"
	LocatorTypeKind            = "Kind"
	LocatorTypeClusterOperator = "ClusterOperator"
	LocatorTypeE2ETest         = "E2ETest"
)

// Locator keys (monitorapi.LocatorKey).
const (
	KeyBackendDisruptionName = "backend-disruption-name"
	KeyDisruption            = "disruption"
	KeyConnection            = "connection"
	KeyLoadBalancer          = "load-balancer"
	KeyProtocol              = "protocol"
	KeyTarget                = "target"
	KeyServer                = "server"
	KeyNode                  = "node"
	KeyNamespace             = "namespace"
	KeyPod                   = "pod"
	KeyHmsg                  = "hmsg"
	KeyClusterOperator       = "clusteroperator"
	KeyE2ETest               = "e2e-test"
)

// Message reasons (monitorapi.IntervalReason).
const (
	ReasonDisruptionBegan              = "DisruptionBegan"
	ReasonDisruptionEnded              = "DisruptionEnded"
	ReasonDisruptionSamplerOutageBegan = "DisruptionSamplerOutageBegan"
	ReasonGracefulAPIServerShutdown    = "GracefulAPIServerShutdown"
	ReasonIncompleteAPIServerShutdown  = "IncompleteAPIServerShutdown"
	ReasonNodeUpdate                   = "NodeUpdate"
)

// Message annotation keys (monitorapi.AnnotationKey).
const (
	AnnotationReason         = "reason"
	AnnotationCause          = "cause"
	AnnotationRequestAuditID = "request-audit-id"
	AnnotationConstructed    = "constructed"
	AnnotationCondition      = "condition"
	AnnotationStatus         = "status"
	AnnotationPhase          = "phase"
	AnnotationRoles          = "roles"
)

// Locator is monitorapi.Locator: a type and its keys.
type Locator struct {
	Type string            `json:"type"`
	Keys map[string]string `json:"keys"`
}

// Message is monitorapi.Message. Reason and Cause repeat the annotations of
// the same names, as origin's MessageBuilder sets them.
type Message struct {
	Reason       string            `json:"reason"`
	Cause        string            `json:"cause"`
	HumanMessage string            `json:"humanMessage"`
	Annotations  map[string]string `json:"annotations"`
}

// Interval is monitorapi.Interval, flattened. A zero To is an interval
// still open.
type Interval struct {
	Level   string
	Source  string
	Display bool
	Locator Locator
	Message Message
	From    time.Time
	To      time.Time
}

// orderedKeys are the locator keys OldLocator puts first, in this order
// (monitorapi sortKeys), so rows of one node or pod stay together.
var orderedKeys = map[string]int{"namespace": 0, "node": 1, "pod": 2, "uid": 3, "server": 4, "container": 5, "shutdown": 6, "row": 7}

// SortKeys orders locator keys as origin's sortKeys does: the ranked keys
// first in rank order, the rest alphabetically.
func SortKeys(keys []string) []string {
	sort.Slice(keys, func(i, j int) bool {
		ri, oki := orderedKeys[keys[i]]
		rj, okj := orderedKeys[keys[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki:
			return true
		case okj:
			return false
		}
		return keys[i] < keys[j]
	})
	return keys
}

// OldLocator renders the locator as origin's flat "key/value ..." string.
func (l Locator) OldLocator() string {
	keys := make([]string, 0, len(l.Keys))
	for k := range l.Keys {
		keys = append(keys, k)
	}
	parts := make([]string, 0, len(keys))
	for _, k := range SortKeys(keys) {
		if k == KeyE2ETest {
			parts = append(parts, fmt.Sprintf("%s/%q", k, l.Keys[k]))
			continue
		}
		parts = append(parts, k+"/"+l.Keys[k])
	}
	return strings.Join(parts, " ")
}

// OldMessage renders the message as origin's flat string: annotations
// sorted by key as "key/value", then the human message.
func (m Message) OldMessage() string {
	keys := make([]string, 0, len(m.Annotations))
	for k := range m.Annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "/" + m.Annotations[k]
	}
	s := strings.Join(parts, " ")
	if m.HumanMessage == "" {
		return s
	}
	return strings.TrimSpace(s + " " + m.HumanMessage)
}

// NewMessage builds a message as origin's MessageBuilder does: the reason
// is an annotation and the field, extra annotations are added as given.
func NewMessage(reason, human string, annotations map[string]string) Message {
	m := Message{Reason: reason, HumanMessage: human, Annotations: map[string]string{}}
	if reason != "" {
		m.Annotations[AnnotationReason] = reason
	}
	for k, v := range annotations {
		m.Annotations[k] = v
		if k == AnnotationCause {
			m.Cause = v
		}
	}
	return m
}

// String renders the interval as origin's Interval.String does, the form
// of backend-disruption.json's DisruptionMessages.
func (iv Interval) String() string {
	msg := strings.ReplaceAll(iv.Message.OldMessage(), "\n", `\n`)
	level := iv.Level
	if level == "" {
		level = LevelInfo
	}
	head := fmt.Sprintf("%s.%03d", iv.From.Format("Jan 02 15:04:05"), iv.From.Nanosecond()/int(time.Millisecond))
	if iv.From.Equal(iv.To) {
		return fmt.Sprintf("%s %s %s %s", head, level[:1], iv.Locator.OldLocator(), msg)
	}
	d := iv.To.Sub(iv.From)
	dur := strconv.Itoa(int(d/time.Second)) + "s"
	if d < time.Second {
		dur = strconv.Itoa(int(d/time.Millisecond)) + "ms"
	}
	return fmt.Sprintf("%s - %-5s %s %s %s", head, dur, level[:1], iv.Locator.OldLocator(), msg)
}

// Duration is the interval's length; an open or inverted interval is 0.
func (iv Interval) Duration() time.Duration {
	if iv.To.IsZero() || !iv.To.After(iv.From) {
		return 0
	}
	return iv.To.Sub(iv.From)
}

// SumDuration adds the intervals' durations as origin's
// Intervals.Duration(min) does: one of zero or less counts 0, one shorter
// than min counts min.
func SumDuration(ivs []Interval, min time.Duration) time.Duration {
	var total time.Duration
	for _, iv := range ivs {
		d := iv.To.Sub(iv.From)
		switch {
		case d <= 0:
		case d < min:
			total += min
		default:
			total += d
		}
	}
	return total
}

// Sort orders intervals as origin's Intervals.Less: by start, end, reason,
// human message, then locator.
func Sort(ivs []Interval) {
	sort.SliceStable(ivs, func(i, j int) bool {
		a, b := &ivs[i], &ivs[j]
		if !a.From.Equal(b.From) {
			return a.From.Before(b.From)
		}
		if !a.To.Equal(b.To) {
			return a.To.Before(b.To)
		}
		if a.Message.Reason != b.Message.Reason {
			return a.Message.Reason < b.Message.Reason
		}
		if a.Message.HumanMessage != b.Message.HumanMessage {
			return a.Message.HumanMessage < b.Message.HumanMessage
		}
		return a.Locator.OldLocator() < b.Locator.OldLocator()
	})
}

// BackendDisruptionName returns the locator's backend-disruption-name, or
// for string-era locators that only carry "disruption/NAME
// connection/new", the name origin derived from them
// ("NAME-new-connections").
func (l Locator) BackendDisruptionName() string {
	if n := l.Keys[KeyBackendDisruptionName]; n != "" {
		return n
	}
	if d := l.Keys[KeyDisruption]; d != "" && l.Keys[KeyConnection] != "" {
		return strings.ToLower(d + "-" + l.Keys[KeyConnection] + "-connections")
	}
	return ""
}

// IsDisruption reports whether the interval is a backend sampler's.
func (iv Interval) IsDisruption() bool {
	if iv.Source != "" {
		return iv.Source == SourceDisruption
	}
	return iv.Locator.BackendDisruptionName() != ""
}
