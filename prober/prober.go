package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/results"
)

const (
	// DefaultInterval is the default time between two requests of a poller,
	// ten times finer than origin's one second.
	DefaultInterval = 100 * time.Millisecond
	// MinInterval is the shortest interval a poller accepts.
	MinInterval = 10 * time.Millisecond
	// DefaultProbeTimeout bounds each request by default: origin's sampler
	// timeout since openshift/origin #29761
	// (pkg/monitor/backenddisruption/disruption_backend_sampler.go). Dial,
	// TLS handshake and the wait for response headers each get 4/5 of it.
	DefaultProbeTimeout = 34 * time.Second
	// DefaultAbortGrace is how long in-flight requests may finish after the
	// run is interrupted before they are cancelled and recorded as aborted.
	DefaultAbortGrace = 2 * time.Second
	// AuditIDHeader is the header carrying each request's unique ID; the
	// kube-apiserver records it in its audit log.
	AuditIDHeader = "Audit-ID"
	// DisruptionOptInHeader asks an OpenShift kube-apiserver to answer with
	// DisruptionHeader (openshift/kubernetes #1537, #1555: the
	// WithShutdownResponseHeader filter of k8s.io/apiserver's
	// pkg/server/filters). Upstream kube-apiserver ignores it.
	DisruptionOptInHeader = "X-Openshift-If-Disruption"
	// DisruptionHeader is the response header that says which apiserver
	// answered and whether it was shutting down:
	// "shutdown=<bool> shutdown-delay-duration=<d> elapsed=<d> host=<id>".
	DisruptionHeader = "X-OpenShift-Disruption"
)

// Option configures a Prober.
type Option func(*config)

type config struct {
	interval     time.Duration
	probeTimeout time.Duration
	duration     time.Duration
	abortGrace   time.Duration
	backends     []Backend
	targets      []Target
	connTypes    []results.ConnectionType
	http2        bool
	log          *zap.Logger
	userAgent    string
	bufferSize   int
	// sources, set by WithBoundDials, is the one source-address cache
	// every poller's dialer binds through.
	sources *sourceAddrs
}

// WithInterval sets the time between two scheduled requests of each poller
// (default 100ms, minimum 10ms).
func WithInterval(d time.Duration) Option { return func(c *config) { c.interval = d } }

// WithProbeTimeout bounds each request (default DefaultProbeTimeout, 34s). Dial, TLS handshake
// and the wait for response headers are each bounded by 4/5 of it, as in
// origin, so a request that was written and never answered ends as
// header-timeout before the overall timeout.
func WithProbeTimeout(d time.Duration) Option { return func(c *config) { c.probeTimeout = d } }

// WithDuration stops scheduling after d (0, the default, means until the
// context passed to Run is cancelled). Each poller schedules exactly
// ceil(d/interval) ticks.
func WithDuration(d time.Duration) Option { return func(c *config) { c.duration = d } }

// WithAbortGrace sets how long in-flight requests may finish after the
// context passed to Run is cancelled (default 2s).
func WithAbortGrace(d time.Duration) Option { return func(c *config) { c.abortGrace = d } }

// WithBackends chooses the backends to poll (default DefaultBackendNames:
// kube-api, openshift-api, oauth-api and their cache-* variants).
func WithBackends(b ...Backend) Option { return func(c *config) { c.backends = b } }

// WithConnectionTypes chooses which pollers each backend gets (default both).
func WithConnectionTypes(t ...results.ConnectionType) Option {
	return func(c *config) { c.connTypes = t }
}

// WithHTTP2 lets the pollers negotiate HTTP/2. The default is HTTP/1.1 only,
// like origin's sampler (custom dialer and TLS config without
// ForceAttemptHTTP2).
func WithHTTP2(on bool) Option { return func(c *config) { c.http2 = on } }

// WithLogger sets the logger for skipped ticks and other notices.
func WithLogger(l *zap.Logger) Option { return func(c *config) { c.log = l } }

// WithUserAgent sets the product part of every request's User-Agent
// (default "repro/<version>"); each poller appends its name, as origin's
// samplers send their test descriptor's name, so the apiserver's audit log
// tells the pollers apart: "repro/v0.3.0 kube-api-new-connections".
func WithUserAgent(ua string) Option { return func(c *config) { c.userAgent = ua } }

// Target is one way to reach the API: a vantage point and the base URL
// polled from it. Every target gets a poller per backend and connection
// type, named by results.SamplerName.
type Target struct {
	// Vantage names where the API is reached from ("internal-lb",
	// "direct", ...). Empty or results.VantageExternalLB is the default,
	// the external load balancer, whose samples carry no vantage.
	Vantage string
	// Node is the node a direct target reaches; it is the samples'
	// Target and part of the poller names. Empty otherwise.
	Node string
	// URL is the base URL, e.g. "https://10.0.0.5:6443". Empty means the
	// server of the rest.Config given to New.
	URL string
	// ServerName, when set, is the name the server's certificate is
	// verified against instead of the URL's host: polling a node's IP
	// directly, it is the cluster's API host name.
	ServerName string
}

// WithTargets chooses the vantage points to poll from (default one target:
// the rest.Config's server through the external load balancer). The
// credentials and CA of the rest.Config apply to every target.
func WithTargets(t ...Target) Option { return func(c *config) { c.targets = t } }

// DefaultBufferSize is the default capacity of the channel Run returns.
// It is small on purpose: the buffer is one object of Samples with
// pointers (336 bytes each) that every GC cycle scans whole, full or
// empty, and a request whose send waits for the reader has already taken
// its timing, so a wait changes nothing measured. A larger buffer only
// adds GC work (the figures are in docs/prober-cost.md).
const DefaultBufferSize = 256

// WithBufferSize sets the capacity of the channel Run returns (default
// DefaultBufferSize). When it is full, finished requests wait to hand
// over their samples; nothing is lost.
func WithBufferSize(n int) Option { return func(c *config) { c.bufferSize = n } }

// Prober polls a set of backends over new and reused connections.
type Prober struct {
	cfg     config
	server  string
	pollers []*poller

	mu       sync.Mutex
	base     time.Time
	baseWall time.Time
	running  bool

	// stop ends scheduling at the end of a run (Stop); stopOnce guards it.
	stop     chan struct{}
	stopOnce sync.Once

	// open holds the monotonic start of every request in flight, by a
	// request number, so a stop can say how many were open and since when.
	openMu   sync.Mutex
	open     map[uint64]time.Time
	openNext uint64
}

type poller struct {
	backend Backend
	conn    results.ConnectionType
	target  Target
	http2   bool
	name    string
	url     string
	ua      string
	uaValue []string // ua as a header value, shared by all requests
	auth    []string // "Bearer <token>" for a static token, else nil
	client  *http.Client
	trans   *http.Transport
	sem     chan struct{}
	offset  time.Duration // this poller's tick phase within the interval
	stats   liveStats
	log     *zap.Logger

	lastSkipLog atomic.Int64 // unix nanos of the last skipped-tick log line
}

// New builds a Prober for the server, credentials and TLS settings of a
// client-go rest.Config. TLS is verified unless the config says otherwise.
func New(rc *rest.Config, opts ...Option) (*Prober, error) {
	c := config{
		interval:     DefaultInterval,
		probeTimeout: DefaultProbeTimeout,
		abortGrace:   DefaultAbortGrace,
		connTypes:    results.ConnectionTypes,
		log:          zap.NewNop(),
		userAgent:    defaultUserAgent(),
		bufferSize:   DefaultBufferSize,
	}
	for _, o := range opts {
		o(&c)
	}
	if c.interval < MinInterval {
		return nil, fmt.Errorf("interval %v is below the minimum of %v", c.interval, MinInterval)
	}
	if c.probeTimeout <= 0 {
		return nil, fmt.Errorf("probe timeout must be positive, got %v", c.probeTimeout)
	}
	if c.duration < 0 {
		return nil, fmt.Errorf("duration must not be negative, got %v", c.duration)
	}
	if c.bufferSize < 0 {
		return nil, fmt.Errorf("buffer size must not be negative, got %d", c.bufferSize)
	}
	if len(c.backends) == 0 {
		b, err := LookupBackends(DefaultBackendNames)
		if err != nil {
			return nil, err
		}
		c.backends = b
	}
	if rc == nil {
		return nil, fmt.Errorf("no client configuration")
	}
	base, _, err := rest.DefaultServerUrlFor(rc)
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %w", rc.Host, err)
	}
	server := strings.TrimSuffix(base.String(), "/")
	tlsCfg, err := rest.TLSConfigFor(rc)
	if err != nil {
		return nil, fmt.Errorf("TLS configuration: %w", err)
	}
	targets := c.targets
	if len(targets) == 0 {
		targets = []Target{{}}
	}
	p := &Prober{cfg: c, stop: make(chan struct{}), open: map[uint64]time.Time{}}
	bound := InFlightBound(c.probeTimeout, c.interval)
	n := time.Duration(len(targets) * len(c.backends) * len(c.connTypes))
	seen := map[string]bool{}
	for _, tg := range targets {
		if tg.Vantage == results.VantageExternalLB {
			tg.Vantage = ""
		}
		base := server
		if tg.URL != "" {
			u, err := url.Parse(tg.URL)
			if err != nil || u.Scheme != "https" || u.Host == "" {
				return nil, fmt.Errorf("target URL %q: want https://host:port", tg.URL)
			}
			base = strings.TrimSuffix(tg.URL, "/")
		}
		if p.server == "" {
			p.server = base
		}
		tcfg := tlsCfg
		if tg.ServerName != "" {
			if tlsCfg == nil {
				return nil, fmt.Errorf("target %s: a TLS server name needs an https server", base)
			}
			tcfg = tlsCfg.Clone()
			tcfg.ServerName = tg.ServerName
		}
		for _, b := range c.backends {
			for _, ct := range c.connTypes {
				name := results.SamplerName(b.Name, c.http2, tg.Vantage, tg.Node, ct)
				if seen[name] {
					return nil, fmt.Errorf("two targets make the same poller %s; give each vantage a distinct node", name)
				}
				seen[name] = true
				client, trans, err := newClient(rc, tcfg, ct, c)
				if err != nil {
					return nil, err
				}
				p.pollers = append(p.pollers, &poller{
					backend: b, conn: ct, target: tg, http2: c.http2, name: name,
					url:     base + b.Path,
					ua:      c.userAgent + " " + name,
					uaValue: []string{c.userAgent + " " + name},
					auth:    staticBearer(rc),
					client:  client, trans: trans,
					sem: make(chan struct{}, bound),
					// Pollers fire at evenly spread phases of the interval,
					// not all at the same instant: a burst of simultaneous
					// handshakes would queue each request behind the others
					// on the CPU and measure the prober, not the server.
					offset: c.interval * time.Duration(len(p.pollers)) / n,
					log:    c.log.With(zap.String("poller", name)),
				})
			}
		}
	}
	return p, nil
}

// staticBearer is the Authorization value of a rest.Config whose only
// credential is a fixed bearer token, else nil (token files, exec and auth
// providers refresh tokens: client-go's round trippers handle those).
func staticBearer(rc *rest.Config) []string {
	if rc.BearerToken == "" || rc.BearerTokenFile != "" || rc.ExecProvider != nil || rc.AuthProvider != nil ||
		rc.Username != "" || rc.Impersonate.UserName != "" {
		return nil
	}
	return []string{"Bearer " + rc.BearerToken}
}

// defaultUserAgent is "repro/<version>" with the module version of the
// running binary ("devel" for a source build).
func defaultUserAgent() string {
	v := strings.Trim(results.CurrentTool().Version, "()")
	return "repro/" + v
}

// InFlightBound is the number of requests a poller may have in flight: twice
// the number of ticks that fit in one probe timeout, so a server that never
// answers cannot thin the schedule before requests start timing out.
func InFlightBound(probeTimeout, interval time.Duration) int {
	n := int(math.Ceil(float64(probeTimeout) / float64(interval)))
	if n < 1 {
		n = 1
	}
	return 2 * n
}

// phaseTimeout is origin's per-phase timeout: 4/5 of the whole.
func phaseTimeout(total time.Duration) time.Duration { return total * 4 / 5 }

func newClient(rc *rest.Config, tlsCfg *tls.Config, ct results.ConnectionType, c config) (*http.Client, *http.Transport, error) {
	phase := phaseTimeout(c.probeTimeout)
	dialer := &net.Dialer{Timeout: phase, KeepAlive: 30 * time.Second}
	if ct == results.NewConnections {
		dialer.KeepAlive = -1
	}
	if c.sources != nil {
		dialer.ControlContext = c.sources.bindControl
	}
	proxy := http.ProxyFromEnvironment
	if rc.Proxy != nil {
		proxy = rc.Proxy
	}
	t := &http.Transport{
		Proxy:                 proxy,
		DialContext:           tracedDial(dialer),
		TLSHandshakeTimeout:   phase,
		ResponseHeaderTimeout: phase,
		ExpectContinueTimeout: phase,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   4,
		DisableKeepAlives:     ct == results.NewConnections,
	}
	if tlsCfg != nil {
		t.TLSClientConfig = tlsCfg.Clone()
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	if c.http2 {
		protocols.SetHTTP2(true)
	}
	t.Protocols = protocols
	rt, err := rest.HTTPWrappersForConfig(rc, t)
	if err != nil {
		return nil, nil, fmt.Errorf("authentication from kubeconfig: %w", err)
	}
	return &http.Client{
		// The probe timeout is the request context's deadline (see
		// probe), not Client.Timeout, which adds a timer goroutine per
		// request.
		Transport: rt,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}, t, nil
}

// Server returns the base URL the prober polls.
func (p *Prober) Server() string { return p.server }

// Interval returns the configured interval between ticks.
func (p *Prober) Interval() time.Duration { return p.cfg.interval }

// ProbeTimeout returns the configured per-request timeout.
func (p *Prober) ProbeTimeout() time.Duration { return p.cfg.probeTimeout }

// Duration returns the configured run length (0: until cancelled).
func (p *Prober) Duration() time.Duration { return p.cfg.duration }

// HTTP2 reports whether the pollers may negotiate HTTP/2.
func (p *Prober) HTTP2() bool { return p.cfg.http2 }

// PollerNames returns the names of the pollers in display order.
func (p *Prober) PollerNames() []string {
	out := make([]string, len(p.pollers))
	for i, pl := range p.pollers {
		out[i] = pl.name
	}
	return out
}

// TickTime returns the wall-clock instant at which tick seq of the named
// poller was scheduled: Base plus the poller's phase (pollers are spread
// evenly over one interval) plus seq intervals. It is zero before Run or
// for an unknown name.
func (p *Prober) TickTime(name string, seq uint64) time.Time {
	base := p.Base()
	if base.IsZero() {
		return time.Time{}
	}
	for _, pl := range p.pollers {
		if pl.name == name {
			return base.Add(pl.offset + time.Duration(seq)*p.cfg.interval)
		}
	}
	return time.Time{}
}

// Base returns the instant the run's schedule starts from (zero before
// Run); tick 0 of the first poller is due then.
func (p *Prober) Base() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.baseWall
}

// Close releases idle connections.
func (p *Prober) Close() {
	for _, pl := range p.pollers {
		pl.trans.CloseIdleConnections()
	}
}

// Preflight sends one request to the first backend of every target,
// over a new connection where that poller exists. It returns an error
// naming the URL (and the vantage, when not the default) of the first
// target that cannot be reached at all (connect, DNS, TLS or timeout
// failures), with that sample; an HTTP answer, even 401 or 403, is not an
// error: the sample says what came back. Without an error the sample is
// the first target's.
func (p *Prober) Preflight(ctx context.Context) (results.Sample, error) {
	var first results.Sample
	done := map[Target]bool{}
	for i, cand := range p.pollers {
		if done[cand.target] {
			continue
		}
		pl := cand
		if pl.conn != results.NewConnections {
			for _, alt := range p.pollers[i:] {
				if alt.target == pl.target && alt.conn == results.NewConnections {
					pl = alt
					break
				}
			}
		}
		done[pl.target] = true
		now := time.Now()
		s := p.probe(ctx, ctx, pl, 0, now, now.Round(0).UTC())
		if len(done) == 1 {
			first = s
		}
		switch s.ErrorClass {
		case results.ClassNone, results.ClassHTTP429, results.ClassHTTP5xx, results.ClassHTTPOther, results.ClassAuth:
			continue
		}
		where := pl.url
		if pl.target.Vantage != "" {
			where = fmt.Sprintf("%s (vantage %s)", pl.url, strings.TrimSpace(pl.target.Vantage+" "+pl.target.Node))
		}
		return s, fmt.Errorf("cannot reach %s: %s", where, s.Error)
	}
	return first, nil
}

// Run starts every poller and returns the channel their samples arrive on,
// in completion order. Scheduling stops when the configured duration has
// elapsed, when Stop is called (the normal end of a run) or when ctx is
// cancelled (an interrupt). After a normal end every request still in
// flight is waited for: each ends by the probe timeout at the latest, and
// one that met a timeout is a failure of its class like any other. After
// ctx is cancelled that wait is skipped: open requests get the abort
// grace, then are cancelled and recorded as unanswered at stop (see
// Classify's aborted and markUnanswered). The channel is closed once every
// sample has been sent. The caller must drain it. Run may be called once.
func (p *Prober) Run(ctx context.Context) <-chan results.Sample {
	out := make(chan results.Sample, p.cfg.bufferSize)
	p.mu.Lock()
	if p.running {
		p.mu.Unlock()
		close(out)
		return out
	}
	p.running = true
	base := time.Now()
	p.base = base
	p.baseWall = base.Round(0).UTC()
	baseWall := p.baseWall
	p.mu.Unlock()

	reqCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	var requests, schedulers sync.WaitGroup
	for _, pl := range p.pollers {
		schedulers.Add(1)
		go func() {
			defer schedulers.Done()
			p.schedule(ctx, reqCtx, pl, base, baseWall, out, &requests)
		}()
	}
	go func() {
		schedulers.Wait()
		done := make(chan struct{})
		go func() { requests.Wait(); close(done) }()
		if ctx.Err() == nil {
			if n, oldest := p.OpenRequests(); n > 0 {
				p.cfg.log.Info("waiting for the requests still open to be answered or time out; Ctrl-C skips the wait",
					zap.Int("open", n), zap.Time("oldestSent", oldest), zap.Duration("atMost", p.cfg.probeTimeout))
			}
		}
		// Every request carries the probe timeout as its deadline; the
		// backstop only guards against a transport that ignores it.
		backstop := time.NewTimer(p.cfg.probeTimeout + p.cfg.abortGrace)
		defer backstop.Stop()
		select {
		case <-done:
		case <-backstop.C:
			abort()
			<-done
		case <-ctx.Done():
			if n, oldest := p.OpenRequests(); n > 0 {
				p.cfg.log.Warn("stopping: requests still open are not waited for; unanswered ones are recorded as unanswered at stop",
					zap.Int("open", n), zap.Time("oldestSent", oldest), zap.Duration("grace", p.cfg.abortGrace))
			}
			select {
			case <-done:
			case <-time.After(p.cfg.abortGrace):
				abort()
				<-done
			}
		}
		abort()
		close(out)
	}()
	return out
}

// Stop ends scheduling: no new request starts, and Run waits for the ones
// in flight to be answered or to time out (at most the probe timeout)
// before it closes its channel. It is the normal end of a run; cancelling
// Run's context is an interrupt, which does not wait. Stop may be called
// more than once, before or during Run.
func (p *Prober) Stop() { p.stopOnce.Do(func() { close(p.stop) }) }

// OpenRequests returns how many requests are in flight now and the wall
// clock time the oldest of them was sent (zero when none is).
func (p *Prober) OpenRequests() (int, time.Time) {
	p.openMu.Lock()
	defer p.openMu.Unlock()
	var oldest time.Time
	for _, t := range p.open {
		if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	if oldest.IsZero() {
		return 0, oldest
	}
	p.mu.Lock()
	base, baseWall := p.base, p.baseWall
	p.mu.Unlock()
	return len(p.open), baseWall.Add(oldest.Sub(base))
}

func (p *Prober) opened(start time.Time) uint64 {
	p.openMu.Lock()
	defer p.openMu.Unlock()
	p.openNext++
	p.open[p.openNext] = start
	return p.openNext
}

func (p *Prober) closed(id uint64) {
	p.openMu.Lock()
	delete(p.open, id)
	p.openMu.Unlock()
}

// schedule fires the ticks of one poller at base + offset + seq*interval. A tick
// that cannot start because the in-flight bound is reached, or that was
// missed because the process was stalled for more than an interval, is
// counted as skipped and logged; missed ticks are never fired in a burst.
func (p *Prober) schedule(ctx, reqCtx context.Context, pl *poller, base, baseWall time.Time, out chan<- results.Sample, requests *sync.WaitGroup) {
	interval := p.cfg.interval
	var maxTicks uint64 = math.MaxUint64
	if p.cfg.duration > 0 {
		maxTicks = uint64((p.cfg.duration + interval - 1) / interval)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var seq uint64
	for seq < maxTicks {
		due := base.Add(pl.offset + time.Duration(seq)*interval)
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-p.stop:
				return
			case <-timer.C:
			}
		} else if ctx.Err() != nil || p.stopped() {
			return
		}
		if late := time.Since(due); late >= interval {
			// The process stalled past the next tick: fire only the most
			// recent due tick, count the stale ones as skipped.
			missed := uint64(late / interval)
			if seq+missed >= maxTicks {
				missed = maxTicks - 1 - seq
			}
			pl.stats.skippedLate.Add(int64(missed))
			pl.logSkip("process stalled; ticks skipped rather than fired in a burst", missed)
			seq += missed
		}
		select {
		case pl.sem <- struct{}{}:
		default:
			pl.stats.skippedBusy.Add(1)
			pl.logSkip(fmt.Sprintf("in-flight bound of %d requests reached; tick skipped", cap(pl.sem)), 1)
			seq++
			continue
		}
		requests.Add(1)
		pl.stats.inFlight.Add(1)
		go func(seq uint64) {
			defer requests.Done()
			now := time.Now()
			id := p.opened(now)
			s := p.probe(reqCtx, reqCtx, pl, seq, now, baseWall.Add(now.Sub(base)))
			p.closed(id)
			<-pl.sem
			pl.stats.inFlight.Add(-1)
			pl.stats.record(&s)
			out <- s
		}(seq)
		seq++
	}
}

// stopped reports whether Stop was called.
func (p *Prober) stopped() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

func (pl *poller) logSkip(msg string, n uint64) {
	now := time.Now().UnixNano()
	last := pl.lastSkipLog.Load()
	if now-last < int64(5*time.Second) || !pl.lastSkipLog.CompareAndSwap(last, now) {
		return
	}
	pl.log.Warn(msg, zap.Uint64("skipped", n),
		zap.Int64("skippedTotal", pl.stats.skippedBusy.Load()+pl.stats.skippedLate.Load()))
}

// traceState collects httptrace stamps; callbacks may run on the dialing
// goroutine, even after the request returned, hence the lock.
type traceState struct {
	mu         sync.Mutex
	start      time.Time
	frozen     bool // set when the request returned; later stamps are ignored
	phases     results.Phases
	gotConn    bool
	reused     bool
	localAddr  string
	remoteAddr string
	// dialLocal and dialRemote are the addresses of the last connection
	// this request's own dial opened: the only address a request has when
	// its connection fails before net/http hands it over (a proxy closing
	// the client during the TLS handshake).
	dialLocal  string
	dialRemote string
	// trace is the request's httptrace.ClientTrace, part of the state so
	// that the two are one allocation.
	trace httptrace.ClientTrace
}

// traceKey carries a request's traceState to the dialer; net/http dials
// with a context that keeps the request context's values.
type traceKey struct{}

// tracedDial wraps d so that every connection it opens records its
// addresses in the traceState of the request that started the dial.
func tracedDial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return c, err
		}
		ac := &addrConn{Conn: c, local: c.LocalAddr().String(), remote: c.RemoteAddr().String()}
		if ts, ok := ctx.Value(traceKey{}).(*traceState); ok {
			ts.mu.Lock()
			ts.dialLocal, ts.dialRemote = ac.local, ac.remote
			ts.mu.Unlock()
		}
		return ac, nil
	}
}

// addrConn is a dialed connection with its addresses as strings, formatted
// once: every request on a reused connection records them, and formatting
// them each time cost a reused request five allocations.
type addrConn struct {
	net.Conn
	local, remote string
}

// connAddrs returns the local and remote address of a connection net/http
// handed to a request.
func connAddrs(c net.Conn) (string, string) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if ac, ok := c.(*addrConn); ok {
		return ac.local, ac.remote
	}
	return c.LocalAddr().String(), c.RemoteAddr().String()
}

func (t *traceState) stamp(field *time.Duration) {
	d := time.Since(t.start)
	if d < time.Microsecond {
		d = time.Microsecond
	}
	t.mu.Lock()
	if *field == 0 && !t.frozen {
		*field = d
	}
	t.mu.Unlock()
}

func (t *traceState) clientTrace() *httptrace.ClientTrace {
	t.trace = httptrace.ClientTrace{
		DNSStart: func(httptrace.DNSStartInfo) { t.stamp(&t.phases.DNSStart) },
		DNSDone:  func(httptrace.DNSDoneInfo) { t.stamp(&t.phases.DNSDone) },
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				t.stamp(&t.phases.ConnectDone)
			}
		},
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err == nil {
				t.stamp(&t.phases.TLSDone)
			}
		},
		GotConn: func(info httptrace.GotConnInfo) {
			t.mu.Lock()
			if !t.gotConn && !t.frozen {
				t.gotConn = true
				t.reused = info.Reused
				if info.Conn != nil {
					t.localAddr, t.remoteAddr = connAddrs(info.Conn)
				}
			}
			t.mu.Unlock()
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				t.stamp(&t.phases.WroteRequest)
			}
		},
		GotFirstResponseByte: func() { t.stamp(&t.phases.FirstByte) },
	}
	return &t.trace
}

var (
	canonicalAuditID = http.CanonicalHeaderKey(AuditIDHeader)
	canonicalOptIn   = http.CanonicalHeaderKey(DisruptionOptInHeader)
	// canonicalDisruption is DisruptionHeader as net/http stores it
	// ("X-Openshift-Disruption"): looked up directly, it is not
	// canonicalised again on every response.
	canonicalDisruption = http.CanonicalHeaderKey(DisruptionHeader)
	acceptJSON          = []string{"application/json"}
	optInTrue           = []string{"true"}
)

// errorBodyLimit bounds how much of a non-success body is kept to describe it.
const errorBodyLimit = 4096

// maxHeaderText bounds a response header value kept in a sample; net/http
// already bounds all headers together (DefaultMaxHeaderBytes), not one.
const maxHeaderText = 512

// markUnanswered describes a request the run stopped waiting for (an
// interrupt cancelled it): "unanswered at stop" and how long it had
// waited. One that had waited longer than the header timeout had already
// been denied an answer for as long as a timeout takes, so it counts as a
// header timeout; a shorter wait says nothing about the server and stays
// aborted, which is neither success nor failure.
func markUnanswered(s *results.Sample, headerTimeout time.Duration) {
	waited := s.Duration.Round(time.Millisecond)
	if s.Duration > headerTimeout {
		s.ErrorClass = results.ClassHeaderTimeout
		s.Error = fmt.Sprintf("unanswered at stop after %s, longer than the header timeout of %s", waited, headerTimeout)
		return
	}
	s.Error = fmt.Sprintf("unanswered at stop after %s", waited)
}

// probe performs one request. start is the monotonic instant it began and
// startWall the wall clock derived from the run's monotonic base.
func (p *Prober) probe(ctx, abortCtx context.Context, pl *poller, seq uint64, start, startWall time.Time) results.Sample {
	s := results.Sample{
		Backend:    pl.backend.Name,
		Connection: pl.conn,
		Seq:        seq,
		Start:      startWall,
		AuditID:    uuid.NewString(),
		HTTP2:      pl.http2,
		Vantage:    pl.target.Vantage,
		Target:     pl.target.Node,
	}
	ts := &traceState{start: start}
	ctx, cancel := context.WithDeadline(ctx, start.Add(p.cfg.probeTimeout))
	defer cancel()
	tctx := context.WithValue(httptrace.WithClientTrace(ctx, ts.clientTrace()), traceKey{}, ts)
	req, err := http.NewRequestWithContext(tctx, http.MethodGet, pl.url, nil)
	if err != nil {
		s.Duration = time.Since(start)
		s.ErrorClass = results.ClassOther
		s.Error = SanitizeErrorText(err.Error())
		return s
	}
	// Keys written in canonical form and shared read-only values: no
	// per-request canonicalisation or value slices but the audit ID's.
	h := make(http.Header, 6)
	h[canonicalAuditID] = []string{s.AuditID}
	h["Accept"] = acceptJSON
	h["User-Agent"] = pl.uaValue
	h[canonicalOptIn] = optInTrue
	if pl.auth != nil {
		// A static bearer token set here spares client-go's bearer
		// round tripper a clone of every request.
		h["Authorization"] = pl.auth
	}
	req.Header = h
	resp, err := roundTrip(pl.client.Transport, req)
	if err != nil {
		ts.mu.Lock()
		ts.frozen = true
		ts.mu.Unlock()
	}
	var status int
	if err == nil {
		status = resp.StatusCode
		s.StatusCode = status
		s.Protocol = resp.Proto
		if v := resp.Header[canonicalDisruption]; len(v) > 0 && v[0] != "" {
			h := results.ClampText(v[0], maxHeaderText)
			s.DisruptionHeader = SanitizeErrorText(h)
			d := ParseDisruptionHeader(h)
			s.ServedBy, s.ServerShutdown, s.ShutdownElapsed = d.Host, d.Shutdown, d.Elapsed
		}
		var head []byte
		if status < 200 || status > 399 {
			head, err = io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
		}
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
		}
		resp.Body.Close()
		if err == nil && (status < 200 || status > 399) {
			s.Error = SanitizeErrorText(statusText(resp.Status, head))
			if ra := resp.Header.Get("Retry-After"); ra != "" {
				s.RetryAfter = results.ClampText(ra, maxHeaderText)
			}
		}
	}
	s.Duration = time.Since(start)
	s.ErrorClass = Classify(err, status, err != nil && abortCtx.Err() != nil)
	if err != nil {
		s.Error = SanitizeErrorText(unwrapURLError(err))
	}
	if s.ErrorClass == results.ClassAborted {
		markUnanswered(&s, phaseTimeout(p.cfg.probeTimeout))
	}
	ts.mu.Lock()
	ts.frozen = true
	s.Phases = ts.phases
	s.Reused = ts.reused
	if s.Reused {
		// The request ran on an idle connection; stamps of a dial it had
		// started meanwhile (and lost the race with the idle connection)
		// are not its phases.
		s.Phases.DNSStart, s.Phases.DNSDone, s.Phases.ConnectDone, s.Phases.TLSDone = 0, 0, 0, 0
	}
	if s.ErrorClass == results.ClassHeaderTimeout {
		// No response headers were accepted. A byte that raced the
		// connection teardown (the server answering the close) is noise.
		s.Phases.FirstByte = 0
	}
	s.LocalAddr = ts.localAddr
	s.RemoteAddr = ts.remoteAddr
	if s.LocalAddr == "" && !ts.gotConn {
		// No connection was handed over: the one this request dialed
		// is the one that failed.
		s.LocalAddr, s.RemoteAddr = ts.dialLocal, ts.dialRemote
	}
	ts.mu.Unlock()
	if s.LocalAddr == "" {
		// A connection that failed before net/http handed it over (reset
		// during the TLS handshake, say) still had a local address; the
		// socket error carries it, and it is what ties the sample to the
		// load balancer's record of where that connection went.
		s.LocalAddr, s.RemoteAddr = opErrorAddrs(err, s.RemoteAddr)
	}
	return s
}

// roundTrip sends req straight to rt, as http.Client.Do would with the
// prober's client (no redirects followed, no Client.Timeout), without
// Client.Do's per-request copy of the headers for redirects: the prober
// never follows one. Errors are wrapped in *url.Error as Client.Do wraps
// them, so error texts read the same ("Get \"https://...\": cause").
func roundTrip(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		return nil, &url.Error{Op: "Get", URL: req.URL.String(), Err: err}
	}
	if resp == nil {
		return nil, &url.Error{Op: "Get", URL: req.URL.String(), Err: fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", rt)}
	}
	return resp, nil
}

// opErrorAddrs returns the local and remote addresses of the socket
// operation that failed in err, keeping remote when err names none.
func opErrorAddrs(err error, remote string) (string, string) {
	var op *net.OpError
	if !errors.As(err, &op) || op.Source == nil {
		return "", remote
	}
	if remote == "" && op.Addr != nil {
		remote = op.Addr.String()
	}
	return op.Source.String(), remote
}

// unwrapURLError renders err as net/http does ("Get \"https://host/path\":
// <cause>"), with any user info in the URL redacted.
func unwrapURLError(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return fmt.Sprintf("%s %q: %s", ue.Op, redactURL(ue.URL), ue.Err)
	}
	return err.Error()
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	return u.String()
}

// liveStats are a poller's running counters, safe to read while it runs.
type liveStats struct {
	samples     atomic.Int64
	failures    atomic.Int64
	aborted     atomic.Int64
	skippedBusy atomic.Int64
	skippedLate atomic.Int64
	inFlight    atomic.Int64

	mu           sync.Mutex
	failingSince time.Time // start of the first failed sample of the current failure run
	lastClass    results.ErrorClass
	disrupted    time.Duration
	lastSeq      uint64
	haveSeq      bool
}

// record folds a completed sample into the live counters. Samples complete
// out of order; the live disruption figure follows samples in sequence order
// only (a late-completing older sample does not reopen a closed run), which
// makes it an estimate: the report recomputes it exactly from samples.jsonl.
func (st *liveStats) record(s *results.Sample) {
	st.samples.Add(1)
	if s.ErrorClass == results.ClassAborted {
		st.aborted.Add(1)
		return
	}
	if s.Failed() {
		st.failures.Add(1)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.haveSeq && s.Seq < st.lastSeq {
		return
	}
	st.lastSeq, st.haveSeq = s.Seq, true
	switch {
	case s.Failed() && s.ErrorClass != results.ClassDNS:
		if st.failingSince.IsZero() {
			st.failingSince = s.Start
		}
		st.lastClass = s.ErrorClass
	case !s.Failed() && !st.failingSince.IsZero():
		if d := s.Start.Sub(st.failingSince); d > 0 {
			st.disrupted += d
		}
		st.failingSince = time.Time{}
		st.lastClass = results.ClassNone
	}
}

// PollerStats is a snapshot of one poller's live counters.
type PollerStats struct {
	// Name is the poller name, e.g. "kube-api-new-connections".
	Name string
	// Backend, Connection, Vantage and Target identify the poller
	// (Vantage and Target are empty for the external load balancer).
	Backend    string
	Connection results.ConnectionType
	Vantage    string
	Target     string
	// Samples counts completed requests (including aborted ones).
	Samples int64
	// Failures counts failed requests (aborted ones excluded).
	Failures int64
	// Aborted counts requests cut by an interrupted run.
	Aborted int64
	// SkippedTicks counts ticks not fired: in-flight bound reached or the
	// process stalled for more than an interval.
	SkippedTicks int64
	// InFlight is the number of requests currently running.
	InFlight int64
	// Disrupted is the live estimate of disrupted time so far, including a
	// failure run still open now.
	Disrupted time.Duration
	// Failing reports whether the most recent samples are failing, and
	// LastClass with what.
	Failing   bool
	LastClass results.ErrorClass
}

// Stats returns a snapshot of every poller's live counters, in poller order.
// It is safe to call while Run is active.
func (p *Prober) Stats() []PollerStats {
	p.mu.Lock()
	baseWall, base := p.baseWall, p.base
	p.mu.Unlock()
	nowWall := baseWall.Add(time.Since(base))
	out := make([]PollerStats, len(p.pollers))
	for i, pl := range p.pollers {
		st := &pl.stats
		ps := PollerStats{
			Name: pl.name, Backend: pl.backend.Name, Connection: pl.conn,
			Vantage: pl.target.Vantage, Target: pl.target.Node,
			Samples:      st.samples.Load(),
			Failures:     st.failures.Load(),
			Aborted:      st.aborted.Load(),
			SkippedTicks: st.skippedBusy.Load() + st.skippedLate.Load(),
			InFlight:     st.inFlight.Load(),
		}
		st.mu.Lock()
		ps.Disrupted = st.disrupted
		if !st.failingSince.IsZero() {
			ps.Failing = true
			ps.LastClass = st.lastClass
			if d := nowWall.Sub(st.failingSince); d > 0 && !base.IsZero() {
				ps.Disrupted += d
			}
		}
		st.mu.Unlock()
		out[i] = ps
	}
	return out
}
