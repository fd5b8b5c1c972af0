// Package lb is the lab's load balancer: a TCP pass-through balancer modelled
// on a cloud network load balancer (AWS NLB) in front of the apiservers.
//
// What it models, and why:
//   - TLS passes through untouched: the client's handshake is with the
//     apiserver, as behind an NLB, so failures look the same to a client.
//   - Health checks are HTTPS GET /readyz with an interval, a timeout and
//     healthy/unhealthy thresholds; a target starts unhealthy ("initial") and
//     needs HealthyThreshold passes in a row to enter service.
//   - New connections go only to targets in service; established connections
//     are left alone when a target turns unhealthy (NLB's default).
//   - With no target in service the NLB fails open and spreads over all
//     registered targets, as AWS documents.
//   - Every accepted connection is recorded (client address as the LB sees
//     it, target, open/close times, bytes), so every sample a prober takes can
//     be attributed to the apiserver that served it.
//
// Fault behaviours (late deregistration, resets on unhealthy, blackholing)
// plug in through Policy; the default policy is the plain NLB.
//
// Two data paths share all of the above. The Go proxy (the default of New)
// accepts the client's connection and dials the target, so a target's
// refusal reaches the client as a reset after its connect succeeded. With
// Options.Kernel the kernel forwards the client's own SYN (nftables DNAT,
// kernel.go), as an NLB passes it through: a stopped target refuses the
// connect itself, a blackholed one leaves it unanswered.
package lb

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/repro-tools/repro/results"
)

// Target is one backend, identified by name (the node name in the lab).
type Target struct {
	Name string
	Addr string
}

// HealthCheck configures target health checking.
type HealthCheck struct {
	// Path is requested over HTTPS; 200 passes (AWS's default matcher).
	Path string
	// Interval between checks of one target.
	Interval time.Duration
	// Timeout of one check; a timeout is a failure.
	Timeout time.Duration
	// HealthyThreshold is how many passes in a row make a target healthy.
	HealthyThreshold int
	// UnhealthyThreshold is how many failures in a row make it unhealthy.
	UnhealthyThreshold int
	// TLS verifies the targets (the lab's CA); nil skips verification.
	TLS *tls.Config
	// Protocol is HTTPS (the default: GET Path, 200 passes, as the
	// OpenShift installer configures the API target group) or TCP (a
	// completed TCP connect passes, an NLB's default health check, which
	// knows nothing of /readyz).
	Protocol string
}

// Health-check protocols.
const (
	HealthHTTPS = "HTTPS"
	HealthTCP   = "TCP"
)

// DefaultHealthCheck is the installer's AWS health check (10 s / 10 s / 2 /
// 2) divided by ten, the lab's fast time scale (package lab's Timing).
func DefaultHealthCheck() HealthCheck {
	return HealthCheck{Path: "/readyz", Interval: time.Second, Timeout: time.Second, HealthyThreshold: 2, UnhealthyThreshold: 2}
}

// Options configures a load balancer.
type Options struct {
	// Listen is the address to listen on, e.g. "127.0.0.1:0".
	Listen string
	// Targets are registered at start. Registered is true for each unless
	// the caller later deregisters it.
	Targets []Target
	// Health is the health-check configuration.
	Health HealthCheck
	// Policy decides routing and fault behaviour; nil means NLB().
	Policy Policy
	// Records, if set, receives one JSON line per connection opened and
	// closed (a ConnEvent), for attribution after the run.
	Records io.Writer
	// HealthRecords, if set, receives one results.Signal line (kind
	// lb-target-health, source "lab-lb") per change of a target's health
	// verdict or registration.
	HealthRecords io.Writer
	// OnHealthChange, if set, is called on every health transition.
	OnHealthChange func(HealthTransition)
	// Logger logs transitions; nil is silent.
	Logger *zap.Logger
	// Kernel balances in the kernel (nftables DNAT, conntrack; see
	// kernel.go) instead of proxying: Listen's address is then a VIP no
	// socket accepts on, and the client's SYN reaches the target. It needs
	// CAP_NET_ADMIN in a network namespace of repro's own (lab/netns).
	Kernel bool
}

// TargetState is a target as the LB sees it at one moment.
type TargetState struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	// Healthy is the health-check verdict.
	Healthy bool `json:"healthy"`
	// Registered is false while the target is held out of service by its
	// owner (the lab deregisters an apiserver until it is warmed).
	Registered bool `json:"registered"`
	// Since is when Healthy last changed (zero if never).
	Since time.Time `json:"since"`
	// Active is the number of open connections to the target.
	Active int `json:"active"`
	// LastCheck is the latest check's result text ("200", "timeout", ...).
	LastCheck string `json:"lastCheck"`
}

// InService reports whether new connections may be routed to the target.
func (t TargetState) InService() bool { return t.Healthy && t.Registered }

// HealthTransition is a change of a target's health verdict.
type HealthTransition struct {
	Target  string    `json:"target"`
	Healthy bool      `json:"healthy"`
	At      time.Time `json:"at"`
	// Check is the result of the check that tipped the verdict.
	Check string `json:"check"`
}

// ConnRecord is one accepted client connection.
type ConnRecord struct {
	ID uint64 `json:"id"`
	// Client is the client's address as the LB sees it: on loopback that is
	// the prober's local address, the key for attributing a sample.
	Client string `json:"client"`
	// Target is the node the connection was sent to ("" if none).
	Target     string `json:"target,omitempty"`
	TargetAddr string `json:"targetAddr,omitempty"`
	// Action is what the LB did: forward, reject, blackhole.
	Action Action    `json:"action"`
	Opened time.Time `json:"opened"`
	// Closed is zero while the connection is open.
	Closed time.Time `json:"closed,omitzero"`
	// BytesUp counts client-to-target bytes, BytesDown the reverse.
	BytesUp   int64 `json:"bytesUp"`
	BytesDown int64 `json:"bytesDown"`
	// ClosedBy says which side ended it: client, target, reset (the LB reset
	// it on a health transition), lb (the LB stopped), dial (the client's
	// connection was never established: the target refused it or, through
	// the kernel LB, never answered its SYN), peer-reset (the kernel LB saw a TCP reset
	// from the client or the target, not one of its own).
	ClosedBy string `json:"closedBy,omitempty"`
	Error    string `json:"error,omitempty"`
}

// ConnEvent is one line of the records stream.
type ConnEvent struct {
	Event string `json:"event"` // open or close
	ConnRecord
}

// LB is a running load balancer.
type LB struct {
	opts   Options
	policy Policy
	path   dataPath
	log    *zap.Logger

	mu          sync.Mutex
	targets     map[string]*target
	order       []string
	conns       []*conn
	byClient    map[string][]*conn
	transitions []HealthTransition
	recMu       sync.Mutex
	health      *healthLog

	startedAt time.Time
	nextID    atomic.Uint64
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closed    atomic.Bool
}

// dataPath is how a client's connection reaches a target: the Go proxy
// (proxy, below) or the kernel's rules (kernel.go). Health checks,
// registration and records are the LB's; the path only carries them out.
type dataPath interface {
	kind() string
	addr() string
	// close stops the path once the LB's context is cancelled and waits
	// for its goroutines and the health checks.
	close() error
	// sync follows a registration change.
	sync()
	// routes reports whether new connections can reach the target.
	routes(name string) bool
	// healthChangedLocked is called with l.mu held on a health transition
	// and returns the part to run once l.mu is released.
	healthChangedLocked(t *target, st TargetState, action Action) func()
}

type target struct {
	Target
	healthy    bool
	registered bool
	since      time.Time
	okStreak   int
	failStreak int
	lastCheck  string
	active     map[*conn]struct{}
}

type conn struct {
	mu     sync.Mutex
	rec    ConnRecord
	client net.Conn
	up     net.Conn
	once   sync.Once
	// hold, once set, is when a blackholed client connection is reset.
	hold atomic.Pointer[time.Time]
	// active is when the target last sent bytes (Unix nanoseconds): a
	// target closing long after its last answer is stopping, one closing
	// right after it answered "Connection: close".
	active atomic.Int64
	// terminating is set by the kernel LB before it aborts the flow, so
	// the reset that follows is recorded as its verdict, not a peer's.
	terminating atomic.Bool
}

// New listens and starts health checking; targets start unhealthy.
func New(opts Options) (*LB, error) {
	if opts.Health.Interval <= 0 || opts.Health.Timeout <= 0 || opts.Health.HealthyThreshold < 1 || opts.Health.UnhealthyThreshold < 1 {
		return nil, fmt.Errorf("load balancer health check needs positive interval, timeout and thresholds, got %+v", opts.Health)
	}
	if opts.Health.Path == "" {
		opts.Health.Path = "/readyz"
	}
	switch opts.Health.Protocol {
	case "":
		opts.Health.Protocol = HealthHTTPS
	case HealthHTTPS, HealthTCP:
	default:
		return nil, fmt.Errorf("load balancer health check protocol must be %s or %s, got %q", HealthHTTPS, HealthTCP, opts.Health.Protocol)
	}
	l := &LB{opts: opts, policy: opts.Policy, log: opts.Logger, targets: map[string]*target{}, byClient: map[string][]*conn{}, startedAt: time.Now()}
	if l.policy == nil {
		l.policy = NLB()
	}
	if l.log == nil {
		l.log = zap.NewNop()
	}
	if opts.HealthRecords != nil {
		l.health = &healthLog{enc: json.NewEncoder(opts.HealthRecords)}
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	for _, t := range opts.Targets {
		l.targets[t.Name] = &target{Target: t, registered: true, lastCheck: "initial", active: map[*conn]struct{}{}}
		l.order = append(l.order, t.Name)
	}
	if opts.Kernel {
		k, err := newKernel(l)
		if err != nil {
			return nil, err
		}
		l.path = k
		k.sync()
	} else {
		ln, err := net.Listen("tcp", opts.Listen)
		if err != nil {
			return nil, fmt.Errorf("load balancer cannot listen on %s: %w", opts.Listen, err)
		}
		p := &proxy{l: l, ln: ln}
		l.path = p
		l.wg.Add(1)
		go p.acceptLoop()
	}
	for _, name := range l.order {
		l.wg.Add(1)
		go l.checkLoop(name)
	}
	return l, nil
}

// Addr is the load balancer's address: the proxy's listener, or the kernel
// LB's VIP.
func (l *LB) Addr() string { return l.path.addr() }

// Close stops accepting, stops health checks and closes every connection.
func (l *LB) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return nil
	}
	l.cancel()
	return l.path.close()
}

// SetRegistered puts a target in (true) or out of (false) service regardless
// of its health, like registering it with the target group. The lab holds a
// restarted apiserver out until its CRD storage is warm.
func (l *LB) SetRegistered(name string, registered bool) {
	l.mu.Lock()
	changed := false
	var healthy bool
	var check string
	if t := l.targets[name]; t != nil && t.registered != registered {
		t.registered = registered
		changed = true
		healthy, check = t.healthy, t.lastCheck
		l.log.Info("load balancer target registration", zap.String("target", name), zap.Bool("registered", registered))
	}
	l.mu.Unlock()
	if changed {
		l.health.write(name, healthy, registered, check, time.Now())
	}
	if changed {
		l.path.sync()
	}
}

// Targets returns every target's current state in registration order.
func (l *LB) Targets() []TargetState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statesLocked()
}

func (l *LB) statesLocked() []TargetState {
	out := make([]TargetState, 0, len(l.order))
	for _, n := range l.order {
		out = append(out, l.stateLocked(l.targets[n]))
	}
	return out
}

func (l *LB) stateLocked(t *target) TargetState {
	return TargetState{Name: t.Name, Addr: t.Addr, Healthy: t.healthy, Registered: t.registered, Since: t.since, Active: len(t.active), LastCheck: t.lastCheck}
}

// Transitions returns every health transition so far.
func (l *LB) Transitions() []HealthTransition {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]HealthTransition(nil), l.transitions...)
}

// Connections returns a snapshot of every connection record so far.
func (l *LB) Connections() []ConnRecord {
	l.mu.Lock()
	cs := append([]*conn(nil), l.conns...)
	l.mu.Unlock()
	out := make([]ConnRecord, len(cs))
	for i, c := range cs {
		out[i] = c.snapshot()
	}
	return out
}

// ConnectionsFrom returns the records of connections from one client address
// (host:port), oldest first; a port is reused only after the old connection
// closed, so the record open at a sample's time is the one that served it.
func (l *LB) ConnectionsFrom(client string) []ConnRecord {
	l.mu.Lock()
	cs := append([]*conn(nil), l.byClient[client]...)
	l.mu.Unlock()
	out := make([]ConnRecord, len(cs))
	for i, c := range cs {
		out[i] = c.snapshot()
	}
	return out
}

// WaitInService waits until every named target (all when none named) is in
// service.
func (l *LB) WaitInService(ctx context.Context, names ...string) error {
	for {
		l.mu.Lock()
		ok := true
		for _, n := range l.order {
			if len(names) > 0 && !contains(names, n) {
				continue
			}
			if !l.stateLocked(l.targets[n]).InService() {
				ok = false
			}
		}
		l.mu.Unlock()
		if ok {
			// In service is only true once the data path routes to it.
			for _, n := range l.order {
				if (len(names) == 0 || contains(names, n)) && !l.path.routes(n) {
					ok = false
				}
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for load balancer targets in service: %w (targets: %+v)", ctx.Err(), l.Targets())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func (c *conn) snapshot() ConnRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rec
}

func (l *LB) emit(ev string, rec ConnRecord) {
	if l.opts.Records == nil {
		return
	}
	b, err := json.Marshal(ConnEvent{Event: ev, ConnRecord: rec})
	if err != nil {
		return
	}
	l.recMu.Lock()
	_, _ = l.opts.Records.Write(append(b, '\n'))
	l.recMu.Unlock()
}

// proxy is the Go data path: it accepts each client connection and
// dials the target the policy picks.
type proxy struct {
	l  *LB
	ln net.Listener
}

func (p *proxy) kind() string { return KindProxy }

func (p *proxy) addr() string { return p.ln.Addr().String() }

// sync does nothing: the proxy reads registration at each accept.
func (p *proxy) sync() {}

// routes is true: the proxy picks a target per connection from its state.
func (p *proxy) routes(string) bool { return true }

// close stops accepting and closes every open connection, blackholed ones
// included.
func (p *proxy) close() error {
	l := p.l
	err := p.ln.Close()
	l.mu.Lock()
	var open []*conn
	for _, t := range l.targets {
		for c := range t.active {
			open = append(open, c)
		}
	}
	for _, c := range l.conns {
		if c.snapshot().Action == ActionBlackhole {
			open = append(open, c)
		}
	}
	l.mu.Unlock()
	for _, c := range open {
		l.finish(c, "lb", nil, false)
	}
	l.wg.Wait()
	return err
}

// healthChangedLocked takes the target's connections to reset while l.mu
// is held, so that none is missed, and resets them after.
func (p *proxy) healthChangedLocked(t *target, _ TargetState, action Action) func() {
	var reset []*conn
	if action == ActionReset {
		for c := range t.active {
			reset = append(reset, c)
		}
	}
	return func() {
		for _, c := range reset {
			p.l.finish(c, "reset", errors.New("target turned unhealthy"), true)
		}
	}
}

func (p *proxy) acceptLoop() {
	l := p.l
	defer l.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if l.closed.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.log.Warn("load balancer accept failed", zap.Error(err))
			time.Sleep(10 * time.Millisecond)
			continue
		}
		l.wg.Add(1)
		go l.handle(c)
	}
}

func (l *LB) handle(client net.Conn) {
	defer l.wg.Done()
	c := &conn{client: client, rec: ConnRecord{ID: l.nextID.Add(1), Client: client.RemoteAddr().String(), Opened: time.Now()}}
	l.mu.Lock()
	route := l.policy.Route(client.RemoteAddr(), l.statesLocked())
	var t *target
	if route.Action == ActionForward {
		t = l.targets[route.Target]
		if t == nil {
			route = Route{Action: ActionReject}
		}
	}
	c.rec.Action = route.Action
	if t != nil {
		c.rec.Target, c.rec.TargetAddr = t.Name, t.Addr
		t.active[c] = struct{}{}
	} else if route.Target != "" {
		c.rec.Target = route.Target
		if tt := l.targets[route.Target]; tt != nil {
			c.rec.TargetAddr = tt.Addr
		}
	}
	l.conns = append(l.conns, c)
	l.byClient[c.rec.Client] = append(l.byClient[c.rec.Client], c)
	l.mu.Unlock()
	l.emit("open", c.snapshot())

	switch route.Action {
	case ActionReject:
		l.finish(c, "lb", errors.New("no target"), true)
		return
	case ActionBlackhole:
		// Accepted and never answered: read and discard until the client
		// gives up or the LB closes, like packets dropped on the floor.
		_, _ = io.Copy(io.Discard, client)
		l.finish(c, "client", nil, false)
		return
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	up, err := d.DialContext(l.ctx, "tcp", t.Addr)
	if err != nil {
		// An NLB forwards the client's SYN, so a refused target looks to
		// the client like a reset; Policy may instead blackhole it.
		st := l.stateOf(t.Name)
		if l.policy.DialFailed(st, err) == ActionBlackhole {
			c.mu.Lock()
			c.rec.Action = ActionBlackhole
			c.mu.Unlock()
			var hold time.Duration
			if bh, ok := l.policy.(BlackholeHold); ok {
				hold = bh.DialHold(st)
			}
			if l.discard(client, hold) {
				// The drop window ended: the target's refusal gets through.
				l.finish(c, results.LBClosedByDial, err, true)
				return
			}
			l.finish(c, "client", err, false)
			return
		}
		l.finish(c, results.LBClosedByDial, err, true)
		return
	}
	c.mu.Lock()
	c.up = up
	c.mu.Unlock()
	c.active.Store(time.Now().UnixNano())
	if l.closed.Load() {
		l.finish(c, "lb", nil, false)
		return
	}
	var wg sync.WaitGroup
	var firstMu sync.Mutex
	first := ""
	pipe := func(dst, src net.Conn, n *int64, side string) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			k, rerr := src.Read(buf)
			if k > 0 {
				if side == "target" {
					c.active.Store(time.Now().UnixNano())
				}
				c.mu.Lock()
				*n += int64(k)
				c.mu.Unlock()
				if _, werr := dst.Write(buf[:k]); werr != nil {
					break
				}
			}
			if rerr != nil {
				break
			}
		}
		firstMu.Lock()
		if first == "" {
			first = side
		}
		firstIsTarget := first == "target"
		firstMu.Unlock()
		if side == "target" && firstIsTarget {
			if tc, ok := l.policy.(TargetCloser); ok {
				idle := time.Since(time.Unix(0, c.active.Load()))
				if a, hold := tc.TargetClosed(l.stateOf(t.Name), idle); a == ActionBlackhole {
					until := time.Now().Add(hold)
					c.hold.Store(&until)
					c.mu.Lock()
					c.rec.Action = ActionBlackhole
					c.mu.Unlock()
					// Unblock the client-to-target copy without closing the
					// client; handle takes over the client from here.
					_ = client.SetReadDeadline(time.Now())
					return
				}
			}
		}
		if side == "client" && c.hold.Load() != nil {
			return
		}
		// Half-close, as TCP through a pass-through LB would propagate FIN.
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}
	wg.Add(2)
	go pipe(up, client, &c.rec.BytesUp, "client")
	go pipe(client, up, &c.rec.BytesDown, "target")
	wg.Wait()
	if held := c.hold.Load(); held != nil {
		// The target closed while the policy drops its packets: the client
		// is never told. What it sends goes nowhere until the window ends,
		// then the (stopped or restarted) target's reset reaches it.
		if l.discard(client, time.Until(*held)) {
			l.finish(c, "reset", errors.New("target closed while blackholed"), true)
			return
		}
		l.finish(c, "client", nil, false)
		return
	}
	l.finish(c, first, nil, false)
}

// discard reads and drops what the client sends until it closes (false) or
// hold has passed (true); hold 0 waits for the client or the LB's close.
func (l *LB) discard(client net.Conn, hold time.Duration) bool {
	if hold > 0 {
		_ = client.SetReadDeadline(time.Now().Add(hold))
	}
	_, err := io.Copy(io.Discard, client)
	var ne net.Error
	return hold > 0 && errors.As(err, &ne) && ne.Timeout()
}

func (l *LB) stateOf(name string) TargetState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stateLocked(l.targets[name])
}

// finish closes both sides once and records why; reset sends RST to the
// client instead of FIN.
func (l *LB) finish(c *conn, by string, err error, reset bool) {
	c.once.Do(func() {
		if reset {
			if tc, ok := c.client.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
		}
		_ = c.client.Close()
		c.mu.Lock()
		up := c.up
		c.rec.Closed = time.Now()
		c.rec.ClosedBy = by
		if err != nil {
			c.rec.Error = err.Error()
		}
		c.mu.Unlock()
		if up != nil {
			if reset {
				if tc, ok := up.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
			}
			_ = up.Close()
		}
		l.mu.Lock()
		if t := l.targets[c.rec.Target]; t != nil {
			delete(t.active, c)
		}
		l.mu.Unlock()
		l.emit("close", c.snapshot())
	})
}

func (l *LB) checkLoop(name string) {
	defer l.wg.Done()
	hc := l.opts.Health
	tlsConf := hc.TLS
	if tlsConf == nil {
		tlsConf = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // only when the caller gives no CA
	}
	// A fresh connection per check, as an NLB's health checker makes.
	client := &http.Client{
		Timeout:   hc.Timeout,
		Transport: &http.Transport{TLSClientConfig: tlsConf.Clone(), DisableKeepAlives: true},
	}
	l.mu.Lock()
	addr := l.targets[name].Addr
	l.mu.Unlock()
	url := "https://" + addr + hc.Path
	tick := time.NewTicker(hc.Interval)
	defer tick.Stop()
	probe := func() (bool, string) { return check(l.ctx, client, url) }
	if hc.Protocol == HealthTCP {
		probe = func() (bool, string) { return checkTCP(l.ctx, addr, hc.Timeout) }
	}
	for {
		ok, res := probe()
		if l.ctx.Err() != nil {
			return
		}
		l.record(name, ok, res)
		select {
		case <-l.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func check(ctx context.Context, c *http.Client, url string) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := c.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false, "timeout"
		}
		return false, shortErr(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, fmt.Sprint(resp.StatusCode)
}

// checkTCP passes when a TCP connection to addr completes within timeout.
func checkTCP(ctx context.Context, addr string, timeout time.Duration) (bool, string) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false, "timeout"
		}
		return false, shortErr(err)
	}
	_ = c.Close()
	return true, "connected"
}

func shortErr(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Op + ": " + oe.Err.Error()
	}
	return err.Error()
}

func (l *LB) record(name string, ok bool, res string) {
	l.mu.Lock()
	t := l.targets[name]
	t.lastCheck = res
	if ok {
		t.okStreak++
		t.failStreak = 0
	} else {
		t.failStreak++
		t.okStreak = 0
	}
	verdict := l.policy.Verdict(l.stateLocked(t), t.okStreak, t.failStreak, l.opts.Health)
	if verdict == t.healthy {
		l.mu.Unlock()
		return
	}
	t.healthy = verdict
	t.since = time.Now()
	tr := HealthTransition{Target: name, Healthy: verdict, At: t.since, Check: res}
	l.transitions = append(l.transitions, tr)
	st := l.stateLocked(t)
	registered := t.registered
	after := l.path.healthChangedLocked(t, st, l.policy.HealthChanged(st))
	l.mu.Unlock()
	l.log.Info("load balancer health transition", zap.String("target", name), zap.Bool("healthy", verdict), zap.String("check", res))
	l.health.write(name, verdict, registered, res, tr.At)
	after()
	if l.opts.OnHealthChange != nil {
		l.opts.OnHealthChange(tr)
	}
}
