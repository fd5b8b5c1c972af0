package promserver

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/repro-tools/repro/lab/binaries"
	"github.com/repro-tools/repro/lab/pki"
	"github.com/repro-tools/repro/metrics"
	"github.com/repro-tools/repro/results"
)

func TestConfigNamesEveryTargetWithItsTLS(t *testing.T) {
	b, err := Config(Options{Interval: time.Second, Jobs: []Job{
		{Name: "apiserver", Scheme: "https", CAFile: "/pki/ca.crt", CertFile: "/pki/admin.crt", KeyFile: "/pki/admin.key",
			Targets: []Target{{Addr: "127.0.0.1:6443", Labels: map[string]string{"node": "master-1"}}}},
		{Name: "etcd", Targets: []Target{{Addr: "127.0.0.1:2379"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"scrape_interval: 1s", "job_name: apiserver", "ca_file: /pki/ca.crt", "cert_file: /pki/admin.crt", "node: master-1", "job_name: etcd", "scheme: http\n", "127.0.0.1:2379"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config lacks %q:\n%s", want, b)
		}
	}
}

// TestRealPrometheusScrapesAndTheQuerierReadsIt starts the Prometheus the
// lab builds against a real /metrics (client_golang's own handler, served
// over the lab's TLS to its admin client certificate) and reads the series
// back through metrics.Querier, the code that reads a
// cluster's thanos-querier. The binary is built on first use (repro lab
// build builds it up front).
func TestRealPrometheusScrapesAndTheQuerierReadsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts Prometheus")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bin, err := binaries.Ensure(ctx, binaries.Prometheus, binaries.Options{Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	etcd := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "etcd_request_duration_seconds", Help: "h",
		Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1, 2, 4, 8}}, []string{"operation", "type"})
	cpu := prometheus.NewCounter(prometheus.CounterOpts{Name: "process_cpu_seconds_total", Help: "h"})
	reg.MustRegister(etcd, cpu)
	// Observations keep arriving while Prometheus scrapes: slow etcd
	// requests, so p99 sits in the 2-4 s bucket.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				etcd.WithLabelValues("get", "pods").Observe(3)
				cpu.Add(0.01)
			}
		}
	}()
	// Served as the lab's apiservers serve: its serving certificate, and
	// only to a client certificate of its CA (the lab's admin), which is
	// what the lab's Prometheus presents.
	bundle, err := pki.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	serving, err := tls.LoadX509KeyPair(bundle.ServingCert, bundle.ServingKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: bundle.CAPool}
	srv.StartTLS()
	defer srv.Close()
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))

	ps, err := Start(ctx, Options{Binary: bin, Dir: t.TempDir(), Interval: time.Second, Jobs: []Job{
		{Name: "apiserver", Scheme: "https", CAFile: bundle.CACert, CertFile: bundle.AdminCert, KeyFile: bundle.AdminKey,
			Targets: []Target{{Addr: net.JoinHostPort(host, port), Labels: map[string]string{"node": "master-1"}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Stop()

	q, err := metrics.NewQuerier(ps.URL(), http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var sigs []results.Signal
	var cost metrics.Cost
	// The first rate needs two scrapes inside its window: ask until the
	// answer has points (bounded by ctx).
	for ctx.Err() == nil {
		time.Sleep(time.Second)
		var errs []error
		sigs, cost, errs = q.Collect(ctx, metrics.LabQueries(), start.Add(-10*time.Second), time.Now(), metrics.LabStep)
		if len(errs) > 0 {
			t.Fatalf("queries failed: %v", errs)
		}
		if hasKind(sigs, results.SignalEtcdRequestLatency) && hasKind(sigs, results.SignalProcessCPU) {
			break
		}
	}
	t.Logf("%d signals; cost %+v", len(sigs), cost)
	if cost.Queries != len(metrics.LabQueries()) || cost.Bytes == 0 {
		t.Errorf("cost %+v: want every query counted with its bytes", cost)
	}
	for _, s := range sigs {
		if s.Source != metrics.SourcePrometheus || s.Instance != "master-1" {
			t.Errorf("signal %+v: want source prometheus, instance master-1 (the target's node label)", s)
		}
		if s.Kind == results.SignalEtcdRequestLatency && (s.Value < 2 || s.Value > 4) {
			t.Errorf("etcd p99 %v, want within the 2-4 s bucket", s.Value)
		}
	}
}

func hasKind(sigs []results.Signal, k results.SignalKind) bool {
	for _, s := range sigs {
		if s.Kind == k {
			return true
		}
	}
	return false
}
