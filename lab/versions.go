package lab

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// KubeVersion is the Kubernetes release of the kube-apiserver a lab runs, as
// its binary reports it (`kube-apiserver --version`), so a build given with
// --kube-apiserver PATH is handled by what it is, not by what it was called.
type KubeVersion struct {
	// GitVersion is the full version, e.g. "v1.29.6".
	GitVersion string
	// Minor is the minor release (29); 0 when the binary did not say.
	Minor int
}

var versionRE = regexp.MustCompile(`v1\.(\d+)\.\d+\S*`)

// binaryVersion asks a kube-apiserver binary for its version. A binary that
// does not answer in time or prints something else is not an error: the lab
// then runs it with the default release's flags and says so.
func binaryVersion(ctx context.Context, bin string) KubeVersion {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return KubeVersion{}
	}
	return parseKubeVersion(string(out))
}

// parseKubeVersion reads "Kubernetes v1.29.6" (or any text holding a
// v1.N.M version).
func parseKubeVersion(s string) KubeVersion {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return KubeVersion{}
	}
	minor, _ := strconv.Atoi(m[1])
	return KubeVersion{GitVersion: m[0], Minor: minor}
}

// releaseFlag is one setting the lab gives for the releases it applies to,
// with the reason.
type releaseFlag struct {
	value string
	// minMinor/maxMinor bound the releases (inclusive; 0 means unbounded).
	minMinor, maxMinor int
	why                string
}

// applies reports whether f holds for a release; an unknown one (minor 0)
// gets only the settings every release takes.
func (f releaseFlag) applies(minor int) bool {
	if minor == 0 {
		return f.minMinor == 0 && f.maxMinor == 0
	}
	return (f.minMinor == 0 || minor >= f.minMinor) && (f.maxMinor == 0 || minor <= f.maxMinor)
}

// featureGates lists every kube-apiserver gate the lab changes and why. A
// difference between releases the lab needs handled lives here or in
// aggregatedFlags, explicitly, rather than in a release check scattered
// through the code.
var featureGates = []releaseFlag{
	{
		// Each apiserver's identity lease is named from a hash of the
		// hostname: three apiservers on one host would share one lease and
		// conflict on it every 10 s. Cluster nodes have distinct hostnames;
		// the lab turns the identity leases off (beta since 1.26, so the
		// gate exists in every release the lab builds).
		value: "APIServerIdentity=false",
		why:   "three apiservers on one host would share one identity lease",
	},
	{
		// The KubeAPIServer CRD the lab serves (github.com/openshift/api
		// operator/v1) has transition rules written with optionalOldSelf
		// ("oldSelf.hasValue() || ..."). Kubernetes 1.29 knows that field
		// only with the alpha CRDValidationRatcheting gate on, and drops it
		// otherwise, so the rules fail to compile and the CRD is refused;
		// from 1.30 the gate is beta and on by default
		// (kubernetes/enhancements keps/sig-api-machinery/4008-crd-ratcheting).
		// OpenShift 4.16 served the CRD of its own openshift/api, which did
		// not use the field yet.
		value:    "CRDValidationRatcheting=true",
		minMinor: 28, maxMinor: 29,
		why: "the KubeAPIServer CRD's transition rules use optionalOldSelf",
	},
}

// aggregatedFlags lists the flags of the lab's aggregated API servers
// (built on k8s.io/apiserver of the lab's own release) that depend on the
// kube-apiserver release beside them.
var aggregatedFlags = []releaseFlag{
	{
		// k8s.io/apiserver's ValidatingAdmissionPolicy plugin (on by
		// default) watches admissionregistration.k8s.io/v1 policies, which
		// Kubernetes serves from 1.30 (1.29 has only v1beta1, off by
		// default: staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating).
		// Its informers never sync against 1.29, and /readyz waits for them,
		// so the replicas would never be ready. OpenShift 4.16's
		// openshift-apiserver was built on 1.29's library, which has no such wait.
		value:    "--disable-admission-plugins=ValidatingAdmissionPolicy",
		minMinor: 1, maxMinor: 29,
		why: "admissionregistration.k8s.io/v1 policies are not served before 1.30",
	},
}

// featureGatesFor returns the kube-apiserver --feature-gates value for a
// release.
func featureGatesFor(minor int) string {
	var gates []string
	for _, g := range featureGates {
		if g.applies(minor) {
			gates = append(gates, g.value)
		}
	}
	return strings.Join(gates, ",")
}

// aggregatedArgsFor returns the aggregated servers' flags for the
// kube-apiserver release they run beside.
func aggregatedArgsFor(minor int) []string {
	var args []string
	for _, f := range aggregatedFlags {
		if f.applies(minor) {
			args = append(args, f.value)
		}
	}
	return args
}

// String is the version as reported, or "unknown".
func (v KubeVersion) String() string {
	if v.GitVersion == "" {
		return "unknown"
	}
	return v.GitVersion
}
