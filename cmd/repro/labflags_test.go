package main

import (
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/repro-tools/repro/lab"
)

// TestLabFlagsFromTheKnobTable: every knob with a flag is a flag of its
// type, defaulting to the fast scale; --lab-timing rescales the ones not
// given, and a flag given is taken as it is.
func TestLabFlagsFromTheKnobTable(t *testing.T) {
	parse := func(args ...string) lab.Options {
		t.Helper()
		var f labFlags
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		f.bind(cmd)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		o, err := f.options()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return o
	}
	var f labFlags
	cmd := &cobra.Command{Use: "x"}
	f.bind(cmd)
	fast := lab.OptionsFor(lab.TimingFast)
	for _, k := range lab.Knobs() {
		if k.Flag == "" {
			continue
		}
		fl := cmd.Flags().Lookup(k.Key)
		if fl == nil {
			t.Errorf("knob %s has flag help but no flag", k.Key)
			continue
		}
		if fl.Usage != k.Flag {
			t.Errorf("--%s usage %q, want the knob's %q", k.Key, fl.Usage, k.Flag)
		}
		want := "int"
		if k.Duration(&fast) != nil {
			want = "duration"
		}
		if fl.Value.Type() != want {
			t.Errorf("--%s is a %s flag, want %s", k.Key, fl.Value.Type(), want)
		}
	}
	if o := parse(); o.ShutdownDelay != fast.ShutdownDelay || o.Health.Interval != fast.Health.Interval {
		t.Errorf("defaults: shutdown delay %v, health interval %v; want the fast scale's %v, %v", o.ShutdownDelay, o.Health.Interval, fast.ShutdownDelay, fast.Health.Interval)
	}
	aws := lab.OptionsFor(lab.TimingAWS)
	if o := parse("--lab-timing", "aws"); o.ShutdownDelay != aws.ShutdownDelay || o.ProbeInterval != aws.ProbeInterval {
		t.Errorf("--lab-timing aws: shutdown delay %v, probe interval %v; want %v, %v", o.ShutdownDelay, o.ProbeInterval, aws.ShutdownDelay, aws.ProbeInterval)
	}
	if o := parse("--lab-timing", "aws", "--shutdown-delay", "5s", "--lb-unhealthy-threshold", "3"); o.ShutdownDelay != 5*time.Second || o.GracePeriod != aws.GracePeriod || o.Health.UnhealthyThreshold != 3 {
		t.Errorf("given flags: shutdown delay %v, grace %v, unhealthy threshold %d; want 5s, %v, 3", o.ShutdownDelay, o.GracePeriod, o.Health.UnhealthyThreshold, aws.GracePeriod)
	}
}
