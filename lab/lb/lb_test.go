package lb

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// backend is a TLS server that names itself in every answer and whose
// /readyz can be switched, standing in for an apiserver.
type backend struct {
	name  string
	srv   *httptest.Server
	ready atomic.Bool
}

func newBackend(t *testing.T, name string) *backend {
	b := &backend{name: name}
	b.ready.Store(true)
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			if !b.ready.Load() {
				http.Error(w, "shutting down", http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("X-Backend", name)
		fmt.Fprint(w, name)
	}))
	b.srv.StartTLS()
	t.Cleanup(b.srv.Close)
	return b
}

func fastHealth(b *backend) HealthCheck {
	return HealthCheck{Path: "/readyz", Interval: 40 * time.Millisecond, Timeout: 200 * time.Millisecond,
		HealthyThreshold: 2, UnhealthyThreshold: 2, TLS: b.srv.Client().Transport.(*http.Transport).TLSClientConfig}
}

func start(t *testing.T, opts Options, backs ...*backend) *LB {
	t.Helper()
	for _, b := range backs {
		opts.Targets = append(opts.Targets, Target{Name: b.name, Addr: b.srv.Listener.Addr().String()})
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.Health.Interval == 0 {
		opts.Health = fastHealth(backs[0])
	}
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// client returns an HTTP client through the LB; fresh disables keep-alive so
// every request is a new connection.
func client(b *backend, fresh bool) *http.Client {
	tr := b.srv.Client().Transport.(*http.Transport).Clone()
	tr.DisableKeepAlives = fresh
	return &http.Client{Transport: tr, Timeout: 2 * time.Second}
}

func get(t *testing.T, c *http.Client, lbAddr string) string {
	t.Helper()
	resp, err := c.Get("https://" + lbAddr + "/x")
	if err != nil {
		t.Fatalf("GET through LB: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTargetsStartUnhealthyAndNeedThreshold(t *testing.T) {
	a := newBackend(t, "a")
	l := start(t, Options{}, a)
	if st := l.Targets()[0]; st.Healthy {
		t.Fatalf("target healthy before any check: %+v", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.WaitInService(ctx); err != nil {
		t.Fatal(err)
	}
	tr := l.Transitions()
	if len(tr) != 1 || !tr[0].Healthy || tr[0].Target != "a" {
		t.Fatalf("transitions = %+v, want one to healthy", tr)
	}
	// Two passes 40 ms apart: healthy cannot come sooner than one interval.
	if d := tr[0].At.Sub(l.conns0Time()); d < 30*time.Millisecond {
		t.Fatalf("healthy after %v, before the second check could run", d)
	}
}

// conns0Time is when the LB started (approximately: its first check).
func (l *LB) conns0Time() time.Time { return l.startedAt }

func TestRoutesOnlyToHealthyTargetsAndKeepsEstablished(t *testing.T) {
	a, b, c := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")
	l := start(t, Options{}, a, b, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.WaitInService(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := client(a, true)
	seen := map[string]int{}
	// The flow hash puts each new connection on any target: 60 of them miss
	// one of three targets with probability 3*(2/3)^60, about 1e-10.
	for i := 0; i < 60; i++ {
		seen[get(t, fresh, l.Addr())]++
	}
	if seen["a"] == 0 || seen["b"] == 0 || seen["c"] == 0 {
		t.Fatalf("new connections over three healthy targets went to %v", seen)
	}

	// Hold a kept-alive connection that lands on b.
	var reusedOnB *http.Client
	for i := 0; i < 60 && reusedOnB == nil; i++ {
		rc := client(a, false)
		if get(t, rc, l.Addr()) == "b" {
			reusedOnB = rc
		}
	}
	if reusedOnB == nil {
		t.Fatal("no connection landed on b")
	}

	b.ready.Store(false)
	waitFor(t, "b unhealthy", func() bool { return !l.Targets()[1].Healthy })
	seen = map[string]int{}
	for i := 0; i < 40; i++ {
		seen[get(t, fresh, l.Addr())]++
	}
	if seen["b"] != 0 || seen["a"] == 0 || seen["c"] == 0 {
		t.Fatalf("after b turned unhealthy new connections went to %v", seen)
	}
	// The established connection is kept: it still reaches b.
	if got := get(t, reusedOnB, l.Addr()); got != "b" {
		t.Fatalf("kept-alive connection answered by %q, want b", got)
	}

	// Deregistered targets get nothing even while healthy.
	l.SetRegistered("c", false)
	for i := 0; i < 4; i++ {
		if got := get(t, fresh, l.Addr()); got != "a" {
			t.Fatalf("with b unhealthy and c deregistered, got %q", got)
		}
	}

	b.ready.Store(true)
	waitFor(t, "b healthy again", func() bool { return l.Targets()[1].Healthy })
	tr := l.Transitions()
	var bTr []bool
	for _, x := range tr {
		if x.Target == "b" {
			bTr = append(bTr, x.Healthy)
		}
	}
	if fmt.Sprint(bTr) != "[true false true]" {
		t.Fatalf("b transitions = %v", bTr)
	}
}

func TestFailOpenWhenNoTargetInService(t *testing.T) {
	a := newBackend(t, "a")
	a.ready.Store(false)
	l := start(t, Options{}, a)
	time.Sleep(150 * time.Millisecond)
	if l.Targets()[0].Healthy {
		t.Fatal("unready target became healthy")
	}
	// Like an NLB with every target unhealthy: traffic still flows to all.
	if got := get(t, client(a, true), l.Addr()); got != "a" {
		t.Fatalf("fail-open got %q", got)
	}
}

func TestConnectionRecordsAttributeClients(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	var stream syncBuf
	l := start(t, Options{Records: &stream}, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.WaitInService(ctx); err != nil {
		t.Fatal(err)
	}
	tlsConf := a.srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	tlsConf.ServerName = "example.com"
	for i := 0; i < 4; i++ {
		raw, err := net.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		local := raw.LocalAddr().String()
		conn := tls.Client(raw, tlsConf)
		fmt.Fprintf(conn, "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		waitFor(t, "record closed", func() bool {
			rs := l.ConnectionsFrom(local)
			return len(rs) == 1 && !rs[0].Closed.IsZero()
		})
		rec := l.ConnectionsFrom(local)[0]
		if rec.Target != string(body) {
			t.Fatalf("record says %s served %s, the answer came from %s", rec.Target, local, body)
		}
		if rec.BytesUp == 0 || rec.BytesDown == 0 || rec.Action != ActionForward || rec.Closed.Before(rec.Opened) {
			t.Fatalf("bad record %+v", rec)
		}
	}
	if n := len(l.Connections()); n != 4 {
		t.Fatalf("%d records, want 4", n)
	}
	// The record is marked closed just before its close line is written, so
	// the last line may trail the last waitFor above.
	var lines []string
	waitFor(t, "close lines written", func() bool {
		lines = strings.Split(strings.TrimSpace(stream.String()), "\n")
		return len(lines) >= 8
	})
	if len(lines) != 8 {
		t.Fatalf("stream has %d lines, want open+close for 4 connections:\n%s", len(lines), stream.String())
	}
	var ev ConnEvent
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &ev); err != nil || ev.Event != "close" || ev.Client == "" || ev.Target == "" {
		t.Fatalf("last line %q (%v)", lines[len(lines)-1], err)
	}
}

// resetOnUnhealthy is a Policy that resets established connections when
// their target turns unhealthy: it proves the seam reaches live connections.
type resetOnUnhealthy struct{ Policy }

func (resetOnUnhealthy) HealthChanged(t TargetState) Action {
	if !t.Healthy {
		return ActionReset
	}
	return ActionKeep
}

func TestPolicySeamCanResetEstablishedConnections(t *testing.T) {
	a := newBackend(t, "a")
	l := start(t, Options{Policy: resetOnUnhealthy{NLB()}}, a)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.WaitInService(ctx); err != nil {
		t.Fatal(err)
	}
	rc := client(a, false)
	get(t, rc, l.Addr())
	a.ready.Store(false)
	waitFor(t, "a unhealthy", func() bool { return !l.Targets()[0].Healthy })
	waitFor(t, "connection reset", func() bool {
		for _, r := range l.Connections() {
			if r.ClosedBy == "reset" {
				return true
			}
		}
		return false
	})
}

func TestDialFailureResetsClientAndIsRecorded(t *testing.T) {
	a := newBackend(t, "a")
	l := start(t, Options{}, a)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.WaitInService(ctx); err != nil {
		t.Fatal(err)
	}
	// The target stops listening while the LB still counts it healthy.
	a.srv.Listener.Close()
	_, err := client(a, true).Get("https://" + l.Addr() + "/x")
	if err == nil {
		t.Fatal("request through a dead target succeeded")
	}
	waitFor(t, "dial failure recorded", func() bool {
		for _, r := range l.Connections() {
			if r.ClosedBy == "dial" && r.Target == "a" {
				return true
			}
		}
		return false
	})
}

// syncBuf is a strings.Builder safe for the LB's goroutines and the test.
type syncBuf struct {
	mu sync.Mutex
	sb strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sb.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sb.String()
}
