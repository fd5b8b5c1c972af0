package lb

import (
	"net"
	"testing"
)

// TestFlowHashSpreadsEveryPoller routes the connections of six pollers that
// each open one connection per period, in a fixed order, from successive
// ephemeral ports: the pattern under which round robin over three targets
// pins each poller to one target (six connections a period, a multiple of
// three). A flow hash must send every poller's connections to every target,
// and share them out evenly overall.
//
// Prediction: 3000 connections, each target's share binomial with mean 1000
// and standard deviation 26; the bounds (800..1200) are 7.7 deviations out.
// Each poller's 500 connections miss a target with probability 3*(2/3)^500.
func TestFlowHashSpreadsEveryPoller(t *testing.T) {
	targets := []TargetState{
		{Name: "master-0", Healthy: true, Registered: true},
		{Name: "master-1", Healthy: true, Registered: true},
		{Name: "master-2", Healthy: true, Registered: true},
	}
	for _, p := range []Policy{NLB(), Faulty(Faults{LateDeregistration: 1})} {
		perTarget := map[string]int{}
		perPoller := make([]map[string]int, 6)
		port := 40000
		for period := 0; period < 500; period++ {
			for poller := range perPoller {
				if perPoller[poller] == nil {
					perPoller[poller] = map[string]int{}
				}
				port++
				r := p.Route(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}, targets)
				if r.Action != ActionForward {
					t.Fatalf("route %+v, want forward", r)
				}
				perTarget[r.Target]++
				perPoller[poller][r.Target]++
			}
		}
		for _, tg := range targets {
			if n := perTarget[tg.Name]; n < 800 || n > 1200 {
				t.Errorf("%T: %s got %d of 3000 connections, want about 1000", p, tg.Name, n)
			}
		}
		for i, m := range perPoller {
			if len(m) != len(targets) {
				t.Errorf("%T: poller %d reached only %v", p, i, m)
			}
		}
	}
}
