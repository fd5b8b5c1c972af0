package lab

import (
	"fmt"
	"strings"
	"time"
)

// Timing is the lab's time scale. Every duration that shapes a rollout's
// disruption (kube-apiserver's shutdown delay and termination grace, the
// installer's minimum ready time, the pods' readiness probe, the load
// balancer's health checks, the profiles' fault durations and the prober's
// timeouts) is written as it is on AWS and divided by the same Factor, so
// that their ratios, which decide whether a rollout loses requests, are the
// field's.
//
// Two things do not scale: the machine (process start, TLS, CPU) and
// kube-apiserver's own internal constants (its etcd health check cadence,
// its 1 s watch-cache resync). On the fast scale they are relatively ten
// times slower than on AWS; a measurement that depends on them says so.
type Timing struct {
	// Name is how --lab-timing spells it.
	Name string
	// Factor divides every AWS duration.
	Factor int
}

// The lab's time scales.
var (
	// TimingFast divides every AWS duration by ten: a three-node rollout
	// takes about a minute.
	TimingFast = Timing{Name: "fast", Factor: 10}
	// TimingAWS runs every duration as OpenShift runs it on AWS: a rollout
	// takes about ten minutes.
	TimingAWS = Timing{Name: "aws", Factor: 1}
)

// Timings lists the lab's time scales, the default first.
func Timings() []Timing { return []Timing{TimingFast, TimingAWS} }

// TimingNames lists the time scales' names, the default first.
func TimingNames() []string {
	var out []string
	for _, t := range Timings() {
		out = append(out, t.Name)
	}
	return out
}

// LookupTiming returns the named time scale; the error is one line naming
// the valid ones.
func LookupTiming(name string) (Timing, error) {
	for _, t := range Timings() {
		if t.Name == name {
			return t, nil
		}
	}
	return Timing{}, fmt.Errorf("unknown lab timing %q; valid: %s", name, strings.Join(TimingNames(), ", "))
}

// Scale converts an AWS duration to this time scale.
func (t Timing) Scale(d time.Duration) time.Duration {
	if t.Factor <= 1 {
		return d
	}
	return d / time.Duration(t.Factor)
}

// String names the scale and its factor, e.g. "fast (AWS durations / 10)".
func (t Timing) String() string {
	if t.Factor <= 1 {
		return t.Name + " (AWS durations as they are)"
	}
	return fmt.Sprintf("%s (AWS durations / %d)", t.Name, t.Factor)
}

// The durations of OpenShift on AWS that the lab scales, each from its
// source.
const (
	// AWSShutdownDelay is kube-apiserver's --shutdown-delay-duration on AWS:
	// openshift/cluster-kube-apiserver-operator
	// pkg/operator/configobservation/apiserver/observe_termination_duration.go
	// ("the official number we got from AWS", 129s).
	AWSShutdownDelay = 129 * time.Second
	// AWSGracePeriod is the kube-apiserver pod's
	// terminationGracePeriodSeconds on AWS (same file: 129 s + 60 s for
	// in-flight requests + 5 s, 194).
	AWSGracePeriod = 194 * time.Second
	// AWSMinReadyTime is the static-pod installer's wait after a node's new
	// revision is ready before it rolls the next node:
	// openshift/cluster-kube-apiserver-operator pkg/operator/starter.go
	// (WithMinReadyDuration(30*time.Second)).
	AWSMinReadyTime = 30 * time.Second
	// AWSReadinessPeriod is the kube-apiserver container's readiness probe
	// period: bindata/assets/kube-apiserver/pod.yaml of the operator sets
	// no periodSeconds, so Kubernetes' default of 10 s applies.
	AWSReadinessPeriod = 10 * time.Second
	// AWSHealthInterval and AWSHealthTimeout are the API target group's
	// health check as openshift/installer creates it (HTTPS GET /readyz on
	// 6443, interval 10 s, timeout 10 s, healthy and unhealthy thresholds 2;
	// pkg/asset/manifests/aws/cluster.go, the AWSCluster's control-plane load
	// balancers' HealthCheck).
	AWSHealthInterval = 10 * time.Second
	AWSHealthTimeout  = 10 * time.Second
)

// AWSConnectionTermination is an NLB target group's default for
// target_health_state.unhealthy.connection_termination.enabled: established
// connections to a target are reset when it turns unhealthy.
const AWSConnectionTermination = true

// OptionsFor returns the lab's defaults on time scale t: three nodes and
// OpenShift's AWS durations divided by t.Factor.
func OptionsFor(t Timing) Options {
	o := Options{
		Nodes:         3,
		Listen:        "127.0.0.1:0",
		Timing:        t,
		ShutdownDelay: t.Scale(AWSShutdownDelay),
		GracePeriod:   t.Scale(AWSGracePeriod),
		MinReadyTime:  t.Scale(AWSMinReadyTime),
		ProbeInterval: t.Scale(AWSReadinessPeriod),
		// Process start is the machine's, not the scale's.
		StartTimeout: 90 * time.Second,
	}
	o.Health.Path = "/readyz"
	o.Health.Interval = t.Scale(AWSHealthInterval)
	o.Health.Timeout = t.Scale(AWSHealthTimeout)
	o.Health.HealthyThreshold = 2
	o.Health.UnhealthyThreshold = 2
	// An NLB target group terminates established connections to a target
	// that turns unhealthy unless told not to
	// (target_health_state.unhealthy.connection_termination.enabled,
	// default true: AWS Elastic Load Balancing docs, "Target group
	// attributes for your Network Load Balancers"; the installer does not
	// change it).
	o.Faults.LB.ResetOnUnhealthy = AWSConnectionTermination
	return o
}
