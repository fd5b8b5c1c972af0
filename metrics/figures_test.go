package metrics

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/results"
)

func TestSummarizeSaysWhereLatencyWentUp(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	trigger := t0.Add(10 * time.Second)
	sig := func(kind results.SignalKind, inst string, s int, v float64) results.Signal {
		return results.Signal{Kind: kind, Source: SourceScrape, Instance: inst, At: t0.Add(time.Duration(s) * time.Second), Value: v}
	}
	base := func(extra ...results.Signal) []results.Signal {
		var out []results.Signal
		for _, n := range []string{"master-0", "master-1", "master-2"} {
			out = append(out, sig(results.SignalAPIServerLatency, n, 2, 0.05), sig(results.SignalEtcdRequestLatency, n, 2, 0.01),
				sig(results.SignalAPIServerLatency, n, 20, 0.06), sig(results.SignalEtcdRequestLatency, n, 20, 0.01))
		}
		return append(out, extra...)
	}
	cases := []struct {
		name   string
		sigs   []results.Signal
		shape  string
		etcdUp []string
	}{
		{"quiet servers: a load-balancer mechanism", base(), "none", nil},
		{"etcd stall on master-1", base(sig(results.SignalEtcdRequestLatency, "master-1", 25, 4), sig(results.SignalAPIServerLatency, "master-1", 25, 5)), "one-apiserver", []string{"master-1"}},
		{"a shared stall", base(sig(results.SignalAPIServerLatency, "master-0", 25, 3), sig(results.SignalAPIServerLatency, "master-1", 25, 3), sig(results.SignalAPIServerLatency, "master-2", 26, 3)), "every-apiserver", nil},
		// Up from 5 ms to 0.5 s is a hundredfold, and still within the SLO.
		{"a rise within the SLO is not a stall", base(sig(results.SignalAPIServerLatency, "master-2", 25, 0.5)), "none", nil},
	}
	for _, c := range cases {
		f := Summarize(c.sigs, trigger)
		if f.Shape != c.shape || !slices.Equal(f.EtcdUp, c.etcdUp) {
			t.Errorf("%s: shape %q, etcd up on %v; want %q, %v (%+v)", c.name, f.Shape, f.EtcdUp, c.shape, c.etcdUp, f.Instances)
		}
	}
	// A baseline already as high as the peak is no rise.
	f := Summarize([]results.Signal{sig(results.SignalAPIServerLatency, "master-0", 2, 3), sig(results.SignalAPIServerLatency, "master-0", 20, 3.5)}, trigger)
	if len(f.LatencyUp) != 0 {
		t.Errorf("latency up on %v although the baseline was as high", f.LatencyUp)
	}
}

func TestClientCertificateKubeconfigCannotReachMonitoring(t *testing.T) {
	cfg := &rest.Config{Host: "https://api.example:6443", TLSClientConfig: rest.TLSClientConfig{CertData: []byte("cert"), KeyData: []byte("key")}}
	_, _, err := ClusterMonitoring(context.Background(), cfg)
	if !errors.Is(err, ErrNoToken) {
		t.Fatalf("err = %v, want ErrNoToken saying a client certificate cannot reach it", err)
	}
}
