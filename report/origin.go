package report

import (
	"sort"
	"time"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/results"
)

// DisruptionInstance is the value of the locator's "disruption" key
// (origin's thisInstanceName, "openshift-tests" there): who sampled.
const DisruptionInstance = "repro"

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
