package write_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
)

// TestBadLineIsTheFirst: of many bad lines, the first is named, not the
// last one (which the reader decodes apart from the rest).
func TestBadLineIsTheFirst(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, results.SamplesFile), []byte(strings.Repeat("{}\n", 1000)), 0o644)
	_, err := write.Rebuild(dir)
	if err == nil || !strings.Contains(err.Error(), "samples.jsonl line 1:") {
		t.Errorf("1000 lines of {}: %v, want line 1 named", err)
	}
	// Empty lines count: the line number is the file's.
	good := mk("kube-api", results.NewConnections, 0, time.Millisecond, results.ClassNone)
	line := string(good.AppendJSON(nil)) + "\n"
	os.WriteFile(filepath.Join(dir, results.SamplesFile), []byte(line+"\n\n"+"garbage\n"+line), 0o644)
	if _, err := write.Rebuild(dir); err == nil || !strings.Contains(err.Error(), "line 4:") {
		t.Errorf("bad line after two empty ones: %v, want line 4", err)
	}
}

// TestDuplicateLinesCountOnce: a line written twice is one request.
func TestDuplicateLinesCountOnce(t *testing.T) {
	dir := t.TempDir()
	ss := fixture()
	dup := append(append([]results.Sample(nil), ss...), ss[:5]...)
	writeSamples(t, dir, dup, "")
	a, err := write.Rebuild(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := report.Analyze(ss)
	if a.Samples != want.Samples || a.Duplicates != 5 {
		t.Errorf("samples %d duplicates %d, want %d and 5", a.Samples, a.Duplicates, want.Samples)
	}
	for i := range want.Pollers {
		g, w := a.Pollers[i], want.Pollers[i]
		if g.Samples != w.Samples || g.Failures != w.Failures || g.Disrupted != w.Disrupted || g.Aborted != w.Aborted {
			t.Errorf("%s: %+v, want %+v", g.Name, g, w)
		}
	}
	sum, _ := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if !strings.Contains(string(sum), "5 duplicated line(s)") {
		t.Errorf("summary does not say duplicates were dropped:\n%s", sum)
	}
}

// TestEveryPollerHasARow: pollers whose first tick never came due still
// get a row with 0 samples.
func TestEveryPollerHasARow(t *testing.T) {
	dir := t.TempDir()
	writeSamples(t, dir, []results.Sample{mk("kube-api", results.NewConnections, 0, time.Millisecond, results.ClassNone)}, "")
	f, _ := results.Open(dir)
	run := results.NewRun("probe", []string{"repro", "probe"}, t0)
	run.Settings = results.Settings{Backends: []string{"kube-api", "openshift-api"},
		Pollers: []string{"kube-api-new-connections", "kube-api-reused-connections", "openshift-api-new-connections", "openshift-api-reused-connections"}}
	run.Finish(t0.Add(3*time.Second), results.StatusComplete)
	if err := f.WriteRun(run); err != nil {
		t.Fatal(err)
	}
	if _, err := write.Rebuild(dir); err != nil {
		t.Fatal(err)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	for _, name := range []string{"kube-api-reused-connections", "openshift-api-new-connections", "openshift-api-reused-connections"} {
		if !strings.Contains(string(sum), name+"  ") || !strings.Contains(string(sum), name+": no sample") {
			t.Errorf("summary lacks a row and a note for %s:\n%s", name, sum)
		}
	}
}

// TestKilledRunIsNamed: run.json left at "running" (the process was
// killed) is said, with the time of the last sample.
func TestKilledRunIsNamed(t *testing.T) {
	dir := t.TempDir()
	writeSamples(t, dir, fixture(), "")
	f, _ := results.Open(dir)
	if err := f.WriteRun(results.NewRun("probe", []string{"repro", "probe"}, t0)); err != nil {
		t.Fatal(err)
	}
	a, err := write.Rebuild(dir)
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if !strings.Contains(string(sum), "run never finished") || !strings.Contains(string(sum), a.To.Format(time.RFC3339Nano)) {
		t.Errorf("summary does not say the run never finished and when its last sample was:\n%s", sum)
	}
	if results.FlushInterval > time.Second {
		t.Errorf("FlushInterval %v: a killed run would lose more than a second of samples", results.FlushInterval)
	}
}

// TestNoSamplesSaysWhy: a run that never polled is reported as such.
func TestNoSamplesSaysWhy(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, results.SamplesFile), nil, 0o644)
	f, _ := results.Open(dir)
	run := results.NewRun("probe", []string{"repro", "probe"}, t0)
	run.Finish(t0.Add(time.Second), results.StatusInterrupted)
	f.WriteRun(run)
	_, err := write.Rebuild(dir)
	if err == nil || !strings.Contains(err.Error(), "is empty") || !strings.Contains(err.Error(), "interrupted before its first request") ||
		strings.Contains(err.Error(), "partial") {
		t.Errorf("empty samples of an interrupted run: %v", err)
	}
}

// TestSamplesNotARegularFile: a FIFO, a device or a directory given as
// samples.jsonl is one clear line, never a hang.
func TestSamplesNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, results.SamplesFile), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := write.Rebuild(dir); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("FIFO: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("report hangs on a FIFO as samples.jsonl")
	}
	for path, want := range map[string]string{"/dev/zero": "character device", dir: "a directory"} {
		if _, err := report.LoadSamples(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}

// TestTextFromSamplesIsCleaned: an error text with invalid UTF-8, and one
// of megabytes, reach summary.txt valid and short.
func TestTextFromSamplesIsCleaned(t *testing.T) {
	dir := t.TempDir()
	ss := fixture()
	for i := range ss {
		if ss[i].ErrorClass == results.ClassHeaderTimeout {
			ss[i].Error = "bad \xff\xfe bytes " + strings.Repeat("x", 900<<10)
		}
	}
	writeSamples(t, dir, ss, "")
	if _, err := write.Rebuild(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{results.SummaryFile, results.IntervalsFile, results.BackendDisruptionFile} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		if !utf8.Valid(b) {
			t.Errorf("%s holds invalid UTF-8", name)
		}
		if len(b) > 200<<10 {
			t.Errorf("%s is %d bytes: the long error text was copied whole", name, len(b))
		}
	}
}
