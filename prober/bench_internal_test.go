package prober

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/results"
)

// BenchmarkSample measures the client-side cost of one sample (request,
// trace, classification) against a local TLS server, per connection type.
// The new-connection figure includes a full TCP+TLS handshake per request,
// which is the point of that poller.
func BenchmarkSample(b *testing.B) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`))
	}))
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	rc := &rest.Config{Host: srv.URL, BearerToken: "t", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	backends, _ := LookupBackends([]string{"kube-api"})
	for _, h2 := range []bool{false, true} {
		for _, ct := range results.ConnectionTypes {
			name := string(ct) + "/HTTP1.1"
			if h2 {
				name = string(ct) + "/HTTP2"
			}
			b.Run(name, func(b *testing.B) {
				p, err := New(rc, WithBackends(backends...), WithConnectionTypes(ct), WithHTTP2(h2), WithProbeTimeout(5*time.Second))
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				pl := p.pollers[0]
				ctx := context.Background()
				var buf []byte
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					now := time.Now()
					s := p.probe(ctx, ctx, pl, uint64(i), now, now)
					if !s.OK() {
						b.Fatalf("sample failed: %s %s", s.ErrorClass, s.Error)
					}
					buf = s.AppendJSON(buf[:0])
				}
			})
		}
	}
}

// BenchmarkAppendJSON measures encoding one sample line.
func BenchmarkAppendJSON(b *testing.B) {
	s := results.Sample{Backend: "kube-api", Connection: results.NewConnections, Seq: 123456, Start: time.Now(),
		Duration: 12 * time.Millisecond, Phases: results.Phases{ConnectDone: time.Millisecond, TLSDone: 5 * time.Millisecond, WroteRequest: 5100 * time.Microsecond, FirstByte: 11 * time.Millisecond},
		LocalAddr: "10.0.0.1:43210", RemoteAddr: "10.0.0.2:6443", Protocol: "HTTP/1.1", StatusCode: 200,
		AuditID: "8f1e7c1a-1f7e-4c4b-9d5e-0d6a2b3c4d5e"}
	var buf []byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = s.AppendJSON(buf[:0])
	}
}
