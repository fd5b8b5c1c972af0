package prober_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// mode is how the test server answers.
type mode int32

const (
	modeOK mode = iota
	modeHang
	modeReset
	modeClose
	mode429
	mode503
	mode401
	mode403
	modeSlowBody
)

// testServer is a real TLS server on a loopback socket whose behaviour can
// be switched while the prober runs.
type testServer struct {
	*httptest.Server
	mode     atomic.Int32
	mu       sync.Mutex
	auditIDs map[string]bool
	protos   map[string]int
	agents   map[string]bool
	optIns   int
	release  chan struct{}
	// disruption, when set, is sent as X-OpenShift-Disruption to requests
	// that opt in, as OpenShift's kube-apiserver does.
	disruption atomic.Pointer[string]
}

// requests counts the requests the server has received (one audit ID each).
func (ts *testServer) requests() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.auditIDs)
}

func newTestServer(t testing.TB, http2 bool, opts ...func(*httptest.Server)) *testServer {
	t.Helper()
	ts := &testServer{auditIDs: map[string]bool{}, protos: map[string]int{}, agents: map[string]bool{}, release: make(chan struct{})}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(ts.handle))
	srv.EnableHTTP2 = http2
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ecdsaCert(t)}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	for _, o := range opts {
		o(srv)
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	ts.Server = srv
	t.Cleanup(func() {
		ts.setMode(modeOK)
		close(ts.release)
		srv.CloseClientConnections()
		srv.Close()
	})
	return ts
}

func (ts *testServer) setMode(m mode) { ts.mode.Store(int32(m)) }

func (ts *testServer) handle(w http.ResponseWriter, r *http.Request) {
	ts.mu.Lock()
	ts.auditIDs[r.Header.Get("Audit-ID")] = true
	ts.protos[r.Proto]++
	ts.agents[r.UserAgent()] = true
	optIn := r.Header.Get("X-Openshift-If-Disruption") == "true"
	if optIn {
		ts.optIns++
	}
	ts.mu.Unlock()
	if h := ts.disruption.Load(); h != nil && optIn {
		w.Header().Set("X-OpenShift-Disruption", *h)
	}
	switch mode(ts.mode.Load()) {
	case modeOK:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`))
	case modeHang:
		// Accept the request and never answer, like a target behind a load
		// balancer that no longer responds.
		// It does not answer even once the client has gone.
		select {
		case <-ts.release:
		case <-time.After(10 * time.Second):
		}
	case modeReset, modeClose:
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("hijack not supported (HTTP/2)")
		}
		conn, _, err := hj.Hijack()
		if err != nil {
			return
		}
		if mode(ts.mode.Load()) == modeReset {
			if tc, ok := conn.(*tls.Conn); ok {
				if tcp, ok := tc.NetConn().(*net.TCPConn); ok {
					_ = tcp.SetLinger(0) // RST instead of FIN
					_ = tcp.Close()
					return
				}
			}
		}
		_ = conn.Close()
	case mode429:
		w.Header().Set("Retry-After", "3")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"The apiserver is shutting down, please try again later.","reason":"TooManyRequests","code":429}`))
	case mode503:
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready"))
	case modeSlowBody:
		// Headers at once, then a body that never ends: only the overall
		// probe timeout can end the request.
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"kind":`))
		w.(http.Flusher).Flush()
		select {
		case <-ts.release:
		case <-time.After(10 * time.Second):
		}
	case mode403:
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"forbidden: User \"system:anonymous\" cannot get path","reason":"Forbidden","code":403}`))
	case mode401:
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`))
	}
}

func (ts *testServer) sawAuditID(id string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.auditIDs[id]
}

// restConfig is what a kubeconfig pointing at the server would produce:
// verified TLS against the server's CA and a bearer token.
func (ts *testServer) restConfig() *rest.Config {
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	return &rest.Config{
		Host:            ts.URL,
		BearerToken:     "test-token-" + strconv.Itoa(42),
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
	}
}

var (
	certOnce sync.Once
	cert     tls.Certificate
	certErr  error
)

// ecdsaCert returns a self-signed P-256 certificate for 127.0.0.1. The
// server shares the machine with the prober in these tests; signing
// handshakes with P-256 instead of httptest's RSA key keeps the server's
// share of the CPU small, so the figures are about the prober.
func ecdsaCert(t testing.TB) tls.Certificate {
	certOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			certErr = err
			return
		}
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "repro-test"},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().Add(24 * time.Hour),
			IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
			DNSNames:              []string{"localhost"},
			KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
			ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			certErr = err
			return
		}
		cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	})
	if certErr != nil {
		t.Fatal(certErr)
	}
	return cert
}

// closedPortURL returns an https URL on a loopback port nothing listens on.
func closedPortURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "https://" + addr
}
