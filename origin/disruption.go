package origin

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SamplingInterval is origin's sampler period: one request per second per
// backend. An interval still open when sampling stops ends one period
// after the last sample's start, as origin's consumer closes it.
const SamplingInterval = time.Second

// neverChecked is the error origin's consumer starts from, so the first
// successful sample opens a DisruptionEnded interval: every backend that
// answered at all has one.
const neverChecked = "never checked before"

// DNSLookupTimeout is origin's DnsLookupRegex: the only error that counts as
// a sampler outage (a problem of the machine running the tests), not as
// disruption (pkg/monitor/backenddisruption/disruption_locator.go).
var DNSLookupTimeout = regexp.MustCompile(`dial tcp: lookup.*: i/o timeout`)

// Backend names one sampler the way origin's locators do.
type Backend struct {
	// Name is the backend-disruption-name, e.g. "kube-api-new-connections"
	// or "kube-api-http2-external-lb-new-connections".
	Name string
	// Connection is "new" or "reused".
	Connection string
	// Instance is the locator's "disruption" key: who sampled.
	Instance string
	// LoadBalancer, Protocol and Target are set for origin's newer
	// backends (pkg/disruption/ci TestDescriptor): "external-lb",
	// "http2", "kube-api". Empty for the legacy ones.
	LoadBalancer, Protocol, Target string
}

// Locator is the backend's locator: LocateDisruptionCheck for the legacy
// backends, LocatorBuilder.Disruption (with load-balancer, protocol and
// target) for the newer ones.
func (b Backend) Locator() Locator {
	keys := map[string]string{
		KeyBackendDisruptionName: b.Name,
		KeyDisruption:            b.Instance,
		KeyConnection:            b.Connection,
	}
	for k, v := range map[string]string{KeyLoadBalancer: b.LoadBalancer, KeyProtocol: b.Protocol, KeyTarget: b.Target} {
		if v != "" {
			keys[k] = v
		}
	}
	return Locator{Type: LocatorTypeDisruption, Keys: keys}
}

// Sample is what origin's consumer sees of one request: when it was sent,
// its error text ("" when it succeeded) and its Audit-ID.
type Sample struct {
	Start   time.Time
	Err     string
	AuditID string
}

// DisruptionIntervals applies origin's sampler consumer to one backend's
// samples, which must be in the order they were sent. A change of error
// text starts a new interval; a recovery starts a DisruptionEnded Info
// interval that lasts until the next failure.
func DisruptionIntervals(b Backend, samples []Sample) []Interval {
	loc := b.Locator()
	old := loc.OldLocator()
	var out []Interval
	open := -1
	prevErr := neverChecked
	first := true
	var last time.Time
	closeOpen := func(t time.Time) {
		if open >= 0 {
			out[open].To = t
		}
	}
	for _, s := range samples {
		prevOK, curOK := prevErr == "", s.Err == ""
		switch {
		case curOK && prevOK:
		case !curOK && !prevOK && s.Err == prevErr && !first:
		case !curOK:
			closeOpen(s.Start)
			out = append(out, began(loc, old, b.Connection, s))
			open = len(out) - 1
		default: // recovered, or the first sample answered
			closeOpen(s.Start)
			out = append(out, Interval{
				Level: LevelInfo, Source: SourceDisruption, Locator: copyLocator(loc),
				Message: NewMessage(ReasonDisruptionEnded,
					fmt.Sprintf("%s started responding to GET requests over %s connections", old, connWord(b.Connection)), nil),
				From: s.Start,
			})
			open = len(out) - 1
		}
		first = false
		prevErr = s.Err
		last = s.Start
	}
	if open >= 0 {
		closeOpen(last.Add(SamplingInterval))
	}
	return out
}

func connWord(c string) string {
	if c == "new" || c == "reused" {
		return c
	}
	return "Unknown"
}

func copyLocator(l Locator) Locator {
	keys := make(map[string]string, len(l.Keys))
	for k, v := range l.Keys {
		keys[k] = v
	}
	return Locator{Type: l.Type, Keys: keys}
}

// began is origin's DisruptionBegan: an Error interval, or a Warning
// sampler outage for a DNS lookup timeout.
func began(loc Locator, old, conn string, s Sample) Interval {
	ann := map[string]string{AnnotationRequestAuditID: s.AuditID}
	iv := Interval{Level: LevelError, Source: SourceDisruption, Display: true, Locator: copyLocator(loc), From: s.Start}
	if DNSLookupTimeout.MatchString(s.Err) {
		iv.Level = LevelWarning
		iv.Message = NewMessage(ReasonDisruptionSamplerOutageBegan,
			fmt.Sprintf("DNS lookup timeouts began for %s GET requests over %s connections: %s (likely a problem in cluster running tests, not the cluster under test)", old, connWord(conn), s.Err), ann)
		return iv
	}
	iv.Message = NewMessage(ReasonDisruptionBegan,
		fmt.Sprintf("%s stopped responding to GET requests over %s connections: %s", old, connWord(conn), s.Err), ann)
	return iv
}

// ErrorText turns repro's error text into origin's: a non-success status
// reads "error running request: 429 Too Many Requests: ..." as origin's
// CheckConnection words it; transport errors are Go's url.Error text in
// both. repro keeps the Status message where origin keeps the raw body.
func ErrorText(reproError string, status int) string {
	if status != 0 && strings.HasPrefix(reproError, "HTTP ") {
		return "error running request: " + strings.TrimPrefix(reproError, "HTTP ")
	}
	return reproError
}

// BackendDisruptionList is origin's backend-disruption_<suffix>.json
// (pkg/monitortests/testframework/disruptionserializer/monitortest.go).
type BackendDisruptionList struct {
	BackendDisruptions map[string]*BackendDisruption
}

// BackendDisruption is one entry, with origin's field names and types (no
// JSON tags there either).
type BackendDisruption struct {
	Name               string
	BackendName        string
	ConnectionType     string
	DisruptedDuration  metav1.Duration
	DisruptionMessages []string
	LoadBalancerType   string
	Protocol           string
	TargetAPI          string
}

// BackendDisruptionFor computes the list as origin's computeDisruptionData
// does today: every backend with an Error or Info Disruption interval,
// BackendName the full name, ConnectionType title-cased, LoadBalancerType,
// Protocol and TargetAPI left empty, DisruptedDuration the Error intervals
// counted at least 1 s each and the total rounded to the second.
func BackendDisruptionFor(ivs []Interval) *BackendDisruptionList {
	out := &BackendDisruptionList{BackendDisruptions: map[string]*BackendDisruption{}}
	conns := map[string]string{}
	for _, iv := range ivs {
		if !iv.IsDisruption() || (iv.Level != LevelError && iv.Level != LevelInfo) {
			continue
		}
		conns[iv.Locator.BackendDisruptionName()] = iv.Locator.Keys[KeyConnection]
	}
	for name, conn := range conns {
		var errs []Interval
		for _, iv := range ivs {
			if iv.Level == LevelError && iv.IsDisruption() && iv.Locator.BackendDisruptionName() == name {
				errs = append(errs, iv)
			}
		}
		var msgs []string
		for _, iv := range errs {
			msgs = append(msgs, iv.String())
		}
		out.BackendDisruptions[name] = &BackendDisruption{
			Name:               name,
			BackendName:        name,
			ConnectionType:     title(conn),
			DisruptedDuration:  metav1.Duration{Duration: DisruptedDuration(errs)},
			DisruptionMessages: msgs,
		}
	}
	return out
}

// DisruptedDuration is origin's BackendDisruptionSeconds figure for the
// given Error intervals: each at least 1 s, the sum rounded to the second.
func DisruptedDuration(errs []Interval) time.Duration {
	return SumDuration(errs, time.Second).Round(time.Second)
}

func title(s string) string {
	if s == "" {
		return ""
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// WriteBackendDisruption writes the list as origin does (json.MarshalIndent
// with four spaces).
func WriteBackendDisruption(w io.Writer, l *BackendDisruptionList) error {
	b, err := json.MarshalIndent(l, "", "    ")
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Names returns the list's backend names, sorted.
func (l *BackendDisruptionList) Names() []string {
	names := make([]string, 0, len(l.BackendDisruptions))
	for n := range l.BackendDisruptions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
