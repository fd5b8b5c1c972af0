package results

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrorClass names what went wrong with a request in terms an engineer can
// act on. The empty class means the request succeeded (status 200-399).
type ErrorClass string

// The error classes a Sample can carry.
const (
	// ClassNone marks a successful request.
	ClassNone ErrorClass = ""
	// ClassHeaderTimeout: connected and wrote the request, then no response
	// headers within the response-header timeout ("net/http: timeout
	// awaiting response headers"), the signature seen in the field.
	ClassHeaderTimeout ErrorClass = "header-timeout"
	// ClassConnectRefused: the TCP connect was refused (nothing listening).
	ClassConnectRefused ErrorClass = "connect-refused"
	// ClassConnectTimeout: the TCP connect did not complete in time.
	ClassConnectTimeout ErrorClass = "connect-timeout"
	// ClassDNS: name resolution failed. Like origin, this is treated as an
	// outage of the sampler, not disruption of the cluster.
	ClassDNS ErrorClass = "dns"
	// ClassTLS: the TLS handshake failed (x509 verification, a protocol
	// alert); a handshake that timed out is ClassTLSHandshakeTimeout.
	ClassTLS ErrorClass = "tls"
	// ClassTLSHandshakeTimeout: connected, but the TLS handshake did not
	// complete within the TLS handshake timeout: a target (or proxy) that
	// accepts and then says nothing.
	ClassTLSHandshakeTimeout ErrorClass = "tls-handshake-timeout"
	// ClassReset: the peer reset the connection (RST) or the pipe broke.
	ClassReset ErrorClass = "reset"
	// ClassEOF: the peer closed the connection cleanly before answering.
	ClassEOF ErrorClass = "eof"
	// ClassHTTP429: the server answered 429 Too Many Requests (what a
	// shutting-down apiserver answers with shutdown-send-retry-after).
	ClassHTTP429 ErrorClass = "http-429"
	// ClassHTTP5xx: the server answered with a 5xx status.
	ClassHTTP5xx ErrorClass = "http-5xx"
	// ClassAuth: the server answered 401 or 403. During a rollout a 401 is
	// an authentication outage (a restarted kube-apiserver starts with a
	// cold token cache and checks oauth tokens through oauth-apiserver),
	// not a network one.
	ClassAuth ErrorClass = "auth"
	// ClassHTTPOther: any other status outside 200-399.
	ClassHTTPOther ErrorClass = "http-other"
	// ClassHTTP2GoAway: the HTTP/2 server sent GOAWAY and the request was
	// not processed on that connection.
	ClassHTTP2GoAway ErrorClass = "http2-goaway"
	// ClassHTTP2Stream: an HTTP/2 stream error (RST_STREAM or a stream
	// reset by the transport).
	ClassHTTP2Stream ErrorClass = "http2-stream"
	// ClassClientTimeout: the whole request exceeded --probe-timeout
	// without any of the per-phase timeouts firing first (e.g. a slow body).
	ClassClientTimeout ErrorClass = "client-timeout"
	// ClassAborted: the run was interrupted while the request was in
	// flight. Aborted samples are neither success nor failure.
	ClassAborted ErrorClass = "aborted"
	// ClassOther: anything not recognised above; see the error text.
	ClassOther ErrorClass = "other"
)

// ErrorClasses lists every failure class, in the order reports show them.
var ErrorClasses = []ErrorClass{
	ClassHeaderTimeout, ClassConnectRefused, ClassConnectTimeout, ClassDNS, ClassTLS,
	ClassTLSHandshakeTimeout, ClassReset, ClassEOF, ClassHTTP429, ClassHTTP5xx, ClassAuth,
	ClassHTTPOther, ClassHTTP2GoAway, ClassHTTP2Stream, ClassClientTimeout,
	ClassOther, ClassAborted,
}

// Phases holds when a request reached each phase, as offsets from the
// sample's Start. Zero means the phase was not reached; a reached phase is
// never recorded as earlier than one microsecond so it stays distinguishable
// from "not reached" at the JSON precision (µs).
//
// The DNS, connect and TLS stamps come from the dial the request itself
// started. net/http does not bind a dial to its request: when requests
// overlap and a handshake is slow, a request can be handed a fresh
// connection dialed for another one (Reused is false, the connect and TLS
// stamps are absent). Such samples are rare and still count as new
// connections.
type Phases struct {
	DNSStart     time.Duration
	DNSDone      time.Duration
	ConnectDone  time.Duration
	TLSDone      time.Duration
	WroteRequest time.Duration
	FirstByte    time.Duration
}

// Sample is the record of one request. It is the unit of samples.jsonl.
//
// JSON encoding (one object per line; field names are a stable contract):
//
//	backend           string  backend name, e.g. "kube-api"
//	connection        string  "new" or "reused"
//	seq               int     tick index of the poller; start was scheduled at
//	                          base + seq*interval, so gaps mean skipped ticks
//	start             string  UTC wall clock, RFC 3339 with nanoseconds,
//	                          derived from a monotonic base (no NTP steps)
//	duration_ms       number  total duration, milliseconds with µs precision
//	dns_start_ms      number  offset from start, ms (µs precision); omitted
//	dns_done_ms               when the phase was not reached (an IP host
//	connect_done_ms           has no DNS phases; a reused connection has no
//	tls_done_ms               DNS, connect or TLS phases)
//	wrote_request_ms
//	first_byte_ms
//	reused            bool    httptrace GotConnInfo.Reused
//	local_addr        string  omitted when no connection was obtained
//	remote_addr       string
//	protocol          string  "HTTP/1.1" or "HTTP/2.0"; omitted without response
//	status            int     HTTP status; omitted without response
//	error_class       string  omitted on success; see ErrorClass
//	error             string  error text, secrets redacted; omitted on success
//	audit_id          string  the Audit-ID header sent with the request
//	retry_after       string  the Retry-After header of a 429/503, if any
//	http2             bool    the poller was configured for HTTP/2;
//	                          omitted when false
//	vantage           string  where the poller reached the API from
//	                          ("internal-lb", "direct", ...); omitted for
//	                          the external load balancer, the default
//	target            string  the node a "direct" poller polls; omitted
//	                          otherwise
//	disruption_header string  the X-OpenShift-Disruption response header
//	                          as received (openshift/kubernetes #1537);
//	                          omitted when the server sent none
//	served_by         string  its host=, the apiserver that answered
//	server_shutdown   bool    its shutdown=true; omitted when false
//	shutdown_elapsed_ms number its elapsed=, time since that apiserver's
//	                          shutdown began; omitted when not shutting down
//
// All durations in samples.jsonl are milliseconds as JSON numbers with three
// decimals (microsecond precision).
type Sample struct {
	Backend    string
	Connection ConnectionType
	Seq        uint64
	Start      time.Time
	Duration   time.Duration
	Phases     Phases
	Reused     bool
	LocalAddr  string
	RemoteAddr string
	Protocol   string
	StatusCode int
	ErrorClass ErrorClass
	Error      string
	AuditID    string
	RetryAfter string
	// HTTP2 says the poller was configured for HTTP/2 (Protocol is what
	// a response actually negotiated).
	HTTP2 bool
	// Vantage is where the poller reached the API from; empty means the
	// external load balancer.
	Vantage string
	// Target is the node a direct poller polls.
	Target string
	// DisruptionHeader is the X-OpenShift-Disruption response header as
	// received; ServedBy, ServerShutdown and ShutdownElapsed are parsed
	// from it. All are empty when the server sent none (upstream
	// kube-apiserver never does).
	DisruptionHeader string
	ServedBy         string
	ServerShutdown   bool
	ShutdownElapsed  time.Duration
}

// Name returns the poller name of the sample: origin's legacy name
// ("kube-api-new-connections") for HTTP/1.1 through the external load
// balancer, origin's newer name with protocol and load balancer type for
// anything else ("kube-api-http2-external-lb-new-connections",
// "kube-api-http1-internal-lb-reused-connections"), so those never merge
// into the legacy history.
func (s *Sample) Name() string {
	return SamplerName(s.Backend, s.HTTP2, s.Vantage, s.Target, s.Connection)
}

// OK reports whether the request succeeded (status 200-399).
func (s *Sample) OK() bool { return s.ErrorClass == ClassNone }

// Failed reports whether the request counts as a failure: not OK and not
// aborted by the end of the run.
func (s *Sample) Failed() bool { return s.ErrorClass != ClassNone && s.ErrorClass != ClassAborted }

// End returns when the request finished.
func (s *Sample) End() time.Time { return s.Start.Add(s.Duration) }

// MarshalJSON encodes the sample in the samples.jsonl schema.
func (s Sample) MarshalJSON() ([]byte, error) { return s.AppendJSON(make([]byte, 0, 512)), nil }

// AppendJSON appends the sample's JSON object (without newline) to b. It is
// the allocation-free path the results writer uses.
func (s *Sample) AppendJSON(b []byte) []byte {
	b = append(b, `{"backend":`...)
	b = appendJSONString(b, s.Backend)
	b = append(b, `,"connection":`...)
	b = appendJSONString(b, string(s.Connection))
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, s.Seq, 10)
	b = append(b, `,"start":"`...)
	b = s.Start.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","duration_ms":`...)
	b = appendMillis(b, s.Duration)
	b = appendPhase(b, `,"dns_start_ms":`, s.Phases.DNSStart)
	b = appendPhase(b, `,"dns_done_ms":`, s.Phases.DNSDone)
	b = appendPhase(b, `,"connect_done_ms":`, s.Phases.ConnectDone)
	b = appendPhase(b, `,"tls_done_ms":`, s.Phases.TLSDone)
	b = appendPhase(b, `,"wrote_request_ms":`, s.Phases.WroteRequest)
	b = appendPhase(b, `,"first_byte_ms":`, s.Phases.FirstByte)
	b = append(b, `,"reused":`...)
	b = strconv.AppendBool(b, s.Reused)
	b = appendOptString(b, `,"local_addr":`, s.LocalAddr)
	b = appendOptString(b, `,"remote_addr":`, s.RemoteAddr)
	b = appendOptString(b, `,"protocol":`, s.Protocol)
	if s.StatusCode != 0 {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(s.StatusCode), 10)
	}
	b = appendOptString(b, `,"error_class":`, string(s.ErrorClass))
	b = appendOptString(b, `,"error":`, s.Error)
	b = append(b, `,"audit_id":`...)
	b = appendJSONString(b, s.AuditID)
	b = appendOptString(b, `,"retry_after":`, s.RetryAfter)
	if s.HTTP2 {
		b = append(b, `,"http2":true`...)
	}
	b = appendOptString(b, `,"vantage":`, s.Vantage)
	b = appendOptString(b, `,"target":`, s.Target)
	b = appendOptString(b, `,"disruption_header":`, s.DisruptionHeader)
	b = appendOptString(b, `,"served_by":`, s.ServedBy)
	if s.ServerShutdown {
		b = append(b, `,"server_shutdown":true`...)
	}
	b = appendPhase(b, `,"shutdown_elapsed_ms":`, s.ShutdownElapsed)
	return append(b, '}')
}

// sampleJSON is the decoding shape of Sample.
type sampleJSON struct {
	Backend     string     `json:"backend"`
	Connection  string     `json:"connection"`
	Seq         uint64     `json:"seq"`
	Start       time.Time  `json:"start"`
	DurationMs  float64    `json:"duration_ms"`
	DNSStartMs  float64    `json:"dns_start_ms"`
	DNSDoneMs   float64    `json:"dns_done_ms"`
	ConnectMs   float64    `json:"connect_done_ms"`
	TLSDoneMs   float64    `json:"tls_done_ms"`
	WroteMs     float64    `json:"wrote_request_ms"`
	FirstByteMs float64    `json:"first_byte_ms"`
	Reused      bool       `json:"reused"`
	LocalAddr   string     `json:"local_addr"`
	RemoteAddr  string     `json:"remote_addr"`
	Protocol    string     `json:"protocol"`
	Status      int        `json:"status"`
	ErrorClass  ErrorClass `json:"error_class"`
	Error       string     `json:"error"`
	AuditID     string     `json:"audit_id"`
	RetryAfter  string     `json:"retry_after"`
	HTTP2       bool       `json:"http2"`
	Vantage     string     `json:"vantage"`
	Target      string     `json:"target"`
	DisruptionH string     `json:"disruption_header"`
	ServedBy    string     `json:"served_by"`
	Shutdown    bool       `json:"server_shutdown"`
	ElapsedMs   float64    `json:"shutdown_elapsed_ms"`
}

// UnmarshalJSON decodes a sample written by MarshalJSON. Lines in the
// exact shape AppendJSON writes take a reflection-free path; anything else
// goes through encoding/json.
func (s *Sample) UnmarshalJSON(data []byte) error {
	if decodeSampleFast(data, s) && s.Backend != "" && s.Connection != "" && !s.Start.IsZero() {
		s.clampText()
		return nil
	}
	var j sampleJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	if j.Backend == "" || j.Connection == "" || j.Start.IsZero() {
		return fmt.Errorf("sample lacks backend, connection or start")
	}
	*s = Sample{
		Backend:    j.Backend,
		Connection: ConnectionType(j.Connection),
		Seq:        j.Seq,
		Start:      j.Start,
		Duration:   fromMillis(j.DurationMs),
		Phases: Phases{
			DNSStart:     fromMillis(j.DNSStartMs),
			DNSDone:      fromMillis(j.DNSDoneMs),
			ConnectDone:  fromMillis(j.ConnectMs),
			TLSDone:      fromMillis(j.TLSDoneMs),
			WroteRequest: fromMillis(j.WroteMs),
			FirstByte:    fromMillis(j.FirstByteMs),
		},
		Reused:     j.Reused,
		LocalAddr:  j.LocalAddr,
		RemoteAddr: j.RemoteAddr,
		Protocol:   j.Protocol,
		StatusCode: j.Status,
		ErrorClass: j.ErrorClass,
		Error:      j.Error,
		AuditID:    j.AuditID,
		RetryAfter: j.RetryAfter,

		HTTP2:            j.HTTP2,
		Vantage:          j.Vantage,
		Target:           j.Target,
		DisruptionHeader: j.DisruptionH,
		ServedBy:         j.ServedBy,
		ServerShutdown:   j.Shutdown,
		ShutdownElapsed:  fromMillis(j.ElapsedMs),
	}
	s.clampText()
	return nil
}

// Millis converts a duration to milliseconds rounded to the microsecond,
// the unit of every duration in samples.jsonl.
func Millis(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)) / float64(time.Millisecond)
}

func fromMillis(ms float64) time.Duration {
	return time.Duration(math.Round(ms*1000)) * time.Microsecond
}

func appendMillis(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, Millis(d), 'f', 3, 64)
}

func appendPhase(b []byte, key string, d time.Duration) []byte {
	if d <= 0 {
		return b
	}
	b = append(b, key...)
	return appendMillis(b, d)
}

func appendOptString(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, key...)
	return appendJSONString(b, v)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Callers pass valid UTF-8
// (error texts are sanitised on capture).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// ConnectionType says whether a poller opens a fresh connection per request
// or keeps its connections alive.
type ConnectionType string

const (
	// NewConnections opens a new TCP+TLS connection for every request.
	NewConnections ConnectionType = "new"
	// ReusedConnections keeps connections alive between requests.
	ReusedConnections ConnectionType = "reused"
)

// ConnectionTypes lists both connection types in the order pollers are built.
var ConnectionTypes = []ConnectionType{NewConnections, ReusedConnections}

// PollerName returns the name origin stores disruption under for a backend
// and connection type, e.g. "kube-api-new-connections" (origin's legacy
// sampler, pkg/monitor/backenddisruption).
func PollerName(backend string, conn ConnectionType) string {
	return backend + "-" + string(conn) + "-connections"
}

// SplitPollerName is PollerName's inverse: a name ending in
// "-<new|reused>-connections" (origin's legacy and newer sampler names
// alike) gives what comes before it and the connection type; any other
// name is returned whole, with an empty connection type.
func SplitPollerName(name string) (string, ConnectionType) {
	for _, c := range ConnectionTypes {
		if stem, ok := strings.CutSuffix(name, "-"+string(c)+"-connections"); ok {
			return stem, c
		}
	}
	return name, ""
}

// VantageExternalLB is the default vantage: the cluster's external API
// load balancer, origin's "external-lb" (pkg/disruption/backend).
const VantageExternalLB = "external-lb"

// SamplerName names a poller. HTTP/1.1 through the external load balancer
// keeps origin's legacy PollerName; any other protocol or vantage takes
// origin's newer form <target>-<http1|http2>-<load balancer type>-<new|reused>-connections
// (openshift/origin pkg/disruption/ci/factory.go TestDescriptor.Name). A
// direct poller's load balancer type is "direct-<node>": it reaches one
// node's apiserver, and each node is its own series.
func SamplerName(backend string, http2 bool, vantage, target string, conn ConnectionType) string {
	if !http2 && (vantage == "" || vantage == VantageExternalLB) {
		return PollerName(backend, conn)
	}
	proto := "http1"
	if http2 {
		proto = "http2"
	}
	lbType := vantage
	if lbType == "" {
		lbType = VantageExternalLB
	}
	if target != "" {
		lbType += "-" + target
	}
	return backend + "-" + proto + "-" + lbType + "-" + string(conn) + "-connections"
}

// BackendOrder lists the names of the PolledBackends in the order reports
// show them. Decoding interns these names, so a million samples share a
// handful of strings.
var BackendOrder = BackendNames(PolledBackends)

// BackendRank is a backend's place in BackendOrder; unknown names sort last.
func BackendRank(name string) int {
	for i, b := range BackendOrder {
		if b == name {
			return i
		}
	}
	return len(BackendOrder)
}
