package prober_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
)

// rawListener is a loopback TCP listener whose accepted connections are
// handed to handle; it records every client address it accepted.
type rawListener struct {
	net.Listener
	mu      sync.Mutex
	clients map[string]bool
	wg      sync.WaitGroup
}

func listenRaw(t *testing.T, handle func(net.Conn)) *rawListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rl := &rawListener{Listener: ln, clients: map[string]bool{}}
	rl.wg.Add(1)
	go func() {
		defer rl.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			rl.mu.Lock()
			rl.clients[c.RemoteAddr().String()] = true
			rl.mu.Unlock()
			rl.wg.Add(1)
			go func() { defer rl.wg.Done(); handle(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); rl.wg.Wait() })
	return rl
}

func (rl *rawListener) saw(addr string) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.clients[addr]
}

func (rl *rawListener) url() string { return "https://" + rl.Addr().String() }

// runAgainst polls url with the given options for a few ticks and returns
// every sample.
func runAgainst(t *testing.T, rc *rest.Config, opts ...prober.Option) []results.Sample {
	t.Helper()
	opts = append([]prober.Option{prober.WithBackends(kubeAPI(t)...), prober.WithInterval(50 * time.Millisecond),
		prober.WithProbeTimeout(time.Second), prober.WithDuration(150 * time.Millisecond)}, opts...)
	p, err := prober.New(rc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var out []results.Sample
	for s := range p.Run(context.Background()) {
		out = append(out, s)
	}
	if len(out) == 0 {
		t.Fatal("no samples")
	}
	return out
}

// TestHandshakeFailuresKeepLocalAddr drives the failures a TCP proxy in
// front of a dead target produces: it completes the client's connect
// itself, then closes (FIN) or resets (RST) the client during the TLS
// handshake, or holds it and never answers. Each sample must carry the
// local address the proxy saw, whatever the stage, so it can be matched to
// the proxy's session log. A close during the handshake comes back as a
// bare io.EOF with no socket address in it: only the dial knows the
// address.
func TestHandshakeFailuresKeepLocalAddr(t *testing.T) {
	// Read the whole ClientHello: closing with unread data would send RST.
	readHello := func(c net.Conn) {
		buf := make([]byte, 16<<10)
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(buf); err != nil {
			return
		}
		for {
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}
	cases := []struct {
		name   string
		handle func(net.Conn)
		want   results.ErrorClass
	}{
		{"close", func(c net.Conn) { readHello(c); c.Close() }, results.ClassEOF},
		{"reset", func(c net.Conn) { readHello(c); _ = c.(*net.TCPConn).SetLinger(0); c.Close() }, results.ClassReset},
		// Accepts and never handshakes: the TLS handshake timeout (4/5 of
		// the 1s probe timeout) fires first.
		{"silent", func(c net.Conn) {
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}, results.ClassTLSHandshakeTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rl := listenRaw(t, tc.handle)
			rc := &rest.Config{Host: rl.url(), TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
			for _, s := range runAgainst(t, rc, prober.WithConnectionTypes(results.NewConnections)) {
				if s.ErrorClass != tc.want {
					t.Errorf("seq %d: class %q, want %q (%s)", s.Seq, s.ErrorClass, tc.want, s.Error)
				}
				if s.LocalAddr == "" || !rl.saw(s.LocalAddr) {
					t.Errorf("seq %d (%s: %s): local address %q is not one the proxy saw", s.Seq, s.ErrorClass, s.Error, s.LocalAddr)
				}
				if s.RemoteAddr != rl.Addr().String() {
					t.Errorf("seq %d: remote address %q, want %s", s.Seq, s.RemoteAddr, rl.Addr())
				}
			}
		})
	}
}

// h2Server accepts TLS connections offering h2 and runs a raw HTTP/2
// framer on each: onHeaders is called for every request stream.
func h2Server(t *testing.T, onHeaders func(fr *http2.Framer, streamID uint32) (closeConn bool)) *rawListener {
	cert := ecdsaCert(t)
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}
	return listenRaw(t, func(raw net.Conn) {
		defer raw.Close()
		c := tls.Server(raw, cfg)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if err := c.Handshake(); err != nil {
			return
		}
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil {
			return
		}
		fr := http2.NewFramer(c, c)
		if err := fr.WriteSettings(); err != nil {
			return
		}
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					_ = fr.WriteSettingsAck()
				}
			case *http2.HeadersFrame:
				if onHeaders(fr, f.StreamID) {
					return
				}
			}
		}
	})
}

func caConfig(t *testing.T, host string) *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ecdsaCert(t).Certificate[0]})
	return &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// TestHTTP2Failures checks that an HTTP/2 server that sends GOAWAY and
// closes the connection with the request in flight gives http2-goaway, and
// one that resets each request stream gives http2-stream, on both pollers.
func TestHTTP2Failures(t *testing.T) {
	cases := []struct {
		name     string
		onStream func(fr *http2.Framer, id uint32) bool
		want     results.ErrorClass
	}{
		// The apiserver's graceful shutdown of an HTTP/2 connection with
		// the stream accepted (LastStreamID covers it), then the close.
		{"goaway", func(fr *http2.Framer, id uint32) bool {
			_ = fr.WriteGoAway(id, http2.ErrCodeNo, nil)
			return true
		}, results.ClassHTTP2GoAway},
		{"rst-stream", func(fr *http2.Framer, id uint32) bool {
			_ = fr.WriteRSTStream(id, http2.ErrCodeInternal)
			return false
		}, results.ClassHTTP2Stream},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rl := h2Server(t, tc.onStream)
			for _, s := range runAgainst(t, caConfig(t, rl.url()), prober.WithHTTP2(true)) {
				if s.ErrorClass != tc.want {
					t.Errorf("%s seq %d: class %q, want %q (%s)", s.Name(), s.Seq, s.ErrorClass, tc.want, s.Error)
				}
				if !s.HTTP2 {
					t.Errorf("%s seq %d: sample of an HTTP/2 poller does not say so", s.Name(), s.Seq)
				}
				if s.LocalAddr == "" || !rl.saw(s.LocalAddr) {
					t.Errorf("%s seq %d: local address %q is not one the server saw", s.Name(), s.Seq, s.LocalAddr)
				}
			}
		})
	}
}

// TestHTTP2Success checks the raw HTTP/2 server itself answers a request
// it does not reset, so the failures above are the server's doing.
func TestHTTP2Success(t *testing.T) {
	rl := h2Server(t, func(fr *http2.Framer, id uint32) bool {
		var hb strings.Builder
		enc := hpack.NewEncoder(&stringWriter{&hb})
		_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte(hb.String()), EndHeaders: true, EndStream: true})
		return false
	})
	for _, s := range runAgainst(t, caConfig(t, rl.url()), prober.WithHTTP2(true)) {
		if !s.OK() || s.Protocol != "HTTP/2.0" {
			t.Errorf("%s seq %d: %d %s %q over %s, want 200 over HTTP/2.0", s.Name(), s.Seq, s.StatusCode, s.ErrorClass, s.Error, s.Protocol)
		}
	}
}

type stringWriter struct{ b *strings.Builder }

func (w *stringWriter) Write(p []byte) (int, error) { return w.b.Write(p) }

// TestReusedDropsStaleDialStamps makes a reused-connection request start a
// dial and then win the connection its predecessor returns to the pool
// while that dial is still in its TLS handshake. The sample ran on a
// reused connection: the connect stamp of the dial it abandoned is not one
// of its phases.
func TestReusedDropsStaleDialStamps(t *testing.T) {
	var conns atomic.Int32
	var first atomic.Bool
	srv := newTestServer(t, false, func(srv *httptest.Server) {
		// Slow the second connection's handshake, and the first request.
		srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
			if st == http.StateNew && conns.Add(1) > 1 {
				time.Sleep(300 * time.Millisecond)
			}
		}
		inner := srv.Config.Handler
		srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if first.CompareAndSwap(false, true) {
				time.Sleep(60 * time.Millisecond)
			}
			inner.ServeHTTP(w, r)
		})
	})
	p, err := prober.New(srv.restConfig(), prober.WithBackends(kubeAPI(t)...),
		prober.WithConnectionTypes(results.ReusedConnections),
		prober.WithInterval(25*time.Millisecond), prober.WithProbeTimeout(2*time.Second),
		prober.WithDuration(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := collect(p.Run(context.Background()))["kube-api-reused-connections"]
	if len(got) != 2 {
		t.Fatalf("got %d samples, want 2", len(got))
	}
	second := got[1]
	if conns.Load() < 2 {
		t.Fatalf("the second request never dialed (%d connections); the race was not set up", conns.Load())
	}
	if !second.Reused {
		t.Skipf("seq 1 got its own dial, not the returned connection (machine too slow for the 60ms window): %+v", second.Phases)
	}
	if second.Phases.ConnectDone != 0 || second.Phases.TLSDone != 0 || second.Phases.DNSStart != 0 {
		t.Errorf("seq 1 ran on a reused connection but keeps its abandoned dial's stamps: %+v", second.Phases)
	}
}

// TestDisruptionHeader checks every request opts in to OpenShift's
// X-OpenShift-Disruption header, that a header sent back is recorded raw
// and parsed, that nothing is recorded when the server sends none (as
// upstream kube-apiserver), and that the User-Agent names the poller.
func TestDisruptionHeader(t *testing.T) {
	for _, h := range []string{"", "shutdown=true shutdown-delay-duration=1m10s elapsed=12s host=apiserver-2c9d7a"} {
		ts := newTestServer(t, false)
		if h != "" {
			ts.disruption.Store(&h)
		}
		p, err := prober.New(ts.restConfig(), prober.WithBackends(kubeAPI(t)...),
			prober.WithInterval(50*time.Millisecond), prober.WithProbeTimeout(2*time.Second),
			prober.WithDuration(100*time.Millisecond), prober.WithUserAgent("repro/v9.9.9"))
		if err != nil {
			t.Fatal(err)
		}
		got := collect(p.Run(context.Background()))
		p.Close()
		n := 0
		for name, ss := range got {
			if !ts.agents["repro/v9.9.9 "+name] {
				t.Errorf("server saw no User-Agent %q (saw %v)", "repro/v9.9.9 "+name, ts.agents)
			}
			for _, s := range ss {
				n++
				if s.DisruptionHeader != h {
					t.Errorf("%s seq %d: disruption header %q, want %q", name, s.Seq, s.DisruptionHeader, h)
				}
				wantHost, wantShutdown, wantElapsed := "", false, time.Duration(0)
				if h != "" {
					wantHost, wantShutdown, wantElapsed = "apiserver-2c9d7a", true, 12*time.Second
				}
				if s.ServedBy != wantHost || s.ServerShutdown != wantShutdown || s.ShutdownElapsed != wantElapsed {
					t.Errorf("%s seq %d: served by %q shutdown %v elapsed %v, want %q %v %v", name, s.Seq,
						s.ServedBy, s.ServerShutdown, s.ShutdownElapsed, wantHost, wantShutdown, wantElapsed)
				}
			}
		}
		if ts.optIns != n {
			t.Errorf("%d of %d requests opted in to the disruption header", ts.optIns, n)
		}
	}
}

// TestParseDisruptionHeader parses header values in the shapes OpenShift's
// kube-apiserver sends (fmt "shutdown=%t shutdown-delay-duration=%s
// elapsed=%s host=%s", durations rounded to the second).
func TestParseDisruptionHeader(t *testing.T) {
	cases := []struct {
		in   string
		want prober.Disruption
	}{
		{"shutdown=false shutdown-delay-duration=1m10s elapsed=0s host=apiserver-5f8b4c",
			prober.Disruption{ShutdownDelay: 70 * time.Second, Host: "apiserver-5f8b4c"}},
		{"shutdown=true shutdown-delay-duration=2m9s elapsed=1m3s host=apiserver-a1",
			prober.Disruption{Shutdown: true, ShutdownDelay: 129 * time.Second, Elapsed: 63 * time.Second, Host: "apiserver-a1"}},
		{"shutdown=true shutdown-delay-duration=0s elapsed=0s host=",
			prober.Disruption{Shutdown: true}},
		// Order and unknown keys do not matter; an unparsable value is left out.
		{"host=h1 extra=1 elapsed=bogus shutdown=true", prober.Disruption{Shutdown: true, Host: "h1"}},
		{"", prober.Disruption{}},
	}
	for _, tc := range cases {
		if got := prober.ParseDisruptionHeader(tc.in); got != tc.want {
			t.Errorf("ParseDisruptionHeader(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// nameOnlyCert is a certificate valid for api.repro.test only, not for
// the IP it is served on.
func nameOnlyCert(t *testing.T) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "api.repro.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"api.repro.test"}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestTargets builds pollers for two vantage points in one Prober: the
// default (external load balancer) and a direct poller to a node's IP
// whose certificate names only the API host, verified with that server
// name. A direct target without the server name must fail TLS
// verification: the name is what makes it pass.
func TestTargets(t *testing.T) {
	named := nameOnlyCert(t)
	ts := newTestServer(t, true, func(srv *httptest.Server) {
		c := srv.TLS
		ip := c.Certificates[0]
		c.GetCertificate = func(hi *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hi.ServerName == "api.repro.test" {
				return &named, nil
			}
			return &ip, nil
		}
	})
	rc := ts.restConfig()
	rc.CAData = append(rc.CAData, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: named.Certificate[0]})...)
	targets := []prober.Target{
		{},
		{Vantage: "direct", Node: "master-0", URL: ts.URL, ServerName: "api.repro.test"},
		{Vantage: "internal-lb", URL: ts.URL, ServerName: "wrong.repro.test"},
	}
	p, err := prober.New(rc, prober.WithBackends(kubeAPI(t)...), prober.WithTargets(targets...), prober.WithHTTP2(true),
		prober.WithInterval(50*time.Millisecond), prober.WithProbeTimeout(2*time.Second), prober.WithDuration(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := map[string]results.ErrorClass{
		"kube-api-http2-external-lb-new-connections":        results.ClassNone,
		"kube-api-http2-external-lb-reused-connections":     results.ClassNone,
		"kube-api-http2-direct-master-0-new-connections":    results.ClassNone,
		"kube-api-http2-direct-master-0-reused-connections": results.ClassNone,
		"kube-api-http2-internal-lb-new-connections":        results.ClassTLS,
		"kube-api-http2-internal-lb-reused-connections":     results.ClassTLS,
	}
	if names := p.PollerNames(); len(names) != len(want) {
		t.Fatalf("pollers %v, want %d", names, len(want))
	}
	if _, err := p.Preflight(context.Background()); err == nil || !strings.Contains(err.Error(), "vantage internal-lb") {
		t.Errorf("preflight error %v does not name the unreachable vantage", err)
	}
	got := collect(p.Run(context.Background()))
	for name, class := range want {
		ss := got[name]
		if len(ss) == 0 {
			t.Errorf("%s: no samples", name)
		}
		for _, s := range ss {
			if s.ErrorClass != class {
				t.Errorf("%s seq %d: class %q, want %q (%s)", name, s.Seq, s.ErrorClass, class, s.Error)
			}
			if !s.HTTP2 {
				t.Errorf("%s seq %d: HTTP2 not set", name, s.Seq)
			}
		}
	}
	for _, s := range got["kube-api-http2-direct-master-0-new-connections"] {
		if s.Vantage != "direct" || s.Target != "master-0" {
			t.Errorf("direct sample carries vantage %q target %q", s.Vantage, s.Target)
		}
	}
	for _, s := range got["kube-api-http2-external-lb-new-connections"] {
		if s.Vantage != "" || s.Target != "" {
			t.Errorf("external-lb sample carries vantage %q target %q", s.Vantage, s.Target)
		}
	}
}

// TestBoundDialsKeepTheAddressOfARefusedDial: net/http reports no local
// address for a refused dial (the kernel picked the port inside connect and
// Go closed the socket); with WithBoundDials every refused sample names the
// address its SYN left from, each new connection its own port, which is
// what the lab's kernel load balancer records the flow under.
func TestBoundDialsKeepTheAddressOfARefusedDial(t *testing.T) {
	rc := &rest.Config{Host: closedPortURL(t), TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	for _, s := range runAgainst(t, rc, prober.WithConnectionTypes(results.NewConnections)) {
		if s.ErrorClass != results.ClassConnectRefused || s.LocalAddr != "" {
			t.Errorf("unbound seq %d: class %q, local address %q; want connect-refused without an address", s.Seq, s.ErrorClass, s.LocalAddr)
		}
	}
	ports := map[string]bool{}
	for _, s := range runAgainst(t, rc, prober.WithConnectionTypes(results.NewConnections), prober.WithBoundDials(true)) {
		ap, err := netip.ParseAddrPort(s.LocalAddr)
		if s.ErrorClass != results.ClassConnectRefused || err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
			t.Errorf("bound seq %d: class %q, local address %q; want connect-refused from 127.0.0.1 and a port", s.Seq, s.ErrorClass, s.LocalAddr)
		}
		if ports[s.LocalAddr] {
			t.Errorf("bound seq %d: %s recorded twice", s.Seq, s.LocalAddr)
		}
		ports[s.LocalAddr] = true
	}
}
