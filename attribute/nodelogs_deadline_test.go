package attribute

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/internal/testkit"
)

// A node-logs answer that starts and then goes silent fails its read with
// a line naming the silence instead of hanging attribution.
func TestNodeLogsSilenceEndsTheRead(t *testing.T) {
	testkit.Set(t, &CallTimeout, 300*time.Millisecond)
	n, err := NewNodeLogs(testkit.Silent(t, "{}\n"))
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
