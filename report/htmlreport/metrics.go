package htmlreport

import (
	"sort"
	"strings"
	"time"

	"github.com/repro-tools/repro/results"
)

// MetricLane is one server-side quantity over the run (signals.jsonl),
// drawn under the lanes on the same time axis, one line per instance.
type MetricLane struct {
	Title  string         `json:"title"`
	Unit   string         `json:"unit"`
	Series []MetricSeries `json:"series"`
}

// MetricSeries is one instance's points: T in ms from T0, V in the unit.
type MetricSeries struct {
	Instance string    `json:"instance"`
	T        []float64 `json:"t"`
	V        []float64 `json:"v"`
}

// metricKinds are the kinds drawn, in order, with title and unit; max
// says that points of one instance at one time (several verbs) are
// combined by their maximum rather than summed.
var metricKinds = []struct {
	kind        results.SignalKind
	title, unit string
	max         bool
}{
	{results.SignalAPIServerLatency, "apiserver request latency p99 (highest verb)", "s", true},
	{results.SignalEtcdRequestLatency, "etcd request latency p99, as each apiserver sees it", "s", true},
	{results.SignalAPIServerInflight, "requests in flight", "", false},
	{results.SignalAPFQueued, "priority-and-fairness queued requests", "", false},
	{results.SignalAPFRejected, "priority-and-fairness rejections", "/s", false},
	{results.SignalWatchTerminated, "watches terminated", "/s", false},
	{results.SignalEtcdWALFsync, "etcd WAL fsync p99", "s", true},
	{results.SignalEtcdBackendCommit, "etcd backend commit p99", "s", true},
	{results.SignalEtcdLeaderChange, "etcd leader changes", "", false},
	{results.SignalNodeCPU, "control-plane node CPU", "ratio", true},
	{results.SignalProcessCPU, "server process CPU", "cores", false},
	{results.SignalScrapeFailed, "failed /metrics scrapes", "", false},
}

// metricLanes turns signals into lanes, ms from zero (Unix ms).
func metricLanes(sigs []results.Signal, zero int64) []MetricLane {
	type key struct {
		series string
		at     time.Time
	}
	var out []MetricLane
	for _, mk := range metricKinds {
		vals := map[key]float64{}
		for _, s := range sigs {
			if s.Kind != mk.kind {
				continue
			}
			name := s.Instance
			if j := s.Labels["job"]; j != "" && j != "apiserver" {
				name = strings.TrimSpace(name + " " + j)
			}
			if s.Source != "" && s.Source != "scrape" {
				name += " (" + s.Source + ")"
			}
			k := key{name, s.At}
			if v, ok := vals[k]; ok {
				if mk.max {
					if s.Value > v {
						vals[k] = s.Value
					}
				} else {
					vals[k] = v + s.Value
				}
				continue
			}
			vals[k] = s.Value
		}
		if len(vals) == 0 {
			continue
		}
		keys := make([]key, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].series != keys[j].series {
				return keys[i].series < keys[j].series
			}
			return keys[i].at.Before(keys[j].at)
		})
		lane := MetricLane{Title: mk.title, Unit: mk.unit}
		for _, k := range keys {
			if n := len(lane.Series); n == 0 || lane.Series[n-1].Instance != k.series {
				lane.Series = append(lane.Series, MetricSeries{Instance: k.series})
			}
			s := &lane.Series[len(lane.Series)-1]
			s.T = append(s.T, float64(k.at.UnixMilli()-zero))
			s.V = append(s.V, vals[k])
		}
		out = append(out, lane)
	}
	return out
}
