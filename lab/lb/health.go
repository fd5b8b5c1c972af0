package lb

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/repro-tools/repro/results"
)

// HealthSource is the Signal source of the lab load balancer's health
// records; AWS's own are "aws-elbv2" (package awslb), in the same schema.
const HealthSource = "lab-lb"

// healthLog writes one results.Signal line per change of a target's health
// verdict or registration, the records an AWS describe-target-health poll
// gives, so that diagnose reads the lab's and AWS's alike.
type healthLog struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

// write records a target's state after a change. The states are ELBv2's:
// healthy, unhealthy, and unused for a deregistered target.
func (h *healthLog) write(name string, healthy, registered bool, check string, at time.Time) {
	if h == nil {
		return
	}
	state, reason, v := "healthy", "", 1.0
	switch {
	case !registered:
		state, reason, v = "unused", "Target.NotRegistered", 0
	case !healthy:
		state, reason, v = "unhealthy", "check:"+check, 0
	}
	labels := map[string]string{"state": state}
	if reason != "" {
		labels["reason"] = reason
	}
	s := results.Signal{Kind: results.SignalLBTargetHealth, Source: HealthSource, Instance: name, Labels: labels,
		At: at.UTC(), Value: v, Message: "last check: " + check}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = h.enc.Encode(s)
	}
}
