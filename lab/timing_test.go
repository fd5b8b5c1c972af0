package lab

import (
	"testing"
	"time"
)

// TestTimingScalesEveryDuration checks the one-time-scale rule: on every
// scale the lab's durations are AWS's divided by the same factor, so the
// ratios that decide a rollout's disruption (shutdown delay against LB
// detection, grace against shutdown delay) are AWS's.
func TestTimingScalesEveryDuration(t *testing.T) {
	aws := OptionsFor(TimingAWS)
	if aws.ShutdownDelay != 129*time.Second || aws.GracePeriod != 194*time.Second || aws.MinReadyTime != 30*time.Second ||
		aws.Health.Interval != 10*time.Second || aws.Health.Timeout != 10*time.Second || aws.ProbeInterval != 10*time.Second {
		t.Fatalf("aws timing: %+v", aws)
	}
	for _, tm := range Timings() {
		o := OptionsFor(tm)
		f := time.Duration(tm.Factor)
		for name, pair := range map[string][2]time.Duration{
			"shutdown delay":   {o.ShutdownDelay, aws.ShutdownDelay},
			"grace period":     {o.GracePeriod, aws.GracePeriod},
			"min ready time":   {o.MinReadyTime, aws.MinReadyTime},
			"health interval":  {o.Health.Interval, aws.Health.Interval},
			"health timeout":   {o.Health.Timeout, aws.Health.Timeout},
			"readiness period": {o.ProbeInterval, aws.ProbeInterval},
		} {
			if pair[0]*f != pair[1] {
				t.Errorf("%s: %s %v, want AWS's %v / %d", tm.Name, name, pair[0], pair[1], tm.Factor)
			}
		}
		if err := o.withDefaults().validate(); err != nil {
			t.Errorf("%s: %v", tm.Name, err)
		}
	}
	if DefaultOptions().Timing != TimingFast {
		t.Errorf("default timing %v, want fast", DefaultOptions().Timing)
	}
}

// TestProfilesScaleTheirDurations: a profile's durations are written as on
// AWS and divided by the lab's timing; other knobs are taken as they are.
func TestProfilesScaleTheirDurations(t *testing.T) {
	p, err := LookupProfile("etcd-stall")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		timing       Timing
		stall, check time.Duration
	}{{TimingFast, 6 * time.Second, 3 * time.Second}, {TimingAWS, 60 * time.Second, 30 * time.Second}} {
		o := OptionsFor(c.timing)
		if err := p.Apply(&o); err != nil {
			t.Fatal(err)
		}
		if o.Faults.EtcdStall != c.stall || o.Faults.EtcdCheckTimeout != c.check || len(o.Faults.EtcdStallOn) != 1 || o.Faults.EtcdStallOn[0] != "master-1" {
			t.Errorf("%s: etcd-stall applied as %+v, want stall %v, check timeout %v on master-1", c.timing.Name, o.Faults, c.stall, c.check)
		}
	}
	o := DefaultOptions()
	if err := SetAtScale(&o, "lb-healthy-threshold", "3", TimingFast); err != nil || o.Health.HealthyThreshold != 3 {
		t.Errorf("a count is not scaled: %v, threshold %d", err, o.Health.HealthyThreshold)
	}
	if err := SetAtScale(&o, "etcd-stall", "soon", TimingFast); err == nil {
		t.Error("a bad duration was accepted")
	}
	if _, err := LookupTiming("slow"); err == nil {
		t.Error("an unknown timing was accepted")
	}
	// Every profile applies on every scale and yields a valid lab.
	for _, tm := range Timings() {
		for _, p := range Profiles() {
			o := OptionsFor(tm)
			o.ExactTimings = true
			if err := p.Apply(&o); err != nil {
				t.Errorf("%s on %s: %v", p.Name, tm.Name, err)
				continue
			}
			if err := o.withDefaults().validate(); err != nil {
				t.Errorf("%s on %s: %v", p.Name, tm.Name, err)
			}
		}
	}
}
