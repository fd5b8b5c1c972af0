package scenarios

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

func TestStallWindowsMergeOverlapsAndKeepFailures(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	samples := []results.Sample{
		{Start: at(0), Duration: 2 * time.Millisecond},                                             // fine
		{Start: at(100), Duration: 400 * time.Millisecond},                                         // slow: 100-500
		{Start: at(200), Duration: 50 * time.Millisecond, ErrorClass: results.ClassReset},          // inside
		{Start: at(450), Duration: 300 * time.Millisecond},                                         // overlaps: to 750
		{Start: at(2000), Duration: 10 * time.Millisecond, ErrorClass: results.ClassHeaderTimeout}, // apart
		{Start: at(3000), Duration: time.Second, ErrorClass: results.ClassAborted},                 // not a failure
	}
	w := StallWindows(samples, 250*time.Millisecond, ControlBackend)
	if len(w) != 2 {
		t.Fatalf("windows %+v", w)
	}
	if !w[0].At.Equal(at(100)) || !w[0].To.Equal(at(750)) || w[0].Kind != results.SignalMeasuringUnreliable || w[0].Labels["error_class"] != string(results.ClassReset) {
		t.Errorf("first %+v", w[0])
	}
	if !w[1].At.Equal(at(2000)) || !w[1].To.Equal(at(2010)) {
		t.Errorf("second %+v", w[1])
	}
	// The external target counts failures only: its latency is the path's.
	if ext := StallWindows(samples, -1, ExternalControlBackend); len(ext) != 2 || !ext[0].At.Equal(at(200)) {
		t.Errorf("external %+v", ext)
	}
}

func TestControlPollerSeesAnExternalTargetsFailures(t *testing.T) {
	var n, failing atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() > 0 {
			// Reset the connection, as a path that broke does.
			if hj, ok := w.(http.Hijacker); ok {
				c, _, _ := hj.Hijack()
				if tc, ok := c.(interface{ SetLinger(int) error }); ok {
					_ = tc.SetLinger(0)
				}
				_ = c.Close()
				failing.Add(-1)
				return
			}
		}
		n.Add(1)
		_, _ = w.Write([]byte("ok"))
	}))
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	c, err := newControl(Polling{Interval: 20 * time.Millisecond, ProbeTimeout: 2 * time.Second}, srv.URL+"/health?x=1", ca, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	path := filepath.Join(t.TempDir(), results.ControlFile)
	wait := c.run(ctx, path, time.Hour)
	waitUntil(t, func() bool { return n.Load() >= 4 })
	failing.Store(4)
	waitUntil(t, func() bool { return failing.Load() == 0 })
	m := n.Load()
	waitUntil(t, func() bool { return n.Load() >= m+4 })
	cancel()
	sigs, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, s := range sigs {
		// The local target may show this host's own stalls (a loaded
		// machine under -race stalls for a second and more): that is
		// what it is for, and not what this test is about.
		if s.Instance == ControlBackend {
			continue
		}
		if s.Instance != ExternalControlBackend || s.Kind != results.SignalMeasuringUnreliable || s.Source != results.ControlSource || !s.To.After(s.At) {
			t.Errorf("window %+v", s)
		}
		if s.Labels["error_class"] == "" {
			t.Errorf("window without its class: %+v", s)
		}
		failed++
	}
	if failed == 0 {
		t.Fatal("no window for the external target's resets")
	}
	// Every control sample is kept, the local target's included.
	backends := map[string]int{}
	if _, err := results.ReadJSONL(path, func(line []byte) error {
		var s results.Sample
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		backends[s.Backend]++
		if d, _ := results.DescribeBackend(s.Backend); d.Kind != results.KindControl {
			t.Errorf("%s describes as %s", s.Backend, d.Kind)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if backends[ControlBackend] == 0 || backends[ExternalControlBackend] == 0 {
		t.Fatalf("control samples %v", backends)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 90 s (a stalled machine?)")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
