package diagnose

import (
	"fmt"
	"sort"
	"time"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

// What the load balancer's target health can decide, and what it cannot.
//
// Target health records (results.SignalLBTargetHealth: the lab health
// checker's, source "lab-lb", or AWS's DescribeTargetHealth polled with
// --aws-lb, source "aws-elbv2") say when the LB judged each target
// unhealthy and healthy again. That alone decides the checks about the
// LB's verdicts against the rollout's timeline: "LB verdict" (did it judge
// the rolled node unhealthy within its detection after SIGTERM:
// late-deregistration and blackhole say yes, early-healthy says no) and
// "healthy vs ready" (did it take the restarted node back before its
// apiserver was ready: early-healthy says before, late-deregistration
// after).
//
// It cannot say which target a connection went to: AWS keeps no
// per-connection record a describe call returns. The checks that need it
// ("served by", which apiserver the failed requests went to) read the lab
// load balancer's connection records, or, live, attribution's audit logs,
// which name only the apiservers that received the request.

// MissingLBHealth names absent target health records.
const MissingLBHealth = "no load balancer target health records (the lab's, or --aws-lb on AWS)"

// healthRecord is one target health change.
type healthRecord struct {
	at      time.Time
	healthy bool
	state   string
}

// lbHealthRecords groups the signals file's target health records (kept
// by readSignals on its one pass) per target (node), sorted by time.
func lbHealthRecords(sigs []results.Signal) (map[string][]healthRecord, []string) {
	out := map[string][]healthRecord{}
	sources := map[string]bool{}
	for _, s := range sigs {
		if s.Kind != results.SignalLBTargetHealth {
			continue
		}
		sources[s.Source] = true
		state := s.Labels["state"]
		out[s.Instance] = append(out[s.Instance], healthRecord{at: s.At, healthy: state == "healthy", state: state})
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, j int) bool { return rs[i].at.Before(rs[j].at) })
	}
	var srcs []string
	for s := range sources {
		srcs = append(srcs, s)
	}
	sort.Strings(srcs)
	return out, srcs
}

// lbVerdict is the load balancer's verdict on a node it took out at down
// (zero: never) after the node's SIGTERM: "none", "within-detection" (no
// later than the health check's detection time) or "after-detection".
func (f *Figures) lbVerdict(terminating, down time.Time) string {
	switch {
	case down.IsZero():
		return "none"
	case down.Sub(terminating) <= f.Detection:
		return "within-detection"
	}
	return "after-detection"
}

// lbHealth places each rolled node's health records against its rollout:
// the first unhealthy one after its SIGTERM gives the LB's verdict (as the
// lab LB's resets did before there were records), and the first healthy
// one after that, against its new apiserver's ready time, says whether
// the LB took it back early.
func (f *Figures) lbHealth(recs map[string][]healthRecord, sources []string, tl *report.Timeline) {
	if len(recs) == 0 {
		return
	}
	f.LBHealth, f.LBHealthSources = true, sources
	f.HealthyVsReady = map[string]int64{}
	verdicts := map[string]int64{}
	for _, it := range tl.Iterations {
		for _, w := range it.Nodes {
			if w.Terminating.IsZero() {
				continue
			}
			rs := recs[w.Node]
			var down, up time.Time
			for _, r := range rs {
				if r.at.Before(w.Terminating) {
					continue
				}
				// The verdict is "unhealthy"; a deregistration
				// ("unused", "draining") is the owner's act, not the LB's.
				if down.IsZero() && r.state == "unhealthy" {
					down = r.at
					continue
				}
				if !down.IsZero() && r.healthy {
					up = r.at
					break
				}
			}
			verdicts[f.lbVerdict(w.Terminating, down)]++
			switch {
			case up.IsZero() || w.Ready.IsZero():
				f.HealthyVsReady["unknown"]++
			case up.Before(w.Ready.Add(-readyTolerance(f.Detection))):
				f.HealthyVsReady["before-ready"]++
			default:
				f.HealthyVsReady["after-ready"]++
			}
		}
	}
	// Target health is the LB's own word: it replaces the verdicts worked
	// out from its resets.
	f.LBVerdicts, f.HasLBVerdicts = verdicts, true
}

// healthyVsReady asks when the LB took a restarted node back into service
// against its apiserver's ready time: before it (early) or after (late).
func healthyVsReady(min float64, early bool) Check {
	words := "the LB took at least %s of restarted nodes back only once their apiserver was ready"
	key := "after-ready"
	if early {
		words = "the LB took at least %s of restarted nodes back before their apiserver was ready"
		key = "before-ready"
	}
	return Check{Name: "healthy vs ready", Predicts: fmt.Sprintf(words, pct(min)), eval: func(f *Figures) outcome {
		if !f.LBHealth {
			return outcome{missing: MissingLBHealth}
		}
		total := f.HealthyVsReady["before-ready"] + f.HealthyVsReady["after-ready"]
		if total == 0 {
			return outcome{missing: MissingLBHealth + " for a restarted node"}
		}
		s := ratio(f.HealthyVsReady[key], total)
		return outcome{ok: s >= min, share: s, evidence: fmt.Sprintf("%s of restarted nodes (%s; from %v)", pct(s), countList(f.HealthyVsReady), f.LBHealthSources)}
	}}
}

// outcomes takes the graded view and the failures' shared signature.
func (f *Figures) outcomes(a *report.Analysis) {
	if a.Outcomes != nil {
		t := a.Outcomes.Totals()
		f.Outcomes = &t
		f.UnreliableWindows = len(a.Outcomes.Windows)
	}
	if f.Failures < 2 || len(f.Classes) != 1 {
		return
	}
	var class results.ErrorClass
	for c := range f.Classes {
		class = c
	}
	for conn, n := range f.ByConn {
		if n == f.Failures {
			f.Signature = fmt.Sprintf("%s on %s connections", class, conn)
		}
	}
}

// outcomesLine is the headline's graded view beside the raw count.
func outcomesLine(f *Figures) string {
	o := f.Outcomes
	if o == nil || o.Failures == 0 {
		return ""
	}
	s := fmt.Sprintf("; graded: %d retryable (429 with Retry-After), %d failed; a client-go GET with its default retries would have lost %d", o.Retryable, o.Failed, o.ClientLost)
	if o.Discounted > 0 {
		s += fmt.Sprintf("; %d inside %d window(s) where the measuring side was unreliable (discounted)", o.Discounted, f.UnreliableWindows)
	}
	return s
}

// readyTolerance is how much earlier than the rollout's ready time a node
// may be taken back and still count as taken back once ready: the ready
// event is the pod's readiness probe, which lags the apiserver's own
// /readyz by up to a probe period, and an LB that holds a node out until
// /readyz passes may take it back within that lag. One health-check
// interval (detection / 3 at the installer's and the lab's unhealthy
// threshold of 2) covers it: a probe period is shorter on both.
func readyTolerance(detection time.Duration) time.Duration { return detection / 3 }
