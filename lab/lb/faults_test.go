package lb

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

// tcpBackend is a plain TCP server that echoes one line per read and can
// stop listening and close its connections, like an apiserver that stopped.
type tcpBackend struct {
	name string
	ln   net.Listener
	mu   sync.Mutex
	cs   []net.Conn
}

func newTCPBackend(t *testing.T, name string) *tcpBackend {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &tcpBackend{name: name, ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.cs = append(b.cs, c)
			b.mu.Unlock()
			go func() {
				buf := make([]byte, 512)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						_, _ = c.Write([]byte(name))
					}
					if err != nil {
						c.Close()
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(b.stop)
	return b
}

// stop closes the listener (new connections are refused) and every
// connection (FIN), as a stopped server does.
func (b *tcpBackend) stop() {
	b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.cs {
		c.Close()
	}
	b.cs = nil
}

func startTCP(t *testing.T, f Faults, backs ...*tcpBackend) *LB {
	t.Helper()
	return startLB(t, Options{}, f, 40*time.Millisecond, backs...)
}

// startLB starts a load balancer with opts in front of backs, with f's
// faults and a TCP health check every interval, and waits until every
// target is in service.
func startLB(t *testing.T, opts Options, f Faults, interval time.Duration, backs ...*tcpBackend) *LB {
	t.Helper()
	opts.Listen, opts.Policy = "127.0.0.1:0", Faulty(f)
	opts.Health = HealthCheck{Protocol: HealthTCP, Interval: interval, Timeout: 200 * time.Millisecond, HealthyThreshold: 2, UnhealthyThreshold: 2}
	for _, b := range backs {
		opts.Targets = append(opts.Targets, Target{Name: b.name, Addr: b.ln.Addr().String()})
	}
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.WaitInService(ctx); err != nil {
		t.Fatal(err)
	}
	return l
}

// ask sends one line on c and reads the answer within d.
func ask(c net.Conn, d time.Duration) (string, error) {
	if _, err := c.Write([]byte("hi\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}

func dialAsk(t *testing.T, addr string, d time.Duration) (string, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err // a reset can beat the handshake's end
	}
	defer c.Close()
	return ask(c, d)
}

// dialTo dials addr until a connection lands on the backend named name,
// and returns it (one answered exchange in).
func dialTo(t *testing.T, addr, name string) net.Conn {
	t.Helper()
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := ask(c, time.Second); got == name {
			return c
		}
		c.Close()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func unhealthy(l *LB, name string) bool {
	for _, s := range l.Targets() {
		if s.Name == name {
			return !s.Healthy
		}
	}
	return false
}

func TestTCPHealthCheckFollowsTheListener(t *testing.T) {
	a, b := newTCPBackend(t, "a"), newTCPBackend(t, "b")
	l := startTCP(t, Faults{}, a, b)
	a.stop()
	waitFor(t, "a unhealthy once its port refuses", func() bool { return unhealthy(l, "a") })
	tr := l.Transitions()
	if last := tr[len(tr)-1]; last.Target != "a" || last.Healthy || last.Check == "connected" {
		t.Fatalf("last transition %+v", last)
	}
	for i := 0; i < 4; i++ {
		if got, err := dialAsk(t, l.Addr(), time.Second); err != nil || got != "b" {
			t.Fatalf("request %d: %q %v, want b", i, got, err)
		}
	}
}

func TestLateDeregistrationKeepsRoutingToAnUnhealthyTarget(t *testing.T) {
	const late = 800 * time.Millisecond
	a, b := newTCPBackend(t, "a"), newTCPBackend(t, "b")
	l := startTCP(t, Faults{LateDeregistration: late}, a, b)
	a.stop()
	waitFor(t, "a unhealthy", func() bool { return unhealthy(l, "a") })
	tr := l.Transitions()
	at := tr[len(tr)-1].At
	// Inside the window a still gets new connections, half of them by the
	// flow hash: refused, which the client sees as a reset. 20 dials all
	// miss a with probability 2^-20.
	resets := 0
	for i := 0; i < 20 && time.Since(at) < late-200*time.Millisecond; i++ {
		got, err := dialAsk(t, l.Addr(), time.Second)
		if err != nil {
			if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
				t.Fatalf("routed to the stopped target: %v, want a reset", err)
			}
			resets++
		} else if got != "b" {
			t.Fatalf("got %q", got)
		}
	}
	if resets == 0 {
		t.Fatalf("no connection was routed to the unhealthy target within %v of its transition", late)
	}
	time.Sleep(time.Until(at.Add(late + 50*time.Millisecond)))
	for i := 0; i < 4; i++ {
		if got, err := dialAsk(t, l.Addr(), time.Second); err != nil || got != "b" {
			t.Fatalf("after the window, request %d: %q %v, want b", i, got, err)
		}
	}
}

func TestResetOnUnhealthyResetsEstablishedConnections(t *testing.T) {
	a := newTCPBackend(t, "a")
	l := startTCP(t, Faults{ResetOnUnhealthy: true}, a)
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := ask(c, time.Second); err != nil || got != "a" {
		t.Fatalf("%q %v", got, err)
	}
	// Stop accepting but keep the established connection open on the
	// target's side: only the LB can end it.
	a.ln.Close()
	waitFor(t, "a unhealthy", func() bool { return unhealthy(l, "a") })
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, err = c.Read(make([]byte, 8))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("established connection after the unhealthy transition: %v, want a reset", err)
	}
	waitFor(t, "record closed by reset", func() bool {
		rs := l.Connections()
		return len(rs) == 1 && rs[0].ClosedBy == "reset"
	})
}

func TestBlackholeDropsNewAndEstablishedConnectionsToAStoppedTarget(t *testing.T) {
	const hole = 900 * time.Millisecond
	a, b := newTCPBackend(t, "a"), newTCPBackend(t, "b")
	l := startTCP(t, Faults{Blackhole: hole, LateDeregistration: 5 * time.Second}, a, b)
	// An established connection to a, idle longer than a stop's threshold.
	held := dialTo(t, l.Addr(), "a")
	defer held.Close()
	time.Sleep(600 * time.Millisecond)
	a.ln.Close()
	waitFor(t, "a unhealthy", func() bool { return unhealthy(l, "a") })
	stopped := time.Now()
	a.stop() // now a closes the idle connection: its FIN must not reach us
	// The held connection: our request goes nowhere, no FIN, no answer.
	if got, err := ask(held, 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("request on a connection the stopped target closed: %q %v, want no answer", got, err)
	}
	// New connections routed to a (late routing, half of them by the flow
	// hash) are accepted and never answered; 20 dials all miss a with
	// probability 2^-20, and the answered ones take a millisecond, so the
	// first silent one comes well inside the window.
	silent := 0
	for i := 0; i < 20 && silent == 0; i++ {
		c, err := net.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		got, err := ask(c, 150*time.Millisecond)
		c.Close()
		switch {
		case isTimeout(err):
			silent++
		case err != nil || got != "b":
			t.Fatalf("new connection: %q %v", got, err)
		}
	}
	if silent == 0 {
		t.Fatal("no new connection was blackholed")
	}
	// After the window the target's reset gets through on the held one.
	_ = held.SetReadDeadline(stopped.Add(hole + time.Second))
	_, err := held.Read(make([]byte, 8))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("held connection after the window: %v, want a reset", err)
	}
	if since := time.Since(stopped); since < hole-200*time.Millisecond {
		t.Fatalf("reset after %v, before the %v window ended", since, hole)
	}
}
