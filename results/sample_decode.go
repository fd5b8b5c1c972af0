package results

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// decodeSampleFast decodes the exact shape AppendJSON writes without
// reflection: known keys, strings without escapes, millisecond numbers
// with up to three decimals. It reports false on anything else, and the
// caller falls back to encoding/json, so it never changes what decodes.
func decodeSampleFast(data []byte, s *Sample) bool {
	*s = Sample{}
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i++
	for {
		i = skipWS(data, i)
		if i >= len(data) {
			return false
		}
		if data[i] == '}' {
			return skipWS(data, i+1) == len(data)
		}
		key, j, ok := readRawString(data, i)
		if !ok {
			return false
		}
		i = skipWS(data, j)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipWS(data, i+1)
		switch string(key) {
		case "backend", "connection", "start", "local_addr", "remote_addr", "protocol", "error_class", "error", "audit_id", "retry_after",
			"vantage", "target", "disruption_header", "served_by":
			v, j, ok := readRawString(data, i)
			if !ok {
				return false
			}
			i = j
			switch string(key) {
			case "backend":
				s.Backend = internBackend(v)
			case "connection":
				s.Connection = ConnectionType(internConn(v))
			case "start":
				t, err := time.Parse(time.RFC3339Nano, string(v))
				if err != nil {
					return false
				}
				s.Start = t
			case "local_addr":
				s.LocalAddr = string(v)
			case "remote_addr":
				s.RemoteAddr = string(v)
			case "protocol":
				s.Protocol = internProto(v)
			case "error_class":
				s.ErrorClass = internClass(v)
			case "error":
				s.Error = string(v)
			case "audit_id":
				s.AuditID = string(v)
			case "retry_after":
				s.RetryAfter = string(v)
			case "vantage":
				s.Vantage = string(v)
			case "target":
				s.Target = string(v)
			case "disruption_header":
				s.DisruptionHeader = string(v)
			case "served_by":
				s.ServedBy = string(v)
			}
		case "seq", "status":
			j := i
			for j < len(data) && data[j] >= '0' && data[j] <= '9' {
				j++
			}
			n, err := strconv.ParseUint(string(data[i:j]), 10, 64)
			if err != nil {
				return false
			}
			if string(key) == "seq" {
				s.Seq = n
			} else {
				s.StatusCode = int(n)
			}
			i = j
		case "duration_ms", "dns_start_ms", "dns_done_ms", "connect_done_ms", "tls_done_ms", "wrote_request_ms", "first_byte_ms", "shutdown_elapsed_ms":
			d, j, ok := readMillis(data, i)
			if !ok {
				return false
			}
			i = j
			switch string(key) {
			case "duration_ms":
				s.Duration = d
			case "dns_start_ms":
				s.Phases.DNSStart = d
			case "dns_done_ms":
				s.Phases.DNSDone = d
			case "connect_done_ms":
				s.Phases.ConnectDone = d
			case "tls_done_ms":
				s.Phases.TLSDone = d
			case "wrote_request_ms":
				s.Phases.WroteRequest = d
			case "first_byte_ms":
				s.Phases.FirstByte = d
			case "shutdown_elapsed_ms":
				s.ShutdownElapsed = d
			}
		case "reused", "server_shutdown", "http2":
			var b bool
			switch {
			case len(data) >= i+4 && string(data[i:i+4]) == "true":
				b, i = true, i+4
			case len(data) >= i+5 && string(data[i:i+5]) == "false":
				b, i = false, i+5
			default:
				return false
			}
			switch string(key) {
			case "reused":
				s.Reused = b
			case "http2":
				s.HTTP2 = b
			default:
				s.ServerShutdown = b
			}
		default:
			return false
		}
		i = skipWS(data, i)
		if i < len(data) && data[i] == ',' {
			i++
		}
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// readRawString reads a JSON string without escape sequences starting at
// b[i] == '"'; it returns the contents and the index after the closing quote.
func readRawString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20:
			return nil, i, false
		}
	}
	return nil, i, false
}

// readMillis reads a non-negative decimal number of milliseconds with at
// most three decimals as a duration.
func readMillis(b []byte, i int) (time.Duration, int, bool) {
	var whole, frac int64
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		whole = whole*10 + int64(b[j]-'0')
		j++
		if j-i > 15 {
			return 0, i, false
		}
	}
	if j == i {
		return 0, i, false
	}
	digits := 0
	if j < len(b) && b[j] == '.' {
		j++
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			if digits == 3 {
				return 0, i, false
			}
			frac = frac*10 + int64(b[j]-'0')
			digits++
			j++
		}
		if digits == 0 {
			return 0, i, false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		return 0, i, false
	}
	for ; digits < 3; digits++ {
		frac *= 10
	}
	return time.Duration(whole*1000+frac) * time.Microsecond, j, true
}

func internBackend(v []byte) string {
	for _, name := range BackendOrder {
		if name == string(v) {
			return name
		}
	}
	return string(v)
}

func internConn(v []byte) string {
	switch string(v) {
	case string(NewConnections):
		return string(NewConnections)
	case string(ReusedConnections):
		return string(ReusedConnections)
	}
	return string(v)
}

func internProto(v []byte) string {
	switch string(v) {
	case "HTTP/1.1":
		return "HTTP/1.1"
	case "HTTP/2.0":
		return "HTTP/2.0"
	}
	return string(v)
}

func internClass(v []byte) ErrorClass {
	for _, c := range ErrorClasses {
		if string(c) == string(v) {
			return c
		}
	}
	return ErrorClass(string(v))
}

// MaxSampleText bounds each text field of a decoded sample. The prober
// keeps far less per sample; a longer text was not written by it, and every
// derived file (intervals, summaries, origin's files, the HTML report)
// copies a failed sample's text, so a reader keeps the start only.
const MaxSampleText = 4096

// clampText makes every text field of a decoded sample valid UTF-8 (the
// fast path copies bytes as they are; invalid sequences become U+FFFD) and
// at most MaxSampleText bytes long.
func (s *Sample) clampText() {
	for _, p := range []*string{&s.Error, &s.DisruptionHeader, &s.RetryAfter, &s.ServedBy, &s.AuditID,
		&s.LocalAddr, &s.RemoteAddr, &s.Vantage, &s.Target, &s.Backend, &s.Protocol} {
		*p = ClampText(*p, MaxSampleText)
	}
	if c := string(s.Connection); len(c) > MaxSampleText || !utf8.ValidString(c) {
		s.Connection = ConnectionType(ClampText(c, MaxSampleText))
	}
	if c := string(s.ErrorClass); len(c) > MaxSampleText || !utf8.ValidString(c) {
		s.ErrorClass = ErrorClass(ClampText(c, MaxSampleText))
	}
}

// ClampText returns s as valid UTF-8 (invalid sequences become U+FFFD),
// cut to at most max bytes on a rune boundary with "…" marking a cut.
// Text that is already valid and short is returned as is, without copying.
func ClampText(s string, max int) string {
	if len(s) <= max && utf8.ValidString(s) {
		return s
	}
	if len(s) > 4*max {
		// Only the start is kept: do not copy a huge text to clean it.
		s = s[:4*max]
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
