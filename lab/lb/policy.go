package lb

import (
	"net"
	"sync/atomic"
)

// Action is what the load balancer does with a connection.
type Action string

const (
	// ActionForward proxies the connection to the chosen target.
	ActionForward Action = "forward"
	// ActionReject closes the client connection at once with a reset.
	ActionReject Action = "reject"
	// ActionBlackhole accepts and never answers: what dropped packets look
	// like to a client that already completed its TCP handshake.
	ActionBlackhole Action = "blackhole"
	// ActionKeep leaves established connections alone on a health change.
	ActionKeep Action = "keep"
	// ActionReset resets every established connection to a target.
	ActionReset Action = "reset"
)

// Route is a routing decision for one new connection.
type Route struct {
	Target string
	Action Action
}

// Policy is the seam for load-balancer behaviour. The LB consults it at each
// decision point; fault models (keep routing to an unhealthy target for a
// while, reset connections on unhealthy, blackhole instead of refuse, mark
// healthy early) are Policies wrapping NLB(). Calls are made with the LB's
// state lock held: implementations must be quick and must not call back into
// the LB.
type Policy interface {
	// Route picks what to do with a newly accepted connection given every
	// target's state.
	Route(client net.Addr, targets []TargetState) Route
	// Verdict turns a target's consecutive check results into health.
	Verdict(t TargetState, okStreak, failStreak int, hc HealthCheck) bool
	// HealthChanged is told of a transition (t carries the new verdict) and
	// says what happens to the target's established connections.
	HealthChanged(t TargetState) Action
	// DialFailed says what the client sees when the LB cannot connect to the
	// chosen target: ActionReject (a reset, as a refused SYN through an NLB)
	// or ActionBlackhole. Called without the state lock.
	DialFailed(t TargetState, err error) Action
}

// NLB returns the default policy: a plain AWS network load balancer.
// Round robin over targets in service (an NLB's flow hash spreads new
// connections evenly, which round robin reproduces deterministically), fail
// open over all registered targets when none is in service, threshold-based
// health, established connections kept on unhealthy, refused dials reset.
func NLB() Policy { return &nlb{} }

type nlb struct{ rr atomic.Uint64 }

func (p *nlb) Route(_ net.Addr, targets []TargetState) Route {
	var pool []TargetState
	for _, t := range targets {
		if t.InService() {
			pool = append(pool, t)
		}
	}
	if len(pool) == 0 {
		for _, t := range targets {
			if t.Registered {
				pool = append(pool, t)
			}
		}
	}
	if len(pool) == 0 {
		return Route{Action: ActionReject}
	}
	t := pool[int(p.rr.Add(1)-1)%len(pool)]
	return Route{Target: t.Name, Action: ActionForward}
}

func (p *nlb) Verdict(t TargetState, okStreak, failStreak int, hc HealthCheck) bool {
	if t.Healthy {
		return failStreak < hc.UnhealthyThreshold
	}
	return okStreak >= hc.HealthyThreshold
}

func (p *nlb) HealthChanged(TargetState) Action { return ActionKeep }

func (p *nlb) DialFailed(TargetState, error) Action { return ActionReject }
