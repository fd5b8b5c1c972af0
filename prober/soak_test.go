package prober_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

// soakEnv holds the length of TestSoak's run (e.g. "1h"); the test is
// skipped without it. soakDirEnv names the folder it writes to (default: a
// temporary one): samples.jsonl, and memory.tsv with one line a minute.
const (
	soakEnv    = "REPRO_SOAK"
	soakDirEnv = "REPRO_SOAK_DIR"
)

// rssKB reads this process's resident set size from /proc.
func rssKB(t testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := bytes.Fields(rest)
			n, err := strconv.ParseInt(string(f[0]), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// TestSoak probes a local TLS server (in another process) with six pollers
// (three backends x new/reused) at 10 Hz for $REPRO_SOAK, streaming samples
// to samples.jsonl as repro probe does, and records RSS, heap and
// goroutines every minute. It checks that memory stays flat (after five
// minutes of warm-up, the median RSS of the last ten minutes is within 10%
// or 4 MiB of that of minutes 5-15), that every scheduled tick is a sample
// or a counted skip, and then reads the run back with report.LoadSamples,
// recording the heap that takes against the file's size.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv(soakEnv))
	if err != nil || d <= 0 {
		t.Skipf("set %s to a duration (e.g. 1h) to run the soak", soakEnv)
	}
	dir := os.Getenv(soakDirEnv)
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	url, ca := startBenchServer(t)
	backends, err := prober.LookupBackends([]string{"kube-api", "openshift-api", "oauth-api"})
	if err != nil {
		t.Fatal(err)
	}
	rc := &rest.Config{Host: url, BearerToken: "soak-token", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	p, err := prober.New(rc, prober.WithBackends(backends...), prober.WithDuration(d))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	samplesPath := filepath.Join(dir, results.SamplesFile)
	w, err := results.CreateJSONL(samplesPath)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := os.Create(filepath.Join(dir, "memory.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	mw := bufio.NewWriter(mf)
	fmt.Fprintf(mw, "minute\trss_kb\theap_inuse_kb\theap_objects\tgoroutines\tsamples\tcpu_s\n")
	mw.Flush()

	var mu sync.Mutex
	var n, failed int64
	var rss []int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Minute)
		defer tick.Stop()
		for minute := 1; ; minute++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			r := rssKB(t)
			mu.Lock()
			rss = append(rss, r)
			got := n
			mu.Unlock()
			fmt.Fprintf(mw, "%d\t%d\t%d\t%d\t%d\t%d\t%.1f\n", minute, r, ms.HeapInuse>>10, ms.HeapObjects,
				runtime.NumGoroutine(), got, cpuTime().Seconds())
			mw.Flush()
		}
	}()
	for s := range p.Run(context.Background()) {
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		n++
		if s.Failed() {
			failed++
		}
		mu.Unlock()
	}
	close(stop)
	<-sampled
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples (%d failed) in %v", n, failed, time.Since(start).Round(time.Second))
	var skipped int64
	for _, st := range p.Stats() {
		skipped += st.SkippedTicks
	}
	if want := int64(6) * int64((d+prober.DefaultInterval-1)/prober.DefaultInterval); n+skipped != want {
		t.Errorf("%d samples + %d skipped ticks, want %d scheduled ticks", n, skipped, want)
	}
	if failed > 0 {
		t.Errorf("%d samples failed against a healthy local server", failed)
	}
	median := func(v []int64) int64 {
		c := append([]int64(nil), v...)
		sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
		return c[len(c)/2]
	}
	if len(rss) >= 25 {
		early, late := median(rss[4:15]), median(rss[len(rss)-10:])
		t.Logf("RSS median minutes 5-15: %d kB, last 10 minutes: %d kB", early, late)
		if late > early+early/10 && late > early+4<<10 {
			t.Errorf("RSS grew from %d kB to %d kB", early, late)
		}
	}

	// The report's reading path streams: what it keeps per sample is a
	// small record, not the line.
	fi, err := os.Stat(samplesPath)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := before.HeapInuse
	done := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak {
				peak = ms.HeapInuse
			}
		}
	}()
	t0 := time.Now()
	a, err := report.LoadSamples(samplesPath)
	close(done)
	<-polled
	if err != nil {
		t.Fatal(err)
	}
	msg := fmt.Sprintf("report.LoadSamples: %d samples, %.1f MB file, peak heap +%.1f MB over %.1f MB before, %v",
		n, float64(fi.Size())/1e6, float64(peak-before.HeapInuse)/1e6, float64(before.HeapInuse)/1e6, time.Since(t0).Round(time.Millisecond))
	t.Log(msg)
	fmt.Fprintln(mw, "# "+msg)
	mw.Flush()
	_ = a
}
