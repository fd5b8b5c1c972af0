package scenarios

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
)

// TestEndOfRunWaitsForOpenRequests: a server that stops answering shortly
// before the end of the run. The requests still open when the baseline ends
// are waited for until they time out, and are failures (header-timeout),
// not dropped as aborted: the run was not interrupted. The abort grace is
// shorter than the probe timeout, as by default (2 s against 34 s).
func TestEndOfRunWaitsForOpenRequests(t *testing.T) {
	var silent atomic.Bool
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if silent.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Write([]byte(`{"kind":"List"}`))
	}))
	defer srv.Close()
	defer close(release)
	rc := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	backends, _ := prober.LookupBackends([]string{"kube-api"})
	pr, err := prober.New(rc, prober.WithBackends(backends...), prober.WithInterval(50*time.Millisecond),
		prober.WithProbeTimeout(500*time.Millisecond), prober.WithAbortGrace(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	f, err := results.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := Lookup("baseline")
	// The server goes silent once requests have been answered, well before
	// the baseline ends, so requests are open at its end.
	time.AfterFunc(200*time.Millisecond, func() { silent.Store(true) })
	if err := Execute(context.Background(), Config{Scenario: sc, Timings: Timings{Baseline: 600 * time.Millisecond}, Prober: pr, Folder: f}); err != nil {
		t.Fatal(err)
	}
	var ok, timeouts, aborted int
	if _, err := results.ReadJSONL(f.Path(results.SamplesFile), func(line []byte) error {
		var s results.Sample
		if err := s.UnmarshalJSON(line); err != nil {
			return err
		}
		switch s.ErrorClass {
		case results.ClassNone:
			ok++
		case results.ClassAborted:
			aborted++
		case results.ClassHeaderTimeout, results.ClassClientTimeout:
			timeouts++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if aborted != 0 || timeouts == 0 || ok == 0 {
		t.Errorf("%d answered, %d timed out, %d aborted; want the requests open at the end to be waited for and time out, none aborted", ok, timeouts, aborted)
	}
}
