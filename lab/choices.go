package lab

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/repro-tools/repro/lab/binaries"
)

// Choices are the lab settings a command line names by key, beside the
// Options its flags are bound to: the time scale, a profile, --lab-set
// key=value lines and the load balancer.
type Choices struct {
	// Timing names the time scale (LookupTiming).
	Timing string
	// Profile names a fault profile (LookupProfile); "" for none.
	Profile string
	// Sets are "key=value" knob settings, applied last and taken as given.
	Sets []string
	// LB is Options.LB's value (LBChoices).
	LB string
	// Given reports whether the knob named key was set on its own (its
	// flag given): such a value wins over the time scale and the profile.
	// Nil means none was.
	Given func(key string) bool
}

// Resolve applies the choices to o, whose timing fields hold the fast
// scale's defaults unless given, and validates the result (Validate) before
// anything is built: a cold build takes minutes, and a bad option must not
// cost one. Each error is one line naming the knob or flag at fault.
func (c Choices) Resolve(o Options) (Options, error) {
	given := c.Given
	if given == nil {
		given = func(string) bool { return false }
	}
	t, err := LookupTiming(c.Timing)
	if err != nil {
		return o, fmt.Errorf("--lab-timing: %w", err)
	}
	o.Timing = t
	base := OptionsFor(t)
	// The scaled knobs that have a flag follow the time scale unless given.
	for _, k := range knobs {
		if p := k.Duration(&o); p != nil && k.Flag != "" && k.Scaled && !given(k.Key) {
			*p = *k.Duration(&base)
		}
	}
	if c.Profile != "" {
		p, err := LookupProfile(c.Profile)
		if err != nil {
			return o, fmt.Errorf("--lab-profile: %w", err)
		}
		// A knob given on its own wins over the profile.
		for _, kv := range p.Settings {
			k, v, _ := strings.Cut(kv, "=")
			if given(k) {
				continue
			}
			if err := SetAtScale(&o, k, v, t); err != nil {
				return o, fmt.Errorf("--lab-profile %s: %w", p.Name, err)
			}
		}
		o.Profile = p.Name
	}
	if err := SetAll(&o, c.Sets); err != nil {
		return o, fmt.Errorf("--lab-set: %w", err)
	}
	if !slices.Contains(LBChoices(), c.LB) {
		return o, fmt.Errorf("--lab-lb %q: want one of %s", c.LB, strings.Join(LBChoices(), ", "))
	}
	o.LB = c.LB
	return o, o.Validate()
}

// KubeAPIServerSpec resolves a --lab-kube-version (Options.KubeVersion; ""
// is the default release) to the kube-apiserver build the lab runs. It is
// the one place a version becomes a binary; its error names the flag.
func KubeAPIServerSpec(version string) (binaries.Spec, error) {
	s, err := binaries.KubeAPIServerFor(version)
	if err != nil {
		return s, fmt.Errorf("--lab-kube-version: %w", err)
	}
	return s, nil
}

// EnsureKubeAPIServer builds the kube-apiserver release version into the
// cache unless it is there (progress, if not nil, shows the build) and
// returns its path.
func EnsureKubeAPIServer(ctx context.Context, version string, progress io.Writer) (string, error) {
	s, err := KubeAPIServerSpec(version)
	if err != nil {
		return "", err
	}
	return binaries.Ensure(ctx, s, binaries.Options{Progress: progress})
}

// KubeVersionsHelp names the releases --lab-kube-version takes, for help
// text: "v1.34.4 (OpenShift 4.21, the default), ...".
func KubeVersionsHelp() string {
	var vs []string
	for _, s := range binaries.KubeAPIServers {
		v := s.Version + " (" + s.Release
		if s.Version == binaries.KubeAPIServer.Version {
			v += ", the default"
		}
		vs = append(vs, v+")")
	}
	return strings.Join(vs, ", ")
}

// checkKnobs names, by the knob's key as its flag, the common mistakes:
// a node count out of range, a negative duration, a threshold below one, a
// grace period within the shutdown delay, an unknown release. A zero node
// count is an error, not the default, when the timings are exact (the
// CLI's case): oc and kubectl take a given 0 as 0.
func (o Options) checkKnobs() error {
	if !o.ExactTimings {
		o = o.withDefaults()
	}
	if o.Nodes < 1 || o.Nodes > 9 {
		return fmt.Errorf("--nodes must be 1..9, got %d", o.Nodes)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"shutdown-delay", o.ShutdownDelay}, {"grace-period", o.GracePeriod}, {"min-ready-time", o.MinReadyTime},
		{"lb-health-interval", o.Health.Interval}, {"lb-health-timeout", o.Health.Timeout}, {"probe-interval", o.ProbeInterval}, {"start-timeout", o.StartTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("--%s must not be negative, got %v", d.key, d.v)
		}
	}
	for _, t := range []struct {
		key string
		v   int
	}{{"lb-healthy-threshold", o.Health.HealthyThreshold}, {"lb-unhealthy-threshold", o.Health.UnhealthyThreshold}} {
		if t.v < 1 {
			return fmt.Errorf("--%s must be at least 1, got %d", t.key, t.v)
		}
	}
	if o.GracePeriod <= o.ShutdownDelay {
		return fmt.Errorf("--grace-period (%v) must exceed --shutdown-delay (%v): the kubelet would kill every apiserver mid-drain", o.GracePeriod, o.ShutdownDelay)
	}
	if _, err := KubeAPIServerSpec(o.KubeVersion); err != nil {
		return err
	}
	return nil
}
