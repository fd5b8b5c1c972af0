package htmlreport

import (
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

func TestMetricLanesOneLinePerInstanceOnTheRunsAxis(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	sigs := []results.Signal{
		{Kind: results.SignalAPIServerLatency, Source: "scrape", Instance: "master-1", At: at(2), Value: 0.2, Labels: map[string]string{"verb": "GET"}},
		{Kind: results.SignalAPIServerLatency, Source: "scrape", Instance: "master-1", At: at(2), Value: 3, Labels: map[string]string{"verb": "LIST"}},
		{Kind: results.SignalAPIServerLatency, Source: "scrape", Instance: "master-0", At: at(1), Value: 0.1},
		{Kind: results.SignalAPIServerInflight, Source: "scrape", Instance: "master-0", At: at(1), Value: 2, Labels: map[string]string{"request_kind": "readOnly"}},
		{Kind: results.SignalAPIServerInflight, Source: "scrape", Instance: "master-0", At: at(1), Value: 1, Labels: map[string]string{"request_kind": "mutating"}},
		{Kind: results.SignalProcessCPU, Source: "prometheus", Instance: "master-0", At: at(1), Value: 0.5, Labels: map[string]string{"job": "aggregated"}},
	}
	lanes := metricLanes(sigs, t0.UnixMilli())
	if len(lanes) != 3 {
		t.Fatalf("got %d lanes, want latency, in-flight and process CPU: %+v", len(lanes), lanes)
	}
	lat := lanes[0]
	if len(lat.Series) != 2 || lat.Series[0].Instance != "master-0" || lat.Series[1].Instance != "master-1" {
		t.Fatalf("latency series %+v: want master-0 then master-1", lat.Series)
	}
	if s := lat.Series[1]; s.T[0] != 2000 || s.V[0] != 3 {
		t.Errorf("master-1 latency %+v: want 3 s (the highest verb) at 2000 ms", s)
	}
	if v := lanes[1].Series[0].V[0]; v != 3 {
		t.Errorf("in flight %v, want 3 (read-only and mutating summed)", v)
	}
	if n := lanes[2].Series[0].Instance; n != "master-0 aggregated (prometheus)" {
		t.Errorf("process CPU series named %q, want its job and source", n)
	}
}
