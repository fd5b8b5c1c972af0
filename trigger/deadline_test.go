package trigger

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/internal/testkit"
)

// A server that completes TLS and never answers fails the startup check
// with ErrNoAnswer after one CallTimeout (no retries), and the caller's
// cancel ends it at once: /version used to be read without a context.
func TestDescribeSilentServer(t *testing.T) {
	old := testkit.Set(t, &CallTimeout, 300*time.Millisecond)
	c, err := NewClients(testkit.Silent(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Describe(context.Background(), c)
	if err == nil || !errors.Is(err, ErrNoAnswer) && !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("Describe against a silent server: %v, want a no-answer error", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	CallTimeout = old
	go cancel()
	if _, err := Describe(ctx, c); !errors.Is(err, context.Canceled) {
		t.Fatalf("Describe after cancel: %v, want context.Canceled", err)
	}
}

// Plain HTTP against a TLS server is named at once, not retried.
func TestDescribePlainHTTPAgainstTLS(t *testing.T) {
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	defer ts.Close()
	c, err := NewClients(&rest.Config{Host: strings.Replace(ts.URL, "https://", "http://", 1)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Describe(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "plain HTTP") || !strings.Contains(err.Error(), "https://") {
		t.Fatalf("Describe over http against TLS: %v", err)
	}
}
