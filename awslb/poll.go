package awslb

import (
	"context"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/repro-tools/repro/results"
)

// Source is the Signal source of the records awslb writes.
const Source = "aws-elbv2"

// Poller defaults.
const (
	// DefaultInterval polls once a second, as the investigation of an NLB
	// routing to an unhealthy target did (OCPBUGS-86789; openshift/
	// cluster-cloud-controller-manager-operator #499): the NLB's own check
	// runs every 10 s with thresholds of 2 (the installer's), so a second
	// places a transition well inside one check interval.
	DefaultInterval = time.Second
	// DefaultMaxInterval bounds how far throttling slows the polls down.
	DefaultMaxInterval = 30 * time.Second
	// DefaultCallTimeout bounds one describe call, retries included.
	DefaultCallTimeout = 10 * time.Second
	// maxDescription caps a target's description in a record.
	maxDescription = 512
)

// Poller polls the target groups' health and emits a record whenever a
// target's state, reason or description changes (and the first time each
// target is seen). ELBv2's describe calls share an account-wide request
// rate; on throttling the interval doubles (up to MaxInterval), and it
// halves back towards Interval on each answered poll.
type Poller struct {
	API    API
	Groups []TargetGroup
	// Interval between polls (DefaultInterval when zero).
	Interval time.Duration
	// MaxInterval caps the interval after throttling (DefaultMaxInterval).
	MaxInterval time.Duration
	// CallTimeout bounds one describe call (DefaultCallTimeout).
	CallTimeout time.Duration
	// Names maps a target ID (an instance ID or an IP) to its node's name;
	// a target without one is recorded under its ID.
	Names map[string]string
	// Emit receives every record; it is called from Run's goroutine.
	Emit func(results.Signal)
	Log  *zap.Logger
}

// Stats says how a polling went.
type Stats = results.AWSLBPollStats

type seen struct {
	state, reason, desc string
	at                  time.Time
}

// Run polls until ctx ends.
func (p *Poller) Run(ctx context.Context) Stats {
	base := p.Interval
	if base <= 0 {
		base = DefaultInterval
	}
	maxI := p.MaxInterval
	if maxI < base {
		maxI = max(DefaultMaxInterval, base)
	}
	callTimeout := p.CallTimeout
	if callTimeout <= 0 {
		callTimeout = DefaultCallTimeout
	}
	log := p.Log
	if log == nil {
		log = zap.NewNop()
	}
	var st Stats
	last := map[string]seen{}          // group ARN + target ID
	answered := map[string]time.Time{} // group ARN -> last answered poll
	interval := base
	next := time.Now()
	for {
		select {
		case <-ctx.Done():
			return st
		case <-time.After(time.Until(next)):
		}
		next = next.Add(interval)
		if now := time.Now(); next.Before(now) {
			next = now
		}
		slowed := false
		for _, g := range p.Groups {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			out, err := p.API.DescribeTargetHealth(cctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(g.ARN)})
			cancel()
			polled := time.Now()
			st.Polls++
			if err != nil {
				if ctx.Err() != nil {
					return st
				}
				if throttled(err) {
					st.Throttled++
					slowed = true
					log.Warn("AWS throttled the target health poll; polling less often", zap.String("targetGroup", g.Name), zap.Error(err))
				} else {
					st.Errors++
					log.Warn("target health poll failed", zap.String("targetGroup", g.Name), zap.Error(err))
				}
				continue
			}
			if prev, ok := answered[g.ARN]; ok && polled.Sub(prev) > st.MaxGap {
				st.MaxGap = polled.Sub(prev)
			}
			prevPoll := answered[g.ARN]
			answered[g.ARN] = polled
			present := map[string]bool{}
			for _, d := range out.TargetHealthDescriptions {
				id := ""
				if d.Target != nil {
					id = aws.ToString(d.Target.Id)
				}
				present[id] = true
				state, reason, desc := stateOf(d.TargetHealth)
				key := g.ARN + "|" + id
				if s, ok := last[key]; ok && s.state == state && s.reason == reason && s.desc == desc {
					continue
				}
				last[key] = seen{state, reason, desc, polled}
				p.emit(g, id, state, reason, desc, polled, prevPoll)
				st.Records++
			}
			// A target no longer listed was deregistered.
			for key, s := range last {
				grp, id, _ := strings.Cut(key, "|")
				if grp != g.ARN || present[id] || s.state == "absent" {
					continue
				}
				last[key] = seen{state: "absent", at: polled}
				p.emit(g, id, "absent", "", "no longer registered", polled, prevPoll)
				st.Records++
			}
		}
		if slowed {
			interval = min(interval*2, maxI)
		} else if interval > base {
			interval = max(interval/2, base)
		}
	}
}

func (p *Poller) emit(g TargetGroup, id, state, reason, desc string, at, prevPoll time.Time) {
	if p.Emit == nil {
		return
	}
	inst := id
	if n, ok := p.Names[id]; ok {
		inst = n
	}
	labels := map[string]string{"state": state, "target": id, "target_group": g.Name, "scheme": g.Scheme}
	if reason != "" {
		labels["reason"] = reason
	}
	// The change happened after the previous answered poll: readers bound
	// a transition's time by it.
	if !prevPoll.IsZero() {
		labels["previous_poll"] = prevPoll.UTC().Format(time.RFC3339Nano)
	}
	v := 0.0
	if state == "healthy" {
		v = 1
	}
	if len(desc) > maxDescription {
		desc = desc[:maxDescription]
	}
	p.Emit(results.Signal{Kind: results.SignalLBTargetHealth, Source: Source, Instance: inst, Labels: labels, At: at.UTC(), Value: v, Message: desc})
}

// NodeNames maps the control-plane nodes' instance IDs (from
// spec.providerID, "aws:///<zone>/<instance-id>") and internal IPs (for
// target groups of type ip) to the node names, so records name nodes as the
// rollout's events do.
func NodeNames(nodes []corev1.Node) map[string]string {
	m := map[string]string{}
	for _, n := range nodes {
		if id := n.Spec.ProviderID; strings.HasPrefix(id, "aws://") {
			m[id[strings.LastIndex(id, "/")+1:]] = n.Name
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				m[a.Address] = n.Name
			}
		}
	}
	return m
}
