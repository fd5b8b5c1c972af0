package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/repro-tools/repro/results"
)

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
	st, err := os.Stat(filepath.Join(dir, results.ControlFile))
	if err != nil || st.Size() == 0 {
		t.Errorf("no control samples: %v", err)
	}
}
