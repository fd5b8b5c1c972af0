package prober_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
)

// TestStopWaitsForOpenRequests: Stop, the normal end of a run, waits for
// the requests still open against a server that stopped answering; they end
// as timeouts, failures like any other, never aborted.
func TestStopWaitsForOpenRequests(t *testing.T) {
	ts := newTestServer(t, false)
	ts.setMode(modeHang)
	p, err := prober.New(ts.restConfig(), prober.WithBackends(kubeAPI(t)...),
		prober.WithInterval(20*time.Millisecond), prober.WithProbeTimeout(400*time.Millisecond),
		prober.WithAbortGrace(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ch := p.Run(context.Background())
	for deadline := time.Now().Add(10 * time.Second); ts.requests() < 10 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n, oldest := p.OpenRequests(); n == 0 || oldest.IsZero() {
		t.Errorf("OpenRequests = %d, %v with requests hanging", n, oldest)
	}
	p.Stop()
	got := collect(ch)
	if len(got) == 0 {
		t.Fatal("no samples")
	}
	for name, ss := range got {
		for _, s := range ss {
			if !s.Failed() || s.ErrorClass == results.ClassAborted {
				t.Errorf("%s seq %d: class %q, want a timeout failure", name, s.Seq, s.ErrorClass)
			}
		}
	}
	if n, _ := p.OpenRequests(); n != 0 {
		t.Errorf("%d requests open after Run ended", n)
	}
}

// TestInterruptSaysUnansweredAtStop: requests cut by an interrupt say so
// and how long they had waited.
func TestInterruptSaysUnansweredAtStop(t *testing.T) {
	ts := newTestServer(t, false)
	ts.setMode(modeHang)
	p, err := prober.New(ts.restConfig(), prober.WithBackends(kubeAPI(t)...),
		prober.WithInterval(20*time.Millisecond), prober.WithProbeTimeout(5*time.Second),
		prober.WithAbortGrace(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := p.Run(ctx)
	for deadline := time.Now().Add(10 * time.Second); ts.requests() < 10 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	n := 0
	for _, ss := range collect(ch) {
		for _, s := range ss {
			n++
			if s.ErrorClass != results.ClassAborted || !strings.HasPrefix(s.Error, "unanswered at stop after ") {
				t.Errorf("seq %d: %q %q, want aborted, unanswered at stop after its wait", s.Seq, s.ErrorClass, s.Error)
			}
		}
	}
	if n == 0 {
		t.Fatal("no samples")
	}
}
