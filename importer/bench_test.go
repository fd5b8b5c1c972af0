package importer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/repro-tools/repro/origin"
)

// Benchmarks of issue 23's scale figures. Sizes come from the environment
// so that a quick run stays quick; the figures in the README were taken
// with the defaults:
//
//	REPRO_BENCH_TIMELINE_MB (default 200): the large timeline's size
//	REPRO_BENCH_RUNS (default 500): the cached runs analysed
//	REPRO_BENCH_RUN_INTERVALS (default 3000): intervals per run file
//
//	go test ./importer -run '^$' -bench . -benchtime 1x

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchItem is one interval as origin's structured serializer writes it.
type benchItem struct {
	Level   string         `json:"level"`
	Source  string         `json:"source"`
	Display bool           `json:"display"`
	Locator origin.Locator `json:"locator"`
	Message origin.Message `json:"message"`
	From    string         `json:"from"`
	To      string         `json:"to"`
}

// writeTimeline streams a realistic upgrade-phase file of about n
// intervals or size bytes, whichever comes first: mostly pod events and
// logs (which the analysis drops), disruption sampling on twelve
// backends, three masters rolled every 20 minutes, e2e tests, alerts and
// etcd logs. It never holds the file in memory.
func writeTimeline(path string, n int, size int64, t0 time.Time, disruptSecs int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("{\"items\": [\n")
	enc := json.NewEncoder(w)
	var written int64
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	backends := []string{"kube-api", "cache-kube-api", "openshift-api", "cache-openshift-api", "oauth-api", "cache-oauth-api"}
	emit := func(it benchItem) error {
		if written > 0 {
			w.WriteString(",\n")
		}
		written++
		return enc.Encode(it)
	}
	for i := 0; i < n; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		var it benchItem
		switch {
		case i%600 == 0: // a master's shutdown every 10 minutes
			node := fmt.Sprintf("master-%d", (i/600)%3)
			it = benchItem{Level: "Info", Source: origin.SourceAPIServerGracefulShutdown, Display: true, Locator: origin.ServerLocator(node),
				Message: origin.NewMessage(origin.ReasonGracefulAPIServerShutdown, "", nil), From: ts(at), To: ts(at.Add(70 * time.Second))}
		case i%600 == 30 && disruptSecs > 0:
			b := backends[(i/600)%len(backends)]
			loc := origin.Backend{Name: b + "-new-connections", Connection: "new", Instance: "openshift-tests"}.Locator()
			it = benchItem{Level: "Error", Source: origin.SourceDisruption, Display: true, Locator: loc,
				Message: origin.NewMessage(origin.ReasonDisruptionBegan, loc.OldLocator()+" stopped responding to GET requests over new connections: "+headers, nil),
				From:    ts(at), To: ts(at.Add(time.Duration(disruptSecs) * time.Second))}
		case i%97 == 0:
			it = benchItem{Level: "Warning", Source: "EtcdLog", Display: true, Locator: origin.Locator{Type: "Node", Keys: map[string]string{"node": "master-1"}},
				Message: origin.NewMessage("", "apply request took too long: took 250ms, expected-duration 100ms", nil), From: ts(at), To: ts(at.Add(time.Second))}
		case i%53 == 0:
			it = benchItem{Level: "Info", Source: "E2ETest", Display: true, Locator: origin.Locator{Type: "E2ETest", Keys: map[string]string{"e2e-test": fmt.Sprintf("[sig-test] test %d", i)}},
				Message: origin.NewMessage("", "", map[string]string{"status": "Passed"}), From: ts(at), To: ts(at.Add(40 * time.Second))}
		case i%211 == 0:
			it = benchItem{Level: "Warning", Source: "Alert", Display: true, Locator: origin.Locator{Type: "Alert", Keys: map[string]string{"alert": "KubePodNotReady", "namespace": "openshift-etcd"}},
				Message: origin.NewMessage("", "pod not ready", map[string]string{"alertstate": "firing", "severity": "warning"}), From: ts(at), To: ts(at.Add(5 * time.Minute))}
		default: // the bulk: pod events and logs the analysis does not read
			it = benchItem{Level: "Info", Source: "KubeEvent", Locator: origin.Locator{Type: "Pod", Keys: map[string]string{"namespace": "e2e-test-ns-" + strconv.Itoa(i%200), "pod": "pod-" + strconv.Itoa(i), "uid": "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"}},
				Message: origin.NewMessage("Scheduled", "Successfully assigned e2e-test-ns/pod-"+strconv.Itoa(i)+" to ip-10-0-1-23.ec2.internal", map[string]string{"node": "ip-10-0-1-23.ec2.internal"}),
				From:    ts(at), To: ts(at.Add(time.Second))}
		}
		if err := emit(it); err != nil {
			return err
		}
		if size > 0 && i%1000 == 0 {
			w.Flush()
			if st, err := f.Stat(); err == nil && st.Size() >= size {
				break
			}
		}
	}
	w.WriteString("]}\n")
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// peakRSS is the process's high-water resident set (Linux VmHWM), bytes.
func peakRSS() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb * 1024
		}
	}
	return 0
}

// cpuSeconds is the process's user and system CPU time so far, so that
// the per-run cost reads the same on a busy machine.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkLargeTimeline analyses one run whose upgrade file is about
// REPRO_BENCH_TIMELINE_MB, and reports the process's peak RSS.
func BenchmarkLargeTimeline(b *testing.B) {
	mb := envInt("REPRO_BENCH_TIMELINE_MB", 200)
	root := b.TempDir()
	t0 := time.Date(2024, 7, 18, 9, 0, 0, 0, time.UTC)
	dir := filepath.Join(root, "origin-ci-test", "logs", job417, "1813938460914880512")
	junit := filepath.Join(dir, "artifacts", "e2e-aws-ovn-upgrade", "openshift-e2e-test", "artifacts", "junit")
	os.MkdirAll(junit, 0o755)
	path := filepath.Join(junit, "e2e-timelines_spyglass_20240718-090000.json")
	if err := writeTimeline(path, 1<<30, int64(mb)<<20, t0, 5); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(path)
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		r, err := OpenCIRun(dir)
		if err != nil {
			b.Fatal(err)
		}
		rep, err := AnalyzeCIRuns(context.Background(), []*CIRun{r}, CIOptions{})
		if err != nil || len(rep.Runs[0].Placements) == 0 {
			b.Fatalf("%v %+v", err, rep.Runs[0].Errors)
		}
	}
	b.ReportMetric(float64(st.Size())/(1<<20), "file-MB")
	b.ReportMetric(peakRSS()/(1<<20), "peak-RSS-MB")
}

// BenchmarkManyCachedRuns analyses REPRO_BENCH_RUNS cached runs of one job
// (two files each) and reports runs per second.
func BenchmarkManyCachedRuns(b *testing.B) {
	n := envInt("REPRO_BENCH_RUNS", 500)
	per := envInt("REPRO_BENCH_RUN_INTERVALS", 3000)
	root := b.TempDir()
	t0 := time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)
	var dirs []string
	for i := 0; i < n; i++ {
		start := t0.Add(time.Duration(i) * 3 * time.Hour)
		dir := filepath.Join(root, "origin-ci-test", "logs", job417, strconv.Itoa(1811000000000000000+i))
		junit := filepath.Join(dir, "artifacts", "e2e-aws-ovn-upgrade", "openshift-e2e-test", "artifacts", "junit")
		os.MkdirAll(junit, 0o755)
		os.WriteFile(filepath.Join(dir, "started.json"), []byte(fmt.Sprintf(`{"timestamp": %d}`, start.Unix())), 0o644)
		os.WriteFile(filepath.Join(dir, "finished.json"), []byte(fmt.Sprintf(`{"timestamp": %d, "passed": true, "result": "SUCCESS"}`, start.Add(3*time.Hour).Unix())), 0o644)
		for k, suffix := range []string{start.Format("20060102-150405"), start.Add(2 * time.Hour).Format("20060102-150405")} {
			if err := writeTimeline(filepath.Join(junit, "e2e-timelines_spyglass_"+suffix+".json"), per, 0, start.Add(time.Duration(k)*2*time.Hour), i%3*3); err != nil {
				b.Fatal(err)
			}
		}
		dirs = append(dirs, dir)
	}
	b.ResetTimer()
	var elapsed time.Duration
	var cpu float64
	for b.Loop() {
		t, c := time.Now(), cpuSeconds()
		var runs []*CIRun
		for _, d := range dirs {
			r, err := OpenCIRun(d)
			if err != nil {
				b.Fatal(err)
			}
			runs = append(runs, r)
		}
		rep, err := AnalyzeCIRuns(context.Background(), runs, CIOptions{})
		if err != nil || len(rep.Runs) != n || len(rep.Patterns) == 0 {
			b.Fatalf("%v: %d runs, %d rows", err, len(rep.Runs), len(rep.Patterns))
		}
		elapsed += time.Since(t)
		cpu += cpuSeconds() - c
	}
	b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(cpu/float64(n*b.N), "cpu-s/run")
	b.ReportMetric(peakRSS()/(1<<20), "peak-RSS-MB")
}
