package prober_test

import (
	"context"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/repro-tools/repro/prober"
)

// BenchmarkSchedule runs 6 pollers (3 backends x new/reused) at 100 Hz each
// for 3 s against a local TLS server and reports the achieved rate as a
// share of the requested one, the start lag against the absolute schedule,
// and skipped ticks. It measures rather than asserts: wall-clock figures
// depend on the machine. Run with -benchtime 1x.
func BenchmarkSchedule(b *testing.B) {
	const (
		interval = 10 * time.Millisecond
		duration = 3 * time.Second
	)
	ts := newTestServer(b, false)
	backends, err := prober.LookupBackends([]string{"kube-api", "openshift-api", "oauth-api"})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		p, err := prober.New(ts.restConfig(), prober.WithBackends(backends...),
			prober.WithInterval(interval), prober.WithProbeTimeout(2*time.Second), prober.WithDuration(duration))
		if err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		var lags []time.Duration
		var n, failed int
		ch := p.Run(context.Background())
		for s := range ch {
			n++
			if !s.OK() {
				failed++
			}
			lags = append(lags, s.Start.Sub(p.TickTime(s.Name(), s.Seq)))
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		p.Close()
		var skipped int64
		for _, st := range p.Stats() {
			skipped += st.SkippedTicks
		}
		requested := 6 * int(duration/interval)
		sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
		pct := func(q float64) float64 {
			return float64(lags[int(q*float64(len(lags)-1))]) / float64(time.Millisecond)
		}
		b.ReportMetric(100*float64(n)/float64(requested), "%-of-requested-rate")
		b.ReportMetric(float64(n)/duration.Seconds(), "samples/s")
		b.ReportMetric(float64(skipped), "skipped-ticks")
		b.ReportMetric(float64(failed), "failed")
		b.ReportMetric(pct(0.5), "ms-lag-p50")
		b.ReportMetric(pct(0.99), "ms-lag-p99")
		b.ReportMetric(pct(1), "ms-lag-max")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(n), "B-alloc/sample")
		b.Logf("%d/%d samples in %v, %d skipped, %d failed", n, requested, elapsed, skipped, failed)
	}
}
