package lab

import (
	"context"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/repro-tools/repro/lab/promserver"
)

// PrometheusInterval is how often the lab's Prometheus scrapes: every
// second, finer than the 4-7 s gaps the lab reproduces (OpenShift's own
// monitoring scrapes every 30 s).
const PrometheusInterval = time.Second

// startPrometheus runs the lab's Prometheus (Options.Prometheus): it
// scrapes every apiserver, every aggregated replica and etcd, each
// apiserver and replica labelled with its node, with the lab's admin client
// certificate (system:masters may read /metrics).
func (l *Lab) startPrometheus(ctx context.Context, bin string) error {
	admin := func(name string) promserver.Job {
		return promserver.Job{Name: name, Scheme: "https", CAFile: l.pki.CACert, CertFile: l.pki.AdminCert, KeyFile: l.pki.AdminKey}
	}
	api := admin("apiserver")
	for _, n := range l.nodes {
		api.Targets = append(api.Targets, promserver.Target{Addr: n.addr(), Labels: map[string]string{"node": n.name}})
	}
	jobs := []promserver.Job{api, {Name: "etcd", Scheme: "http", Targets: []promserver.Target{{Addr: l.etcd.addr()}}}}
	// One job for every aggregated replica (Prometheus refuses two jobs of
	// one name); the group label tells openshift-apiserver from oauth's.
	agg := admin("aggregated")
	for _, r := range l.aggr.replicas {
		agg.Targets = append(agg.Targets, promserver.Target{Addr: r.Addr(), Labels: map[string]string{"node": r.NodeName(), "group": r.Group()}})
	}
	if len(agg.Targets) > 0 {
		jobs = append(jobs, agg)
	}
	ps, err := promserver.Start(ctx, promserver.Options{Binary: bin, Dir: filepath.Join(l.dir, "prometheus"), Interval: PrometheusInterval, Jobs: jobs})
	if err != nil {
		return err
	}
	l.prom = ps
	l.log.Info("prometheus is ready", zap.String("url", ps.URL()))
	return nil
}

// PrometheusURL is the lab's Prometheus, "" when it runs none.
func (l *Lab) PrometheusURL() string {
	if l.prom == nil {
		return ""
	}
	return l.prom.URL()
}

func (l *Lab) stopPrometheus() error {
	if l.prom == nil {
		return nil
	}
	return l.prom.Stop()
}
