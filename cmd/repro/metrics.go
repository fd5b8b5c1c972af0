package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/repro-tools/repro/scenarios"
)

// metricsFlags are run's flags for the servers' own metrics.
type metricsFlags struct {
	interval   time.Duration
	monitoring bool
}

func (m *metricsFlags) bind(f *pflag.FlagSet) {
	f.DurationVar(&m.interval, "metrics-interval", 0, "scrape each apiserver's own /metrics this often during the run (default 2s; the lab's Prometheus also scrapes every 1s; negative: no scraping)")
	f.BoolVar(&m.monitoring, "monitoring", true, "after the run, read etcd's and the control-plane nodes' metrics from the cluster's monitoring (needs a token with cluster-monitoring-view), or the lab's Prometheus")
}

// plan is the run's metrics evidence.
func (m *metricsFlags) plan() *scenarios.MetricsPlan {
	return &scenarios.MetricsPlan{Interval: m.interval, Monitoring: m.monitoring}
}
