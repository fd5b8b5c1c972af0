package lb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/repro-tools/repro/lab/netns"
)

// TestMain runs the package's tests inside a network namespace of their own
// where one can be made, so the kernel LB's tests run (and its rules never
// touch the host's network).
func TestMain(m *testing.M) {
	netns.ReexecTests()
	os.Exit(m.Run())
}

func needKernel(t *testing.T) {
	t.Helper()
	if !netns.Inside() {
		t.Skipf("the kernel load balancer needs repro's network namespace: %v", netns.Check())
	}
}

func startKernel(t *testing.T, f Faults, interval time.Duration, backs ...*tcpBackend) *LB {
	t.Helper()
	needKernel(t)
	return startLB(t, Options{Kernel: true, Logger: zaptest.NewLogger(t)}, f, interval, backs...)
}

// TestKernelSpreadsFlowsAndRecordsThem: new connections to the VIP reach
// every target (the SYN passes through: the target's own answer comes back),
// and each is recorded under the client address the prober would log.
func TestKernelSpreadsFlowsAndRecordsThem(t *testing.T) {
	backs := []*tcpBackend{newTCPBackend(t, "a"), newTCPBackend(t, "b"), newTCPBackend(t, "c")}
	l := startKernel(t, Faults{}, 40*time.Millisecond, backs...)
	seen := map[string]int{}
	locals := map[string]string{}
	for i := 0; i < 60; i++ {
		c, err := net.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		got, err := ask(c, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		seen[got]++
		locals[c.LocalAddr().String()] = got
		c.Close()
	}
	if len(seen) != 3 {
		t.Errorf("60 new connections reached %v, want all of a, b, c", seen)
	}
	waitFor(t, "a record for every connection", func() bool {
		for local, want := range locals {
			recs := l.ConnectionsFrom(local)
			if len(recs) == 0 || recs[len(recs)-1].Target != want || recs[len(recs)-1].Closed.IsZero() {
				return false
			}
		}
		return true
	})
}

// TestKernelStoppedTargetRefuses: a target that stopped listening while the
// LB still routes to it refuses the client's connect itself (ECONNREFUSED),
// not a reset after the handshake as through a proxy.
func TestKernelStoppedTargetRefuses(t *testing.T) {
	backs := []*tcpBackend{newTCPBackend(t, "a"), newTCPBackend(t, "b")}
	// Checks 300 ms apart: the LB routes to b for 300-600 ms after it stopped.
	l := startKernel(t, Faults{}, 300*time.Millisecond, backs...)
	backs[1].stop()
	// Each dial binds its port before it connects, as the lab's pollers do,
	// so a refused one still knows the address its SYN left from.
	var port int
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			port = 0
			if syscall.Bind(int(fd), &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}) != nil {
				return
			}
			if sa, err := syscall.Getsockname(int(fd)); err == nil {
				port = sa.(*syscall.SockaddrInet4).Port
			}
		})
	}}
	var refusedFrom []string
	refused, answered := 0, 0
	for i := 0; i < 40 && !unhealthy(l, "b"); i++ {
		c, err := d.Dial("tcp", l.Addr())
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			refused++
			refusedFrom = append(refusedFrom, fmt.Sprintf("127.0.0.1:%d", port))
		case err != nil:
			t.Fatalf("dial: %v, want success or connection refused", err)
		default:
			if got, err := ask(c, time.Second); err != nil || got != "a" {
				t.Errorf("through the LB: %q %v", got, err)
			}
			answered++
			c.Close()
		}
	}
	if refused == 0 {
		t.Errorf("no connect refused before b turned unhealthy (%d answered by a)", answered)
	}
	// Each refused dial has its record, to b, as a failed dial's: what
	// ties a refused request to the apiserver it was sent to.
	for _, from := range refusedFrom {
		waitFor(t, "the record of the refused dial from "+from, func() bool {
			rs := l.ConnectionsFrom(from)
			return len(rs) > 0 && !rs[len(rs)-1].Closed.IsZero()
		})
		if r := l.ConnectionsFrom(from); r[len(r)-1].Target != "b" || r[len(r)-1].ClosedBy != "dial" || r[len(r)-1].Error != "connection refused" {
			t.Errorf("refused dial from %s recorded as %+v, want to b, closed by dial, connection refused", from, r[len(r)-1])
		}
	}
}

// TestKernelConnectionTermination: with termination on, an established flow
// to a target that turns unhealthy is reset, idle or not.
func TestKernelConnectionTermination(t *testing.T) {
	backs := []*tcpBackend{newTCPBackend(t, "a"), newTCPBackend(t, "b")}
	l := startKernel(t, Faults{ResetOnUnhealthy: true}, 40*time.Millisecond, backs...)
	onB := dialTo(t, l.Addr(), "b")
	defer onB.Close()
	// b's health check fails (its listener closes) but its established
	// connection stays up on b's side: only the LB can end it.
	backs[1].ln.Close()
	waitFor(t, "b unhealthy", func() bool { return unhealthy(l, "b") })
	// The client is told without sending anything, as by an NLB's reset.
	_ = onB.SetReadDeadline(time.Now().Add(time.Second))
	_, err := onB.Read(make([]byte, 16))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading the idle terminated flow: %v, want a connection reset", err)
	}
	// Its record names the LB's verdict: this is what diagnose counts.
	local := onB.LocalAddr().String()
	waitFor(t, "the terminated flow's record", func() bool {
		recs := l.ConnectionsFrom(local)
		return len(recs) > 0 && !recs[len(recs)-1].Closed.IsZero()
	})
	if r := l.ConnectionsFrom(local); r[len(r)-1].ClosedBy != "reset" {
		t.Errorf("terminated flow recorded as closed by %q (%s), want reset", r[len(r)-1].ClosedBy, r[len(r)-1].Error)
	}
}

// TestKernelTerminatedFlowIsForgotten: a client that opens a new connection
// from the port of a flow the LB terminated is routed afresh, to a healthy
// target, as by an NLB that forgot the flow. conntrack keeps a reset flow
// for ten seconds, and a SYN on it from the client's side passes on the old
// entry's NAT (the kernel reopens only flows the client side itself closed
// or reset): seen in a lab run, a new connection from a reused port went to
// the apiserver whose flows the LB had reset 5 s before, and was never
// recorded.
func TestKernelTerminatedFlowIsForgotten(t *testing.T) {
	backs := []*tcpBackend{newTCPBackend(t, "a"), newTCPBackend(t, "b")}
	l := startKernel(t, Faults{ResetOnUnhealthy: true}, 40*time.Millisecond, backs...)
	// Client ports below the kernel's ephemeral range (32768 up), so that
	// no other connection holds the port when it is used again; the LB
	// hashes the client's port, so one of them lands on b.
	dialFrom := func(port int) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}, Timeout: time.Second}
		return d.Dial("tcp", l.Addr())
	}
	var onB net.Conn
	port := 0
	for p := 20000; p < 20100 && onB == nil; p++ {
		c, err := dialFrom(p)
		if err != nil {
			continue
		}
		if got, _ := ask(c, time.Second); got == "b" {
			onB, port = c, p
			continue
		}
		// Aborted, not closed: no TIME_WAIT left on the port.
		_ = c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
	if onB == nil {
		t.Fatal("none of client ports 20000-20099 was routed to b")
	}
	local := onB.LocalAddr().String()
	backs[1].ln.Close()
	waitFor(t, "b unhealthy", func() bool { return unhealthy(l, "b") })
	_ = onB.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := onB.Read(make([]byte, 16)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading the terminated flow: %v, want a connection reset", err)
	}
	onB.Close()
	// The LB forgets the flow right after its reset: conntrack's deletion
	// event carries the flow's byte counts into its record. Without the
	// deletion that comes only when the entry expires, ten seconds later.
	waitFor(t, "the LB to forget the terminated flow", func() bool {
		recs := l.ConnectionsFrom(local)
		return len(recs) == 1 && recs[0].ClosedBy == "reset" && recs[0].BytesUp > 0
	})
	// The same client port again (a reset leaves no TIME_WAIT to wait out).
	c, err := dialFrom(port)
	if err != nil {
		t.Fatalf("a new connection from %s, the terminated flow's port: %v, want it routed to the healthy a", local, err)
	}
	defer c.Close()
	if got, err := ask(c, time.Second); got != "a" {
		t.Fatalf("a new connection from %s answered by %q (%v), want a", local, got, err)
	}
	waitFor(t, "the new flow's record", func() bool {
		recs := l.ConnectionsFrom(local)
		return len(recs) == 2 && recs[1].Target == "a"
	})
}

// TestKernelPeerResetIsNotTheLBs: conntrack sees every TCP reset, but only
// the flows the LB terminated are its verdicts; a client that aborts its
// own connection (SO_LINGER 0) is recorded as a peer's reset.
func TestKernelPeerResetIsNotTheLBs(t *testing.T) {
	backs := []*tcpBackend{newTCPBackend(t, "a")}
	l := startKernel(t, Faults{ResetOnUnhealthy: true}, 40*time.Millisecond, backs...)
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ask(c, time.Second); err != nil || got != "a" {
		t.Fatalf("through the LB: %q %v", got, err)
	}
	local := c.LocalAddr().String()
	if err := c.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	c.Close()
	waitFor(t, "the aborted flow's record", func() bool {
		recs := l.ConnectionsFrom(local)
		return len(recs) > 0 && !recs[len(recs)-1].Closed.IsZero()
	})
	if r := l.ConnectionsFrom(local); r[len(r)-1].ClosedBy != "peer-reset" {
		t.Errorf("a client's own reset recorded as closed by %q, want peer-reset", r[len(r)-1].ClosedBy)
	}
}

// TestKernelBlackholeTimesOutConnects: while late routing still sends flows
// to a stopped target and its packets are dropped, the client's SYN goes
// unanswered: a connect timeout.
func TestKernelBlackholeTimesOutConnects(t *testing.T) {
	backs := []*tcpBackend{newTCPBackend(t, "a"), newTCPBackend(t, "b")}
	l := startKernel(t, Faults{LateDeregistration: 10 * time.Second, Blackhole: 10 * time.Second}, 40*time.Millisecond, backs...)
	backs[1].stop()
	waitFor(t, "b unhealthy", func() bool { return unhealthy(l, "b") })
	time.Sleep(100 * time.Millisecond) // the stop watcher's first refused connect
	timeouts, answered := 0, 0
	for i := 0; i < 20; i++ {
		d := net.Dialer{Timeout: 300 * time.Millisecond}
		c, err := d.Dial("tcp", l.Addr())
		switch {
		case isTimeout(err):
			timeouts++
		case err != nil:
			t.Fatalf("dial: %v, want success or a timeout", err)
		default:
			answered++
			c.Close()
		}
	}
	if timeouts == 0 || answered == 0 {
		t.Errorf("%d connect timeouts, %d answered: want both (b blackholed, a serving)", timeouts, answered)
	}
	// b comes back on its port (a restarted apiserver keeps its node's):
	// once healthy it is not dropped any more, though the window has not
	// ended, as through the proxy.
	ln, err := net.Listen("tcp", backs[1].ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	waitFor(t, "b healthy again", func() bool { return !unhealthy(l, "b") })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.WaitInService(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		d := net.Dialer{Timeout: 300 * time.Millisecond}
		c, err := d.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatalf("dial after b's return: %v", err)
		}
		c.Close()
	}
}

// TestDestroyOfAGoneSocketIsNotUnsupported: aborting a flow whose target
// socket has already gone finds only the port's listener; the kernel
// answers EINVAL and leaves the listener alone. That is "nothing left to
// reset", not "this kernel cannot destroy sockets", which once switched a
// whole lab run to the mark fallback and left idle clients hanging.
func TestDestroyOfAGoneSocketIsNotUnsupported(t *testing.T) {
	needKernel(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = destroySocket(netip.MustParseAddrPort(ln.Addr().String()), netip.MustParseAddrPort("127.0.0.1:1"))
	if err == nil || !socketGone(err) || destroyUnsupported(err) {
		t.Fatalf("aborting a flow with no socket: %v; want an error socketGone accepts and destroyUnsupported does not", err)
	}
	c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatalf("the port's listener after the abort: %v", err)
	}
	c.Close()
}
