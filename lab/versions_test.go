package lab

import (
	"strings"
	"testing"
)

func TestParseKubeVersion(t *testing.T) {
	for in, want := range map[string]KubeVersion{
		"Kubernetes v1.29.6\n":             {GitVersion: "v1.29.6", Minor: 29},
		"Kubernetes v1.30.14-rc.0+abc123":  {GitVersion: "v1.30.14-rc.0+abc123", Minor: 30},
		"Kubernetes v0.0.0-master+$Format": {},
		"":                                 {},
	} {
		if got := parseKubeVersion(in); got != want {
			t.Errorf("parseKubeVersion(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestFeatureGatesPerRelease(t *testing.T) {
	for minor, want := range map[int]string{
		29: "APIServerIdentity=false,CRDValidationRatcheting=true",
		30: "APIServerIdentity=false",
		34: "APIServerIdentity=false",
		// A build that did not say its version gets only the gates every
		// release has: an unknown gate makes kube-apiserver refuse to start.
		0: "APIServerIdentity=false",
	} {
		if got := featureGatesFor(minor); got != want {
			t.Errorf("1.%d: --feature-gates=%s, want %s", minor, got, want)
		}
	}
	for _, g := range append(append([]releaseFlag{}, featureGates...), aggregatedFlags...) {
		if g.why == "" || !strings.Contains(g.value, "=") {
			t.Errorf("%q needs a value and a reason", g.value)
		}
	}
	if got := strings.Join(aggregatedArgsFor(29), " "); got != "--disable-admission-plugins=ValidatingAdmissionPolicy" {
		t.Errorf("aggregated servers beside 1.29: %q", got)
	}
	for _, minor := range []int{0, 30, 34} {
		if got := aggregatedArgsFor(minor); len(got) != 0 {
			t.Errorf("aggregated servers beside 1.%d: %q, want their defaults", minor, got)
		}
	}
}
