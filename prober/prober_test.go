package prober_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
)

func kubeAPI(t testing.TB) []prober.Backend {
	b, err := prober.LookupBackends([]string{"kube-api"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func collect(ch <-chan results.Sample) map[string][]results.Sample {
	out := map[string][]results.Sample{}
	for s := range ch {
		out[s.Name()] = append(out[s.Name()], s)
	}
	for _, ss := range out {
		sortBySeq(ss)
	}
	return out
}

func sortBySeq(ss []results.Sample) {
	for i := 1; i < len(ss); i++ {
		for j := i; j > 0 && ss[j].Seq < ss[j-1].Seq; j-- {
			ss[j], ss[j-1] = ss[j-1], ss[j]
		}
	}
}

// checkTicks checks that every poller's scheduled ticks are each a sample
// or a counted skip, and returns the skips by poller name. On a loaded
// machine the scheduler may wake more than an interval late and skip a
// tick; it must then be counted (and seq shows the gap), but no more than
// half of them.
func checkTicks(t *testing.T, p *prober.Prober, got map[string][]results.Sample, want int64) map[string]int64 {
	t.Helper()
	skipped := map[string]int64{}
	for _, st := range p.Stats() {
		skipped[st.Name] = st.SkippedTicks
	}
	for name, ss := range got {
		if int64(len(ss))+skipped[name] != want || skipped[name] > want/2 {
			t.Errorf("%s: want %d ticks, got %d samples + %d skipped", name, want, len(ss), skipped[name])
		}
	}
	return skipped
}

func protocols(http2 bool) string {
	if http2 {
		return "HTTP/2.0"
	}
	return "HTTP/1.1"
}

// TestHealthyServer checks the happy path on both protocols: every tick
// produces a successful sample, new-connection samples never reuse a
// connection and go through connect and TLS, reused-connection samples reuse
// theirs after the first, and the Audit-ID the server saw is the recorded one.
func TestHealthyServer(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(protocols(h2), func(t *testing.T) {
			ts := newTestServer(t, h2)
			p, err := prober.New(ts.restConfig(),
				prober.WithBackends(kubeAPI(t)...),
				prober.WithInterval(25*time.Millisecond),
				prober.WithProbeTimeout(2*time.Second),
				prober.WithDuration(500*time.Millisecond),
				prober.WithHTTP2(h2))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			got := collect(p.Run(context.Background()))
			if len(got) != 2 {
				t.Fatalf("want 2 pollers, got %v", keys(got))
			}
			// 500ms / 25ms = 20 ticks.
			skipped := checkTicks(t, p, got, 20)
			for name, ss := range got {
				gaps, unstamped := int64(0), 0
				for i, s := range ss {
					if i > 0 {
						gaps += int64(s.Seq-ss[i-1].Seq) - 1
					}
					if !s.OK() || s.StatusCode != 200 {
						t.Errorf("%s seq %d: want success, got %d %s %q", name, s.Seq, s.StatusCode, s.ErrorClass, s.Error)
					}
					if s.Protocol != protocols(h2) {
						t.Errorf("%s seq %d: protocol %q, want %q", name, s.Seq, s.Protocol, protocols(h2))
					}
					if !ts.sawAuditID(s.AuditID) {
						t.Errorf("%s seq %d: server never saw audit ID %q", name, s.Seq, s.AuditID)
					}
					// HTTP/2 reads and writes concurrently: the first byte of
					// the response can be stamped before WroteRequest.
					if s.Phases.WroteRequest <= 0 || s.Phases.FirstByte <= 0 || s.Duration < s.Phases.FirstByte || s.Duration < s.Phases.WroteRequest {
						t.Errorf("%s seq %d: phases out of order: %+v duration %v", name, s.Seq, s.Phases, s.Duration)
					}
					if s.LocalAddr == "" || s.RemoteAddr == "" {
						t.Errorf("%s seq %d: addresses missing", name, s.Seq)
					}
					switch s.Connection {
					case results.NewConnections:
						if s.Reused {
							t.Errorf("%s seq %d: new-connection sample reused a connection", name, s.Seq)
						}
						if s.Phases.ConnectDone <= 0 || s.Phases.TLSDone < s.Phases.ConnectDone {
							unstamped++
						}
					case results.ReusedConnections:
						// When the previous request had finished before this
						// one started, its connection sat idle in the pool
						// and must be reused. (A stall can make requests
						// overlap; then a second connection is legitimate.)
						settled := i > 0 && s.Start.After(ss[i-1].End().Add(time.Millisecond))
						if settled && !s.Reused {
							t.Errorf("%s seq %d: reused-connection sample did not reuse its connection", name, s.Seq)
						}
						if s.Reused && (s.Phases.ConnectDone != 0 || s.Phases.TLSDone != 0) {
							t.Errorf("%s seq %d: reused connection went through connect/TLS: %+v", name, s.Seq, s.Phases)
						}
					}
				}
				if n := len(ss); n > 0 {
					gaps += int64(ss[0].Seq) + int64(19-ss[n-1].Seq)
				}
				// net/http does not bind a dial to the request that started
				// it: when requests overlap, one may get a fresh connection
				// dialed for another, whose trace got the connect/TLS stamps.
				// Rare (it takes a slow handshake); most must be stamped.
				if unstamped > len(ss)/10 {
					t.Errorf("%s: %d of %d new-connection samples lack connect/TLS phases", name, unstamped, len(ss))
				}
				if gaps != skipped[name] {
					t.Errorf("%s: %d seq gaps but %d ticks counted as skipped", name, gaps, skipped[name])
				}
			}
			// Start times follow the absolute schedule: never early, and
			// less than one interval late (later ticks are skipped), with
			// no drift however long the run.
			for name, ss := range got {
				for _, s := range ss {
					lag := s.Start.Sub(p.TickTime(name, s.Seq))
					if lag < 0 || lag >= 25*time.Millisecond {
						t.Errorf("%s seq %d started %v off its schedule", name, s.Seq, lag)
					}
				}
			}
		})
	}
}

func keys(m map[string][]results.Sample) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestFailureClasses drives each failure a load balancer or apiserver can
// produce and checks both pollers record the right class.
func TestFailureClasses(t *testing.T) {
	cases := []struct {
		name      string
		mode      mode
		http2     bool
		want      results.ErrorClass
		status    int
		errSubstr string
	}{
		{"hang/HTTP1.1", modeHang, false, results.ClassHeaderTimeout, 0, "timeout awaiting response headers"},
		{"hang/HTTP2", modeHang, true, results.ClassHeaderTimeout, 0, "timeout awaiting response headers"},
		{"reset/HTTP1.1", modeReset, false, results.ClassReset, 0, "reset"},
		{"close/HTTP1.1", modeClose, false, results.ClassEOF, 0, "EOF"},
		{"429/HTTP1.1", mode429, false, results.ClassHTTP429, 429, "shutting down"},
		{"429/HTTP2", mode429, true, results.ClassHTTP429, 429, "shutting down"},
		{"503/HTTP1.1", mode503, false, results.ClassHTTP5xx, 503, "not ready"},
		{"503/HTTP2", mode503, true, results.ClassHTTP5xx, 503, "not ready"},
		{"401/HTTP1.1", mode401, false, results.ClassAuth, 401, "Unauthorized"},
		{"403/HTTP2", mode403, true, results.ClassAuth, 403, "Forbidden"},
		{"slow-body/HTTP1.1", modeSlowBody, false, results.ClassClientTimeout, 200, "deadline exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := newTestServer(t, tc.http2)
			ts.setMode(tc.mode)
			// 1s: the header timer (800ms) leads the overall timeout by
			// 200ms, far more than timer latency even on a loaded machine.
			p, err := prober.New(ts.restConfig(),
				prober.WithBackends(kubeAPI(t)...),
				prober.WithInterval(50*time.Millisecond),
				prober.WithProbeTimeout(time.Second),
				prober.WithDuration(200*time.Millisecond),
				prober.WithHTTP2(tc.http2))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			got := collect(p.Run(context.Background()))
			skipped := map[string]int64{}
			for _, st := range p.Stats() {
				skipped[st.Name] = st.SkippedTicks
			}
			for name, ss := range got {
				// A tick may be skipped when 9 parallel subtests under
				// -race stall the scheduler past a whole interval; it is
				// then counted, never lost.
				if int64(len(ss))+skipped[name] != 4 || len(ss) < 2 {
					t.Errorf("%s: want 4 ticks, got %d samples + %d skipped", name, len(ss), skipped[name])
				}
				for _, s := range ss {
					if s.ErrorClass != tc.want {
						t.Errorf("%s seq %d: class %q, want %q (error %q)", name, s.Seq, s.ErrorClass, tc.want, s.Error)
					}
					if s.StatusCode != tc.status {
						t.Errorf("%s seq %d: status %d, want %d", name, s.Seq, s.StatusCode, tc.status)
					}
					if !strings.Contains(s.Error, tc.errSubstr) {
						t.Errorf("%s seq %d: error %q lacks %q", name, s.Seq, s.Error, tc.errSubstr)
					}
					if strings.Contains(s.Error, "test-token") {
						t.Errorf("%s: error text leaks the bearer token: %q", name, s.Error)
					}
					if tc.want == results.ClassHeaderTimeout {
						// 4/5 of the probe timeout: the header timeout fires
						// first, after the request was written.
						// Never before 4/5 of the budget. The upper bound
						// is loose: on a machine loaded with other work the
						// whole process can stall for hundreds of ms.
						if s.Duration < 800*time.Millisecond || s.Duration > 2*time.Second {
							t.Errorf("%s seq %d: header timeout after %v, want 800ms..2s", name, s.Seq, s.Duration)
						}
						if s.Phases.WroteRequest == 0 || s.Phases.FirstByte != 0 {
							t.Errorf("%s seq %d: want request written and no first byte, got %+v", name, s.Seq, s.Phases)
						}
					}
					if tc.want == results.ClassHTTP429 && s.RetryAfter != "3" {
						t.Errorf("%s seq %d: Retry-After %q, want 3", name, s.Seq, s.RetryAfter)
					}
				}
			}
		})
	}
}

// TestRefused checks a closed port is connect-refused and fails preflight
// with a line naming the URL.
func TestRefused(t *testing.T) {
	url := closedPortURL(t)
	rc := &rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	p, err := prober.New(rc, prober.WithBackends(kubeAPI(t)...),
		prober.WithInterval(50*time.Millisecond), prober.WithProbeTimeout(time.Second),
		prober.WithDuration(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Preflight(context.Background())
	if err == nil || !strings.Contains(err.Error(), url+"/api/v1/namespaces/default") {
		t.Fatalf("preflight error %v does not name %s", err, url)
	}
	if s.ErrorClass != results.ClassConnectRefused {
		t.Errorf("preflight class %q, want connect-refused", s.ErrorClass)
	}
	for name, ss := range collect(p.Run(context.Background())) {
		for _, s := range ss {
			if s.ErrorClass != results.ClassConnectRefused {
				t.Errorf("%s: class %q, want connect-refused (%s)", name, s.ErrorClass, s.Error)
			}
		}
	}
}

// TestUntrustedCertificate checks TLS is verified by default.
func TestUntrustedCertificate(t *testing.T) {
	ts := newTestServer(t, false)
	rc := &rest.Config{Host: ts.URL} // no CA: the httptest certificate is not trusted
	p, err := prober.New(rc, prober.WithBackends(kubeAPI(t)...), prober.WithProbeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Preflight(context.Background())
	if err == nil || s.ErrorClass != results.ClassTLS {
		t.Fatalf("want a tls preflight failure, got class %q err %v", s.ErrorClass, err)
	}
}

// TestDarkWindow makes the server stop answering for a known window and
// checks the failure run measured by each poller matches it.
//
// Tolerance: the interval starts at the first failed request's start, which
// lies in [T0 - reach, T0 + interval): a request that starts just before T0
// reaches the server after it when its connect+TLS+write time ("reach", the
// sample's wrote_request offset: ~2 ms here, 20-40 ms under -race on 2 busy
// cores) spans T0, and the first tick after T0 comes up to one interval
// later. It ends at the first successful start, in [T1 - reach, T1 +
// interval) for the same reasons. Timer wake-up adds under 5 ms. So each edge
// must lie within [-(reach+5ms), interval+5ms], reach being the longest
// request-written offset the poller measured.
func TestDarkWindow(t *testing.T) {
	const (
		interval = 20 * time.Millisecond
		window   = 600 * time.Millisecond
		timerLag = 5 * time.Millisecond
	)
	for _, h2 := range []bool{false, true} {
		t.Run(protocols(h2), func(t *testing.T) {
			ts := newTestServer(t, h2)
			p, err := prober.New(ts.restConfig(),
				prober.WithBackends(kubeAPI(t)...),
				prober.WithInterval(interval),
				prober.WithProbeTimeout(time.Second),
				prober.WithDuration(1600*time.Millisecond),
				prober.WithHTTP2(h2))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ch := p.Run(context.Background())
			time.Sleep(400 * time.Millisecond)
			ts.setMode(modeHang)
			t0 := time.Now()
			time.Sleep(window)
			ts.setMode(modeOK)
			t1 := time.Now()
			got := collect(ch)
			for name, ss := range got {
				var from, to time.Time
				var reach time.Duration
				var beforeFrom, beforeTo *results.Sample // samples just before each edge
				failed := 0
				for i := range ss {
					s := ss[i]
					if s.Phases.WroteRequest > reach {
						reach = s.Phases.WroteRequest
					}
					if s.Failed() {
						failed++
						// The header timer (800ms) starts once the request is
						// written; a request that took nearly the remaining
						// 200ms of the 1s budget to connect and write ends on
						// the overall timeout instead (100ms allowed for timer
						// latency on a loaded machine). Only then is
						// client-timeout right.
						late := s.Phases.WroteRequest > 100*time.Millisecond
						if s.ErrorClass != results.ClassHeaderTimeout && !(late && s.ErrorClass == results.ClassClientTimeout) {
							t.Errorf("%s seq %d: class %q, want header-timeout (wrote request at %v)", name, s.Seq, s.ErrorClass, s.Phases.WroteRequest)
						}
						if from.IsZero() {
							from = s.Start
							if i > 0 {
								beforeFrom = &ss[i-1]
							}
						}
					} else if !from.IsZero() && to.IsZero() {
						to = s.Start
						beforeTo = &ss[i-1]
					}
				}
				if from.IsZero() || to.IsZero() {
					t.Fatalf("%s: no closed failure run (%d failed samples)", name, failed)
				}
				dFrom, dTo := from.Sub(t0), to.Sub(t1)
				t.Logf("%s: measured %v (window %v): start %+v, end %+v, %d failed samples, reach %v",
					name, to.Sub(from), t1.Sub(t0), dFrom, dTo, failed, reach)
				// A tick skipped because the loaded machine stalled the
				// scheduler moves an edge by whole intervals; the bound then
				// is the neighbouring sample, which must lie on the other
				// side of the window edge.
				lo := -(reach + timerLag)
				hiFrom, hiTo := interval+timerLag, interval+timerLag
				if beforeFrom != nil {
					hiFrom += time.Duration(ss0Gap(beforeFrom, from, interval)) * interval
					if d := beforeFrom.Start.Sub(t0); d > timerLag {
						t.Errorf("%s: seq %d started %v after the window opened yet succeeded", name, beforeFrom.Seq, d)
					}
				}
				hiTo += time.Duration(ss0Gap(beforeTo, to, interval)) * interval
				if d := beforeTo.Start.Sub(t1); d > timerLag {
					t.Errorf("%s: seq %d started %v after the window closed yet failed", name, beforeTo.Seq, d)
				}
				if dFrom < lo || dFrom > hiFrom {
					t.Errorf("%s: interval starts %v from the window start, want within [%v, %v]", name, dFrom, lo, hiFrom)
				}
				if dTo < lo || dTo > hiTo {
					t.Errorf("%s: interval ends %v from the window end, want within [%v, %v]", name, dTo, lo, hiTo)
				}
			}
		})
	}
}

// ss0Gap returns how many ticks were skipped between a sample and the start
// of the next one.
func ss0Gap(prev *results.Sample, next time.Time, interval time.Duration) int64 {
	n := int64(next.Sub(prev.Start)/interval) - 1
	if n < 0 {
		return 0
	}
	return n
}

// TestInterruptKeepsSamples cancels a run with requests hanging and checks
// the schedule stops, every issued request yields a sample, and requests cut
// by the interruption are marked aborted, not failed.
func TestInterruptKeepsSamples(t *testing.T) {
	ts := newTestServer(t, false)
	ts.setMode(modeHang)
	p, err := prober.New(ts.restConfig(), prober.WithBackends(kubeAPI(t)...),
		prober.WithInterval(20*time.Millisecond), prober.WithProbeTimeout(5*time.Second),
		prober.WithAbortGrace(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := p.Run(ctx)
	// Wait for a dozen hanging requests per poller, however slow the
	// machine, rather than a fixed time.
	for deadline := time.Now().Add(10 * time.Second); ts.requests() < 24 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	start := time.Now()
	got := collect(ch)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("drain after interrupt took %v", d)
	}
	for name, ss := range got {
		if len(ss) < 10 {
			t.Errorf("%s: only %d samples kept", name, len(ss))
		}
		for _, s := range ss {
			if s.ErrorClass != results.ClassAborted {
				t.Errorf("%s seq %d: class %q, want aborted", name, s.Seq, s.ErrorClass)
			}
		}
	}
	for _, st := range p.Stats() {
		if st.Failures != 0 || st.Aborted != st.Samples {
			t.Errorf("%s: stats %+v: aborted samples must not count as failures", st.Name, st)
		}
	}
}

// TestInFlightBoundSkipsTicks checks that when the bound is hit, ticks are
// skipped and counted, not silently dropped.
func TestInFlightBoundSkipsTicks(t *testing.T) {
	ts := newTestServer(t, false)
	ts.setMode(modeHang)
	// bound = 2*ceil(40ms/20ms) = 4; header timeout at 32ms frees slots fast,
	// so use a longer hang via a probe timeout and a short interval instead.
	p, err := prober.New(ts.restConfig(), prober.WithBackends(kubeAPI(t)...),
		prober.WithConnectionTypes(results.ReusedConnections),
		prober.WithInterval(10*time.Millisecond), prober.WithProbeTimeout(40*time.Millisecond),
		prober.WithDuration(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	got := collect(p.Run(context.Background()))
	st := p.Stats()[0]
	n := int64(len(got["kube-api-reused-connections"]))
	if n+st.SkippedTicks != 30 {
		t.Errorf("samples %d + skipped %d != 30 scheduled ticks", n, st.SkippedTicks)
	}
	if bound := prober.InFlightBound(40*time.Millisecond, 10*time.Millisecond); bound != 8 {
		t.Errorf("bound %d, want 8", bound)
	}
}

func TestLookupBackends(t *testing.T) {
	if _, err := prober.LookupBackends([]string{"kube-api", "nope"}); err == nil ||
		!strings.Contains(err.Error(), `unknown backend "nope"`) || !strings.Contains(err.Error(), "cache-oauth-api") {
		t.Errorf("unknown backend error should list valid ones: %v", err)
	}
	b, err := prober.LookupBackends([]string{"cache-kube-api", "kube-api", "kube-api"})
	if err != nil || len(b) != 2 || b[0].Path != "/api/v1/namespaces/default?resourceVersion=0" {
		t.Errorf("got %v %v", b, err)
	}
	if _, err := prober.New(&rest.Config{Host: "https://127.0.0.1:1"}, prober.WithInterval(5*time.Millisecond)); err == nil {
		t.Error("interval below 10ms accepted")
	}
}

func TestSanitizeErrorText(t *testing.T) {
	in := `Get "https://user:pw@host/x?access_token=abc": Authorization: Bearer eyJhbGciOi.xyz failed`
	out := prober.SanitizeErrorText(in)
	for _, secret := range []string{"pw@", "abc", "eyJhbGciOi"} {
		if strings.Contains(out, secret) {
			t.Errorf("%q survived: %s", secret, out)
		}
	}
}

// TestSlowReaderLosesNothing reads Run's channel, unbuffered here, with a
// reader that stalls for longer than the run: every tick is still a sample
// or a counted skip, and the stall is not in any sample's duration (a
// request's timing is taken before it hands its sample over). The
// tolerance is the stall itself: a local request takes milliseconds, so a
// duration near the stall could only be the wait.
func TestSlowReaderLosesNothing(t *testing.T) {
	ts := newTestServer(t, false)
	p, err := prober.New(ts.restConfig(),
		prober.WithBackends(kubeAPI(t)...),
		prober.WithInterval(20*time.Millisecond),
		prober.WithProbeTimeout(2*time.Second),
		prober.WithDuration(400*time.Millisecond),
		prober.WithBufferSize(0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const stall = 600 * time.Millisecond
	ch := p.Run(context.Background())
	time.Sleep(stall)
	got := collect(ch)
	checkTicks(t, p, got, 20)
	for name, ss := range got {
		for _, s := range ss {
			if !s.OK() {
				t.Errorf("%s seq %d: %s %s", name, s.Seq, s.ErrorClass, s.Error)
			}
			if s.Duration >= stall/2 {
				t.Errorf("%s seq %d: duration %v holds the reader's %v stall", name, s.Seq, s.Duration, stall)
			}
		}
	}
	if len(got) != 2 {
		t.Errorf("want 2 pollers, got %v", keys(got))
	}
}

// TestNegativeBufferSizeIsAnError checks the option is validated, not
// handed to make.
func TestNegativeBufferSizeIsAnError(t *testing.T) {
	_, err := prober.New(&rest.Config{Host: "https://127.0.0.1:6443"}, prober.WithBufferSize(-1))
	if err == nil || !strings.Contains(err.Error(), "buffer size") {
		t.Fatalf("want a buffer size error, got %v", err)
	}
}
