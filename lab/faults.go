package lab

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/repro-tools/repro/lab/lb"
	"github.com/repro-tools/repro/lab/netproxy"
	"github.com/repro-tools/repro/results"
)

// Faults are the fault behaviours the lab can inject, each a documented
// mechanism acting on real traffic: nothing here touches a measurement.
// The zero value is a healthy lab.
type Faults struct {
	// LB holds the load-balancer faults (late deregistration, resets on
	// unhealthy, blackholing a stopped target).
	LB lb.Faults

	// KeepRegistered leaves a restarted apiserver registered with the load
	// balancer from the moment it is exec'd, so the health check alone
	// decides when it takes traffic. The default (false) holds it out until
	// its CRD storage is warm, which hides a lab-only artifact; with a TCP
	// health check or a healthy threshold of 1 the LB then sends clients to
	// an apiserver that accepts connections before it can answer.
	KeepRegistered bool

	// EtcdStall holds every byte between an apiserver and etcd for this long
	// (the node's netproxy blocks), starting EtcdStallAfter after a
	// restarted apiserver re-entered the load balancer's service. TLS still
	// completes and nothing answers: requests outlasting the client's
	// header timeout fail, later ones succeed late.
	EtcdStall time.Duration
	// EtcdStallAfter delays the stall after the apiserver re-entered service.
	EtcdStallAfter time.Duration
	// EtcdStallOn lists the nodes whose restart starts a stall; empty means
	// every restart.
	EtcdStallOn []string
	// EtcdStallAll stalls every apiserver's link to etcd at once (etcd
	// itself not answering) instead of only the restarted node's.
	EtcdStallAll bool
	// EtcdCheckTimeout, when set, is passed to every kube-apiserver as
	// --etcd-healthcheck-timeout and --etcd-readycheck-timeout. The etcd
	// checks behind /readyz probe etcd at most once per timeout/2 and
	// answer everyone else with the last completed probe's result
	// (k8s.io/apiserver storagebackend/factory/etcd3.go, newETCD3Check); at
	// 30 s a stall makes at most one /readyz in 15 s per check fail, so a
	// load balancer wanting 2 failures in a row keeps the apiserver in
	// service while its storage hangs.
	EtcdCheckTimeout time.Duration

	// AggregatedEtcdStall holds every byte between the aggregated API
	// servers (openshift-apiserver's and oauth-apiserver's stand-ins, both
	// groups) on a restarted node and etcd for this long, EtcdStallAfter
	// after that node's kube-apiserver re-entered service, on the nodes of
	// EtcdStallOn (every restart when empty). The kube-apiservers' own
	// links are untouched.
	AggregatedEtcdStall time.Duration
	// AggregatedRollout restarts a node's aggregated replicas gracefully
	// (SIGTERM, their shutdown delay, a new process) once its restarted
	// kube-apiserver is back in service: a rollout of the aggregated
	// servers one node at a time, at the kube-apiserver rollout's pace.
	AggregatedRollout bool
}

// Enabled reports whether any fault is set.
func (f Faults) Enabled() bool {
	return f.LB.Enabled() || f.KeepRegistered || f.EtcdStall > 0 || f.EtcdCheckTimeout > 0 || f.AggregatedEtcdStall > 0 || f.AggregatedRollout
}

// FaultEvent is one injected fault's window, as the lab applied it: the
// record run.json keeps, declared once in the contract.
type FaultEvent = results.LabFault

type faultLog struct {
	mu     sync.Mutex
	events []FaultEvent
}

func (f *faultLog) add(e FaultEvent) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
	return len(f.events) - 1
}

func (f *faultLog) end(i int, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events[i].To = at
}

// FaultEvents returns every fault window the lab has applied so far.
func (l *Lab) FaultEvents() []FaultEvent {
	l.faults.mu.Lock()
	defer l.faults.mu.Unlock()
	out := make([]FaultEvent, len(l.faults.events))
	for i, e := range l.faults.events {
		out[i] = e
		out[i].Nodes = slices.Clone(e.Nodes)
	}
	return out
}

// stallHook blocks every chunk until the stall ends or the connection closes.
type stallHook struct{ until time.Time }

func (h stallHook) Forward(ctx context.Context, _ netproxy.Direction, _ int) error {
	d := time.Until(h.until)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// rejoined is called once a restarted apiserver is back in the load
// balancer's service; it starts the etcd stall if one is configured.
func (l *Lab) rejoined(n *Node) {
	f := l.opts.Faults
	if f.AggregatedRollout {
		l.aggr.rollReplicasOn(n)
	}
	if f.AggregatedEtcdStall > 0 && (len(f.EtcdStallOn) == 0 || slices.Contains(f.EtcdStallOn, n.name)) {
		l.aggr.stallReplicasOn(n)
	}
	if f.EtcdStall <= 0 || (len(f.EtcdStallOn) > 0 && !slices.Contains(f.EtcdStallOn, n.name)) {
		return
	}
	hit := []*Node{n}
	if f.EtcdStallAll {
		hit = l.Nodes()
	}
	var proxies []*netproxy.Proxy
	var names []string
	for _, h := range hit {
		proxies = append(proxies, h.proxy)
		names = append(names, h.name)
	}
	l.stallLinks(n, "etcd-stall", "link to etcd", f.EtcdStall, proxies, names)
}
