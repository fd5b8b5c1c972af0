// Package metrics is the servers' own view of a run: each kube-apiserver's
// /metrics scraped every second or two during the run (OpenShift's
// monitoring scrapes every 30 s, too coarse for a gap of a few seconds), and
// after the run what repro cannot scrape itself (etcd's own metrics, the
// control-plane nodes' CPU) read from a Prometheus: the cluster's
// thanos-querier, or the lab's own Prometheus. Both become results.Signal
// lines in the results folder's signals.jsonl, which the report draws and
// diagnose reads (Figures).
//
// What is collected follows what TRT's disruption analysis reads around a
// gap (openshift-eng/ai-helpers plugins/ci/skills/analyze-disruption,
// SKILL.md "Signal Interpretation Reference": etcd disk commit duration,
// slow fdatasync, CPU, alerts) and the apiserver's own SLI metrics
// (kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/metrics).
package metrics

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/results"
)

// SourceScrape is the Signal.Source of repro's own scrapes.
const SourceScrape = "scrape"

// MaxScrapeBytes bounds one /metrics body. A large cluster's apiserver
// exposes tens of megabytes (apiserver_request_duration_seconds alone is
// verbs x resources x buckets); anything past the bound is cut and the
// scrape counted as failed.
const MaxScrapeBytes = 256 << 20

// ScrapeTimeout is the least time one scrape is given: a large cluster's
// apiserver takes seconds to write its whole /metrics.
const ScrapeTimeout = 5 * time.Second

// Families are the metric families a scrape keeps; every other line of the
// exposition is dropped before parsing, which keeps a scrape's memory to
// these families.
var Families = []string{
	"apiserver_request_duration_seconds",
	"apiserver_current_inflight_requests",
	"apiserver_flowcontrol_current_inqueue_requests",
	"apiserver_flowcontrol_rejected_requests_total",
	"apiserver_terminated_watchers_total",
	"etcd_request_duration_seconds",
	"process_cpu_seconds_total",
}

// longRunning are the verbs whose durations are a watch's or a stream's
// lifetime, not a request's latency; the apiserver's own latency SLI leaves
// them out the same way (kubernetes
// staging/src/k8s.io/apiserver/pkg/endpoints/metrics: the SLO histogram
// excludes WATCH and CONNECT).
var longRunning = map[string]bool{"WATCH": true, "WATCHLIST": true, "CONNECT": true, "PROXY": true}

// Target is one server scraped: an apiserver by its own address.
type Target struct {
	// Instance names it in the signals (the node's name).
	Instance string
	// URL is its base URL; /metrics is appended.
	URL string
	// ServerName, when set, is the name its certificate is verified
	// against (the cluster's API host name for an apiserver reached by IP).
	ServerName string
}

// Scraper scrapes each target's /metrics every Interval and turns
// consecutive scrapes into signals.
type Scraper struct {
	Targets  []Target
	Interval time.Duration
	// Config gives the credentials and the CA; each target gets a copy with
	// its ServerName.
	Config *rest.Config
	Log    *zap.Logger

	mu    sync.Mutex
	stats Stats
}

// Stats is what scraping cost and found.
type Stats = results.ScrapeCounts

// Stats returns the counters so far.
func (s *Scraper) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Run scrapes until ctx ends, handing every signal to emit (from one
// goroutine per target; emit must be safe for concurrent use).
func (s *Scraper) Run(ctx context.Context, emit func(results.Signal)) error {
	if s.Interval <= 0 {
		return errors.New("metrics: the scrape interval must be positive")
	}
	if s.Log == nil {
		s.Log = zap.NewNop()
	}
	var wg sync.WaitGroup
	for _, t := range s.Targets {
		hc, err := s.client(t)
		if err != nil {
			return fmt.Errorf("metrics: a client for %s: %w", t.Instance, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.loop(ctx, t, hc, emit)
		}()
	}
	wg.Wait()
	return nil
}

func (s *Scraper) client(t Target) (*http.Client, error) {
	cfg := rest.CopyConfig(s.Config)
	if t.ServerName != "" {
		cfg.TLSClientConfig.ServerName = t.ServerName
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	// Scrapes of one target never overlap (the loop waits for each, and the
	// ticker drops the ticks it missed), so a slow /metrics, itself
	// evidence, is given a few intervals before it counts as failed.
	timeout := 5 * s.Interval
	if timeout < ScrapeTimeout {
		timeout = ScrapeTimeout
	}
	return &http.Client{Transport: rt, Timeout: timeout}, nil
}

func (s *Scraper) loop(ctx context.Context, t Target, hc *http.Client, emit func(results.Signal)) {
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	st := newState(t.Instance)
	// A target never scraped successfully (unreachable from here, or no
	// permission) is said once, not recorded every interval: its failures
	// tell nothing about the run.
	succeeded, warned := false, false
	for {
		at := time.Now()
		fams, n, err := scrapeOnce(ctx, hc, strings.TrimSuffix(t.URL, "/")+"/metrics")
		if ctx.Err() != nil {
			// The run ended mid-scrape: not the server's failure.
			return
		}
		s.mu.Lock()
		s.stats.Scrapes++
		s.stats.Bytes += n
		if err != nil {
			s.stats.Failures++
		}
		s.mu.Unlock()
		var sigs []results.Signal
		switch {
		case err != nil && !succeeded:
			if !warned {
				warned = true
				s.Log.Warn("cannot scrape this apiserver's /metrics; its metrics are missing until a scrape succeeds", zap.String("instance", t.Instance), zap.Error(err))
			}
		case err != nil:
			// A server that stopped answering its /metrics is evidence too.
			sigs = []results.Signal{{Kind: results.SignalScrapeFailed, Source: SourceScrape, Instance: t.Instance, At: at, Value: 1, Message: capMessage(err.Error())}}
			s.Log.Debug("scrape failed", zap.String("instance", t.Instance), zap.Error(err))
		default:
			succeeded = true
			sigs = st.observe(at, fams)
		}
		for _, sg := range sigs {
			emit(sg)
		}
		s.mu.Lock()
		s.stats.Signals += int64(len(sigs))
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func capMessage(m string) string {
	if len(m) > 300 {
		return m[:300] + "..."
	}
	return m
}

// scrapeOnce reads one /metrics, keeping only Families.
func scrapeOnce(ctx context.Context, hc *http.Client, url string) (map[string]*dto.MetricFamily, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	// The text format: what the filter below reads line by line.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, int64(len(b)), fmt.Errorf("GET /metrics: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	cr := &countingReader{r: io.LimitReader(resp.Body, MaxScrapeBytes+1)}
	fams, err := Parse(cr)
	if cr.n > MaxScrapeBytes {
		return nil, cr.n, fmt.Errorf("GET /metrics: the body is over %d bytes", MaxScrapeBytes)
	}
	return fams, cr.n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Parse reads a text exposition keeping only Families, with
// prometheus/common's own parser.
func Parse(r io.Reader) (map[string]*dto.MetricFamily, error) {
	var kept bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		name := line
		if bytes.HasPrefix(line, []byte("# HELP ")) || bytes.HasPrefix(line, []byte("# TYPE ")) {
			name = line[7:]
		} else if len(line) > 0 && line[0] == '#' {
			continue
		}
		if wanted(name) {
			kept.Write(line)
			kept.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(&kept)
}

func wanted(line []byte) bool {
	for _, f := range Families {
		if bytes.HasPrefix(line, []byte(f)) {
			rest := line[len(f):]
			// The family itself, or its histogram/summary series.
			if len(rest) == 0 || rest[0] == ' ' || rest[0] == '{' ||
				bytes.HasPrefix(rest, []byte("_bucket")) || bytes.HasPrefix(rest, []byte("_sum")) || bytes.HasPrefix(rest, []byte("_count")) {
				return true
			}
		}
	}
	return false
}

// histogram is cumulative bucket counts by upper bound.
type histogram map[float64]float64

// state is one target's previous scrape, what the next is compared with.
type state struct {
	instance string
	at       time.Time
	latency  map[string]histogram // by verb
	etcd     histogram
	counters map[string]float64 // rejected, terminated watches, process CPU
}

func newState(instance string) *state { return &state{instance: instance} }

// observe turns one scrape into signals: gauges as they are, counters and
// histograms as the change since the previous scrape (nothing on the first).
func (st *state) observe(at time.Time, fams map[string]*dto.MetricFamily) []results.Signal {
	sig := func(kind results.SignalKind, v float64, labels map[string]string) results.Signal {
		return results.Signal{Kind: kind, Source: SourceScrape, Instance: st.instance, At: at, Value: v, Labels: labels}
	}
	var out []results.Signal
	// Gauges.
	if f := fams["apiserver_current_inflight_requests"]; f != nil {
		by := map[string]float64{}
		for _, m := range f.Metric {
			by[label(m, "request_kind")] += m.GetGauge().GetValue()
		}
		for _, k := range sortedKeys(by) {
			out = append(out, sig(results.SignalAPIServerInflight, by[k], map[string]string{"request_kind": k}))
		}
	}
	if f := fams["apiserver_flowcontrol_current_inqueue_requests"]; f != nil {
		var sum float64
		for _, m := range f.Metric {
			sum += m.GetGauge().GetValue()
		}
		out = append(out, sig(results.SignalAPFQueued, sum, nil))
	}

	latency := map[string]histogram{}
	if f := fams["apiserver_request_duration_seconds"]; f != nil {
		for _, m := range f.Metric {
			verb := label(m, "verb")
			if longRunning[verb] {
				continue
			}
			h := latency[verb]
			if h == nil {
				h = histogram{}
				latency[verb] = h
			}
			addBuckets(h, m)
		}
	}
	etcd := histogram{}
	if f := fams["etcd_request_duration_seconds"]; f != nil {
		for _, m := range f.Metric {
			addBuckets(etcd, m)
		}
	}
	counters := map[string]float64{}
	sumCounter := func(name string) {
		if f := fams[name]; f != nil {
			for _, m := range f.Metric {
				counters[name] += m.GetCounter().GetValue()
			}
		}
	}
	sumCounter("apiserver_flowcontrol_rejected_requests_total")
	sumCounter("apiserver_terminated_watchers_total")
	sumCounter("process_cpu_seconds_total")

	if !st.at.IsZero() {
		dt := at.Sub(st.at).Seconds()
		for _, verb := range sortedKeys(latency) {
			if q, ok := deltaQuantile(0.99, latency[verb], st.latency[verb]); ok {
				out = append(out, sig(results.SignalAPIServerLatency, q, map[string]string{"verb": verb, "quantile": "0.99"}))
			}
		}
		if q, ok := deltaQuantile(0.99, etcd, st.etcd); ok {
			out = append(out, sig(results.SignalEtcdRequestLatency, q, map[string]string{"quantile": "0.99"}))
		}
		for name, kind := range map[string]results.SignalKind{
			"apiserver_flowcontrol_rejected_requests_total": results.SignalAPFRejected,
			"apiserver_terminated_watchers_total":           results.SignalWatchTerminated,
			"process_cpu_seconds_total":                     results.SignalProcessCPU,
		} {
			cur, ok := counters[name]
			if !ok || dt <= 0 {
				continue
			}
			d := cur - st.counters[name]
			if d < 0 {
				// The server restarted (a rollout): its counters began again.
				d = cur
			}
			out = append(out, sig(kind, d/dt, nil))
		}
	}
	st.at, st.latency, st.etcd, st.counters = at, latency, etcd, counters
	sort.SliceStable(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

func addBuckets(h histogram, m *dto.Metric) {
	inf := false
	for _, b := range m.GetHistogram().GetBucket() {
		h[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		inf = inf || math.IsInf(b.GetUpperBound(), 1)
	}
	if !inf {
		// The +Inf bucket is the series' count when not written out.
		h[math.Inf(1)] += float64(m.GetHistogram().GetSampleCount())
	}
}

// deltaQuantile is the q-quantile of the observations between prev and cur
// (cur alone when the server restarted in between), interpolated within a
// bucket the way PromQL's histogram_quantile does; false when nothing was
// observed.
func deltaQuantile(q float64, cur, prev histogram) (float64, bool) {
	if len(cur) == 0 {
		return 0, false
	}
	d := histogram{}
	reset := false
	for le, c := range cur {
		v := c - prev[le]
		if v < 0 {
			reset = true
		}
		d[le] = v
	}
	if reset {
		d = cur
	}
	return Quantile(q, d)
}

// Quantile is histogram_quantile over cumulative buckets by upper bound
// (PromQL's rules: linear within a bucket, the lowest bucket starting at 0,
// the highest finite bound when the quantile falls in +Inf).
func Quantile(q float64, h map[float64]float64) (float64, bool) {
	bounds := make([]float64, 0, len(h))
	for le := range h {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return 0, false
	}
	total := h[bounds[len(bounds)-1]]
	if total <= 0 {
		return 0, false
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for i, le := range bounds {
		c := h[le]
		if c >= rank {
			if math.IsInf(le, 1) {
				if i == 0 {
					return 0, false
				}
				return bounds[i-1], true
			}
			if c == prevCount {
				return le, true
			}
			return prevBound + (le-prevBound)*(rank-prevCount)/(c-prevCount), true
		}
		prevBound, prevCount = le, c
	}
	return bounds[len(bounds)-1], true
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
