package scenarios

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
)

func TestLookup(t *testing.T) {
	for _, s := range List() {
		got, err := Lookup(s.Name)
		if err != nil || got != s {
			t.Errorf("Lookup(%q) = %+v, %v", s.Name, got, err)
		}
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "apiserver-rollout, baseline") {
		t.Errorf("unknown scenario error %v, want the valid names listed", err)
	}
}

// TestExecuteBaselineWritesAReadableFolder runs the baseline scenario against
// a real TLS server: samples and the stage timeline are streamed to disk and
// closed, whether the run completes or is interrupted.
func TestExecuteBaselineWritesAReadableFolder(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"kind":"List"}`))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name      string
		interrupt bool
	}{{"complete", false}, {"interrupted", true}} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
			backends, _ := prober.LookupBackends([]string{"kube-api"})
			pr, err := prober.New(rc, prober.WithBackends(backends...), prober.WithInterval(20*time.Millisecond), prober.WithProbeTimeout(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			f, err := results.Create(filepath.Join(t.TempDir(), "out"))
			if err != nil {
				t.Fatal(err)
			}
			sc, _ := Lookup("baseline")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			baseline := 300 * time.Millisecond
			if tc.interrupt {
				time.AfterFunc(100*time.Millisecond, cancel)
				baseline = time.Hour
			}
			err = Execute(ctx, Config{Scenario: sc, Timings: Timings{Baseline: baseline}, Prober: pr, Folder: f})
			if tc.interrupt != (err != nil) {
				t.Fatalf("Execute: %v", err)
			}
			var kinds []string
			if _, err := results.ReadJSONL(f.Path(results.EventsFile), func(line []byte) error {
				var e results.Event
				if err := json.Unmarshal(line, &e); err != nil {
					return err
				}
				kinds = append(kinds, string(e.Kind)+":"+e.Reason)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if strings.Join(kinds, " ") != "phase:baseline phase:end" {
				t.Errorf("events %v, want the baseline stage then the end", kinds)
			}
			n := 0
			st, err := results.ReadJSONL(f.Path(results.SamplesFile), func([]byte) error { n++; return nil })
			if err != nil || st.TruncatedLast || n < 2 {
				t.Errorf("samples.jsonl: %d lines, %+v, %v", n, st, err)
			}
		})
	}
}
