package report

import (
	"testing"

	"github.com/repro-tools/repro/results"
)

func TestGradeOf(t *testing.T) {
	for _, c := range []struct {
		class  results.ErrorClass
		status int
		ra     string
		want   Grade
	}{
		{results.ClassNone, 200, "", GradeOK},
		{results.ClassHTTP429, 429, "5", GradeRetryable},
		{results.ClassHTTP429, 429, "", GradeFailed},
		{results.ClassHTTP5xx, 503, "1", GradeFailed},
		{results.ClassReset, 0, "", GradeFailed},
		{results.ClassConnectRefused, 0, "", GradeFailed},
		{results.ClassHeaderTimeout, 0, "", GradeFailed},
	} {
		if g := GradeOf(c.class, c.status, c.ra); g != c.want {
			t.Errorf("%s %d %q: %s, want %s", c.class, c.status, c.ra, g, c.want)
		}
	}
	for _, c := range []struct {
		class  results.ErrorClass
		status int
		ra     string
		msg    string
		retry  bool
	}{
		{results.ClassHTTP429, 429, "3", "", true},
		{results.ClassHTTP5xx, 503, "1", "", true},
		{results.ClassHTTP5xx, 503, "", "", false},
		{results.ClassReset, 0, "", "read: connection reset by peer", true},
		{results.ClassReset, 0, "", "write: broken pipe", false},
		{results.ClassEOF, 0, "", "EOF", true},
		{results.ClassHTTP2GoAway, 0, "", "http2: server sent GOAWAY and closed the connection", true},
		{results.ClassHTTP2Stream, 0, "", "http2: client connection lost", true},
		{results.ClassHeaderTimeout, 0, "", "net/http: timeout awaiting response headers", false},
		{results.ClassConnectRefused, 0, "", "connect: connection refused", false},
	} {
		if _, r := clientRetry(c.class, c.status, c.ra, c.msg); r != c.retry {
			t.Errorf("%s %d %q %q: retry %v", c.class, c.status, c.ra, c.msg, r)
		}
	}
}
