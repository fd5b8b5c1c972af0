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
	for _, g := range featureGates {
		if g.why == "" || !strings.Contains(g.gate, "=") {
			t.Errorf("gate %q needs a value and a reason", g.gate)
		}
	}
}
