package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/repro-tools/repro/results"
	"github.com/repro-tools/repro/scenarios"
)

// TestProfilePinnedConnections holds the pinned-connections profile to the
// prediction written in its doc (lab/profiles.go) before it ran: header
// timeouts only, all on reused connections, at most one per reused poller
// per rolled node, none on new connections; the LB's health records show
// every rolled node judged unhealthy; diagnose ranks pinned-connections
// first, not healthy.
func TestProfilePinnedConnections(t *testing.T) {
	pr := runProfile(t, "pinned-connections")
	checkDiagnosis(t, pr.dir, "pinned-connections")
	checkLBHealthRecords(t, pr.dir)
	checkControlSamples(t, pr.dir)
	onlyClasses(t, pr, results.ClassHeaderTimeout)
	var reused int64
	for _, p := range pr.a.Pollers {
		if p.Connection == results.NewConnections && p.Failures > 0 {
			t.Errorf("%s: %d failures on new connections; the LB routes new connections to healthy targets only here", p.Name, p.Failures)
		}
		if p.Connection == results.ReusedConnections {
			reused += p.Failures
			if p.Failures > 3 {
				t.Errorf("%s: %d failures, more than one per rolled node", p.Name, p.Failures)
			}
		}
	}
	if reused == 0 {
		t.Error("no header timeout on a reused connection: no connection was pinned to a stopped target")
	}
}

// checkLBHealthRecords: the run copied the lab LB's health records into
// its signals, and every node turned unhealthy and healthy again.
func checkLBHealthRecords(t *testing.T, dir string) {
	t.Helper()
	states := map[string]map[string]bool{}
	_, err := results.ReadJSONL(filepath.Join(dir, results.SignalsFile), func(line []byte) error {
		var s results.Signal
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		if s.Kind == results.SignalLBTargetHealth && s.Source == "lab-lb" {
			if states[s.Instance] == nil {
				states[s.Instance] = map[string]bool{}
			}
			states[s.Instance][s.Labels["state"]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("signals: %v", err)
	}
	if len(states) == 0 {
		t.Fatal("no lab-lb health records in the results' signals")
	}
	for node, st := range states {
		if !st["healthy"] || !st["unhealthy"] {
			t.Errorf("%s: states %v, want healthy and unhealthy over a rollout", node, st)
		}
	}
}

// checkControlSamples: the control poller ran beside the backends.
func checkControlSamples(t *testing.T, dir string) {
	t.Helper()
	st, err := os.Stat(filepath.Join(dir, scenarios.ControlFile))
	if err != nil || st.Size() == 0 {
		t.Errorf("no control samples: %v", err)
	}
}
