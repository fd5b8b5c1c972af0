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
		if i, ok = decodeSampleField(data, i, string(key), s); !ok {
			return false
		}
		i = skipWS(data, i)
		if i < len(data) && data[i] == ',' {
			i++
		}
	}
}

// decodeSampleField reads the value of one key at data[i] into its field of
// s and returns the index after it. Each key is named once, beside the
// reader of its JSON type.
func decodeSampleField(data []byte, i int, key string, s *Sample) (int, bool) {
	switch key {
	case "backend":
		return readText(data, i, &s.Backend, internBackend)
	case "connection":
		v, j, ok := readRawString(data, i)
		s.Connection = ConnectionType(internConn(v))
		return j, ok
	case "start":
		v, j, ok := readRawString(data, i)
		if !ok {
			return i, false
		}
		t, err := time.Parse(time.RFC3339Nano, string(v))
		s.Start = t
		return j, err == nil
	case "protocol":
		return readText(data, i, &s.Protocol, internProto)
	case "error_class":
		v, j, ok := readRawString(data, i)
		s.ErrorClass = internClass(v)
		return j, ok
	case "local_addr":
		return readText(data, i, &s.LocalAddr, nil)
	case "remote_addr":
		return readText(data, i, &s.RemoteAddr, nil)
	case "error":
		return readText(data, i, &s.Error, nil)
	case "audit_id":
		return readText(data, i, &s.AuditID, nil)
	case "retry_after":
		return readText(data, i, &s.RetryAfter, nil)
	case "vantage":
		return readText(data, i, &s.Vantage, nil)
	case "target":
		return readText(data, i, &s.Target, nil)
	case "disruption_header":
		return readText(data, i, &s.DisruptionHeader, nil)
	case "served_by":
		return readText(data, i, &s.ServedBy, nil)
	case "seq":
		n, j, ok := readUint(data, i)
		s.Seq = n
		return j, ok
	case "status":
		n, j, ok := readUint(data, i)
		s.StatusCode = int(n)
		return j, ok
	case "duration_ms":
		return readMillisInto(data, i, &s.Duration)
	case "dns_start_ms":
		return readMillisInto(data, i, &s.Phases.DNSStart)
	case "dns_done_ms":
		return readMillisInto(data, i, &s.Phases.DNSDone)
	case "connect_done_ms":
		return readMillisInto(data, i, &s.Phases.ConnectDone)
	case "tls_done_ms":
		return readMillisInto(data, i, &s.Phases.TLSDone)
	case "wrote_request_ms":
		return readMillisInto(data, i, &s.Phases.WroteRequest)
	case "first_byte_ms":
		return readMillisInto(data, i, &s.Phases.FirstByte)
	case "shutdown_elapsed_ms":
		return readMillisInto(data, i, &s.ShutdownElapsed)
	case "reused":
		return readBool(data, i, &s.Reused)
	case "http2":
		return readBool(data, i, &s.HTTP2)
	case "server_shutdown":
		return readBool(data, i, &s.ServerShutdown)
	}
	return i, false
}

// readText reads a string without escapes into *p, through intern when it
// is set (to share the strings a million samples repeat).
func readText(b []byte, i int, p *string, intern func([]byte) string) (int, bool) {
	v, j, ok := readRawString(b, i)
	if !ok {
		return i, false
	}
	if intern != nil {
		*p = intern(v)
	} else {
		*p = string(v)
	}
	return j, true
}

// readUint reads a non-negative decimal integer.
func readUint(b []byte, i int) (uint64, int, bool) {
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	n, err := strconv.ParseUint(string(b[i:j]), 10, 64)
	return n, j, err == nil
}

// readMillisInto reads milliseconds (readMillis) into *p.
func readMillisInto(b []byte, i int, p *time.Duration) (int, bool) {
	d, j, ok := readMillis(b, i)
	if ok {
		*p = d
	}
	return j, ok
}

// readBool reads true or false into *p.
func readBool(b []byte, i int, p *bool) (int, bool) {
	switch {
	case len(b) >= i+4 && string(b[i:i+4]) == "true":
		*p = true
		return i + 4, true
	case len(b) >= i+5 && string(b[i:i+5]) == "false":
		*p = false
		return i + 5, true
	}
	return i, false
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

// OneLine folds s's white space (newlines included) into single spaces and
// keeps its first 200 bytes (ClampText): a server's error body quoted in a
// one-line error.
func OneLine(s string) string {
	return ClampText(strings.Join(strings.Fields(s), " "), 200)
}
