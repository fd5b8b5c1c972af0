package results

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"time"
)

// SignalsFile holds server-side evidence for a run, one Signal per line: the
// servers' own metrics (scraped during a run or queried from monitoring after
// it), the load balancer's view, or the signals origin recorded beside a CI
// run's disruptions. One schema, so that one diagnose check reads any source.
const SignalsFile = "signals.jsonl"

// ControlFile holds the control pollers' samples (the samples.jsonl schema),
// apart from the backends' so that every reader of samples.jsonl keeps seeing
// only what the cluster served.
const ControlFile = "control.jsonl"

// ControlSource is the Signal source of the control poller's stall windows.
const ControlSource = "control-poller"

// SignalKind names what a Signal measures, whatever its source.
type SignalKind string

// Signal kinds. Units are fixed per kind (see each).
const (
	// SignalAPIServerLatency: an apiserver instance's request latency,
	// seconds (Labels["verb"], Labels["quantile"], e.g. "0.99").
	SignalAPIServerLatency SignalKind = "apiserver-request-latency"
	// SignalAPIServerInflight: requests in flight on an instance, count
	// (Labels["request_kind"]: mutating or readOnly).
	SignalAPIServerInflight SignalKind = "apiserver-inflight-requests"
	// SignalAPFQueued: requests waiting in priority-and-fairness queues, count.
	SignalAPFQueued SignalKind = "apf-queued-requests"
	// SignalAPFRejected: requests priority-and-fairness rejected, per second.
	SignalAPFRejected SignalKind = "apf-rejected-requests"
	// SignalWatchTerminated: watches the apiserver terminated, per second.
	SignalWatchTerminated SignalKind = "apiserver-terminated-watches"
	// SignalEtcdRequestLatency: etcd request latency as an apiserver sees it,
	// seconds.
	SignalEtcdRequestLatency SignalKind = "etcd-request-latency"
	// SignalEtcdWALFsync: etcd's WAL fsync duration, seconds.
	SignalEtcdWALFsync SignalKind = "etcd-wal-fsync"
	// SignalEtcdBackendCommit: etcd's backend commit duration, seconds.
	SignalEtcdBackendCommit SignalKind = "etcd-backend-commit"
	// SignalEtcdLeaderChange: an etcd leader change, count.
	SignalEtcdLeaderChange SignalKind = "etcd-leader-change"
	// SignalEtcdSlowApply: etcd logged "apply request took too long",
	// seconds (the apply's duration when known).
	SignalEtcdSlowApply SignalKind = "etcd-slow-apply"
	// SignalNodeCPU: a node's busy CPU, ratio 0..1.
	SignalNodeCPU SignalKind = "node-cpu"
	// SignalProcessCPU: one server process's CPU, cores (the lab, whose
	// "nodes" share one machine, has no node CPU of its own;
	// Labels["job"] names the server when not an apiserver).
	SignalProcessCPU SignalKind = "process-cpu"
	// SignalScrapeFailed: repro's scrape of a server's /metrics failed,
	// count (Message says how): the server did not answer in time.
	SignalScrapeFailed SignalKind = "metrics-scrape-failed"
	// SignalAlert: a firing alert (Labels["alertname"], Labels["severity"]).
	SignalAlert SignalKind = "alert"
	// SignalOVSStall: ovs-vswitchd logged a stall ("Unreasonably long ...
	// poll interval"), seconds.
	SignalOVSStall SignalKind = "ovs-vswitchd-stall"
	// SignalNodeState: a node or machine changed state (Message says how).
	SignalNodeState SignalKind = "node-state"
	// SignalOperatorState: a cluster operator was progressing, degraded or
	// unavailable (Labels["operator"], Labels["condition"]).
	SignalOperatorState SignalKind = "operator-state"
	// SignalE2ETest: an e2e test that ran in the window (Labels["result"]).
	SignalE2ETest SignalKind = "e2e-test"
	// SignalLBTargetHealth: the load balancer's view of one target
	// (Instance the target, Labels["state"], Labels["reason"]).
	SignalLBTargetHealth SignalKind = "lb-target-health"
	// SignalMeasuringUnreliable: a window in which the measuring side itself
	// failed (a failed network-liveness canary in CI, the control poller's
	// failures or stall in a repro run); failures inside it are discounted.
	SignalMeasuringUnreliable SignalKind = "measuring-side-unreliable"
)

// Signal is one observation of a server-side quantity: a point (To zero) or
// an interval.
type Signal struct {
	Kind SignalKind `json:"kind"`
	// Source says where it came from: "scrape" (repro's own scrape of a
	// server's /metrics), "prometheus" (the cluster's or the lab's
	// monitoring), "aws-elbv2", "lab-lb", "ci:<origin interval source>".
	Source string `json:"source"`
	// Instance is the apiserver instance, etcd member, node or target.
	Instance string `json:"instance,omitempty"`
	// Labels qualify the kind (verb, alertname, state...).
	Labels map[string]string `json:"labels,omitempty"`
	// At is the point's time, or the interval's start.
	At time.Time `json:"at"`
	// To is the interval's end; zero for a point.
	To time.Time `json:"to,omitempty"`
	// Value is in the kind's unit.
	Value float64 `json:"value"`
	// Message is the source's own words, when it has some (capped by the
	// writer).
	Message string `json:"message,omitempty"`
}

// SignalWriter returns the folder's one writer of SignalsFile, opened for
// appending on first use. Every source of signals in a run (the scraper,
// the monitoring query, the load balancer's poller) writes through it, so
// their lines never interleave; CloseSignals flushes and closes it.
func (f *Folder) SignalWriter() (*JSONLWriter, error) {
	f.sigMu.Lock()
	defer f.sigMu.Unlock()
	if f.signals == nil {
		w, err := AppendJSONL(f.Path(SignalsFile))
		if err != nil {
			return nil, err
		}
		f.signals = w
	}
	return f.signals, nil
}

// CloseSignals flushes and closes the signals writer, if one was opened;
// a later SignalWriter opens it again.
func (f *Folder) CloseSignals() error {
	f.sigMu.Lock()
	defer f.sigMu.Unlock()
	if f.signals == nil {
		return nil
	}
	err := f.signals.Close()
	f.signals = nil
	return err
}

// ForEachSignal calls fn for every signal of a SignalsFile in file order:
// the one reader of the schema, which diagnose, the report and the CI
// importer all go through. A line that is not a Signal is an error naming
// the file and line (a truncated last line, a crash mid-write, is skipped).
func ForEachSignal(path string, fn func(Signal) error) (ReadStats, error) {
	var cbErr error
	st, err := ReadJSONL(path, func(line []byte) error {
		var s Signal
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		if err := fn(s); err != nil {
			cbErr = err
			return err
		}
		return nil
	})
	if cbErr != nil {
		return st, cbErr
	}
	return st, err
}

// MaxSignals bounds what ReadSignals keeps of one file.
const MaxSignals = 4 << 20

// ReadSignals reads a SignalsFile whole (ForEachSignal): every signal in
// file order, at most MaxSignals (Dropped says how many more there were). A
// missing file is no signals and no error.
func ReadSignals(path string) ([]Signal, ReadStats, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, ReadStats{}, nil
	}
	var out []Signal
	var dropped int64
	st, err := ForEachSignal(path, func(s Signal) error {
		if len(out) >= MaxSignals {
			dropped++
			return nil
		}
		out = append(out, s)
		return nil
	})
	st.Dropped = dropped
	return out, st, err
}
