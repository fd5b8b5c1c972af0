package main

import (
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

// TestProfileAggregatedEtcdStall: the aggregated servers' own etcd link
// stalls on master-1 (both groups' replicas there), the kube-apiservers'
// links do not. Prediction (fast scale, restated from the profile): the
// aggregator sends about a third of openshift-api and oauth-api requests to
// master-1's stalled replicas until they leave their Services' endpoints
// (their etcd readiness check times out after 2 s, then the 1 s readiness
// probe sees it), so those requests time out on headers (2.72 s); kube-api
// requests never reach these servers and never fail. The window's length is
// set by the check timeout and the probe, not by the 6 s stall, so no
// poller loses more than the stall.
func TestProfileAggregatedEtcdStall(t *testing.T) {
	pr := runProfile(t, "aggregated-etcd-stall")
	var stalls int
	var from, to time.Time
	for _, f := range pr.faults {
		if f.Fault == "aggregated-etcd-stall" {
			stalls++
			from, to = f.From, f.To
			if f.Node != "master-1" || len(f.Nodes) != 2 {
				t.Errorf("stall %+v, want master-1's two replicas' links", f)
			}
		}
	}
	if stalls != 1 {
		t.Fatalf("fault windows %+v, want one aggregated-etcd-stall", pr.faults)
	}
	aggFailures := int64(0)
	for _, p := range pr.a.Pollers {
		switch {
		case strings.Contains(p.Backend, "kube-api"):
			if p.Failures > 0 {
				t.Errorf("%s: %d failures %v; kube-api requests never reach the aggregated servers", p.Name, p.Failures, p.Classes)
			}
		case strings.Contains(p.Backend, "openshift-api"), strings.Contains(p.Backend, "oauth-api"):
			aggFailures += p.Classes[results.ClassHeaderTimeout]
			if p.Disrupted > to.Sub(from)+time.Second {
				t.Errorf("%s: %v disrupted, more than the %v stall", p.Name, p.Disrupted, to.Sub(from))
			}
		}
	}
	if aggFailures == 0 {
		t.Errorf("no header timeouts on openshift-api or oauth-api: the stalled replicas were never routed to")
	}
	for _, iv := range pr.a.Intervals {
		if iv.Class == results.ClassHeaderTimeout && (iv.From.Before(from.Add(-interval)) || iv.From.After(to)) {
			t.Errorf("%s: header timeout at %s outside the stall %s-%s", iv.Name, iv.From.Format("15:04:05.000"), from.Format("15:04:05.000"), to.Format("15:04:05.000"))
		}
	}
	// Anything else is the healthy lab's cost around a kube-apiserver's
	// restart (a 429 at a listener's close, AWS's connection termination).
	onlyClasses(t, pr, append([]results.ErrorClass{results.ClassHeaderTimeout, results.ClassHTTP429}, terminated...)...)
}
