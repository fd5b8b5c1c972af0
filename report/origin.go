package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/repro-tools/repro/results"
)

// Names and values origin uses in its monitor API (pkg/monitor/monitorapi)
// for backend disruption intervals.
const (
	LevelInfo    = "Info"
	LevelWarning = "Warning"
	LevelError   = "Error"

	SourceDisruption      = "Disruption"
	LocatorTypeDisruption = "Disruption"

	LocatorBackendDisruptionNameKey = "backend-disruption-name"
	LocatorConnectionKey            = "connection"
	LocatorDisruptionKey            = "disruption"

	ReasonDisruptionBegan              = "DisruptionBegan"
	ReasonDisruptionSamplerOutageBegan = "DisruptionSamplerOutageBegan"

	AnnotationReason         = "reason"
	AnnotationRequestAuditID = "request-audit-id"
	// AnnotationErrorClass and AnnotationFailedSamples are repro's own
	// additions to the message annotations.
	AnnotationErrorClass    = "error-class"
	AnnotationFailedSamples = "failed-samples"

	// DisruptionInstance is the value of the locator's "disruption" key
	// (origin's thisInstanceName, "openshift-tests" there): who sampled.
	DisruptionInstance = "repro"
)

// Locator is origin's structured locator.
type Locator struct {
	Type string            `json:"type"`
	Keys map[string]string `json:"keys"`
}

// OldLocator renders the locator as origin's flat "key/value ..." string
// (keys without a fixed rank sort alphabetically, as origin sorts them).
func (l Locator) OldLocator() string {
	keys := make([]string, 0, len(l.Keys))
	for k := range l.Keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "/" + l.Keys[k]
	}
	return strings.Join(parts, " ")
}

// Message is origin's structured interval message.
type Message struct {
	Reason       string            `json:"reason"`
	Cause        string            `json:"cause"`
	HumanMessage string            `json:"humanMessage"`
	Annotations  map[string]string `json:"annotations"`
}

// IntervalItem is one item of intervals.json, in the schema sippy reads
// (openshift/sippy pkg/apis/api/interval.go) and origin writes. From and To
// are RFC 3339 with sub-second digits, which both parse.
type IntervalItem struct {
	Level   string    `json:"level"`
	Display bool      `json:"display"`
	Source  string    `json:"source,omitempty"`
	Locator Locator   `json:"locator"`
	Message Message   `json:"message"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
}

// IntervalList is the top-level object of intervals.json.
type IntervalList struct {
	Items []IntervalItem `json:"items"`
}

// DisruptionLocator returns the locator origin gives a backend sampler
// (LocateDisruptionCheck): type Disruption with the stored name, the
// connection type and the sampling instance.
func DisruptionLocator(name string, conn results.ConnectionType) Locator {
	return Locator{Type: LocatorTypeDisruption, Keys: map[string]string{
		LocatorBackendDisruptionNameKey: name,
		LocatorConnectionKey:            string(conn),
		LocatorDisruptionKey:            DisruptionInstance,
	}}
}

// IntervalItems renders intervals as origin does when a sampler sees a
// failure begin: Error level and displayed for disruption, Warning for a DNS
// sampler outage.
func IntervalItems(ivs []Interval) []IntervalItem {
	items := make([]IntervalItem, 0, len(ivs))
	for i := range ivs {
		iv := &ivs[i]
		loc := DisruptionLocator(iv.Name, iv.Connection)
		level, reason := LevelError, ReasonDisruptionBegan
		human := fmt.Sprintf("%s stopped responding to GET requests over %s connections: %s",
			loc.OldLocator(), iv.Connection, iv.Message)
		if iv.SamplerOutage {
			level, reason = LevelWarning, ReasonDisruptionSamplerOutageBegan
			human = fmt.Sprintf("DNS lookup timeouts began for %s GET requests over %s connections: %s (likely a problem in cluster running tests, not the cluster under test)",
				loc.OldLocator(), iv.Connection, iv.Message)
		}
		items = append(items, IntervalItem{
			Level:   level,
			Display: true,
			Source:  SourceDisruption,
			Locator: loc,
			Message: Message{
				Reason:       reason,
				HumanMessage: human,
				Annotations: map[string]string{
					AnnotationReason:         reason,
					AnnotationRequestAuditID: iv.AuditID,
					AnnotationErrorClass:     string(iv.Class),
					AnnotationFailedSamples:  strconv.Itoa(iv.Samples),
				},
			},
			From: iv.From,
			To:   iv.To,
		})
	}
	return items
}

// WriteIntervals writes intervals.json from any number of item sets (the
// disruption items, and later e.g. rollout events), sorted by start, then
// end, then reason, then locator, as origin sorts intervals.
func WriteIntervals(w io.Writer, sets ...[]IntervalItem) error {
	all := []IntervalItem{}
	for _, s := range sets {
		all = append(all, s...)
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := &all[i], &all[j]
		if !a.From.Equal(b.From) {
			return a.From.Before(b.From)
		}
		if !a.To.Equal(b.To) {
			return a.To.Before(b.To)
		}
		if a.Message.Reason != b.Message.Reason {
			return a.Message.Reason < b.Message.Reason
		}
		return a.Locator.OldLocator() < b.Locator.OldLocator()
	})
	enc := json.NewEncoder(w)
	enc.SetIndent("", "    ")
	return enc.Encode(IntervalList{Items: all})
}

// BackendDisruptionList is origin's backend-disruption.json.
type BackendDisruptionList struct {
	// BackendDisruptions is keyed by name, e.g. "kube-api-new-connections".
	BackendDisruptions map[string]*BackendDisruption
}

// BackendDisruption is one entry of BackendDisruptionList, with origin's
// field names (no JSON tags there either).
type BackendDisruption struct {
	// Name includes the connection type: "kube-api-new-connections".
	Name string
	// BackendName is the same across connection types: "kube-api".
	BackendName string
	// ConnectionType is "New" or "Reused", as origin writes it.
	ConnectionType string
	// DisruptedDuration is the total disruption, a Go duration string
	// ("4.312s") rounded to the millisecond. Origin rounds to the second
	// and counts at least one second per interval; repro does neither.
	DisruptedDuration  metav1.Duration
	DisruptionMessages []string
	// LoadBalancerType, Protocol and TargetAPI default as origin's
	// apiserver backends do ("external-lb", "http1", the backend name).
	LoadBalancerType string
	Protocol         string
	TargetAPI        string
}

// BackendDisruptionFor builds backend-disruption.json: one entry per poller,
// zero-disruption pollers included, as origin lists every backend it
// sampled. loadBalancerType "" means "external-lb".
func BackendDisruptionFor(a *Analysis, loadBalancerType string) *BackendDisruptionList {
	if loadBalancerType == "" {
		loadBalancerType = "external-lb"
	}
	out := &BackendDisruptionList{BackendDisruptions: map[string]*BackendDisruption{}}
	for _, p := range a.Pollers {
		proto := "http1"
		if p.Protocol == "HTTP/2.0" {
			proto = "http2"
		}
		msgs := []string{}
		for i := range a.Intervals {
			iv := &a.Intervals[i]
			if iv.Name == p.Name && !iv.SamplerOutage {
				msgs = append(msgs, intervalString(iv))
			}
		}
		out.BackendDisruptions[p.Name] = &BackendDisruption{
			Name:               p.Name,
			BackendName:        p.Backend,
			ConnectionType:     strings.ToUpper(string(p.Connection[:1])) + string(p.Connection[1:]),
			DisruptedDuration:  metav1.Duration{Duration: p.Disrupted.Round(time.Millisecond)},
			DisruptionMessages: msgs,
			LoadBalancerType:   loadBalancerType,
			Protocol:           proto,
			TargetAPI:          p.Backend,
		}
	}
	return out
}

// WriteBackendDisruption writes the list indented as origin does.
func WriteBackendDisruption(w io.Writer, l *BackendDisruptionList) error {
	b, err := json.MarshalIndent(l, "", "    ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// intervalString renders an interval like origin's Interval.String, with
// milliseconds kept in the duration.
func intervalString(iv *Interval) string {
	items := IntervalItems([]Interval{*iv})
	it := items[0]
	keys := make([]string, 0, len(it.Message.Annotations))
	for k := range it.Message.Annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ann := make([]string, len(keys))
	for i, k := range keys {
		ann[i] = k + "/" + it.Message.Annotations[k]
	}
	return fmt.Sprintf("%s.%03d - %-7s %s %s %s %s",
		iv.From.Format("Jan 02 15:04:05"), iv.From.Nanosecond()/int(time.Millisecond),
		formatMs(iv.Duration()), it.Level[:1], it.Locator.OldLocator(), strings.Join(ann, " "), it.Message.HumanMessage)
}

// formatMs renders a duration in seconds with millisecond precision.
func formatMs(d time.Duration) string {
	return strconv.FormatFloat(d.Round(time.Millisecond).Seconds(), 'f', 3, 64) + "s"
}
