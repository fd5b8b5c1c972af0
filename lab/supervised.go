package lab

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/repro-tools/repro/lab/netproxy"
	"github.com/repro-tools/repro/lab/proc"
)

// supervised is what a node's kube-apiserver (Node) and an aggregated
// replica (Replica) share: an apiserver process the lab restarts on a
// fixed port with its own etcd proxy, probed for readiness like a pod, and
// reported as a pod by the lab's kubelet.
type supervised struct {
	lab   *Lab
	port  int
	proxy *netproxy.Proxy
	log   *zap.Logger

	mu   sync.Mutex
	proc *proc.Process
	// ready is the readiness probe's last verdict.
	ready bool
	// changed wakes the kubelet loop, buffered 1.
	changed chan struct{}
}

func newSupervised(l *Lab, port int, px *netproxy.Proxy, log *zap.Logger) supervised {
	return supervised{lab: l, port: port, proxy: px, log: log, changed: make(chan struct{}, 1)}
}

// EtcdProxy is the proxy between this apiserver and etcd: the seam for
// stalling one apiserver's storage.
func (s *supervised) EtcdProxy() *netproxy.Proxy { return s.proxy }

// PID is the running process's pid, 0 between processes.
func (s *supervised) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.PID()
}

// kill SIGKILLs the running process at lab stop.
func (s *supervised) kill() error {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Kill()
}

func (s *supervised) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// probeLoop is the pod's readiness probe: GET url every ProbeInterval
// while live says the process can answer. update records a verdict and
// says whether it changed; both run with s.mu held. A change wakes the
// kubelet and runs onChange, if any.
func (s *supervised) probeLoop(ctx context.Context, url string, live func() bool, update func(ok bool) bool, onChange func(context.Context)) {
	hc := s.lab.httpClient(false, s.lab.opts.ProbeInterval)
	t := time.NewTicker(s.lab.opts.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		running := live()
		s.mu.Unlock()
		if !running {
			continue
		}
		code, err := get(ctx, hc, url)
		ok := err == nil && code == http.StatusOK
		s.mu.Lock()
		changed := update(ok)
		s.mu.Unlock()
		if changed {
			s.notify()
			if onChange != nil {
				onChange(ctx)
			}
		}
	}
}

// kubeletLoop keeps the process's pod in line by calling sync on every
// change, and every few seconds to repair what others changed; a failed
// sync is retried with backoff. what names the pod in the log.
func (s *supervised) kubeletLoop(ctx context.Context, what string, sync func(context.Context) error) {
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
		case <-time.After(backoff):
		}
		if err := sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Debug(what+" sync failed, retrying", zap.Error(err))
			backoff = min(backoff*2, 2*time.Second)
			s.notify()
			continue
		}
		backoff = 5 * time.Second
	}
}

// podConditions are a running pod's conditions, as the kubelet reports
// them: Ready and ContainersReady follow ready (since readyAt once known,
// else now); a condition whose status did not change keeps its transition
// time from cur. A not-ready condition names unready as the unready
// container when it is set.
func podConditions(cur *corev1.Pod, started time.Time, ready bool, readyAt, now time.Time, unready string) []corev1.PodCondition {
	cond := func(t corev1.PodConditionType, ok bool, since time.Time) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		// Keep the transition time while the status does not change.
		for _, c := range cur.Status.Conditions {
			if c.Type == t && c.Status == s {
				return c
			}
		}
		c := corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(since)}
		if unready != "" && !ok && (t == corev1.PodReady || t == corev1.ContainersReady) {
			c.Reason = "ContainersNotReady"
			c.Message = "containers with unready status: [" + unready + "]"
		}
		return c
	}
	readySince := now
	if ready && !readyAt.IsZero() {
		readySince = readyAt
	}
	return []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, true, started),
		cond(corev1.PodInitialized, true, started),
		cond(corev1.PodReady, ready, readySince),
		cond(corev1.ContainersReady, ready, readySince),
		cond(corev1.PodScheduled, true, started),
	}
}

// stallLinks holds every byte on the given etcd links for d, EtcdStallAfter
// after trigger's apiserver is back in the load balancer's service (the
// load balancer's verdict, not ours), and records the window as fault.
// links names them in the log ("link to etcd").
func (l *Lab) stallLinks(trigger *Node, fault, links string, d time.Duration, proxies []*netproxy.Proxy, names []string) {
	after := l.opts.Faults.EtcdStallAfter
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		wctx, cancel := context.WithTimeout(l.ctx, 30*time.Second)
		_ = l.lb.WaitInService(wctx, trigger.name)
		cancel()
		select {
		case <-l.ctx.Done():
			return
		case <-time.After(after):
		}
		from := time.Now()
		until := from.Add(d)
		for _, p := range proxies {
			p.SetHook(stallHook{until: until})
		}
		i := l.faults.add(FaultEvent{Fault: fault, Node: trigger.name, Nodes: names, From: from})
		l.log.Info("fault: stalling the "+links, zap.String("trigger", trigger.name), zap.Strings("links", names), zap.Duration("for", d))
		select {
		case <-l.ctx.Done():
		case <-time.After(time.Until(until)):
		}
		for _, p := range proxies {
			p.SetHook(nil)
		}
		l.faults.end(i, time.Now())
		l.log.Info("fault: "+links+" released", zap.Strings("links", names))
	}()
}
