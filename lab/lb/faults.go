package lb

import (
	"hash/maphash"
	"net"
	"sync"
	"time"
)

// Faults are the documented load-balancer faults the lab can model. The zero
// value is the plain NLB.
type Faults struct {
	// LateDeregistration keeps routing new connections to a target for this
	// long after it turned unhealthy, whether it still answers, stopped or
	// is restarting (OCPBUGS-86789: an AWS NLB kept sending new connections
	// to an unhealthy target for 50 s and more).
	LateDeregistration time.Duration
	// ResetOnUnhealthy resets every established connection to a target the
	// moment it turns unhealthy (kubernetes-sigs/cluster-api-provider-aws
	// #5475; AWS's target_health_state.unhealthy.connection_termination).
	ResetOnUnhealthy bool
	// Blackhole drops packets between the load balancer and a stopped target
	// for this long instead of letting the target refuse them: a new
	// connection routed to it completes its TCP handshake with the LB and is
	// never answered, and an established connection the target closed is
	// not closed towards the client, whose next request goes unanswered.
	// After Blackhole the target's refusals come through again (a reset).
	// "Stopped" is the first refused dial, or the first close by the target
	// of a connection it sent nothing on for 20 ms or more, after it
	// turned unhealthy.
	Blackhole time.Duration
}

// Enabled reports whether any fault is set.
func (f Faults) Enabled() bool {
	return f.LateDeregistration > 0 || f.ResetOnUnhealthy || f.Blackhole > 0
}

// TargetCloser is an optional Policy method: told that a target closed an
// established connection (the target's side ended first), it says whether
// the client sees that (ActionForward: FIN passes through, the default) or
// not (ActionBlackhole: the LB holds the client connection open, discards
// what the client sends, and resets it after hold). idle is how long the
// target had sent nothing before the close.
type TargetCloser interface {
	TargetClosed(t TargetState, idle time.Duration) (action Action, hold time.Duration)
}

// Faulty returns the plain NLB policy with the given faults added.
func Faulty(f Faults) Policy {
	return &faulty{nlb: nlb{seed: maphash.MakeSeed()}, f: f, stopped: map[string]time.Time{}}
}

type faulty struct {
	nlb
	f Faults

	mu      sync.Mutex
	stopped map[string]time.Time // first stop signal since turning unhealthy
}

// late reports whether an unhealthy target is still routed to.
func (p *faulty) late(t TargetState, now time.Time) bool {
	return p.f.LateDeregistration > 0 && !t.Healthy && !t.Since.IsZero() && now.Sub(t.Since) < p.f.LateDeregistration
}

func (p *faulty) Route(client net.Addr, targets []TargetState) Route {
	if p.f.LateDeregistration <= 0 {
		return p.nlb.Route(client, targets)
	}
	pool := p.pool(targets, time.Now())
	if len(pool) == 0 {
		return Route{Action: ActionReject}
	}
	t := p.nlb.pick(client, pool)
	return Route{Target: t.Name, Action: ActionForward}
}

// pool adds to the NLB's the unhealthy targets still routed to late.
func (p *faulty) pool(targets []TargetState, now time.Time) []TargetState {
	if p.f.LateDeregistration <= 0 {
		return p.nlb.pool(targets, now)
	}
	var pool []TargetState
	for _, t := range targets {
		// The NLB has not yet taken the target out of its flow table: it
		// is routed to as if in service, registered or not.
		if t.InService() || p.late(t, now) {
			pool = append(pool, t)
		}
	}
	if len(pool) == 0 {
		return p.nlb.pool(targets, now)
	}
	return pool
}

func (p *faulty) HealthChanged(t TargetState) Action {
	p.mu.Lock()
	if t.Healthy {
		delete(p.stopped, t.Name)
	}
	p.mu.Unlock()
	if !t.Healthy && p.f.ResetOnUnhealthy {
		return ActionReset
	}
	return ActionKeep
}

// blackholeUntil returns the end of the target's blackhole window, starting
// it at now when this is the first stop signal since it turned unhealthy;
// zero when the target is not blackholed.
func (p *faulty) blackholeUntil(t TargetState, now time.Time) time.Time {
	if p.f.Blackhole <= 0 || t.Healthy {
		return time.Time{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.stopped[t.Name]
	if !ok {
		at = now
		p.stopped[t.Name] = at
	}
	end := at.Add(p.f.Blackhole)
	if !now.Before(end) {
		return time.Time{}
	}
	return end
}

func (p *faulty) DialFailed(t TargetState, _ error) Action {
	if !p.blackholeUntil(t, time.Now()).IsZero() {
		return ActionBlackhole
	}
	return ActionReject
}

// stopIdle tells a target that stopped from one that answered a
// "Connection: close" request: a stopping server closes keep-alive
// connections that sat idle, an answering one closes right after its answer
// (well under a millisecond on loopback). A poller every 100 ms leaves its
// connection idle 90 ms or more between answers, so the threshold must stay
// well below that.
const stopIdle = 20 * time.Millisecond

func (p *faulty) TargetClosed(t TargetState, idle time.Duration) (Action, time.Duration) {
	if t.Healthy || idle < stopIdle {
		return ActionForward, 0
	}
	now := time.Now()
	if end := p.blackholeUntil(t, now); !end.IsZero() {
		return ActionBlackhole, end.Sub(now)
	}
	return ActionForward, 0
}

// BlackholeHold is how long a new connection dialled into a blackholed
// target is held before the client sees a reset; Policies that blackhole
// dials may implement it (the default is until the client gives up).
type BlackholeHold interface {
	DialHold(t TargetState) time.Duration
}

func (p *faulty) DialHold(t TargetState) time.Duration {
	if end := p.blackholeUntil(t, time.Now()); !end.IsZero() {
		return time.Until(end)
	}
	return 0
}
