package metrics

import (
	"context"
	"encoding/pem"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/results"
)

// apiserverMetrics is a real client_golang registry exposing the families
// an apiserver does, under their names and labels.
type apiserverMetrics struct {
	reg        *prometheus.Registry
	latency    *prometheus.HistogramVec
	etcd       *prometheus.HistogramVec
	inflight   *prometheus.GaugeVec
	inqueue    *prometheus.GaugeVec
	rejected   *prometheus.CounterVec
	terminated *prometheus.CounterVec
}

func newAPIServerMetrics() *apiserverMetrics {
	buckets := []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60}
	m := &apiserverMetrics{
		reg:        prometheus.NewRegistry(),
		latency:    prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "apiserver_request_duration_seconds", Help: "h", Buckets: buckets}, []string{"verb", "resource", "scope"}),
		etcd:       prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "etcd_request_duration_seconds", Help: "h", Buckets: buckets}, []string{"operation", "type"}),
		inflight:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "apiserver_current_inflight_requests", Help: "h"}, []string{"request_kind"}),
		inqueue:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "apiserver_flowcontrol_current_inqueue_requests", Help: "h"}, []string{"priority_level", "flow_schema"}),
		rejected:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_flowcontrol_rejected_requests_total", Help: "h"}, []string{"priority_level", "reason"}),
		terminated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_terminated_watchers_total", Help: "h"}, []string{"resource"}),
	}
	m.reg.MustRegister(m.latency, m.etcd, m.inflight, m.inqueue, m.rejected, m.terminated)
	// A family the scrape must drop.
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "apiserver_request_total", Help: "h"})
	m.reg.MustRegister(other)
	other.Add(5)
	return m
}

func TestScraperTurnsScrapesIntoSignals(t *testing.T) {
	m := newAPIServerMetrics()
	var mu sync.Mutex
	scrapes := 0
	var auth string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		scrapes++
		n := scrapes
		auth = r.Header.Get("Authorization")
		mu.Unlock()
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		// Between scrapes the server sees traffic: 100 GETs, 99 fast and
		// one slow, and a slow etcd on the third scrape's interval.
		if n >= 2 {
			for i := 0; i < 99; i++ {
				m.latency.WithLabelValues("GET", "pods", "namespace").Observe(0.01)
			}
			m.latency.WithLabelValues("GET", "pods", "namespace").Observe(3)
			m.latency.WithLabelValues("WATCH", "pods", "namespace").Observe(50)
			etcd := 0.002
			if n == 3 {
				etcd = 4
			}
			for i := 0; i < 10; i++ {
				m.etcd.WithLabelValues("get", "pods").Observe(etcd)
			}
			m.rejected.WithLabelValues("global-default", "queue-full").Add(2)
			m.terminated.WithLabelValues("pods").Add(1)
		}
		m.inflight.WithLabelValues("readOnly").Set(7)
		m.inflight.WithLabelValues("mutating").Set(1)
		m.inqueue.WithLabelValues("workload-low", "a").Set(2)
		m.inqueue.WithLabelValues("global-default", "b").Set(3)
		promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := &rest.Config{Host: srv.URL, BearerToken: "secret-token", TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}

	var got []results.Signal
	var gmu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scraper{Targets: []Target{{Instance: "master-1", URL: srv.URL, ServerName: "example.com"}}, Interval: 300 * time.Millisecond, Config: cfg}
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, func(sg results.Signal) {
			gmu.Lock()
			got = append(got, sg)
			gmu.Unlock()
			mu.Lock()
			n := scrapes
			mu.Unlock()
			if n >= 4 {
				cancel()
			}
		})
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if auth != "Bearer secret-token" {
		t.Errorf("the scrape sent Authorization %q, want the config's bearer token", auth)
	}
	mu.Unlock()
	st := s.Stats()
	if st.Scrapes < 3 || st.Failures != 0 || st.Bytes == 0 {
		t.Fatalf("stats %+v: want 3+ scrapes, no failure, bytes counted", st)
	}
	byKind := map[results.SignalKind][]results.Signal{}
	for _, sg := range got {
		if sg.Instance != "master-1" || sg.Source != SourceScrape {
			t.Fatalf("signal %+v: want instance master-1, source scrape", sg)
		}
		byKind[sg.Kind] = append(byKind[sg.Kind], sg)
	}
	for _, sg := range byKind[results.SignalAPIServerLatency] {
		if sg.Labels["verb"] == "WATCH" {
			t.Errorf("a WATCH latency was kept: %+v", sg)
		}
		// 100 observations, the 99th-percentile rank (99) falls at the
		// top of the 0.005-0.025 bucket holding the 99 fast ones.
		if sg.Labels["verb"] != "GET" || math.Abs(sg.Value-0.025) > 1e-9 {
			t.Errorf("latency %+v: want GET p99 0.025", sg)
		}
	}
	if len(byKind[results.SignalAPIServerLatency]) == 0 {
		t.Fatalf("no latency signal in %+v", got)
	}
	var etcdMax float64
	for _, sg := range byKind[results.SignalEtcdRequestLatency] {
		etcdMax = math.Max(etcdMax, sg.Value)
	}
	if etcdMax < 3 || etcdMax > 4 {
		t.Errorf("etcd p99 peaked at %v, want within the 3-4 s bucket", etcdMax)
	}
	for _, sg := range byKind[results.SignalAPFQueued] {
		if sg.Value != 5 {
			t.Errorf("APF queued %v, want 5 (summed over priority levels)", sg.Value)
		}
	}
	if len(byKind[results.SignalAPIServerInflight]) < 2 || len(byKind[results.SignalAPFRejected]) == 0 || len(byKind[results.SignalWatchTerminated]) == 0 {
		t.Errorf("missing kinds: %v", byKind)
	}
	for _, sg := range byKind[results.SignalAPFRejected] {
		if sg.Value <= 0 {
			t.Errorf("rejections per second %v, want positive", sg.Value)
		}
	}
}

func TestScraperRecordsAFailedScrape(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			// It answered once: its later failures are evidence.
			promhttp.HandlerFor(newAPIServerMetrics().reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
			return
		}
		http.Error(w, "the server is shutting down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
	ctx, cancel := context.WithCancel(context.Background())
	var got results.Signal
	s := &Scraper{Targets: []Target{{Instance: "master-0", URL: srv.URL, ServerName: "example.com"}}, Interval: 20 * time.Millisecond, Config: cfg}
	if err := s.Run(ctx, func(sg results.Signal) {
		if sg.Kind == results.SignalScrapeFailed {
			got = sg
			cancel()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if got.Kind != results.SignalScrapeFailed || got.Message == "" {
		t.Fatalf("got %+v, want a scrape-failed signal saying why", got)
	}
}

func TestQuantileFollowsHistogramQuantile(t *testing.T) {
	h := map[float64]float64{0.1: 50, 0.2: 90, 0.4: 100, math.Inf(1): 100}
	for _, c := range []struct{ q, want float64 }{{0.5, 0.1}, {0.7, 0.15}, {0.95, 0.3}, {0.25, 0.05}} {
		got, ok := Quantile(c.q, h)
		if !ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Quantile(%v) = %v, %v; want %v", c.q, got, ok, c.want)
		}
	}
	inInf := map[float64]float64{1: 1, math.Inf(1): 10}
	if got, _ := Quantile(0.99, inInf); got != 1 {
		t.Errorf("a quantile in +Inf = %v, want the highest finite bound 1", got)
	}
	if _, ok := Quantile(0.99, map[float64]float64{math.Inf(1): 0}); ok {
		t.Error("an empty histogram gave a quantile")
	}
}

func TestScraperSaysOnceThatATargetWasNeverReachable(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden: User cannot get path /metrics", http.StatusForbidden)
	}))
	defer srv.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
	s := &Scraper{Targets: []Target{{Instance: "master-0", URL: srv.URL, ServerName: "example.com"}}, Interval: 20 * time.Millisecond, Config: cfg}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for s.Stats().Scrapes < 3 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	var got []results.Signal
	if err := s.Run(ctx, func(sg results.Signal) { got = append(got, sg) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 || s.Stats().Failures < 3 {
		t.Fatalf("signals %+v, stats %+v: want none recorded, every failure counted", got, s.Stats())
	}
}
