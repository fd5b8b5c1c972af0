// Package scenarios holds repro's named recipes: which pollers run, for how
// long, and what is done to the cluster meanwhile (a baseline, then forced
// kube-apiserver rollouts with a cool-down after each).
package scenarios

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Scenario is a named recipe.
type Scenario struct {
	// Name is what --scenario takes.
	Name string
	// Summary is its one-line description.
	Summary string
	// Rollout is true when the scenario forces kube-apiserver rollouts.
	Rollout bool
}

var registry = []Scenario{
	{
		Name:    "apiserver-rollout",
		Summary: "poll every backend through forced kube-apiserver revision rollouts: baseline, then trigger, follow and cool down each iteration",
		Rollout: true,
	},
	{
		Name:    "baseline",
		Summary: "poll every backend with no rollout, to measure the background noise of the cluster and the path to it",
	},
}

// List returns every scenario, sorted by name.
func List() []Scenario {
	out := append([]Scenario(nil), registry...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the scenario called name, or an error listing the valid names.
func Lookup(name string) (Scenario, error) {
	var names []string
	for _, s := range List() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q: choose one of %s (see \"repro scenarios\")", name, strings.Join(names, ", "))
}

// Timings are the durations of a scenario's stages.
type Timings struct {
	// Baseline is how long the pollers run before the first trigger (the
	// whole run for the baseline scenario).
	Baseline time.Duration
	// CoolDown is how long they keep running after each rollout converged.
	CoolDown time.Duration
	// FollowTimeout bounds one rollout from trigger to convergence.
	FollowTimeout time.Duration
	// Settle is how long a converged rollout must stay converged.
	Settle time.Duration
}

// LiveTimings are the defaults on a real cluster, where one node's rollout
// takes minutes (shutdown delay 70-129 s, 30 s minimum ready time).
func LiveTimings() Timings {
	return Timings{Baseline: 60 * time.Second, CoolDown: 60 * time.Second, FollowTimeout: 60 * time.Minute, Settle: 10 * time.Second}
}

// LabTimings are the defaults on the lab, whose timings are scaled down about
// ten times: a three-node rollout takes about a minute.
func LabTimings() Timings {
	return Timings{Baseline: 10 * time.Second, CoolDown: 10 * time.Second, FollowTimeout: 5 * time.Minute, Settle: time.Second}
}
