package report

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

// Locator is origin's structured locator (see package origin).
type Locator = origin.Locator

// Message is origin's structured interval message.
type Message = origin.Message

// intervalItem is one item of intervals.json, in the schema sippy reads
// (openshift/sippy pkg/apis/api/interval.go) and origin writes: an
// origin.Interval with the field names and order of that file. From and To
// are RFC 3339 with sub-second digits, which both parse.
type intervalItem struct {
	Level   string    `json:"level"`
	Display bool      `json:"display"`
	Source  string    `json:"source,omitempty"`
	Locator Locator   `json:"locator"`
	Message Message   `json:"message"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
}

// intervalList is the top-level object of intervals.json.
type intervalList struct {
	Items []intervalItem `json:"items"`
}

// DisruptionLocator returns the locator origin gives a legacy backend
// sampler (LocateDisruptionCheck): type Disruption with the stored name, the
// connection type and the sampling instance.
func DisruptionLocator(name string, conn results.ConnectionType) Locator {
	return OriginBackend(name, "", conn, false, "", "").Locator()
}

// OriginBackend names a poller as origin's samplers name themselves: the
// legacy locator for HTTP/1.1 through the external load balancer, and for
// anything else origin's newer one (openshift/origin pkg/disruption/ci
// TestDescriptor.DisruptionLocator) with load-balancer, protocol and
// target keys and the instance "<target>-<protocol>-<load balancer>".
func OriginBackend(name, backend string, conn results.ConnectionType, http2 bool, vantage, target string) origin.Backend {
	b := origin.Backend{Name: name, Connection: string(conn), Instance: DisruptionInstance}
	if !http2 && (vantage == "" || vantage == results.VantageExternalLB) {
		return b
	}
	b.Protocol = "http1"
	if http2 {
		b.Protocol = "http2"
	}
	b.LoadBalancer = vantage
	if b.LoadBalancer == "" {
		b.LoadBalancer = results.VantageExternalLB
	}
	if target != "" {
		b.LoadBalancer += "-" + target
	}
	b.Target = backend
	b.Instance = backend + "-" + b.Protocol + "-" + b.LoadBalancer
	return b
}

// IntervalItems renders intervals as origin does when a sampler sees a
// failure begin: Error level and displayed for disruption, Warning for a DNS
// sampler outage.
func IntervalItems(ivs []Interval) []origin.Interval {
	items := make([]origin.Interval, 0, len(ivs))
	for i := range ivs {
		iv := &ivs[i]
		loc := OriginBackend(iv.Name, iv.Backend, iv.Connection, iv.HTTP2, iv.Vantage, iv.Target).Locator()
		level, reason := LevelError, ReasonDisruptionBegan
		human := fmt.Sprintf("%s stopped responding to GET requests over %s connections: %s",
			loc.OldLocator(), iv.Connection, iv.Message)
		if iv.SamplerOutage {
			level, reason = LevelWarning, ReasonDisruptionSamplerOutageBegan
			human = fmt.Sprintf("DNS lookup timeouts began for %s GET requests over %s connections: %s (likely a problem in cluster running tests, not the cluster under test)",
				loc.OldLocator(), iv.Connection, iv.Message)
		}
		items = append(items, origin.Interval{
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

// BackendDisruptionList is origin's backend-disruption list, the one type
// both files use: repro's backend-disruption.json fills DisruptedDuration to
// the millisecond (BackendDisruptionFor), origin's
// backend-disruption_<run id>.json by origin's rounding
// (origin.BackendDisruptionFor).
type BackendDisruptionList = origin.BackendDisruptionList

// BackendDisruption is one entry of BackendDisruptionList. LoadBalancerType,
// Protocol and TargetAPI default as origin's apiserver backends do
// ("external-lb", "http1", the backend name) in repro's file.
type BackendDisruption = origin.BackendDisruption

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
		if p.HTTP2 || p.Protocol == "HTTP/2.0" {
			proto = "http2"
		}
		lb := loadBalancerType
		if p.Vantage != "" {
			lb = OriginBackend(p.Name, p.Backend, p.Connection, p.HTTP2, p.Vantage, p.Target).LoadBalancer
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
			LoadBalancerType:   lb,
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

// originIntervals applies origin's sampler rules to one poller's points
// (sorted by seq, as origin's consumer takes samples in the order they were
// sent): the error text, not the class, splits intervals; origin's DNS rule
// decides sampler outages; samples cut by the end of the run are left out,
// as origin's consumer stops before them.
func originIntervals(st *PollerSummary, pts []point, details []detail) []origin.Interval {
	samples := make([]origin.Sample, 0, len(pts))
	for _, p := range pts {
		if p.class == abortedIdx {
			continue
		}
		s := origin.Sample{Start: time.Unix(0, p.start).UTC()}
		if p.class != 0 {
			s.Err = "error"
			if p.detail >= 0 {
				d := details[p.detail]
				s.Err, s.AuditID = origin.ErrorText(d.message, d.status), d.auditID
			}
		}
		samples = append(samples, s)
	}
	b := OriginBackend(st.Name, st.Backend, st.Connection, st.HTTP2, st.Vantage, st.Target)
	return origin.DisruptionIntervals(b, samples)
}

// OriginIntervals returns the run's intervals in origin's vocabulary and by
// origin's rules: every poller's Disruption intervals (DisruptionEnded
// included) and the rollout's APIServerGracefulShutdown, KubeEvent and
// OperatorState intervals, sorted as origin sorts them.
func OriginIntervals(a *Analysis, tl *Timeline) []origin.Interval {
	out := append([]origin.Interval(nil), a.Origin...)
	if tl != nil {
		out = append(out, origin.RolloutIntervals(tl.Events, a.From, a.To)...)
	}
	origin.Sort(out)
	return out
}

// writeOriginFiles writes e2e-timelines_spyglass_<id>.json and
// backend-disruption_<id>.json and returns the summary's section saying
// where origin's figures differ from repro's.
func writeOriginFiles(f *results.Folder, run *results.Run, a *Analysis, tl *Timeline) ([]byte, error) {
	ivs := WholeSeconds(OriginIntervals(a, tl))
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
func originDifferences(a *Analysis, bd *origin.BackendDisruptionList, name string) []byte {
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

// WholeSeconds rounds each Disruption interval out to whole seconds, as
// origin's 1 Hz sampler would have seen it: a failure anywhere in a second
// fails that second's sample. Origin's serializer keeps whole seconds
// (metav1.Time), so without this a sub-second failure is written as a
// zero-length Error interval, which origin's own rule counts as 0 s
// (monitorapi Intervals.Duration: To <= From adds nothing;
// pkg/monitor/monitorapi/disruption.go), while backend-disruption_*.json,
// computed before the truncation, counts it. Rounded here, both files are
// made from the same whole-second intervals and agree by origin's rule.
// Per backend, an Error or Warning interval starts at its second and ends
// at the next whole second; one that then overlaps the previous starts
// where that ended (a second is sampled once), and is dropped if nothing
// is left; a DisruptionEnded (Info) interval fills the whole seconds
// between failures. Other intervals are left as they are.
func WholeSeconds(ivs []origin.Interval) []origin.Interval {
	byName := map[string][]int{}
	var names []string
	for i := range ivs {
		if !ivs[i].IsDisruption() {
			continue
		}
		n := ivs[i].Locator.BackendDisruptionName()
		if _, ok := byName[n]; !ok {
			names = append(names, n)
		}
		byName[n] = append(byName[n], i)
	}
	drop := map[int]bool{}
	ceil := func(t time.Time) time.Time {
		if tr := t.Truncate(time.Second); !tr.Equal(t) {
			return tr.Add(time.Second)
		}
		return t
	}
	for _, n := range names {
		idx := byName[n]
		sort.SliceStable(idx, func(a, b int) bool { return ivs[idx[a]].From.Before(ivs[idx[b]].From) })
		var failedTo time.Time // end of the last failing second
		for _, i := range idx {
			iv := &ivs[i]
			if iv.Level == origin.LevelInfo {
				continue
			}
			iv.From = iv.From.Truncate(time.Second)
			if iv.From.Before(failedTo) {
				iv.From = failedTo
			}
			switch {
			case iv.To.IsZero():
				// still open: left open, origin's reader decides its length
			case !ceil(iv.To).After(iv.From):
				drop[i] = true
				continue
			default:
				iv.To = ceil(iv.To)
			}
			if iv.To.After(failedTo) {
				failedTo = iv.To
			}
		}
		// Info intervals: whole seconds not inside a failure
		var fails []origin.Interval
		for _, i := range idx {
			if ivs[i].Level != origin.LevelInfo && !drop[i] {
				fails = append(fails, ivs[i])
			}
		}
		for _, i := range idx {
			iv := &ivs[i]
			if iv.Level != origin.LevelInfo {
				continue
			}
			iv.From = ceil(iv.From)
			for _, fl := range fails {
				if !fl.From.After(iv.From) && fl.To.After(iv.From) {
					iv.From = fl.To
				}
			}
			if iv.To.IsZero() {
				continue
			}
			iv.To = iv.To.Truncate(time.Second)
			for _, fl := range fails {
				if fl.From.Before(iv.To) && !fl.From.Before(iv.From) {
					iv.To = fl.From
				}
			}
			if !iv.To.After(iv.From) {
				drop[i] = true
			}
		}
	}
	if len(drop) == 0 {
		origin.Sort(ivs)
		return ivs
	}
	out := ivs[:0]
	for i := range ivs {
		if !drop[i] {
			out = append(out, ivs[i])
		}
	}
	origin.Sort(out)
	return out
}
