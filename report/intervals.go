package report

import (
	"sort"
	"time"

	"github.com/repro-tools/repro/results"
)

// Interval is one disruption (or sampler outage) of one poller, as repro's
// rule finds it: the poller's identity, the failed samples' count and
// sequence numbers, and its first failure's details. It is not
// origin.Interval (monitorapi.Interval, the rendered item both intervals
// files hold): write.IntervalItems renders one from the other, and origin's own
// rule (OriginIntervals) yields different intervals from the same samples.
type Interval struct {
	// Name is the poller name, origin's backend-disruption-name, e.g.
	// "kube-api-new-connections".
	Name       string
	Backend    string
	Connection results.ConnectionType
	// HTTP2, Vantage and Target are the poller's (see PollerSummary).
	HTTP2           bool
	Vantage, Target string
	// From is the start of the first failed request; To the start of the
	// next successful one, or the end of the poller's last sample if the
	// interval was still open when the run ended.
	From, To time.Time
	// Class is the error class shared by every sample of the interval.
	Class results.ErrorClass
	// SamplerOutage marks DNS failures: a problem of the machine running
	// repro, not disruption of the cluster.
	SamplerOutage bool
	// Open is true when no successful sample closed the interval.
	Open bool
	// Samples counts the failed samples in the interval; FirstSeq and
	// LastSeq are the first and last of them.
	Samples           int
	FirstSeq, LastSeq uint64
	// Message, AuditID, StatusCode and RetryAfter describe the first failed
	// request of the interval.
	Message    string
	AuditID    string
	StatusCode int
	RetryAfter string
}

// Duration returns To - From.
func (iv *Interval) Duration() time.Duration { return iv.To.Sub(iv.From) }

// Disruption reports whether the interval counts as disruption (it is not a
// sampler outage).
func (iv *Interval) Disruption() bool { return !iv.SamplerOutage }

// point is the part of a sample the interval rule needs.
type point struct {
	seq    uint64
	start  int64 // unix nanoseconds
	end    int64
	class  uint8 // index into classIndex; 0 = success
	detail int32 // index into the failure details, -1 for successes
}

// detail is what is kept of a failed sample.
type detail struct {
	message    string
	auditID    string
	status     int
	retryAfter string
}

var classByIndex = append([]results.ErrorClass{results.ClassNone}, results.ErrorClasses...)

var classIndex = func() map[results.ErrorClass]uint8 {
	m := map[results.ErrorClass]uint8{}
	for i, c := range classByIndex {
		m[c] = uint8(i)
	}
	return m
}()

func indexOfClass(c results.ErrorClass) uint8 {
	if i, ok := classIndex[c]; ok {
		return i
	}
	return classIndex[results.ClassOther]
}

var (
	abortedIdx = classIndex[results.ClassAborted]
	dnsIdx     = classIndex[results.ClassDNS]
)

// intervalsOf applies the interval rule to one poller's points, which must
// be sorted by seq.
func intervalsOf(name, backend string, conn results.ConnectionType, pts []point, details []detail) []Interval {
	var out []Interval
	var cur *Interval
	var lastEnd int64
	for i := range pts {
		p := &pts[i]
		if p.class == abortedIdx {
			continue
		}
		if p.end > lastEnd {
			lastEnd = p.end
		}
		if p.class == 0 {
			if cur != nil {
				cur.To = time.Unix(0, p.start).UTC()
				out = append(out, *cur)
				cur = nil
			}
			continue
		}
		class := classByIndex[p.class]
		if cur != nil && cur.Class == class {
			cur.Samples++
			cur.LastSeq = p.seq
			continue
		}
		if cur != nil {
			cur.To = time.Unix(0, p.start).UTC()
			out = append(out, *cur)
		}
		cur = &Interval{
			Name: name, Backend: backend, Connection: conn,
			From:          time.Unix(0, p.start).UTC(),
			Class:         class,
			SamplerOutage: p.class == dnsIdx,
			Samples:       1,
			FirstSeq:      p.seq, LastSeq: p.seq,
		}
		if p.detail >= 0 {
			d := details[p.detail]
			cur.Message, cur.AuditID, cur.StatusCode, cur.RetryAfter = d.message, d.auditID, d.status, d.retryAfter
		}
	}
	if cur != nil {
		cur.To = time.Unix(0, lastEnd).UTC()
		cur.Open = true
		out = append(out, *cur)
	}
	return out
}

// ComputeIntervals applies the interval rule to samples of any number of
// pollers, in any order. The result is sorted by start, then name.
func ComputeIntervals(samples []results.Sample) []Interval {
	return Analyze(samples).Intervals
}

func sortIntervals(ivs []Interval) {
	sort.SliceStable(ivs, func(i, j int) bool {
		if !ivs[i].From.Equal(ivs[j].From) {
			return ivs[i].From.Before(ivs[j].From)
		}
		return ivs[i].Name < ivs[j].Name
	})
}
