package metrics

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/repro-tools/repro/results"
)

// SourcePrometheus is the Signal.Source of what a Prometheus answered.
const SourcePrometheus = "prometheus"

// Query is one PromQL range query and how its series become signals.
type Query struct {
	Kind   results.SignalKind
	PromQL string
	// InstanceLabels are the series labels that name the instance, first
	// present wins (node, then instance).
	InstanceLabels []string
	// Labels copies these series labels into the signal's Labels.
	Labels []string
	// Fixed labels added to every signal (e.g. quantile=0.99).
	Fixed map[string]string
	// NonZero keeps only points whose value is not zero (leader changes:
	// a point is a change).
	NonZero bool
}

// QueryTimeout bounds one range query.
const QueryTimeout = 30 * time.Second

// MaxQueryBytes bounds one query's answer.
const MaxQueryBytes = 64 << 20

// Querier reads signals from a Prometheus-compatible API (Prometheus itself,
// or thanos-querier behind its OpenShift route).
type Querier struct {
	api   v1.API
	count *countingTransport
}

// Cost is what querying took: queries sent, seconds spent, bytes read.
type Cost = results.QueryCost

// NewQuerier reads from address (http(s)://host[:port][/prefix]) through
// rt (nil: a default transport).
func NewQuerier(address string, rt http.RoundTripper) (*Querier, error) {
	if rt == nil {
		rt = http.DefaultTransport
	}
	ct := &countingTransport{rt: rt}
	c, err := api.NewClient(api.Config{Address: address, RoundTripper: ct})
	if err != nil {
		return nil, fmt.Errorf("metrics: a Prometheus client for %s: %w", address, err)
	}
	return &Querier{api: v1.NewAPI(c), count: ct}, nil
}

// Collect runs every query over [start, end] at step and returns the
// signals, what it cost, and one error per query that failed (the others
// still count).
func (q *Querier) Collect(ctx context.Context, queries []Query, start, end time.Time, step time.Duration) ([]results.Signal, Cost, []error) {
	began := time.Now()
	before := q.count.total()
	var out []results.Signal
	var errs []error
	for _, qu := range queries {
		qctx, cancel := context.WithTimeout(ctx, QueryTimeout)
		v, _, err := q.api.QueryRange(qctx, qu.PromQL, v1.Range{Start: start, End: end, Step: step})
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", qu.Kind, err))
			continue
		}
		out = append(out, qu.signals(v)...)
	}
	cost := Cost{Queries: len(queries), Elapsed: time.Since(began), Bytes: q.count.total() - before}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, cost, errs
}

func (qu Query) signals(v model.Value) []results.Signal {
	m, ok := v.(model.Matrix)
	if !ok {
		return nil
	}
	var out []results.Signal
	for _, s := range m {
		inst := ""
		for _, l := range qu.InstanceLabels {
			if x := string(s.Metric[model.LabelName(l)]); x != "" {
				inst = x
				break
			}
		}
		var labels map[string]string
		for _, l := range qu.Labels {
			if x := string(s.Metric[model.LabelName(l)]); x != "" {
				if labels == nil {
					labels = map[string]string{}
				}
				labels[l] = x
			}
		}
		for k, x := range qu.Fixed {
			if labels == nil {
				labels = map[string]string{}
			}
			labels[k] = x
		}
		for _, p := range s.Values {
			f := float64(p.Value)
			if math.IsNaN(f) || math.IsInf(f, 0) || (qu.NonZero && f == 0) {
				continue
			}
			out = append(out, results.Signal{Kind: qu.Kind, Source: SourcePrometheus, Instance: inst, Labels: labels, At: p.Timestamp.Time(), Value: f})
		}
	}
	return out
}

// countingTransport counts the bytes of every answer and bounds each.
type countingTransport struct {
	rt http.RoundTripper
	mu sync.Mutex
	n  int64
}

func (c *countingTransport) total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &countedBody{rc: resp.Body, r: io.LimitReader(resp.Body, MaxQueryBytes), t: c}
	return resp, nil
}

type countedBody struct {
	rc io.ReadCloser
	r  io.Reader
	t  *countingTransport
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.t.mu.Lock()
	b.t.n += int64(n)
	b.t.mu.Unlock()
	return n, err
}

func (b *countedBody) Close() error { return b.rc.Close() }

// ClusterQueries are what a live run asks the cluster's monitoring for:
// what repro cannot scrape through the API itself. OpenShift scrapes every
// 30 s, so the rate windows span two scrapes. The thresholds TRT reads
// these against are etcd disk commit above 25 ms and a control-plane node
// above 95% CPU (openshift-eng/ai-helpers
// plugins/ci/skills/analyze-disruption/SKILL.md, "Concurrent event
// signals": EtcdDiskCommitDuration, CPUMonitor).
func ClusterQueries() []Query {
	inst := []string{"pod", "instance"}
	return []Query{
		{Kind: results.SignalEtcdWALFsync, InstanceLabels: inst, Fixed: map[string]string{"quantile": "0.99"},
			PromQL: `histogram_quantile(0.99, sum by (pod, instance, le) (rate(etcd_disk_wal_fsync_duration_seconds_bucket{job="etcd"}[1m])))`},
		{Kind: results.SignalEtcdBackendCommit, InstanceLabels: inst, Fixed: map[string]string{"quantile": "0.99"},
			PromQL: `histogram_quantile(0.99, sum by (pod, instance, le) (rate(etcd_disk_backend_commit_duration_seconds_bucket{job="etcd"}[1m])))`},
		{Kind: results.SignalEtcdLeaderChange, InstanceLabels: inst, NonZero: true,
			PromQL: `sum by (pod, instance) (changes(etcd_server_leader_changes_seen_total{job="etcd"}[1m]))`},
		// node-exporter's instance is the node's name on OpenShift; only
		// control-plane nodes (kube-state-metrics' kube_node_role).
		{Kind: results.SignalNodeCPU, InstanceLabels: []string{"instance"},
			PromQL: `(1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[1m]))) and on (instance) label_replace(kube_node_role{role="master"}, "instance", "$1", "node", "(.+)")`},
	}
}

// ClusterStep is the resolution of ClusterQueries: OpenShift's
// cluster-monitoring scrape interval.
const ClusterStep = 30 * time.Second

// LabQueries are what a lab run asks the lab's Prometheus for, at its
// one-second scrape: the same etcd families, the apiservers' view of etcd
// per node, and each server process's CPU (the lab's nodes share one
// machine).
func LabQueries() []Query {
	inst := []string{"node", "instance"}
	return []Query{
		{Kind: results.SignalEtcdWALFsync, InstanceLabels: inst, Fixed: map[string]string{"quantile": "0.99"},
			PromQL: `histogram_quantile(0.99, sum by (instance, le) (rate(etcd_disk_wal_fsync_duration_seconds_bucket{job="etcd"}[5s])))`},
		{Kind: results.SignalEtcdBackendCommit, InstanceLabels: inst, Fixed: map[string]string{"quantile": "0.99"},
			PromQL: `histogram_quantile(0.99, sum by (instance, le) (rate(etcd_disk_backend_commit_duration_seconds_bucket{job="etcd"}[5s])))`},
		{Kind: results.SignalEtcdLeaderChange, InstanceLabels: inst, NonZero: true,
			PromQL: `sum by (instance) (changes(etcd_server_leader_changes_seen_total{job="etcd"}[5s]))`},
		{Kind: results.SignalEtcdRequestLatency, InstanceLabels: inst, Fixed: map[string]string{"quantile": "0.99"},
			PromQL: `histogram_quantile(0.99, sum by (node, le) (rate(etcd_request_duration_seconds_bucket{job="apiserver"}[5s])))`},
		{Kind: results.SignalProcessCPU, InstanceLabels: inst, Labels: []string{"job"},
			PromQL: `sum by (job, node, instance) (rate(process_cpu_seconds_total[5s]))`},
	}
}

// LabStep is the resolution of LabQueries: the lab Prometheus's scrape.
const LabStep = time.Second
