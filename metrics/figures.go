package metrics

import (
	"sort"
	"time"

	"github.com/repro-tools/repro/results"
)

// LatencySLO is the latency an apiserver request is expected to stay under
// at the 99th percentile: Kubernetes' API call latency SLO for
// single-object calls, 1 s (kubernetes/community
// sig-scalability/slos/api_call_latency.md). A rise counts as "latency up"
// only past it, so that a quiet baseline's few milliseconds doubling is not
// called a stall.
const LatencySLO = time.Second

// UpFactor is how far above the baseline's highest value a peak must reach
// to count as up: above anything the baseline itself showed, by a margin
// that one scrape's noise does not make.
const UpFactor = 2.0

// InstanceFigure is one instance's rise of one latency kind against its
// own baseline.
type InstanceFigure struct {
	Instance string             `json:"instance"`
	Kind     results.SignalKind `json:"kind"`
	// Baseline is the highest value before BaselineEnd (0 when none was
	// seen); Peak the highest after it, At when.
	Baseline float64   `json:"baseline"`
	Peak     float64   `json:"peak"`
	At       time.Time `json:"at"`
	// Up says Peak is at least UpFactor times Baseline and over LatencySLO.
	Up bool `json:"up"`
}

// Figures are what the servers' own metrics say about a run, for diagnose.
type Figures struct {
	// Signals counts the signals read, per source.
	Signals map[string]int `json:"signals"`
	// Instances holds every (instance, latency kind) measured.
	Instances []InstanceFigure `json:"instances"`
	// APIServers lists the instances with apiserver latency;
	// LatencyUp those whose latency went up. EtcdUp lists the instances
	// whose etcd request latency (as their apiserver saw it) went up.
	APIServers []string `json:"apiservers"`
	LatencyUp  []string `json:"latencyUp"`
	EtcdUp     []string `json:"etcdUp"`
	// Shape says where latency went up: "every-apiserver" (a stall all of
	// them share: etcd, CPU, priority-and-fairness), "one-apiserver" (that
	// apiserver's own path, as an etcd stall on one node), "some", or
	// "none" (what a load-balancer mechanism predicts: the servers were
	// fine, the routing was not). "" when there is nothing to say.
	Shape string `json:"shape"`
	// ScrapeFailures counts failed scrapes per instance.
	ScrapeFailures map[string]int `json:"scrapeFailures,omitempty"`
}

// Summarize computes the figures from a run's signals; baselineEnd ends
// the window each instance's own baseline comes from (the first trigger or
// fault; zero: the first third of the signals' span).
func Summarize(sigs []results.Signal, baselineEnd time.Time) *Figures {
	f := &Figures{Signals: map[string]int{}, ScrapeFailures: map[string]int{}}
	if len(sigs) == 0 {
		return f
	}
	if baselineEnd.IsZero() {
		first, last := sigs[0].At, sigs[0].At
		for _, s := range sigs {
			if s.At.Before(first) {
				first = s.At
			}
			if s.At.After(last) {
				last = s.At
			}
		}
		baselineEnd = first.Add(last.Sub(first) / 3)
	}
	type key struct {
		inst string
		kind results.SignalKind
	}
	figs := map[key]*InstanceFigure{}
	apiservers := map[string]bool{}
	for _, s := range sigs {
		f.Signals[s.Source]++
		if s.Kind == results.SignalScrapeFailed {
			f.ScrapeFailures[s.Instance]++
			continue
		}
		if s.Kind != results.SignalAPIServerLatency && s.Kind != results.SignalEtcdRequestLatency {
			continue
		}
		if s.Instance == "" {
			continue
		}
		if s.Kind == results.SignalAPIServerLatency {
			apiservers[s.Instance] = true
		}
		k := key{s.Instance, s.Kind}
		fg := figs[k]
		if fg == nil {
			fg = &InstanceFigure{Instance: s.Instance, Kind: s.Kind}
			figs[k] = fg
		}
		if s.At.Before(baselineEnd) {
			if s.Value > fg.Baseline {
				fg.Baseline = s.Value
			}
		} else if s.Value > fg.Peak {
			fg.Peak, fg.At = s.Value, s.At
		}
	}
	for _, fg := range figs {
		fg.Up = fg.Peak >= LatencySLO.Seconds() && fg.Peak >= UpFactor*fg.Baseline
		f.Instances = append(f.Instances, *fg)
	}
	sort.Slice(f.Instances, func(i, j int) bool {
		a, b := f.Instances[i], f.Instances[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Instance < b.Instance
	})
	for _, fg := range f.Instances {
		switch {
		case fg.Up && fg.Kind == results.SignalAPIServerLatency:
			f.LatencyUp = append(f.LatencyUp, fg.Instance)
		case fg.Up && fg.Kind == results.SignalEtcdRequestLatency:
			f.EtcdUp = append(f.EtcdUp, fg.Instance)
		}
	}
	for a := range apiservers {
		f.APIServers = append(f.APIServers, a)
	}
	sort.Strings(f.APIServers)
	if len(f.APIServers) > 0 {
		up := map[string]bool{}
		for _, i := range f.LatencyUp {
			up[i] = true
		}
		for _, i := range f.EtcdUp {
			up[i] = true
		}
		n := 0
		for _, a := range f.APIServers {
			if up[a] {
				n++
			}
		}
		switch {
		case n == 0:
			f.Shape = "none"
		case n == len(f.APIServers) && n > 1:
			f.Shape = "every-apiserver"
		case n == 1:
			f.Shape = "one-apiserver"
		default:
			f.Shape = "some"
		}
	}
	if len(f.ScrapeFailures) == 0 {
		f.ScrapeFailures = nil
	}
	return f
}
