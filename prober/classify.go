package prober

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/repro-tools/repro/results"
)

// Classify maps a request outcome to an ErrorClass: err is what
// http.Client.Do (or reading the body) returned, status the response status
// when there was a response. aborted says the run was interrupted while the
// request was in flight.
func Classify(err error, status int, aborted bool) results.ErrorClass {
	if err == nil {
		switch {
		case status >= 200 && status <= 399:
			return results.ClassNone
		case status == http.StatusTooManyRequests:
			return results.ClassHTTP429
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			return results.ClassAuth
		case status >= 500 && status <= 599:
			return results.ClassHTTP5xx
		default:
			return results.ClassHTTPOther
		}
	}
	if aborted {
		return results.ClassAborted
	}
	msg := err.Error()
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return results.ClassDNS
	}
	// Per-phase timeouts of net/http come as plain errors with fixed texts.
	switch {
	case strings.Contains(msg, "timeout awaiting response headers"):
		return results.ClassHeaderTimeout
	case strings.Contains(msg, "TLS handshake timeout"):
		return results.ClassTLSHandshakeTimeout
	}
	// net/http's bundled HTTP/2 client reports a connection the server
	// closed with GOAWAY as GoAwayError ("http2: server sent GOAWAY and
	// closed the connection; ...") and, when it cannot retry, its graceful
	// GOAWAY sentinel; a stream the server reset as StreamError ("stream
	// error: stream ID 3; INTERNAL_ERROR; received from peer"). The types
	// are unexported; their texts are fixed.
	switch {
	case strings.Contains(msg, "server sent GOAWAY"), strings.Contains(msg, "graceful shutdown GOAWAY"):
		return results.ClassHTTP2GoAway
	case strings.Contains(msg, "stream error: stream ID"):
		return results.ClassHTTP2Stream
	}
	if isTLSError(err) {
		return results.ClassTLS
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			return results.ClassConnectRefused
		case opErr.Timeout():
			return results.ClassConnectTimeout
		}
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return results.ClassConnectRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		strings.Contains(msg, "connection reset by peer"), strings.Contains(msg, "broken pipe"):
		return results.ClassReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		strings.Contains(msg, "server closed idle connection"), strings.HasSuffix(msg, ": EOF"):
		return results.ClassEOF
	case strings.Contains(msg, "Client.Timeout exceeded"), errors.Is(err, context.DeadlineExceeded):
		return results.ClassClientTimeout
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return results.ClassClientTimeout
	}
	return results.ClassOther
}

func isTLSError(err error) bool {
	var (
		unknownAuth  x509.UnknownAuthorityError
		hostErr      x509.HostnameError
		certInvalid  x509.CertificateInvalidError
		verifyErr    *tls.CertificateVerificationError
		recordHeader tls.RecordHeaderError
		alertErr     tls.AlertError
	)
	switch {
	case errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &certInvalid),
		errors.As(err, &verifyErr), errors.As(err, &recordHeader), errors.As(err, &alertErr):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "tls: ") || strings.Contains(msg, "x509: ")
}

var (
	bearerRE   = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9\-._~+/=]+`)
	tokenKV    = regexp.MustCompile(`(?i)((?:access_token|token|password|secret)=)[^&\s"]+`)
	userInfoRE = regexp.MustCompile(`(https?://)[^/@\s]+@`)
)

// maxErrorText bounds the error text kept per sample.
const maxErrorText = 512

// SanitizeErrorText makes an error text safe to store: bearer tokens,
// token-like query parameters and URL user info are redacted, invalid UTF-8
// is replaced and the text is bounded in length.
func SanitizeErrorText(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.ContainsAny(s, "@=") || strings.Contains(strings.ToLower(s), "bearer") {
		s = bearerRE.ReplaceAllString(s, "${1}REDACTED")
		s = tokenKV.ReplaceAllString(s, "${1}REDACTED")
		s = userInfoRE.ReplaceAllString(s, "${1}REDACTED@")
	}
	if len(s) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// statusText describes a non-success response: the status line and, when
// the body is a Kubernetes Status, its message (e.g. "storage is
// (re)initializing"), else the start of the body.
func statusText(status string, body []byte) string {
	var st struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
		Reason  string `json:"reason"`
	}
	msg := ""
	if len(body) > 0 && body[0] == '{' && json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
		msg = st.Message
		if st.Reason != "" {
			msg = st.Reason + ": " + msg
		}
	} else {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200]
		}
	}
	if msg == "" {
		return "HTTP " + status
	}
	return "HTTP " + status + ": " + msg
}

// Disruption is the parsed X-OpenShift-Disruption response header.
type Disruption struct {
	// Shutdown is true when the apiserver was shutting down gracefully.
	Shutdown bool
	// ShutdownDelay is its --shutdown-delay-duration.
	ShutdownDelay time.Duration
	// Elapsed is the time since it received SIGTERM, rounded to the
	// second by the server; zero when not shutting down.
	Elapsed time.Duration
	// Host is the apiserver's identity (its apiserver ID, which origin
	// maps to a node name through the kube-system identity leases).
	Host string
}

// ParseDisruptionHeader parses the X-OpenShift-Disruption header as
// OpenShift's kube-apiserver writes it ("shutdown=false
// shutdown-delay-duration=1m10s elapsed=0s host=apiserver-x"; the
// WithShutdownResponseHeader filter of openshift/kubernetes #1537). Keys may
// come in any order; unknown keys and values that do not parse are left out,
// so a changed format loses fields, never the sample.
func ParseDisruptionHeader(h string) Disruption {
	var d Disruption
	for _, f := range strings.Fields(h) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		switch k {
		case "shutdown":
			d.Shutdown = v == "true"
		case "shutdown-delay-duration":
			if x, err := time.ParseDuration(v); err == nil && x >= 0 {
				d.ShutdownDelay = x
			}
		case "elapsed":
			if x, err := time.ParseDuration(v); err == nil && x >= 0 {
				d.Elapsed = x
			}
		case "host":
			d.Host = SanitizeErrorText(v)
		}
	}
	return d
}
