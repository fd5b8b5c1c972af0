package write_test

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
)

// writeBigRun writes n samples as a 6-poller run at 100 ms would produce
// them (n/6 ticks each, about 28 minutes at 100 Hz... or 28 hours at 10 Hz),
// with a 5 s header-timeout gap on every poller each 10,000 ticks.
func writeBigRun(b *testing.B, dir string, n int) int64 {
	b.Helper()
	f, err := os.Create(filepath.Join(dir, results.SamplesFile))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	backends := []string{"kube-api", "openshift-api", "oauth-api"}
	base := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	var buf []byte
	ticks := n / 6
	for seq := 0; seq < ticks; seq++ {
		for _, be := range backends {
			for _, ct := range results.ConnectionTypes {
				s := results.Sample{
					Backend: be, Connection: ct, Seq: uint64(seq),
					Start:    base.Add(time.Duration(seq)*100*time.Millisecond + 213*time.Microsecond),
					Duration: 9 * time.Millisecond, Reused: ct == results.ReusedConnections,
					LocalAddr: "10.0.0.1:43210", RemoteAddr: "10.0.0.2:6443",
					Protocol: "HTTP/1.1", StatusCode: 200,
					AuditID: "8f1e7c1a-1f7e-4c4b-9d5e-" + strconv.FormatInt(int64(1e11+seq), 10)[:12],
				}
				if ct == results.NewConnections {
					s.Phases = results.Phases{ConnectDone: time.Millisecond, TLSDone: 4 * time.Millisecond, WroteRequest: 4100 * time.Microsecond, FirstByte: 8 * time.Millisecond}
				} else {
					s.Phases = results.Phases{WroteRequest: 50 * time.Microsecond, FirstByte: 3 * time.Millisecond}
				}
				if seq%10000 >= 5000 && seq%10000 < 5050 {
					s.Protocol, s.StatusCode, s.ErrorClass = "", 0, results.ClassHeaderTimeout
					s.Duration, s.Phases.FirstByte = 12*time.Second, 0
					s.Error = `Get "https://api.example:6443/api/v1/namespaces/default": net/http: timeout awaiting response headers`
				}
				buf = append(s.AppendJSON(buf[:0]), '\n')
				w.Write(buf)
			}
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	st, _ := f.Stat()
	f.Close()
	return st.Size()
}

// BenchmarkReport1M rebuilds every derived file from 1,000,000 samples and
// reports the peak resident memory of the process (VmHWM; it includes the
// generation step, which streams).
func BenchmarkReport1M(b *testing.B) {
	dir := b.TempDir()
	size := writeBigRun(b, dir, 1_000_000)
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a, err := write.Rebuild(dir)
		if err != nil {
			b.Fatal(err)
		}
		if a.Samples != 999_996 || len(a.Intervals) != 6*17 {
			b.Fatalf("samples %d intervals %d", a.Samples, len(a.Intervals))
		}
	}
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapSys)/(1<<20), "MB-heap-sys")
	b.ReportMetric(peakRSSMB(), "MB-peak-RSS")
	b.ReportMetric(float64(size)/(1<<20), "MB-samples.jsonl")
}

func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
