package scenarios

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

// The lab LB's records join what the folder's signals already hold; a cut
// line in the source is skipped, not fatal.
func TestCopySignals(t *testing.T) {
	dir := t.TempDir()
	folder, err := results.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, err := folder.SignalWriter()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(results.Signal{Kind: results.SignalNodeCPU, Source: "test", At: at}); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "lb-health.jsonl")
	line, _ := json.Marshal(results.Signal{Kind: results.SignalLBTargetHealth, Source: "lab-lb", Instance: "master-0", At: at})
	if err := os.WriteFile(src, []byte(string(line)+"\n"+string(line)+"\n{\"kind\":\"lb-ta"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := CopySignals(src, folder)
	if err != nil || n != 2 {
		t.Fatalf("copied %d: %v", n, err)
	}
	if err := folder.CloseSignals(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(folder.Path(results.SignalsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], "lab-lb") {
		t.Fatalf("signals:\n%s", b)
	}
}
