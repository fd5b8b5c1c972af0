package lab

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/repro-tools/repro/lab/netproxy"
	"github.com/repro-tools/repro/lab/proc"
)

// supervised is what a node's kube-apiserver (Node) and an aggregated
// replica (Replica) share: an apiserver process the lab restarts on a
// fixed port with its own etcd proxy, probed for readiness like a pod, and
// reported as a pod by the lab's kubelet.
//
// What differs is the pod it stands for. A node's kube-apiserver is a
// static pod: its readiness probe runs until the process exits, and the
// load balancer, not the lab, decides when it takes traffic. A replica is a
// Deployment's pod behind a Service: endpoints is set, terminating takes it
// out of them before SIGTERM, and the probe leaves it out from then on.
type supervised struct {
	lab   *Lab
	port  int
	proxy *netproxy.Proxy
	log   *zap.Logger
	// what names the process in errors ("master-0: kube-apiserver",
	// "openshift-apiserver on master-0"), program in logs; readyz is the
	// URL of its /readyz.
	what, program, readyz string
	// endpoints, set for a Deployment's pod, rewrites its Service's
	// endpoints from the pods' readiness.
	endpoints func(context.Context) error

	mu   sync.Mutex
	proc *proc.Process
	// life is the running (or last) process's record; fields are its log
	// fields (a node's revision).
	life   *ProcessLife
	fields []zap.Field
	// ready is the readiness probe's last verdict.
	ready bool
	// changed wakes the kubelet loop, buffered 1.
	changed chan struct{}
	// readers copy the running process's output (a node's, for its
	// graceful-termination lines).
	readers  sync.WaitGroup
	loopsRun bool
}

// ProcessLife is what the lab records of every apiserver process it ran,
// a node's kube-apiserver's or an aggregated replica's.
type ProcessLife struct {
	PID     int    `json:"pid"`
	LogPath string `json:"logPath"`
	// Started is when the process was exec'd; Ready when it first passed
	// its readiness check.
	Started time.Time `json:"started"`
	Ready   time.Time `json:"ready,omitzero"`
	// Terminating is when the lab began to stop it (SIGTERM follows, for a
	// replica once it left its endpoints); Killed is set when the grace
	// period ran out and SIGKILL followed.
	Terminating time.Time `json:"terminating,omitzero"`
	Killed      bool      `json:"killed,omitempty"`
	Exited      time.Time `json:"exited,omitzero"`
	ExitStatus  string    `json:"exitStatus,omitempty"`
}

func newSupervised(l *Lab, port int, px *netproxy.Proxy, log *zap.Logger, what, program, readyz string) supervised {
	return supervised{lab: l, port: port, proxy: px, log: log, what: what, program: program, readyz: readyz, changed: make(chan struct{}, 1)}
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

// release kills the process at lab stop, waits for its output to be read
// and closes its etcd proxy.
func (s *supervised) release() error {
	err := s.kill()
	s.readers.Wait()
	if s.proxy != nil {
		_ = s.proxy.Close()
	}
	return err
}

func (s *supervised) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// launch is one start of a supervised process.
type launch struct {
	bin     string
	args    []string
	logPath string
	// life is the new process's record: start fills its PID, LogPath,
	// Started and Ready.
	life *ProcessLife
	// follow, when set, copies the process's output from r to logf (closing
	// both, then calling readers.Done) while reading it; without it the
	// output goes straight to the log file.
	follow func(r io.ReadCloser, logf *os.File)
	// record runs with mu held once the process runs: the owner keeps the
	// record in its history.
	record func()
	// check is the readiness check, GET readyz answering 200 without it.
	check func(ctx context.Context, hc *http.Client) (int, error)
	// fields go on the process's log lines (a node's revision).
	fields []zap.Field
}

// start execs the process as ln says and waits until its readiness check
// passes: the restart of a pod's container, with its probe.
func (s *supervised) start(ctx context.Context, ln launch) error {
	logf, err := os.Create(ln.logPath)
	if err != nil {
		return err
	}
	if err := s.lab.ctx.Err(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: lab is stopping", s.what)
	}
	out, pr := logf, (*os.File)(nil)
	if ln.follow != nil {
		if pr, out, err = os.Pipe(); err != nil {
			logf.Close()
			return err
		}
	}
	cmd := exec.Command(ln.bin, ln.args...)
	cmd.Stdout, cmd.Stderr = out, out
	ln.life.LogPath, ln.life.Started = ln.logPath, time.Now()
	p, err := proc.Start(cmd)
	out.Close()
	if err != nil {
		if pr != nil {
			pr.Close()
			logf.Close()
		}
		return fmt.Errorf("%s: starting %s: %w", s.what, ln.bin, err)
	}
	ln.life.PID = p.PID()
	s.mu.Lock()
	s.proc, s.life, s.fields, s.ready = p, ln.life, ln.fields, false
	if ln.record != nil {
		ln.record()
	}
	s.mu.Unlock()
	if ln.follow != nil {
		s.readers.Add(1)
		go ln.follow(pr, logf)
	}
	s.notify()
	s.log.Info(s.program+" started", append(ln.fields, zap.Int("pid", ln.life.PID), zap.String("log", ln.logPath))...)
	return s.waitReady(ctx, p, ln)
}

// waitReady polls the readiness check until it passes, the process exits,
// ctx ends or the lab's StartTimeout runs out.
func (s *supervised) waitReady(ctx context.Context, p *proc.Process, ln launch) error {
	hc := s.lab.httpClient(false, time.Second)
	check := ln.check
	if check == nil {
		check = func(ctx context.Context, hc *http.Client) (int, error) { return get(ctx, hc, s.readyz) }
	}
	deadline := time.NewTimer(s.lab.opts.StartTimeout)
	defer deadline.Stop()
	last := ""
	for {
		code, err := check(ctx, hc)
		if err == nil && code == http.StatusOK {
			s.mu.Lock()
			ln.life.Ready = time.Now()
			s.ready = true
			s.mu.Unlock()
			s.notify()
			s.log.Info(s.program+" ready", append(ln.fields, zap.Duration("after", ln.life.Ready.Sub(ln.life.Started).Round(time.Millisecond)))...)
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = strconv.Itoa(code)
		}
		select {
		case <-p.Exited():
			s.readers.Wait()
			return fmt.Errorf("%s exited at start (%s); last lines of %s:\n%s", s.what, p.ExitStatus(), ln.logPath, proc.Tail(ln.logPath, 15))
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%s not ready after %s (last /readyz: %s); last lines of %s:\n%s", s.what, s.lab.opts.StartTimeout, last, ln.logPath, proc.Tail(ln.logPath, 15))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// terminate stops the running process the way the kubelet stops a pod:
// SIGTERM, then SIGKILL after the grace period. A Deployment's pod leaves
// its endpoints first (it turns Terminating and unready). It returns once
// the process has exited and its output is read.
func (s *supervised) terminate() error {
	s.mu.Lock()
	p, life, fields := s.proc, s.life, s.fields
	if p == nil {
		s.mu.Unlock()
		return nil
	}
	life.Terminating = time.Now()
	if s.endpoints != nil {
		s.ready = false
	}
	s.mu.Unlock()
	if s.endpoints != nil {
		s.notify()
		_ = s.endpoints(s.lab.ctx)
	}
	s.log.Info("sending SIGTERM", append(fields, zap.Int("pid", p.PID()), zap.Duration("grace", s.lab.opts.GracePeriod))...)
	killed, err := p.Terminate(s.lab.opts.GracePeriod)
	s.readers.Wait()
	s.mu.Lock()
	life.Killed, life.Exited, life.ExitStatus = killed, p.ExitedAt(), p.ExitStatus()
	s.proc, s.ready = nil, false
	s.mu.Unlock()
	s.notify()
	if killed {
		s.log.Warn(s.program+" did not exit within the grace period: SIGKILLed", zap.Int("pid", life.PID))
	}
	s.log.Info(s.program+" exited", zap.String("status", life.ExitStatus), zap.Duration("afterSIGTERM", life.Exited.Sub(life.Terminating).Round(time.Millisecond)))
	return err
}

// startLoops starts the process's readiness probe and its kubelet, once:
// sync keeps its pod in line, what names the pod in the log.
func (s *supervised) startLoops(what string, sync func(context.Context) error) {
	s.mu.Lock()
	if s.loopsRun {
		s.mu.Unlock()
		return
	}
	s.loopsRun = true
	s.mu.Unlock()
	l := s.lab
	l.bg.Add(2)
	go func() { defer l.bg.Done(); s.probeLoop(l.ctx) }()
	go func() { defer l.bg.Done(); s.kubeletLoop(l.ctx, what, sync) }()
}

// probing says whether the readiness probe's verdict counts: once the
// start's own readiness check passed (for a replica that check is stricter
// than /readyz: a replica whose /readyz passes may not yet trust the
// aggregator's front-proxy identity and answers its requests as
// system:anonymous, so the probe must not put it in its endpoints first),
// and for a Deployment's pod not once it is terminating (terminate took it
// out of its endpoints). Called with mu held.
func (s *supervised) probing() bool {
	if s.life == nil || s.life.Ready.IsZero() {
		return false
	}
	return s.endpoints == nil || s.life.Terminating.IsZero()
}

// probeLoop is the pod's readiness probe: GET readyz every ProbeInterval
// while the process can answer. A change wakes the kubelet and, for a
// Deployment's pod, rewrites its endpoints.
func (s *supervised) probeLoop(ctx context.Context) {
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
		running := s.proc != nil && s.probing()
		s.mu.Unlock()
		if !running {
			continue
		}
		code, err := get(ctx, hc, s.readyz)
		ok := err == nil && code == http.StatusOK
		s.mu.Lock()
		changed := ok != s.ready && s.probing()
		if changed {
			s.ready = ok
		}
		s.mu.Unlock()
		if !changed {
			continue
		}
		s.notify()
		if s.endpoints != nil {
			if err := s.endpoints(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("updating endpoints", zap.Error(err))
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

// podSpec is the spec of the process's pod on node: one container, name,
// running image as command, its readiness probe GET /readyz on the
// process's port every ProbeInterval.
func (s *supervised) podSpec(node, name, image string, command []string) corev1.PodSpec {
	return corev1.PodSpec{
		NodeName:                      node,
		PriorityClassName:             "system-node-critical",
		TerminationGracePeriodSeconds: ptr.To(int64(s.lab.opts.GracePeriod / time.Second)),
		Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		Containers: []corev1.Container{{
			Name:    name,
			Image:   image,
			Command: command,
			Ports:   []corev1.ContainerPort{{Name: "https", ContainerPort: int32(s.port), Protocol: corev1.ProtocolTCP}},
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(int32(s.port)), Scheme: corev1.URISchemeHTTPS}},
				PeriodSeconds: int32(max(1, s.lab.opts.ProbeInterval/time.Second)),
			},
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
	}
}

// runningPodStatus is the status of a pod on hostIP (host network: the
// pod's IP too) running since started, with conditions conds and one
// container, c.
func runningPodStatus(hostIP string, started time.Time, conds []corev1.PodCondition, c corev1.ContainerStatus) corev1.PodStatus {
	start := metav1.NewTime(started)
	return corev1.PodStatus{
		Phase:             corev1.PodRunning,
		HostIP:            hostIP,
		HostIPs:           []corev1.HostIP{{IP: hostIP}},
		PodIP:             hostIP,
		PodIPs:            []corev1.PodIP{{IP: hostIP}},
		StartTime:         &start,
		QOSClass:          corev1.PodQOSBestEffort,
		Conditions:        conds,
		ContainerStatuses: []corev1.ContainerStatus{c},
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
