package report

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

// writeControlFolder writes a folder's control.jsonl and signals.jsonl as a
// run does, through the results writers.
func writeControlFolder(t *testing.T, samples []results.Sample, sigs []results.Signal) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{results.ControlFile, results.SignalsFile} {
		w, err := results.CreateJSONL(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var lines []any
		if name == results.ControlFile {
			for i := range samples {
				lines = append(lines, &samples[i])
			}
		} else {
			for i := range sigs {
				lines = append(lines, &sigs[i])
			}
		}
		for _, l := range lines {
			if err := w.Write(l); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestControlVerdict(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	samples := []results.Sample{
		{Backend: "repro-control", Connection: results.NewConnections, Start: t0, Duration: 3 * time.Millisecond},
		{Backend: "repro-control", Connection: results.ReusedConnections, Start: t0, Duration: 412 * time.Millisecond},
		{Backend: "repro-control", Connection: results.ReusedConnections, Start: t0.Add(time.Second), Duration: 2 * time.Millisecond, ErrorClass: results.ClassReset},
		// Cut by the run's end: neither counted nor the slowest.
		{Backend: "repro-control", Connection: results.NewConnections, Start: t0.Add(2 * time.Second), Duration: 5 * time.Second, ErrorClass: results.ClassAborted},
	}

	t.Run("clean", func(t *testing.T) {
		c, err := LoadControl(writeControlFolder(t, samples[:1], nil))
		if err != nil {
			t.Fatal(err)
		}
		v := c.Verdict(250 * time.Millisecond)
		for _, want := range []string{"clean:", "1 requests", "slowest in 0.003s", "0.250s or slower"} {
			if !strings.Contains(v, want) {
				t.Errorf("verdict %q lacks %q", v, want)
			}
		}
	})

	t.Run("stalled", func(t *testing.T) {
		sigs := []results.Signal{
			{Kind: results.SignalMeasuringUnreliable, Source: results.ControlSource, Instance: "repro-control", At: t0.Add(time.Second), To: t0.Add(time.Second + 2*time.Millisecond)},
			{Kind: results.SignalMeasuringUnreliable, Source: results.ControlSource, Instance: "repro-control", At: t0, To: t0.Add(412 * time.Millisecond)},
			// A CI canary's window is not the control poller's.
			{Kind: results.SignalMeasuringUnreliable, Source: "ci:canary", At: t0, To: t0.Add(time.Minute)},
		}
		c, err := LoadControl(writeControlFolder(t, samples, sigs))
		if err != nil {
			t.Fatal(err)
		}
		if c.Requests != 3 || c.Failed != 1 || c.Slowest != 412*time.Millisecond || len(c.Stalls) != 2 {
			t.Fatalf("control = %+v", c)
		}
		v := c.Verdict(0)
		for _, want := range []string{"STALLED 2 time(s), 0.414s in all", "10:00:00.000 for 0.412s, 10:00:01.000 for 0.002s", "3 requests 1 failed", "DISCOUNTED"} {
			if !strings.Contains(v, want) {
				t.Errorf("verdict %q lacks %q", v, want)
			}
		}
		if strings.Contains(v, "(repro-control)") || strings.Contains(v, "or slower") {
			t.Errorf("verdict %q names the only instance or an unknown threshold", v)
		}
	})

	t.Run("no control file", func(t *testing.T) {
		c, err := LoadControl(t.TempDir())
		if c != nil || err != nil {
			t.Errorf("LoadControl of a folder without control.jsonl = %v, %v", c, err)
		}
		if v := c.Verdict(time.Second); v != "" {
			t.Errorf("nil verdict %q", v)
		}
	})
}
