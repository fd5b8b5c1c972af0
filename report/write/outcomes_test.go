package write_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
)

// phasedServer answers by the order of requests: ok, then 429 with
// Retry-After: 1, then 503 without it, then resets, then ok again.
type phasedServer struct {
	n      atomic.Int64
	mu     sync.Mutex
	lastKO time.Time // when the last failing answer went out
}

const (
	okUntil    = 10
	tooMany    = 14
	unavail    = 18
	resetUntil = 22
)

func (s *phasedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k := s.n.Add(1) - 1
	if k >= okUntil && k < resetUntil {
		s.mu.Lock()
		s.lastKO = time.Now()
		s.mu.Unlock()
	}
	switch {
	case k < okUntil || k >= resetUntil:
		_, _ = w.Write([]byte(`{}`))
	case k < tooMany:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "the apiserver is shutting down, please try again later", http.StatusTooManyRequests)
	case k < unavail:
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	default:
		hj, _ := w.(http.Hijacker)
		c, _, err := hj.Hijack()
		if err != nil {
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		} else if tl, ok := c.(interface{ NetConn() net.Conn }); ok {
			if tc, ok := tl.NetConn().(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
		}
		_ = c.Close()
	}
}

func TestOutcomesAgainstA429A503AndResets(t *testing.T) {
	srv := &phasedServer{}
	ts := httptest.NewTLSServer(srv)
	defer ts.Close()
	rc := &rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	pr, err := prober.New(rc, prober.WithBackends(prober.Backend{Name: "kube-api", Path: "/api/v1/namespaces/default"}),
		prober.WithInterval(50*time.Millisecond), prober.WithProbeTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var samples []results.Sample
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s := range pr.Run(ctx) {
			samples = append(samples, s)
		}
	}()
	// Poll until the failing phases are over and more than a retry's wait
	// of answers followed them (counted in answers, not asserted in time).
	for {
		time.Sleep(20 * time.Millisecond)
		srv.mu.Lock()
		last := srv.lastKO
		srv.mu.Unlock()
		if srv.n.Load() >= resetUntil+4 && !last.IsZero() && time.Since(last) > 2500*time.Millisecond {
			break
		}
	}
	cancel()
	<-done

	var n429, n503, nReset int64
	for _, s := range samples {
		switch {
		case s.StatusCode == 429:
			n429++
			if s.RetryAfter != "1" {
				t.Errorf("429 without its Retry-After recorded: %+v", s)
			}
		case s.StatusCode == 503:
			n503++
		case s.Failed():
			nReset++
		}
	}
	if n429 == 0 || n503 == 0 || nReset == 0 {
		t.Fatalf("phases not seen: 429 %d, 503 %d, reset %d", n429, n503, nReset)
	}
	a := report.Analyze(samples)
	tot := a.Outcomes.Totals()
	if tot.Retryable != n429 || tot.Failed != n503+nReset || tot.Failures != n429+n503+nReset {
		t.Errorf("graded %+v; 429 %d, 503 %d, resets %d", tot, n429, n503, nReset)
	}
	// client-go retries the 429s after a second and the resets on a new
	// connection; it does not retry a 503 without Retry-After.
	if tot.ClientLost != n503 || tot.ClientRecovered != n429+nReset || tot.MaxAddedWait < time.Second {
		t.Errorf("client view %+v; 503 %d", tot, n503)
	}
	// DISRUPTED keeps every failure.
	var fails int64
	for _, p := range a.Pollers {
		fails += p.Failures
	}
	if fails != tot.Failures {
		t.Errorf("origin's count %d, graded %d", fails, tot.Failures)
	}

	// A window of the measuring side covering everything discounts every
	// failure, and the summary says so.
	a.Outcomes.Discount([]results.Signal{{Kind: results.SignalMeasuringUnreliable, At: a.From, To: a.To}})
	if got := a.Outcomes.Totals().Discounted; got != tot.Failures {
		t.Errorf("discounted %d of %d", got, tot.Failures)
	}
	var b strings.Builder
	if err := write.WriteSummary(&b, a, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CLIENT-GO LOST", "RETRYABLE", "unreliable in 1 window"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

// A signals.jsonl that cannot be read costs only the discount, and the
// summary says so.
func TestBadSignalsFileCostsOnlyTheDiscount(t *testing.T) {
	dir := t.TempDir()
	w, err := results.CreateJSONL(filepath.Join(dir, results.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 5; i++ {
		s := results.Sample{Backend: "kube-api", Connection: results.NewConnections, Seq: uint64(i), Start: t0.Add(time.Duration(i) * 100 * time.Millisecond), Duration: time.Millisecond, StatusCode: 200}
		if i == 2 {
			s.ErrorClass, s.StatusCode, s.Error = results.ClassHeaderTimeout, 0, "net/http: timeout awaiting response headers"
		}
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.SignalsFile), []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := report.LoadSamples(filepath.Join(dir, results.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := write.WriteSummary(&b, a, nil); err != nil {
		t.Fatal(err)
	}
	if a.Outcomes.Totals().Failures != 1 || !strings.Contains(b.String(), "could not be read") {
		t.Fatalf("outcomes %+v:\n%s", a.Outcomes.Totals(), b.String())
	}
}
