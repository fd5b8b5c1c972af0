package origin

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFileRefusesNonRegularFiles: a FIFO, a device or a directory given
// as an interval file is one line, never a hang.
func TestReadFileRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "e2e-timelines_spyglass_1.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("FIFO: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ReadFile hangs on a FIFO")
	}
	for path, want := range map[string]string{"/dev/zero": "character device", dir: "a directory"} {
		if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "e2e-timelines_spyglass_1.json")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadFileBoundsItemsAndFields: an item past MaxItemBytes and a text
// past MaxFieldBytes are errors naming the file, the item and its line.
func TestReadFileBoundsItemsAndFields(t *testing.T) {
	ok := `{"level":"Info","locator":{"type":"Node","keys":{"node":"a"}},"message":{"reason":"x","humanMessage":"ok"},"from":"2024-01-01T00:00:00Z","to":"2024-01-01T00:00:01Z"}`
	big := `{"level":"Info","message":{"humanMessage":"` + strings.Repeat("a", 2*MaxItemBytes) + `"}}`
	p := writeFile(t, "{\"items\": [\n"+ok+",\n"+big+"\n]}")
	_, err := ReadFile(p)
	if err == nil || !strings.Contains(err.Error(), p+": line 3") || !strings.Contains(err.Error(), "items[1] is larger than 4 MiB") {
		t.Errorf("item of %d bytes: %v", len(big), err)
	}
	long := `{"level":"Info","message":{"humanMessage":"` + strings.Repeat("a", MaxFieldBytes+1) + `"}}`
	p = writeFile(t, "{\"items\": [\n"+ok+",\n"+ok+",\n"+long+"\n]}")
	if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), `items[2]: "humanMessage" is longer than 64 KiB`) {
		t.Errorf("long humanMessage: %v", err)
	}
	// Not an interval file at all: a list where the object should be.
	p = writeFile(t, strings.Repeat("[", 1<<20))
	if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), "line 1, column") {
		t.Errorf("a file of [: %v", err)
	}
}

// TestToNullAndToBeforeFrom: "to": null is origin's unset end, zero length
// (monitorapi Intervals.Duration counts a non-positive span as 0); "to"
// before "from" is a broken interval, named with its item index.
func TestToNullAndToBeforeFrom(t *testing.T) {
	p := writeFile(t, `{"items":[{"level":"Info","locator":{"type":"Node","keys":{"node":"a"}},"message":{"reason":"x"},"from":"2024-01-01T00:00:05Z","to":null}]}`)
	ivs, err := ReadFile(p)
	if err != nil || len(ivs) != 1 || !ivs[0].To.IsZero() || ivs[0].Duration() != 0 || SumDuration(ivs, time.Second) != 0 {
		t.Fatalf("to null: %v %+v", err, ivs)
	}
	p = writeFile(t, "{\"items\":[\n{\"level\":\"Info\",\"message\":{\"reason\":\"x\"},\"from\":\"2024-01-01T00:00:00Z\",\"to\":\"2024-01-01T00:00:01Z\"},\n"+
		"{\"level\":\"Info\",\"message\":{\"reason\":\"x\"},\"from\":\"2024-01-01T00:00:05Z\",\"to\":\"2024-01-01T00:00:01Z\"}\n]}")
	_, err = ReadFile(p)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "line 3") ||
		!strings.Contains(err.Error(), `items[1]: "to" 2024-01-01T00:00:01Z is before "from"`) {
		t.Errorf("to before from: %v", err)
	}
}

// TestReadFileFilteredDecodesOnlyKept: the filtered reader gives the same
// intervals as ReadFile for the items it keeps, and positions of errors in
// kept items are the file's.
func TestReadFileFilteredDecodesOnlyKept(t *testing.T) {
	for _, name := range []string{"intervals-dual.json", "intervals-duplicate-keys.json", "intervals-strings.json"} {
		p := filepath.Join("testdata", name)
		all, err := ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		kept, err := ReadFileFiltered(p, func([]byte) bool { return true })
		if err != nil || len(kept) != len(all) {
			t.Fatalf("%s: %d of %d kept, %v", name, len(kept), len(all), err)
		}
		for i := range all {
			if all[i].String() != kept[i].String() {
				t.Errorf("%s item %d: %s, want %s", name, i, kept[i], all[i])
			}
		}
		if none, err := ReadFileFiltered(p, func([]byte) bool { return false }); err != nil || len(none) != 0 {
			t.Errorf("%s: keep none gave %d, %v", name, len(none), err)
		}
	}
	p := writeFile(t, "{\"items\":[\n{\"level\":\"Info\"},\n{\"level\":\"Info\",\"from\":\"yesterday\"}\n]}")
	if _, err := ReadFileFiltered(p, func([]byte) bool { return true }); err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), `items[1]: "from"`) {
		t.Errorf("bad kept item: %v", err)
	}
}
