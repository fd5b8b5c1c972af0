package lb

import (
	"hash/maphash"
	"net"
	"time"
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

// NLB returns the default policy: a plain AWS network load balancer. A
// flow hash of the client's address and port picks among the targets in
// service, fail open over all registered targets when none is in service,
// threshold-based health, established connections kept on unhealthy,
// refused dials reset.
func NLB() Policy { return &nlb{seed: maphash.MakeSeed()} }

type nlb struct{ seed maphash.Seed }

// pick chooses the client's target as an NLB does: by a hash of the flow
// (AWS Elastic Load Balancing docs, "How Elastic Load Balancing works",
// routing algorithm for Network Load Balancers: protocol, source and
// destination address and port, TCP sequence number). Every new connection
// comes from a new ephemeral port, so it lands on any target with the same
// chance whatever the other clients do. Round robin would not: pollers on
// a fixed schedule opening a multiple of len(pool) connections per period
// would each be pinned to one target, turning "a third of the requests"
// into "all of one poller's".
func (p *nlb) pick(client net.Addr, pool []TargetState) TargetState {
	var h maphash.Hash
	h.SetSeed(p.seed)
	if client != nil {
		h.WriteString(client.String())
	}
	return pool[h.Sum64()%uint64(len(pool))]
}

func (p *nlb) Route(client net.Addr, targets []TargetState) Route {
	pool := p.pool(targets, time.Time{})
	if len(pool) == 0 {
		return Route{Action: ActionReject}
	}
	t := p.pick(client, pool)
	return Route{Target: t.Name, Action: ActionForward}
}

// pool is what new connections are spread over: the targets in service,
// else (failing open) every registered one.
func (p *nlb) pool(targets []TargetState, _ time.Time) []TargetState {
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
	return pool
}

func (p *nlb) Verdict(t TargetState, okStreak, failStreak int, hc HealthCheck) bool {
	if t.Healthy {
		return failStreak < hc.UnhealthyThreshold
	}
	return okStreak >= hc.HealthyThreshold
}

func (p *nlb) HealthChanged(TargetState) Action { return ActionKeep }

func (p *nlb) DialFailed(TargetState, error) Action { return ActionReject }
