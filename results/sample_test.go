package results_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

// TestSampleJSONRoundTrip checks the samples.jsonl encoding is valid JSON,
// omits unreached phases, and decodes back to the same sample.
func TestSampleJSONRoundTrip(t *testing.T) {
	s := results.Sample{
		Backend: "kube-api", Connection: results.ReusedConnections, Seq: 7,
		Start:    time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC),
		Duration: 12345678 * time.Nanosecond,
		Phases:   results.Phases{WroteRequest: 150 * time.Microsecond},
		Reused:   true, LocalAddr: "127.0.0.1:1", RemoteAddr: "127.0.0.1:2",
		ErrorClass: results.ClassHeaderTimeout,
		Error:      "Get \"https://x/api\": net/http: timeout awaiting response headers\n<&>",
		AuditID:    "a-b",
	}
	b := s.AppendJSON(nil)
	var generic map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	for _, k := range []string{"dns_start_ms", "connect_done_ms", "tls_done_ms", "first_byte_ms", "status", "protocol"} {
		if _, ok := generic[k]; ok {
			t.Errorf("%s present but not reached: %s", k, b)
		}
	}
	if generic["duration_ms"] != 12.346 || generic["wrote_request_ms"] != 0.15 {
		t.Errorf("ms encoding wrong: %s", b)
	}
	var back results.Sample
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	want := s
	want.Duration = 12346 * time.Microsecond
	if fmt.Sprint(back) != fmt.Sprint(want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, want)
	}
}

// TestFastDecodeMatchesEncodingJSON checks the reflection-free decoder
// against encoding/json on every shape of sample, and that odd but valid
// JSON (escapes, exponents, spacing) still decodes through the fallback.
func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	samples := []results.Sample{
		{Backend: "kube-api", Connection: results.NewConnections, Seq: 0, Start: time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC),
			Duration: 12345 * time.Microsecond, Phases: results.Phases{DNSStart: time.Microsecond, DNSDone: 2 * time.Millisecond, ConnectDone: 3 * time.Millisecond, TLSDone: 4 * time.Millisecond, WroteRequest: 5 * time.Millisecond, FirstByte: 6 * time.Millisecond},
			LocalAddr: "[::1]:1", RemoteAddr: "[::1]:2", Protocol: "HTTP/2.0", StatusCode: 200, AuditID: "x"},
		{Backend: "custom", Connection: results.ReusedConnections, Seq: 1 << 40, Start: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
			Duration: 15 * time.Second, Reused: true, ErrorClass: results.ClassHTTP429, StatusCode: 429, RetryAfter: "5",
			Error: `quote " backslash \ newline` + "\n", AuditID: "y"},
		{Backend: "oauth-api", Connection: results.NewConnections, Seq: 2, Start: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
			Duration: time.Millisecond, StatusCode: 200, AuditID: "z", HTTP2: true, Vantage: "direct", Target: "master-1",
			DisruptionHeader: "shutdown=true elapsed=1.5s host=master-1", ServedBy: "master-1",
			ServerShutdown: true, ShutdownElapsed: 1500 * time.Millisecond},
	}
	for _, s := range samples {
		line := s.AppendJSON(nil)
		var fast results.Sample
		if err := json.Unmarshal(line, &fast); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(fast) != fmt.Sprint(s) {
			t.Errorf("decode mismatch:\n got %+v\nwant %+v", fast, s)
		}
	}
	odd := `{ "backend" : "kube-api", "connection":"new", "seq":3, "start":"2025-01-02T03:04:05Z", "duration_ms":1.5e1, "error":"a\u0041", "extra":{"x":[1]} }`
	var s results.Sample
	if err := json.Unmarshal([]byte(odd), &s); err != nil {
		t.Fatal(err)
	}
	if s.Duration != 15*time.Millisecond || s.Error != "aA" || s.Seq != 3 {
		t.Errorf("fallback decode: %+v", s)
	}
}

func TestSamplerName(t *testing.T) {
	for _, c := range []struct {
		http2           bool
		vantage, target string
		want            string
	}{
		{false, "", "", "kube-api-new-connections"},
		{false, results.VantageExternalLB, "", "kube-api-new-connections"},
		{true, "", "", "kube-api-http2-external-lb-new-connections"},
		{false, "internal-lb", "", "kube-api-http1-internal-lb-new-connections"},
		{false, "direct", "master-0", "kube-api-http1-direct-master-0-new-connections"},
	} {
		if got := results.SamplerName("kube-api", c.http2, c.vantage, c.target, results.NewConnections); got != c.want {
			t.Errorf("SamplerName(%v, %q, %q) = %q, want %q", c.http2, c.vantage, c.target, got, c.want)
		}
	}
}

// SplitPollerName undoes PollerName and SamplerName, and leaves a name
// without a connection suffix whole.
func TestSplitPollerName(t *testing.T) {
	for _, c := range []struct {
		name, stem string
		conn       results.ConnectionType
	}{
		{"kube-api-new-connections", "kube-api", results.NewConnections},
		{"cache-oauth-api-reused-connections", "cache-oauth-api", results.ReusedConnections},
		{"kube-api-http2-external-lb-new-connections", "kube-api-http2-external-lb", results.NewConnections},
		{"ci-cluster-network-liveness", "ci-cluster-network-liveness", ""},
	} {
		if stem, conn := results.SplitPollerName(c.name); stem != c.stem || conn != c.conn {
			t.Errorf("SplitPollerName(%q) = %q, %q; want %q, %q", c.name, stem, conn, c.stem, c.conn)
		}
	}
}
