package attribute

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// A node-logs answer that starts and then goes silent fails its read with
// a line naming the silence instead of hanging attribution.
func TestNodeLogsSilenceEndsTheRead(t *testing.T) {
	release := make(chan struct{})
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "{}\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer ts.Close()
	defer close(release)
	old := CallTimeout
	CallTimeout = 300 * time.Millisecond
	defer func() { CallTimeout = old }()
	n, err := NewNodeLogs(&rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	rc, _, _, err := n.Open(context.Background(), "master-0", "kube-apiserver", "audit.log", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if string(b) != "{}\n" || err == nil || !strings.Contains(err.Error(), "no answer from the node logs API") {
		t.Fatalf("read %q, %v; want the first line, then the silence named", b, err)
	}
}
