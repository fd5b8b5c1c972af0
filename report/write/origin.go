package write

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

// Repro's own additions to the message annotations of a disruption
// interval, beside origin's reason and request-audit-id.
const (
	AnnotationErrorClass    = "error-class"
	AnnotationFailedSamples = "failed-samples"
)

// intervalItem is one item of intervals.json, in the schema sippy reads
// (openshift/sippy pkg/apis/api/interval.go) and origin writes: an
// origin.Interval with the field names and order of that file. From and To
// are RFC 3339 with sub-second digits, which both parse.
type intervalItem struct {
	Level   string         `json:"level"`
	Display bool           `json:"display"`
	Source  string         `json:"source,omitempty"`
	Locator origin.Locator `json:"locator"`
	Message origin.Message `json:"message"`
	From    time.Time      `json:"from"`
	To      time.Time      `json:"to"`
}

// intervalList is the top-level object of intervals.json.
type intervalList struct {
	Items []intervalItem `json:"items"`
}

// IntervalItems renders intervals as origin does when a sampler sees a
// failure begin: Error level and displayed for disruption, Warning for a DNS
// sampler outage.
func IntervalItems(ivs []report.Interval) []origin.Interval {
	items := make([]origin.Interval, 0, len(ivs))
	for i := range ivs {
		iv := &ivs[i]
		loc := report.OriginBackend(iv.Name, iv.Backend, iv.Connection, iv.HTTP2, iv.Vantage, iv.Target).Locator()
		level, reason := origin.LevelError, origin.ReasonDisruptionBegan
		human := fmt.Sprintf("%s stopped responding to GET requests over %s connections: %s",
			loc.OldLocator(), iv.Connection, iv.Message)
		if iv.SamplerOutage {
			level, reason = origin.LevelWarning, origin.ReasonDisruptionSamplerOutageBegan
			human = fmt.Sprintf("DNS lookup timeouts began for %s GET requests over %s connections: %s (likely a problem in cluster running tests, not the cluster under test)",
				loc.OldLocator(), iv.Connection, iv.Message)
		}
		items = append(items, origin.Interval{
			Level:   level,
			Display: true,
			Source:  origin.SourceDisruption,
			Locator: loc,
			Message: origin.Message{
				Reason:       reason,
				HumanMessage: human,
				Annotations: map[string]string{
					origin.AnnotationReason:         reason,
					origin.AnnotationRequestAuditID: iv.AuditID,
					AnnotationErrorClass:            string(iv.Class),
					AnnotationFailedSamples:         strconv.Itoa(iv.Samples),
				},
			},
			From: iv.From,
			To:   iv.To,
		})
	}
	return items
}

// WriteIntervals writes intervals.json from any number of interval sets
// (the disruption items, and later e.g. rollout events), in origin's order
// (origin.Sort).
func WriteIntervals(w io.Writer, sets ...[]origin.Interval) error {
	all := []origin.Interval{}
	for _, s := range sets {
		all = append(all, s...)
	}
	origin.Sort(all)
	items := make([]intervalItem, len(all))
	for i, iv := range all {
		items[i] = intervalItem{Level: iv.Level, Display: iv.Display, Source: iv.Source, Locator: iv.Locator, Message: iv.Message, From: iv.From, To: iv.To}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "    ")
	return enc.Encode(intervalList{Items: items})
}

// BackendDisruptionFor builds backend-disruption.json: one entry per poller,
// zero-disruption pollers included, as origin lists every backend it
// sampled, in origin's type (origin.BackendDisruptionList) with
// DisruptedDuration to the millisecond where origin's own
// backend-disruption_<run id>.json rounds (origin.BackendDisruptionFor).
// LoadBalancerType, Protocol and TargetAPI default as origin's apiserver
// backends do ("external-lb", "http1", the backend name); a poller with a
// vantage names its own load balancer.
func BackendDisruptionFor(a *report.Analysis) *origin.BackendDisruptionList {
	out := &origin.BackendDisruptionList{BackendDisruptions: map[string]*origin.BackendDisruption{}}
	for _, p := range a.Pollers {
		proto := "http1"
		if p.HTTP2 || p.Protocol == "HTTP/2.0" {
			proto = "http2"
		}
		lb := "external-lb"
		if p.Vantage != "" {
			lb = report.OriginBackend(p.Name, p.Backend, p.Connection, p.HTTP2, p.Vantage, p.Target).LoadBalancer
		}
		msgs := []string{}
		for i := range a.Intervals {
			iv := &a.Intervals[i]
			if iv.Name == p.Name && !iv.SamplerOutage {
				msgs = append(msgs, intervalString(iv))
			}
		}
		out.BackendDisruptions[p.Name] = &origin.BackendDisruption{
			Name:               p.Name,
			BackendName:        p.Backend,
			ConnectionType:     strings.ToUpper(string(p.Connection[:1])) + string(p.Connection[1:]),
			DisruptedDuration:  metav1.Duration{Duration: p.Disrupted.Round(time.Millisecond)},
			DisruptionMessages: msgs,
			LoadBalancerType:   lb,
			Protocol:           proto,
			TargetAPI:          p.Backend,
		}
	}
	return out
}

// WriteBackendDisruption writes the list indented as origin does.
func WriteBackendDisruption(w io.Writer, l *origin.BackendDisruptionList) error {
	b, err := json.MarshalIndent(l, "", "    ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// intervalString renders an interval like origin's Interval.String, with
// milliseconds kept in the duration.
func intervalString(iv *report.Interval) string {
	items := IntervalItems([]report.Interval{*iv})
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

// formatMs renders a duration as the whole summary does.
func formatMs(d time.Duration) string { return report.FormatMs(d) }

// Origin's file names for a run, found by sippy as a CI run's are
// (openshift/sippy pkg/dataloader/prowloader/gcs/gcs_jobrun.go globs
// "**e2e-timelines*.json"; its intervals page prefers
// "e2e-timelines_spyglass_"): the run id plays origin's time suffix.
const (
	OriginTimelinesPrefix         = "e2e-timelines_spyglass_"
	OriginBackendDisruptionPrefix = "backend-disruption_"
)

// OriginRunID is the suffix of a run's origin files: its start as origin
// formats its time suffix (20060102-150405), else the folder's name.
func OriginRunID(run *results.Run, dir string) string {
	if run != nil && !run.Start.IsZero() {
		return run.Start.UTC().Format("20060102-150405")
	}
	return filepath.Base(filepath.Clean(dir))
}

// OriginFiles returns the names of a run's two origin files.
func OriginFiles(runID string) (timelines, backendDisruption string) {
	return OriginTimelinesPrefix + runID + ".json", OriginBackendDisruptionPrefix + runID + ".json"
}

// writeOriginFiles writes e2e-timelines_spyglass_<id>.json and
// backend-disruption_<id>.json and returns the summary's section saying
// where origin's figures differ from repro's.
func writeOriginFiles(f *results.Folder, run *results.Run, a *report.Analysis, tl *report.Timeline) ([]byte, error) {
	ivs := report.WholeSeconds(report.OriginIntervals(a, tl))
	tlName, bdName := OriginFiles(OriginRunID(run, f.Dir()))
	var buf bytes.Buffer
	if err := origin.Encode(&buf, ivs, origin.FormatStructured); err != nil {
		return nil, err
	}
	if err := f.WriteFile(tlName, buf.Bytes()); err != nil {
		return nil, err
	}
	bd := origin.BackendDisruptionFor(ivs)
	buf.Reset()
	if err := origin.WriteBackendDisruption(&buf, bd); err != nil {
		return nil, err
	}
	if err := f.WriteFile(bdName, buf.Bytes()); err != nil {
		return nil, err
	}
	return originDifferences(a, bd, bdName), nil
}

// originDifferences compares repro's per-poller disruption with origin's
// rounded figure; it says nothing when they agree everywhere.
func originDifferences(a *report.Analysis, bd *origin.BackendDisruptionList, name string) []byte {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	differ := false
	fmt.Fprintln(tw, "  BACKEND-CONNECTION\tREPRO\tINTERVALS\tORIGIN\tINTERVALS")
	for _, p := range a.Pollers {
		o := bd.BackendDisruptions[p.Name]
		var od time.Duration
		on := 0
		if o != nil {
			od, on = o.DisruptedDuration.Duration, len(o.DisruptionMessages)
		}
		if od == p.Disrupted && on == p.Intervals {
			continue
		}
		differ = true
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%d\n", p.Name, formatMs(p.Disrupted), p.Intervals, od, on)
	}
	tw.Flush()
	if !differ {
		return nil
	}
	head := fmt.Sprintf("\nOrigin's figures (%s) differ: origin counts each interval as at least 1 s,\n"+
		"rounds the total to the second and starts a new interval when the error text changes:\n", name)
	return append([]byte(head), b.Bytes()...)
}
