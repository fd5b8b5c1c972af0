package report

import (
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/repro-tools/repro/results"
)

// Grade is how an engineer grades one request's outcome (origin #31412): a
// 429 with Retry-After is the server asking the client to come back, and a
// well-behaved client does; a reset, a refused connect, a timeout or a 5xx
// is a failure. It is a second view beside DISRUPTED, which keeps origin's
// rule that every failure counts.
type Grade string

// Grades.
const (
	GradeOK        Grade = "ok"
	GradeRetryable Grade = "retryable"
	GradeFailed    Grade = "failed"
)

// GradeOf grades a sample from its recorded fields.
func GradeOf(class results.ErrorClass, status int, retryAfter string) Grade {
	switch {
	case class == results.ClassNone:
		return GradeOK
	case status == 429 && retryAfter != "":
		return GradeRetryable
	}
	return GradeFailed
}

// ClientMaxRetries is client-go's default number of retries of one request
// (k8s.io/client-go rest/request.go: NewRequest sets maxRetries 10).
const ClientMaxRetries = 10

// clientErrorWait is the wait client-go puts before retrying a GET after a
// connection error: an artificial "Retry-After: 1" (k8s.io/client-go
// rest/with_retry.go, retryAfterResponse).
const clientErrorWait = time.Second

// clientRetry says whether a client-go GET retries after this outcome and
// how long it waits first. client-go retries (rest/with_retry.go
// IsNextRetry, checkWait): any 429 or 5xx answer that carries Retry-After
// (it waits that many seconds); and, for GETs only, a connection reset, a
// probable EOF (EOF, a broken connection, "http2: server sent GOAWAY and
// closed the connection", "use of closed network connection") or a lost
// HTTP/2 connection (rest/request.go isErrRetryableFunc;
// k8s.io/apimachinery pkg/util/net IsConnectionReset, IsProbableEOF,
// IsHTTP2ConnectionLost). It does not retry timeouts, refused connects,
// TLS failures, or a 429/5xx without Retry-After.
func clientRetry(class results.ErrorClass, status int, retryAfter, msg string) (time.Duration, bool) {
	if status == 429 || status >= 500 {
		secs, err := strconv.Atoi(strings.TrimSpace(retryAfter))
		if retryAfter == "" || err != nil || secs < 0 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	switch class {
	case results.ClassEOF, results.ClassHTTP2GoAway:
		return clientErrorWait, true
	case results.ClassReset:
		// A broken pipe is not a reset to client-go.
		if strings.Contains(msg, "broken pipe") {
			return 0, false
		}
		return clientErrorWait, true
	case results.ClassHTTP2Stream:
		if strings.Contains(msg, "client connection lost") {
			return clientErrorWait, true
		}
	}
	return 0, false
}

// PollerOutcomes are one poller's graded outcomes and its client's view.
type PollerOutcomes struct {
	Name string `json:"name"`
	// Failures is origin's count (every failure); Retryable and Failed
	// split it by grade.
	Failures  int64 `json:"failures"`
	Retryable int64 `json:"retryable"`
	Failed    int64 `json:"failed"`
	// ClientLost counts the failed requests a client-go GET would still
	// have lost after its default retries; ClientRecovered those its
	// retries would have turned into a late answer, the longest of them
	// MaxAddedWait late. A retry's outcome is read from the same backend's
	// samples: the poller's own after an answer, the new-connection
	// poller's after a connection error (the client dials again).
	ClientLost      int64         `json:"clientGoLost"`
	ClientRecovered int64         `json:"clientGoRecovered"`
	MaxAddedWait    time.Duration `json:"maxAddedWaitNs"`
	// Discounted counts failures inside a measuring-side-unreliable window
	// (see Discount).
	Discounted int64 `json:"discounted"`

	failures []span
}

type span struct{ from, to int64 }

// Outcomes are every poller's graded outcomes, in Analysis.Pollers' order.
type Outcomes struct {
	Pollers []PollerOutcomes
	// Windows are the measuring-side-unreliable windows applied;
	// WindowsError says why none could be read from signals.jsonl.
	Windows      []results.Signal
	WindowsError string
}

// Totals sums the pollers' figures.
func (o *Outcomes) Totals() PollerOutcomes {
	var t PollerOutcomes
	if o == nil {
		return t
	}
	for _, p := range o.Pollers {
		t.Failures += p.Failures
		t.Retryable += p.Retryable
		t.Failed += p.Failed
		t.ClientLost += p.ClientLost
		t.ClientRecovered += p.ClientRecovered
		t.Discounted += p.Discounted
		t.MaxAddedWait = max(t.MaxAddedWait, p.MaxAddedWait)
	}
	return t
}

// gradeOutcomes grades every poller's points (sorted by seq) and plays
// client-go's retries over them.
func gradeOutcomes(a *accumulator, order []PollerSummary) *Outcomes {
	// The new-connection poller of each series, where a client that lost
	// its connection retries.
	series := map[string]*pollerData{}
	for _, pd := range a.pollers {
		if pd.conn == results.NewConnections {
			series[seriesOf(pd.summary)] = pd
		}
	}
	out := &Outcomes{}
	for _, ps := range order {
		pd := a.pollers[ps.Name]
		po := PollerOutcomes{Name: ps.Name}
		if pd == nil {
			out.Pollers = append(out.Pollers, po)
			continue
		}
		for i, p := range pd.points {
			// Aborted requests are neither; DNS failures are a sampler
			// outage, not disruption (origin's rule), and not graded.
			if c := classByIndex[p.class]; p.class == 0 || c == results.ClassAborted || c == results.ClassDNS {
				continue
			}
			d := a.details[p.detail]
			class := classByIndex[p.class]
			po.Failures++
			po.failures = append(po.failures, span{p.start, p.end})
			if GradeOf(class, d.status, d.retryAfter) == GradeRetryable {
				po.Retryable++
			} else {
				po.Failed++
			}
			if late, ok := a.playRetries(pd, i, series[seriesOf(pd.summary)]); ok {
				po.ClientRecovered++
				po.MaxAddedWait = max(po.MaxAddedWait, late)
			} else {
				po.ClientLost++
			}
		}
		out.Pollers = append(out.Pollers, po)
	}
	return out
}

// playRetries follows client-go's retries of pd.points[i]: after each
// retryable outcome it waits, then takes the outcome of the first sample
// that started after the wait, on the poller the retry would use. ok says
// a retry got an answer; late is how much later than the first attempt's
// end it came. A retry past the last sample is lost.
func (a *accumulator) playRetries(pd *pollerData, i int, fresh *pollerData) (late time.Duration, ok bool) {
	first := pd.points[i]
	cur, curPd := first, pd
	for attempt := 1; attempt <= ClientMaxRetries; attempt++ {
		d := a.details[cur.detail]
		wait, retry := clientRetry(classByIndex[cur.class], d.status, d.retryAfter, d.message)
		if !retry {
			return 0, false
		}
		next := curPd
		if d.status == 0 && fresh != nil {
			next = fresh // the connection is gone: the client dials anew
		}
		at := cur.end + int64(wait)
		j := sort.Search(len(next.points), func(k int) bool { return next.points[k].start >= at })
		if j == len(next.points) {
			return 0, false
		}
		p := next.points[j]
		if classByIndex[p.class] == results.ClassAborted {
			return 0, false
		}
		if p.class == 0 {
			// The client's own retry would have taken the sample's time
			// from the moment it was sent.
			return time.Duration(at + (p.end - p.start) - first.end), true
		}
		cur, curPd = p, next
	}
	return 0, false
}

// Discount counts the failures inside measuring-side-unreliable windows:
// the control poller's stalls, or a CI run's failed network-liveness
// canary. Those failures say as much about the measuring side as about
// the cluster; they stay in DISRUPTED and are discounted in this view.
func (o *Outcomes) Discount(windows []results.Signal) {
	if o == nil {
		return
	}
	o.Windows = windows
	for i := range o.Pollers {
		p := &o.Pollers[i]
		p.Discounted = 0
		for _, f := range p.failures {
			for _, w := range windows {
				to := w.To
				if to.IsZero() {
					to = w.At
				}
				if f.from <= to.UnixNano() && f.to >= w.At.UnixNano() {
					p.Discounted++
					break
				}
			}
		}
	}
}

// LoadUnreliableWindows reads the measuring-side-unreliable windows of a
// results folder's signals file (none when it has none).
func LoadUnreliableWindows(dir string) ([]results.Signal, error) {
	sigs, _, err := results.ReadSignals(filepath.Join(dir, results.SignalsFile))
	if err != nil {
		return nil, err
	}
	var out []results.Signal
	for _, s := range sigs {
		if s.Kind == results.SignalMeasuringUnreliable {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}
