package scenarios

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
)

// Where a plan runs decides its defaults: the lab's follow the lab's time
// scale, the probe timeout too unless given; flags that were given win.
func TestNewPlanTimings(t *testing.T) {
	labAt := func(tm lab.Timing) *LabPlan { return &LabPlan{Options: lab.Options{Timing: tm}} }
	for _, tc := range []struct {
		name          string
		o             PlanOptions
		want          Timings
		probeTimeout  time.Duration
		labPrometheus bool
	}{
		{"live", PlanOptions{Polling: Polling{ProbeTimeout: prober.DefaultProbeTimeout}}, LiveTimings(), prober.DefaultProbeTimeout, false},
		{"live overrides", PlanOptions{Baseline: time.Second, CoolDown: 2 * time.Second, FollowTimeout: 3 * time.Minute},
			Timings{Baseline: time.Second, CoolDown: 2 * time.Second, FollowTimeout: 3 * time.Minute, Settle: LiveTimings().Settle}, 0, false},
		{"lab fast", PlanOptions{Lab: labAt(lab.TimingFast), Polling: Polling{ProbeTimeout: prober.DefaultProbeTimeout}, Evidence: Evidence{Metrics: &MetricsPlan{Monitoring: true}}},
			LabTimings(), lab.TimingFast.Scale(prober.DefaultProbeTimeout), true},
		{"lab aws", PlanOptions{Lab: labAt(lab.TimingAWS), Polling: Polling{ProbeTimeout: prober.DefaultProbeTimeout}},
			Timings{Baseline: LabTimings().Baseline, CoolDown: LabTimings().CoolDown, FollowTimeout: time.Duration(lab.TimingFast.Factor/lab.TimingAWS.Factor) * LabTimings().FollowTimeout, Settle: LabTimings().Settle},
			prober.DefaultProbeTimeout, false},
		{"lab probe timeout given", PlanOptions{Lab: labAt(lab.TimingFast), Polling: Polling{ProbeTimeout: 7 * time.Second}, ProbeTimeoutSet: true}, LabTimings(), 7 * time.Second, false},
	} {
		given := tc.o.Lab
		p, err := NewPlan(tc.o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p.Timings != tc.want || p.Polling.ProbeTimeout != tc.probeTimeout {
			t.Errorf("%s: timings %+v, probe timeout %v; want %+v, %v", tc.name, p.Timings, p.Polling.ProbeTimeout, tc.want, tc.probeTimeout)
		}
		if p.Lab != nil && p.Lab.Options.Prometheus != tc.labPrometheus {
			t.Errorf("%s: lab Prometheus %v, want %v", tc.name, p.Lab.Options.Prometheus, tc.labPrometheus)
		}
		if given != nil && given.Options.Prometheus {
			t.Errorf("%s: NewPlan changed the caller's lab options", tc.name)
		}
		if len(p.Vantages) != 1 || p.Vantages[0] != "external-lb" {
			t.Errorf("%s: vantages %v, want the external load balancer", tc.name, p.Vantages)
		}
	}
	if _, err := NewPlan(PlanOptions{Lab: labAt(lab.TimingFast), Polling: Polling{AWSLB: true}}); err == nil || !strings.Contains(err.Error(), "--aws-lb") {
		t.Errorf("--aws-lb on the lab: %v, want one line naming --aws-lb", err)
	}
	if _, err := NewPlan(PlanOptions{Vantages: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "--vantage") {
		t.Errorf("unknown vantage: %v", err)
	}
}

// A live baseline plan measures into its folder, logs into its log file,
// and reads the report back; a plan whose checks fail keeps nothing.
func TestPlanRunLive(t *testing.T) {
	srv := kubeServer(t)
	bs, _ := prober.LookupBackends([]string{"kube-api"})
	var logged []string
	opts := func(out string, cfg *rest.Config) PlanOptions {
		return PlanOptions{
			Command: "probe", Scenario: Scenario{Name: "baseline"}, Baseline: 300 * time.Millisecond,
			Polling: Polling{Backends: bs, Interval: 20 * time.Millisecond, ProbeTimeout: time.Second},
			Cluster: Target{Config: cfg, Live: true}, Out: out, Stdout: &bytes.Buffer{},
			LogTo: func(path string) (func(), error) {
				logged = append(logged, path)
				return func() {}, os.WriteFile(path, []byte("log\n"), 0o644)
			},
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	p, err := NewPlan(opts(out, &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil || res.Run.Status != results.StatusComplete || res.Samples == 0 || res.Refused != 0 || len(res.OverLimit) != 0 {
		t.Errorf("outcome: err %v, status %s, %d samples, %d refused, over %v", res.Err, res.Run.Status, res.Samples, res.Refused, res.OverLimit)
	}
	if len(logged) != 1 || logged[0] != filepath.Join(out, results.LogFile) {
		t.Errorf("logged into %v, want %s", logged, filepath.Join(out, results.LogFile))
	}
	if _, err := os.Stat(filepath.Join(out, results.SummaryFile)); err != nil {
		t.Errorf("no summary: %v", err)
	}

	// A server that refuses the connection: stopped before measuring, the
	// folder (its log alone) is gone.
	closed := httptest.NewTLSServer(http.NotFoundHandler())
	gone := closed.URL
	closed.Close()
	out2 := filepath.Join(t.TempDir(), "out2")
	p, err = NewPlan(opts(out2, &rest.Config{Host: gone, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}))
	if err != nil {
		t.Fatal(err)
	}
	res, err = p.Run(context.Background())
	var nm *NotMeasured
	if res != nil || !errors.As(err, &nm) || nm.Interrupted || nm.StartingLab {
		t.Errorf("unreachable server: %v, %v; want a NotMeasured error", res, err)
	}
	if _, err := os.Stat(out2); !os.IsNotExist(err) {
		t.Errorf("the folder of a run that measured nothing is kept: %v", err)
	}
}
