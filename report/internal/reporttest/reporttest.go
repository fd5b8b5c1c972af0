// Package reporttest holds the samples the tests of package report and of
// package report/write share: one small run whose intervals the model's
// tests check and whose files the writers' golden tests pin.
package reporttest

import (
	"time"

	"github.com/repro-tools/repro/results"
)

// T0 is the start of the fixture's first tick.
var T0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// Sample builds a sample of a 100 ms poller: tick seq, taking dur, with class.
func Sample(backend string, conn results.ConnectionType, seq int, dur time.Duration, class results.ErrorClass) results.Sample {
	s := results.Sample{
		Backend: backend, Connection: conn, Seq: uint64(seq),
		Start:    T0.Add(time.Duration(seq)*100*time.Millisecond + 137*time.Microsecond),
		Duration: dur, ErrorClass: class,
		AuditID:  "00000000-0000-0000-0000-" + leftPad(seq),
		Protocol: "HTTP/1.1", StatusCode: 200,
	}
	switch class {
	case results.ClassNone:
	case results.ClassHeaderTimeout:
		s.Protocol, s.StatusCode = "", 0
		s.Error = `Get "https://api.example:6443/api/v1/namespaces/default": net/http: timeout awaiting response headers`
	case results.ClassReset:
		s.Protocol, s.StatusCode = "", 0
		s.Error = `Get "https://api.example:6443/api/v1/namespaces/default": read tcp 10.0.0.1:5555->10.0.0.2:6443: read: connection reset by peer`
	case results.ClassDNS:
		s.Protocol, s.StatusCode = "", 0
		s.Error = `Get "https://api.example:6443/api/v1/namespaces/default": dial tcp: lookup api.example: i/o timeout`
	case results.ClassHTTP429:
		s.StatusCode, s.RetryAfter = 429, "5"
		s.Error = "HTTP 429 Too Many Requests: TooManyRequests: The apiserver is shutting down, please try again later."
	case results.ClassHTTPOther:
		s.StatusCode = 401
		s.Error = "HTTP 401 Unauthorized: Unauthorized: Unauthorized"
	case results.ClassAborted:
		s.Protocol, s.StatusCode = "", 0
		s.Error = "context canceled"
	}
	return s
}

func leftPad(n int) string {
	s := "000000000000" + itoa(n)
	return s[len(s)-12:]
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// Fixture is a small run: kube-api new connections see a header-timeout
// gap that turns into resets, a DNS blip and a gap still open at the end;
// reused connections see a 429 gap and an aborted request; openshift-api is
// healthy.
func Fixture() []results.Sample {
	const ms = time.Millisecond
	ok, ht, rst, dns, r429, ab := results.ClassNone, results.ClassHeaderTimeout, results.ClassReset, results.ClassDNS, results.ClassHTTP429, results.ClassAborted
	n, r := results.NewConnections, results.ReusedConnections
	plan := []struct {
		conn  results.ConnectionType
		class results.ErrorClass
		dur   time.Duration
	}{}
	_ = plan
	var ss []results.Sample
	newSeq := []results.ErrorClass{ok, ok, ht, ht, ht, rst, ok, ok, dns, ok, ok, ht, ht}
	for i, c := range newSeq {
		d := 12 * ms
		if c == ht {
			d = 12 * time.Second
		}
		ss = append(ss, Sample("kube-api", n, i, d, c))
	}
	reusedSeq := []results.ErrorClass{ok, ok, ok, r429, r429, ab, r429, ok, ok, ok, ok, ok, ok}
	for i, c := range reusedSeq {
		ss = append(ss, Sample("kube-api", r, i, 3*ms, c))
	}
	for i := 0; i < 13; i++ {
		if i == 4 {
			continue // a skipped tick
		}
		ss = append(ss, Sample("openshift-api", n, i, 15*ms, ok), Sample("openshift-api", r, i, 4*ms, ok))
	}
	// completion order, not sequence order
	for i, j := 0, len(ss)-1; i < j; i, j = i+1, j-1 {
		ss[i], ss[j] = ss[j], ss[i]
	}
	return ss
}
