package main

import (
	"slices"
	"testing"

	"github.com/repro-tools/repro/diagnose"
	"github.com/repro-tools/repro/metrics"
	"github.com/repro-tools/repro/results"
)

// TestMetricsEtcdStallShowsOnMaster1Only runs the etcd-stall profile with
// the servers' metrics on (the defaults: every apiserver's /metrics
// scraped each second, the lab's Prometheus read after the run) and holds
// them against the profile's prediction: master-1's link to etcd stalls,
// so etcd latency as master-1's apiserver sees it goes up and nobody
// else's does; diagnose's figures say "one apiserver".
func TestMetricsEtcdStallShowsOnMaster1Only(t *testing.T) {
	pr := runProfile(t, "etcd-stall")
	sigs, _, err := results.ReadSignals(pr.dir + "/" + results.SignalsFile)
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]map[results.SignalKind]bool{}
	instances := map[string]bool{}
	for _, s := range sigs {
		if sources[s.Source] == nil {
			sources[s.Source] = map[results.SignalKind]bool{}
		}
		sources[s.Source][s.Kind] = true
		if s.Source == metrics.SourceScrape && s.Kind == results.SignalAPIServerLatency {
			instances[s.Instance] = true
		}
	}
	for _, n := range []string{"master-0", "master-1", "master-2"} {
		if !instances[n] {
			t.Errorf("no scraped latency of %s (scraped: %v)", n, instances)
		}
	}
	for _, k := range []results.SignalKind{results.SignalEtcdRequestLatency, results.SignalProcessCPU} {
		if !sources[metrics.SourcePrometheus][k] {
			t.Errorf("the lab's Prometheus gave no %s (sources: %v)", k, sources)
		}
	}

	fig, err := diagnose.Measure(pr.dir)
	if err != nil {
		t.Fatal(err)
	}
	m := fig.ServerMetrics
	if m == nil {
		t.Fatal("diagnose read no server metrics")
	}
	for _, f := range m.Instances {
		t.Logf("%s %s: baseline %.3f s, peak %.3f s at %s, up %v", f.Instance, f.Kind, f.Baseline, f.Peak, f.At.Format("15:04:05"), f.Up)
	}
	if !slices.Equal(m.EtcdUp, []string{"master-1"}) {
		t.Errorf("etcd latency up on %v, want master-1 only", m.EtcdUp)
	}
	if m.Shape != "one-apiserver" {
		t.Errorf("shape %q, want one-apiserver", m.Shape)
	}

	run := readRun(t, pr.dir)
	t.Logf("metrics cost: %+v", run.Extra.Metrics)
	if run.Extra.Metrics == nil {
		t.Error("run.json records no metrics cost")
	}
}
