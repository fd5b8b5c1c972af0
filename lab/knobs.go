package lab

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/repro-tools/repro/lab/lb"
	"github.com/repro-tools/repro/lab/load"
)

// Knob is one setting of the lab addressable by key (repro's --lab-set
// key=value and the profiles): every timing and every fault.
type Knob struct {
	Key string
	// Doc says what the knob does, with its unit.
	Doc string
	// Scaled marks a duration: the profiles write it as on AWS and the
	// lab's Timing divides it.
	Scaled bool
	// Flag is the help of the command-line flag named Key that sets the
	// knob too (repro run's and repro lab up's timing flags); "" for a
	// knob set with --lab-set only.
	Flag string
	get  func(o *Options) string
	set  func(o *Options, v string) error
	dur  func(o *Options) *time.Duration
	num  func(o *Options) *int
}

// Duration is the field of o a duration knob sets, for binding a flag to
// it; nil for a knob of another type.
func (k Knob) Duration(o *Options) *time.Duration {
	if k.dur == nil {
		return nil
	}
	return k.dur(o)
}

// Int is the field of o an integer knob sets, for binding a flag to it;
// nil for a knob of another type.
func (k Knob) Int(o *Options) *int {
	if k.num == nil {
		return nil
	}
	return k.num(o)
}

// withFlag gives a knob the help of its command-line flag.
func withFlag(k Knob, help string) Knob {
	k.Flag = help
	return k
}

func durKnob(key, doc string, p func(o *Options) *time.Duration) Knob {
	return Knob{Key: key, Doc: doc, Scaled: true, dur: p,
		get: func(o *Options) string { return p(o).String() },
		set: func(o *Options, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return fmt.Errorf("want a duration >= 0 such as 10s or 500ms")
			}
			*p(o) = d
			return nil
		}}
}

func intKnob(key, doc string, p func(o *Options) *int) Knob {
	return Knob{Key: key, Doc: doc, num: p,
		get: func(o *Options) string { return strconv.Itoa(*p(o)) },
		set: func(o *Options, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("want a whole number >= 1")
			}
			*p(o) = n
			return nil
		}}
}

func boolKnob(key, doc string, p func(o *Options) *bool) Knob {
	return Knob{Key: key, Doc: doc,
		get: func(o *Options) string { return strconv.FormatBool(*p(o)) },
		set: func(o *Options, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("want true or false")
			}
			*p(o) = b
			return nil
		}}
}

var knobs = []Knob{
	withFlag(durKnob("shutdown-delay", "kube-apiserver --shutdown-delay-duration", func(o *Options) *time.Duration { return &o.ShutdownDelay }),
		"kube-apiserver --shutdown-delay-duration (AWS's 129s, scaled by --lab-timing)"),
	withFlag(durKnob("grace-period", "SIGKILL this long after SIGTERM", func(o *Options) *time.Duration { return &o.GracePeriod }),
		"SIGKILL this long after SIGTERM (AWS's 194s, scaled by --lab-timing)"),
	withFlag(durKnob("min-ready-time", "installer's wait after a node is ready before the next", func(o *Options) *time.Duration { return &o.MinReadyTime }),
		"wait after a node is ready before rolling the next (OpenShift's 30s, scaled by --lab-timing)"),
	withFlag(durKnob("probe-interval", "period of the pods' /readyz readiness probe", func(o *Options) *time.Duration { return &o.ProbeInterval }),
		"period of the pods' /readyz readiness probe (Kubernetes' 10s, scaled by --lab-timing)"),
	withFlag(durKnob("lb-health-interval", "load balancer health check interval", func(o *Options) *time.Duration { return &o.Health.Interval }),
		"load balancer health check interval (the installer's 10s, scaled by --lab-timing)"),
	withFlag(durKnob("lb-health-timeout", "load balancer health check timeout", func(o *Options) *time.Duration { return &o.Health.Timeout }),
		"load balancer health check timeout (the installer's 10s, scaled by --lab-timing)"),
	withFlag(intKnob("lb-healthy-threshold", "passes in a row that put a target in service", func(o *Options) *int { return &o.Health.HealthyThreshold }),
		"passes in a row to mark a target healthy (the installer's 2)"),
	withFlag(intKnob("lb-unhealthy-threshold", "failures in a row that take a target out", func(o *Options) *int { return &o.Health.UnhealthyThreshold }),
		"failures in a row to mark a target unhealthy (the installer's 2)"),
	{Key: "lb-health-check", Doc: "https (GET /readyz, 200 passes) or tcp (a completed connect passes)",
		get: func(o *Options) string {
			if o.Health.Protocol == lb.HealthTCP {
				return "tcp"
			}
			return "https"
		},
		set: func(o *Options, v string) error {
			switch strings.ToLower(v) {
			case "https", "readyz":
				o.Health.Protocol = lb.HealthHTTPS
			case "tcp":
				o.Health.Protocol = lb.HealthTCP
			default:
				return fmt.Errorf("want https or tcp")
			}
			return nil
		}},
	durKnob("lb-late-deregistration", "keep routing new connections to a target this long after it turned unhealthy (0: off)", func(o *Options) *time.Duration { return &o.Faults.LB.LateDeregistration }),
	boolKnob("lb-reset-on-unhealthy", "reset established connections when their target turns unhealthy (an NLB's connection_termination, AWS's default true)", func(o *Options) *bool { return &o.Faults.LB.ResetOnUnhealthy }),
	durKnob("lb-blackhole", "drop packets to a stopped target this long instead of refusing (0: off)", func(o *Options) *time.Duration { return &o.Faults.LB.Blackhole }),
	boolKnob("keep-registered", "leave a restarting apiserver registered: the health check alone decides when it takes traffic", func(o *Options) *bool { return &o.Faults.KeepRegistered }),
	durKnob("etcd-stall", "hold an apiserver's etcd traffic this long after its restart put it back in service (0: off)", func(o *Options) *time.Duration { return &o.Faults.EtcdStall }),
	durKnob("etcd-stall-after", "start the etcd stall this long after the apiserver is back in service", func(o *Options) *time.Duration { return &o.Faults.EtcdStallAfter }),
	{Key: "etcd-stall-on", Doc: "nodes whose restart starts an etcd stall, comma-separated (empty: every restart)",
		get: func(o *Options) string { return strings.Join(o.Faults.EtcdStallOn, ",") },
		set: func(o *Options, v string) error {
			o.Faults.EtcdStallOn = nil
			for _, n := range strings.Split(v, ",") {
				if n = strings.TrimSpace(n); n != "" {
					if !strings.HasPrefix(n, "master-") {
						return fmt.Errorf("want node names such as master-1")
					}
					o.Faults.EtcdStallOn = append(o.Faults.EtcdStallOn, n)
				}
			}
			return nil
		}},
	boolKnob("etcd-stall-all", "the etcd stall hits every apiserver's link at once (etcd not answering)", func(o *Options) *bool { return &o.Faults.EtcdStallAll }),
	durKnob("aggregated-etcd-stall", "hold the etcd traffic of the aggregated API servers (image and oauth, not kube-apiserver) on an etcd-stall-on node this long after its kube-apiserver's restart put it back in service, etcd-stall-after later (0: off)", func(o *Options) *time.Duration { return &o.Faults.AggregatedEtcdStall }),
	boolKnob("aggregated-rollout", "restart a node's aggregated API servers gracefully once its restarted kube-apiserver is back in service (a rollout of them, one node at a time)", func(o *Options) *bool { return &o.Faults.AggregatedRollout }),
	{Key: "load", Doc: "the cluster load the lab carries (load.Names: none, cl2-load), as --lab-load",
		get: func(o *Options) string {
			if o.Load == "" {
				return load.None
			}
			return o.Load
		},
		set: func(o *Options, v string) error {
			if _, _, err := load.Lookup(v); err != nil {
				return fmt.Errorf("want one of %s", strings.Join(load.Names(), ", "))
			}
			o.Load = v
			return nil
		}},
	durKnob("etcd-check-timeout", "kube-apiserver --etcd-healthcheck-timeout and --etcd-readycheck-timeout (0: their 2s default)", func(o *Options) *time.Duration { return &o.Faults.EtcdCheckTimeout }),
}

// Knobs lists every knob, in a stable order.
func Knobs() []Knob { return append([]Knob(nil), knobs...) }

// KnobKeys lists every knob's key.
func KnobKeys() []string {
	var out []string
	for _, k := range knobs {
		out = append(out, k.Key)
	}
	return out
}

// Set sets the knob key to value on o. The error is one line naming the
// valid keys (bad key) or the expected form (bad value).
func Set(o *Options, key, value string) error {
	for _, k := range knobs {
		if k.Key == key {
			if err := k.set(o, value); err != nil {
				return fmt.Errorf("lab setting %s=%q: %v", key, value, err)
			}
			return nil
		}
	}
	return fmt.Errorf("unknown lab setting %q; valid keys: %s", key, strings.Join(KnobKeys(), ", "))
}

// SetAtScale is Set for a value written as on AWS (a profile's): a
// duration knob's value is divided by t's factor first.
func SetAtScale(o *Options, key, value string, t Timing) error {
	for _, k := range knobs {
		if k.Key == key && k.Scaled {
			d, err := time.ParseDuration(value)
			if err != nil || d < 0 {
				return fmt.Errorf("lab setting %s=%q: want a duration >= 0 such as 10s or 500ms", key, value)
			}
			value = t.Scale(d).String()
		}
	}
	return Set(o, key, value)
}

// SetAll applies "key=value" strings in order.
func SetAll(o *Options, kvs []string) error {
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("lab setting %q is not key=value; valid keys: %s", kv, strings.Join(KnobKeys(), ", "))
		}
		if err := Set(o, strings.TrimSpace(k), strings.TrimSpace(v)); err != nil {
			return err
		}
	}
	return nil
}

// Settings returns every knob's value in o, by key: the effective lab
// configuration, for a run's record.
func Settings(o Options) map[string]string {
	out := map[string]string{}
	for _, k := range knobs {
		out[k.Key] = k.get(&o)
	}
	return out
}

// SortedSettings is Settings as "key=value" lines in key order.
func SortedSettings(o Options) []string {
	s := Settings(o)
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + s[k]
	}
	return out
}

// NLBAttribute is one attribute of the AWS network load balancer (target
// group) in front of OpenShift's API, the lab knob that models it, and where
// its default comes from.
type NLBAttribute struct {
	// Attribute is AWS's name for it.
	Attribute string
	// Knob is the lab's key ("" when the lab does not model it).
	Knob string
	// Default is the value on AWS as OpenShift's installer leaves it.
	Default string
	// Source is where that default is documented.
	Source string
}

// NLBAttributes lists the NLB attributes the lab's load balancer follows.
func NLBAttributes() []NLBAttribute {
	const installer = "openshift/installer pkg/asset/manifests/aws/cluster.go (the AWSCluster's API load balancer health check)"
	const tg = "AWS Elastic Load Balancing docs, \"Target group attributes for your Network Load Balancers\""
	return []NLBAttribute{
		{"health_check.protocol/path/port", "lb-health-check", "HTTPS GET /readyz on 6443", installer},
		{"health_check.interval_seconds", "lb-health-interval", "10s", installer},
		{"health_check.timeout_seconds", "lb-health-timeout", "10s", installer},
		{"health_check.healthy_threshold_count", "lb-healthy-threshold", "2", installer},
		{"health_check.unhealthy_threshold_count", "lb-unhealthy-threshold", "2", installer},
		{"target_health_state.unhealthy.connection_termination.enabled", "lb-reset-on-unhealthy", "true", tg},
		{"deregistration_delay.timeout_seconds", "", "300s (not modelled: the lab deregisters a target only after its apiserver exited, with no connection left to drain)", tg},
		{"load_balancing.cross_zone.enabled", "", "false (not modelled: the lab has one zone and one health checker)", tg},
		{"flow hash routing (protocol, addresses, ports)", "", "always on (the kernel LB: jhash of source address and port; the proxy: a hash of the client address)", "AWS Elastic Load Balancing docs, \"How Elastic Load Balancing works\""},
	}
}
