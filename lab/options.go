package lab

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/repro-tools/repro/lab/lb"
	"github.com/repro-tools/repro/lab/load"
	"github.com/repro-tools/repro/lab/netns"
)

// Options configures a lab. The zero value of any field takes the default
// from DefaultOptions, so callers set only what they change.
type Options struct {
	// Dir holds the PKI, etcd's data, logs and kubeconfig. Empty means a
	// fresh temporary directory removed by Stop; a given Dir is kept (so a
	// run can keep the apiserver logs next to its results).
	Dir string
	// KubeAPIServer is a kube-apiserver binary to run instead of the built
	// and cached v1.34.4 (a patched fork, a candidate fix).
	KubeAPIServer string
	// KubeVersion picks the built kube-apiserver release
	// (binaries.KubeAPIServers: "" is v1.34.4, v1.30.14 is OpenShift 4.17's,
	// v1.29.6 OpenShift 4.16's); it is built on first use.
	KubeVersion string
	// Etcd is an etcd binary to run instead of the built and cached v3.6.4.
	Etcd string
	// BuildProgress receives build progress when a binary must be built
	// first; nil is silent.
	BuildProgress io.Writer

	// Nodes is the number of control-plane nodes (master-0..N-1).
	Nodes int
	// Listen is the load balancer's address; a port other than 0 must be
	// free or Start fails with one clear line.
	Listen string

	// Timing is the time scale the durations below were taken at (the zero
	// value means TimingFast), for the record and for the profiles, whose
	// durations are written as on AWS and scaled by it.
	Timing Timing
	// ShutdownDelay is kube-apiserver's --shutdown-delay-duration: how long
	// it keeps serving after SIGTERM while /readyz is red (AWSShutdownDelay,
	// 129 s, scaled).
	ShutdownDelay time.Duration
	// GracePeriod is the pod's terminationGracePeriodSeconds: SIGKILL after
	// it (AWSGracePeriod, 194 s, scaled).
	GracePeriod time.Duration
	// MinReadyTime is how long the installer waits after a node is ready
	// before rolling the next (AWSMinReadyTime, 30 s, scaled).
	MinReadyTime time.Duration
	// Health is the load balancer's health check (the installer's 10 s /
	// 10 s / 2 / 2, scaled: detection takes 20 s against the 129 s shutdown
	// delay).
	Health lb.HealthCheck
	// ProbeInterval is the period of the pod readiness probe on /readyz
	// that drives each kube-apiserver pod's Ready condition
	// (AWSReadinessPeriod, 10 s, scaled).
	ProbeInterval time.Duration
	// StartTimeout bounds one apiserver's start to ready and warm.
	StartTimeout time.Duration

	// LBPolicy replaces the plain NLB behaviour (fault models); when nil
	// and Faults.LB sets any fault, the lab uses lb.Faulty(Faults.LB).
	LBPolicy lb.Policy
	// Faults are the fault behaviours to inject (see Profiles for named
	// combinations); the zero value is a healthy lab.
	Faults Faults
	// Profile names the profile Options were built from, for the record.
	Profile string
	// Prometheus runs the lab's own Prometheus (prometheus.go), scraping
	// every server each second, for a run's metrics; it costs a little CPU
	// the lab's timings share, so it is off unless asked for.
	Prometheus bool
	// ConnRecords, if set, is a file the load balancer streams its
	// connection records to as JSON lines.
	ConnRecords string
	// ExtraAPIServerArgs are appended to every kube-apiserver's flags.
	ExtraAPIServerArgs []string

	// Load names the cluster load to run beside the pollers (load.Names;
	// "" or load.None: none), in a process of its own.
	Load string
	// LoadCommand is the load process's command line before its --config
	// flag; empty means this executable with "lab load" (repro's hidden
	// subcommand).
	LoadCommand []string

	// LB chooses the load balancer: LBKernel (pass-through, nftables, in
	// repro's network namespace), LBProxy (the Go proxy) or LBAuto (the
	// default: kernel inside the namespace lab/netns made, else proxy).
	LB string

	// Logger receives the lab's log; nil is silent.
	Logger *zap.Logger

	// ExactTimings takes ShutdownDelay and MinReadyTime as given even when
	// zero, where zero is a real setting (single-node OpenShift runs with
	// no shutdown delay) rather than "use the default". Callers that start
	// from DefaultOptions, like the CLI's flags, set it.
	ExactTimings bool
}

// DefaultOptions returns the lab's defaults: three nodes, OpenShift's AWS
// durations on the fast time scale (divided by ten).
func DefaultOptions() Options { return OptionsFor(TimingFast) }

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Timing.Factor == 0 {
		o.Timing = d.Timing
	}
	if o.Nodes == 0 {
		o.Nodes = d.Nodes
	}
	if o.Listen == "" {
		o.Listen = d.Listen
	}
	if o.ShutdownDelay == 0 && !o.ExactTimings {
		o.ShutdownDelay = d.ShutdownDelay
	}
	if o.GracePeriod == 0 {
		o.GracePeriod = d.GracePeriod
	}
	if o.MinReadyTime == 0 && !o.ExactTimings {
		o.MinReadyTime = d.MinReadyTime
	}
	if o.Health.Interval == 0 {
		o.Health.Interval = d.Health.Interval
	}
	if o.Health.Timeout == 0 {
		o.Health.Timeout = d.Health.Timeout
	}
	if o.Health.HealthyThreshold == 0 {
		o.Health.HealthyThreshold = d.Health.HealthyThreshold
	}
	if o.Health.UnhealthyThreshold == 0 {
		o.Health.UnhealthyThreshold = d.Health.UnhealthyThreshold
	}
	if o.Health.Path == "" {
		o.Health.Path = d.Health.Path
	}
	if o.ProbeInterval == 0 {
		o.ProbeInterval = d.ProbeInterval
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = d.StartTimeout
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.LB == "" {
		o.LB = LBAuto
	}
	return o
}

// The load balancers the lab can run (Options.LB, --lab-lb).
const (
	LBAuto   = "auto"
	LBKernel = lb.KindKernel
	LBProxy  = lb.KindProxy
)

// LBChoices lists Options.LB's values, the default first.
func LBChoices() []string { return []string{LBAuto, LBKernel, LBProxy} }

// ResolveLB says which load balancer Options.LB means here: the kernel one
// needs repro's network namespace (netns.Inside); auto falls back to the
// proxy outside one, why saying so in one line.
func ResolveLB(choice string) (kind, why string, err error) {
	switch choice {
	case "", LBAuto:
		if netns.Inside() {
			return LBKernel, "", nil
		}
		why := "not inside repro's network namespace"
		if err := netns.Check(); err != nil {
			why = err.Error()
		}
		return LBProxy, "kernel load balancer unavailable (" + why + "): using the Go proxy", nil
	case LBKernel:
		if !netns.Inside() {
			if err := netns.Check(); err != nil {
				return "", "", fmt.Errorf("--lab-lb kernel: %v; or use --lab-lb proxy", err)
			}
			return "", "", errors.New("--lab-lb kernel needs repro's network namespace (repro run and repro lab up re-run themselves in one); or use --lab-lb proxy")
		}
		return LBKernel, "", nil
	case LBProxy:
		return LBProxy, "", nil
	}
	return "", "", fmt.Errorf("--lab-lb %q: want one of %s", choice, strings.Join(LBChoices(), ", "))
}

// Validate checks o as Start would, with the defaults filled in, without
// building, starting or listening on anything: the CLI calls it before any
// build so a bad option costs no build (a cold one takes minutes). Its
// error is one line: a knob's mistake names the knob's key as its flag
// (e.g. "--shutdown-delay must not be negative"), any other says "lab: ".
func (o Options) Validate() error {
	if err := o.checkKnobs(); err != nil {
		return err
	}
	if err := o.withDefaults().validate(); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}

func (o Options) validate() error {
	if err := validListen(o.Listen); err != nil {
		return err
	}
	switch {
	case o.Nodes < 1 || o.Nodes > 9:
		return fmt.Errorf("lab nodes must be 1..9, got %d", o.Nodes)
	case o.StartTimeout < 0:
		return fmt.Errorf("start timeout must not be negative, got %s", o.StartTimeout)
	case o.Health.Interval < 0 || o.Health.Timeout < 0 || o.ProbeInterval < 0:
		return fmt.Errorf("health check interval, timeout and probe interval must not be negative, got %s, %s, %s", o.Health.Interval, o.Health.Timeout, o.ProbeInterval)
	case o.Health.HealthyThreshold < 0 || o.Health.UnhealthyThreshold < 0:
		return fmt.Errorf("health check thresholds must be at least 1, got %d and %d", o.Health.HealthyThreshold, o.Health.UnhealthyThreshold)
	case o.ShutdownDelay < 0:
		return fmt.Errorf("shutdown delay must not be negative, got %s", o.ShutdownDelay)
	case o.GracePeriod <= o.ShutdownDelay:
		// The kubelet would SIGKILL every apiserver mid-drain: not a
		// configuration OpenShift ships (135 s > 70 s, 194 s > 129 s).
		return fmt.Errorf("grace period (%s) must exceed the shutdown delay (%s)", o.GracePeriod, o.ShutdownDelay)
	case o.MinReadyTime < 0:
		return fmt.Errorf("minimum ready time must not be negative, got %s", o.MinReadyTime)
	case o.Health.Protocol != "" && o.Health.Protocol != lb.HealthHTTPS && o.Health.Protocol != lb.HealthTCP:
		return fmt.Errorf("load balancer health check must be %s or %s, got %q", lb.HealthHTTPS, lb.HealthTCP, o.Health.Protocol)
	case o.KubeAPIServer != "" && o.KubeVersion != "":
		return fmt.Errorf("--kube-apiserver %s and --lab-kube-version %s both pick the apiserver: give one", o.KubeAPIServer, o.KubeVersion)
	case o.LB != LBAuto && o.LB != LBKernel && o.LB != LBProxy:
		return fmt.Errorf("lab load balancer %q: want one of %s", o.LB, strings.Join(LBChoices(), ", "))
	case o.Faults.LB.LateDeregistration < 0 || o.Faults.LB.Blackhole < 0 || o.Faults.EtcdStall < 0 || o.Faults.EtcdStallAfter < 0 || o.Faults.EtcdCheckTimeout < 0 || o.Faults.AggregatedEtcdStall < 0:
		return fmt.Errorf("fault durations must not be negative: %+v", o.Faults)
	}
	if _, _, err := load.Lookup(o.Load); err != nil {
		return err
	}
	if _, err := KubeAPIServerSpec(o.KubeVersion); err != nil {
		return err
	}
	for _, p := range []struct{ what, path string }{{"kube-apiserver binary", o.KubeAPIServer}, {"etcd binary", o.Etcd}} {
		if p.path == "" {
			continue
		}
		if st, err := os.Stat(p.path); err != nil {
			return fmt.Errorf("%s %s: %v: give the path of an executable", p.what, p.path, errors.Unwrap(err))
		} else if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%s %s is not an executable file: give the path of one", p.what, p.path)
		}
	}
	for _, n := range o.Faults.EtcdStallOn {
		var i int
		if _, err := fmt.Sscanf(n, "master-%d", &i); err != nil || i < 0 || i >= o.Nodes || n != fmt.Sprintf("master-%d", i) {
			return fmt.Errorf("etcd-stall-on names %q, not one of the lab's %d nodes (master-0..%d)", n, o.Nodes, o.Nodes-1)
		}
	}
	return nil
}

// validListen checks the load balancer's address without listening: host
// an IP literal or localhost (the lab binds its own machine's addresses; a
// name would be resolved, and a typo like 999.1.1.1 passed to the resolver),
// port 0..65535. Whether a fixed port is free is checked at Start.
func validListen(addr string) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("load balancer address %q: want HOST:PORT, e.g. 127.0.0.1:0", addr)
	}
	if host != "" && host != "localhost" && net.ParseIP(host) == nil {
		return fmt.Errorf("load balancer address %q: %q is not an IP address; use e.g. 127.0.0.1:0", addr, host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("load balancer address %q: port %q is not 0..65535", addr, port)
	}
	return nil
}
