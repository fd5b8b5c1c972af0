package scenarios

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

// Writers append, concurrently, and a copied file's lines join what is
// there; a cut line in the source is skipped, not fatal.
func TestSignalsAppendAndCopy(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, results.SignalsFile)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		w, err := OpenSignals(dst)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				w.Emit(results.Signal{Kind: results.SignalNodeCPU, Source: "test", At: at, Value: float64(j)})
			}
			if err := w.Close(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	src := filepath.Join(dir, "lb-health.jsonl")
	line, _ := json.Marshal(results.Signal{Kind: results.SignalLBTargetHealth, Source: "lab-lb", Instance: "master-0", At: at})
	if err := os.WriteFile(src, []byte(string(line)+"\n"+string(line)+"\n{\"kind\":\"lb-ta"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := CopySignals(src, dst)
	if err != nil || n != 2 {
		t.Fatalf("copied %d: %v", n, err)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 202 {
		t.Fatalf("%d lines, want 202", len(lines))
	}
	for i, l := range lines {
		var s results.Signal
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatalf("line %d %q: %v", i+1, l, err)
		}
	}
}
