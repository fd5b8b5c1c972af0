package scenarios

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/metrics"
	"github.com/repro-tools/repro/results"
	"github.com/repro-tools/repro/trigger"
	"github.com/repro-tools/repro/vantage"
)

// Default scrape intervals. A live apiserver's /metrics is megabytes,
// scraped through the API. The lab's Prometheus already scrapes the same
// apiservers every second, so repro's own scrape there only adds the
// per-instance view and need not repeat it at the same rate on a machine
// the lab's processes share.
const (
	labScrapeInterval  = 2 * time.Second
	liveScrapeInterval = 2 * time.Second
)

// MetricsPlan is how a run reads the apiservers' own metrics.
type MetricsPlan struct {
	// Interval is the time between two scrapes of each apiserver's
	// /metrics: 0 is the default (labScrapeInterval, liveScrapeInterval),
	// a negative one scrapes nothing.
	Interval time.Duration
	// Monitoring reads etcd's and the control-plane nodes' metrics from
	// the cluster's monitoring (or the lab's Prometheus) after the run.
	Monitoring bool
}

// metricsRun is one run's metrics collection.
type metricsRun struct {
	plan   *MetricsPlan
	lab    *lab.Lab
	folder *results.Folder
	log    *zap.Logger
	report metrics.Report
}

// setupMetrics hooks the scraper into the session (started once the
// checks passed, beside the pollers) and adds what it reads to the checked
// permissions.
func setupMetrics(s *Session, l *lab.Lab, folder *results.Folder, m *MetricsPlan, log *zap.Logger) *metricsRun {
	mr := &metricsRun{plan: m, lab: l, folder: folder, log: log}
	if m.Interval < 0 {
		return mr
	}
	iv := m.Interval
	if iv == 0 {
		iv = liveScrapeInterval
		if l != nil {
			iv = labScrapeInterval
		}
	}
	if l == nil {
		s.ExtraPermissions = append(s.ExtraPermissions, trigger.MetricsPermissions...)
	}
	mr.report.Interval = iv.String()
	s.DuringRun = func(ctx context.Context) func() {
		targets, err := mr.targets(ctx, s)
		if err != nil {
			log.Warn("the apiservers' own metrics are not scraped", zap.Error(err))
			return func() {}
		}
		stop, err := metrics.StartScraping(ctx, &metrics.Scraper{Targets: targets, Interval: iv, Config: s.Target.Config}, folder, log)
		if err != nil {
			log.Warn("the apiservers' own metrics are not scraped", zap.Error(err))
			return func() {}
		}
		return func() {
			st := stop()
			mr.report.Scrape = &st
		}
	}
	return mr
}

// targets are every apiserver by its own address: the direct vantage.
func (mr *metricsRun) targets(ctx context.Context, s *Session) ([]metrics.Target, error) {
	var out []metrics.Target
	if mr.lab != nil {
		for _, n := range mr.lab.Nodes() {
			out = append(out, metrics.Target{Instance: n.Name(), URL: n.URL()})
		}
		return out, nil
	}
	c, err := vantage.NewClients(s.Target.Config)
	if err != nil {
		return nil, err
	}
	ts, err := vantage.Resolve(ctx, c, s.Target.Config.Host, []string{vantage.Direct})
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		out = append(out, metrics.Target{Instance: t.Node, URL: t.URL, ServerName: t.ServerName})
	}
	return out, nil
}

// finish reads the monitoring over the run's window into the folder,
// closes the signals and records what it all cost in run.json.
func (mr *metricsRun) finish(ctx context.Context, out io.Writer, s *Session, run *results.Run) {
	defer func() {
		if err := mr.folder.CloseSignals(); err != nil {
			mr.log.Warn("closing signals.jsonl", zap.Error(err))
		}
		rep := mr.report
		run.Extra.Metrics = &rep
		if err := mr.folder.WriteRun(run); err != nil {
			mr.log.Warn("recording the metrics' cost in run.json", zap.Error(err))
		}
	}()
	if !mr.plan.Monitoring || run.End == nil {
		return
	}
	start, end := run.Start, *run.End
	if mr.lab != nil {
		if u := mr.lab.PrometheusURL(); u != "" {
			mr.query(ctx, "lab", u, nil, metrics.LabQueries(), start, end, metrics.LabStep)
		}
		return
	}
	addr, rt, err := metrics.ClusterMonitoring(ctx, s.Target.Config)
	if err != nil {
		mr.report.NotRead = err.Error()
		fmt.Fprintf(out, "cluster monitoring not read: %v\n", err)
		return
	}
	// The rate windows reach a minute back: start a minute early.
	mr.query(ctx, addr, addr, rt, metrics.ClusterQueries(), start.Add(-time.Minute), end, metrics.ClusterStep)
}

func (mr *metricsRun) query(ctx context.Context, name, addr string, rt http.RoundTripper, qs []metrics.Query, start, end time.Time, step time.Duration) {
	cost, errs := metrics.QueryInto(ctx, mr.folder, addr, rt, qs, start, end, step)
	mr.report.Monitoring, mr.report.Query = name, &cost
	for _, e := range errs {
		mr.report.QueryErrors = append(mr.report.QueryErrors, e.Error())
	}
	if len(errs) > 0 {
		mr.log.Warn("some monitoring queries failed", zap.String("monitoring", name), zap.Errors("errors", errs))
	}
	mr.log.Info("monitoring read", zap.String("monitoring", name), zap.Int("queries", cost.Queries), zap.Duration("took", cost.Elapsed), zap.Int64("bytes", cost.Bytes))
}
