package results

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadJSONLBoundsLines: a line past MaxLineBytes is an error naming the
// file and its line; empty lines count in the numbering.
func TestReadJSONLBoundsLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "samples.jsonl")
	content := "{}\n\n" + strings.Repeat("x", 3*MaxLineBytes) + "\n{}\n"
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	var nos []int64
	_, err := ReadJSONLNumbered(p, func(no int64, _ []byte) error { nos = append(nos, no); return nil })
	if err == nil || !strings.Contains(err.Error(), p+" line 3: longer than 1 MiB") {
		t.Errorf("long line: %v", err)
	}
	if len(nos) != 1 || nos[0] != 1 {
		t.Errorf("lines before the long one: %v", nos)
	}
}

// TestReadJSONLRefusesNonRegularFiles: a FIFO never blocks the reader.
func TestReadJSONLRefusesNonRegularFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "events.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadJSONL(fifo, func([]byte) error { return nil }); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo+": it is a named pipe (FIFO), not a regular file") {
			t.Errorf("FIFO: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ReadJSONL hangs on a FIFO")
	}
	if _, err := ReadJSONL("/dev/zero", func([]byte) error { return nil }); err == nil || !strings.Contains(err.Error(), "character device") {
		t.Errorf("/dev/zero: %v", err)
	}
}

// TestClampText: invalid UTF-8 becomes U+FFFD and long text is cut on a
// rune boundary.
func TestClampText(t *testing.T) {
	if got := ClampText("ok", 10); got != "ok" {
		t.Errorf("short text changed: %q", got)
	}
	if got := ClampText("a\xffb", 10); got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8: %q", got)
	}
	if got := ClampText(strings.Repeat("é", 10), 5); got != "éé…" {
		t.Errorf("cut: %q", got)
	}
}
