package lab

import (
	"fmt"
	"strings"
)

// Profile is a named combination of lab knobs modelling one documented
// mechanism (or the combination behind a field regression).
type Profile struct {
	Name string
	// Models says what the profile does and what a rollout on it should
	// measure.
	Models string
	// Source is where the mechanism is documented.
	Source string
	// Settings are knob key=value pairs applied over DefaultOptions.
	Settings []string
}

// Every timing below is on the lab's scale (AWS's divided by about ten):
// shutdown delay 10 s, LB detection 1 s x 2, grace 15 s; the prober's
// response-header timeout (12 s by default) is not scaled.
var profiles = []Profile{
	{
		Name:   "healthy",
		Models: "The lab as shipped: 10 s shutdown delay against 2 s LB detection, restarted apiservers held out until warm. A rollout should measure no disruption.",
		Source: "DESIGN.md, lab facts (zero errors behind a /readyz-checked LB)",
	},
	{
		Name: "late-deregistration",
		Models: "The LB keeps routing new connections to a target for 11 s after it turned unhealthy. The rolled apiserver turns unhealthy 1-2 s after SIGTERM and stops listening at 10 s, so connections routed to it between its listener closing and the end of the 11 s are refused (resets, " +
			"then 503s if its successor is already listening): short failures, about one request in three, on new and reused connections (reused ones redial when the stopping apiserver closes them).",
		Source:   "OCPBUGS-86789 (NLB routed to an unhealthy target for 50 s and more)",
		Settings: []string{"lb-late-deregistration=11s"},
	},
	{
		Name: "reset-on-unhealthy",
		Models: "The LB resets every established connection to a target when it turns unhealthy (1-2 s after SIGTERM). Pollers' keep-alive connections are idle between requests and net/http retries an idempotent GET whose reused connection dies before any answer, " +
			"so at most one failed request per reused poller per node is expected; watches and in-flight long requests would be cut (not measured by the pollers).",
		Source:   "kubernetes-sigs/cluster-api-provider-aws #5475 (NLB target_health_state.unhealthy.connection_termination)",
		Settings: []string{"lb-reset-on-unhealthy=true"},
	},
	{
		Name: "blackhole",
		Models: "Packets between the LB and a stopped apiserver are dropped for 15 s instead of refused; with late routing (11 s, as OCPBUGS-86789) the LB still sends new connections there. A new connection's TLS handshake goes unanswered (TLS handshake timeout, not a header timeout: the apiserver never saw it). " +
			"A keep-alive connection the stopped apiserver closed is not closed towards the client (its next request would time out on headers), but kube-apiserver answers Connection: close while it drains, so HTTP/1.1 pollers have left it before it stops.",
		Source:   "DESIGN.md ('timeout awaiting response headers': packets lost between LB and target); OCPBUGS-86789 for the routing",
		Settings: []string{"lb-blackhole=15s", "lb-late-deregistration=11s"},
	},
	{
		Name: "short-shutdown-delay",
		Models: "kube-apiserver's shutdown delay (0 s) is shorter than the LB's detection time (1 s x 2): the apiserver stops listening at SIGTERM while the LB routes to it for 1-2 s more. New connections sent there are refused (resets); " +
			"expected: failures on connections routed to the rolled node between its listener closing and the LB marking it unhealthy.",
		Source:   "DESIGN.md (single-node OpenShift runs 0 s; AWS 129 s vs 20 s detection); measured here: refused connections for ~1 s",
		Settings: []string{"shutdown-delay=0s"},
	},
	{
		Name: "early-healthy",
		Models: "The LB checks TCP connect instead of /readyz, with a healthy threshold of 1, and a restarting apiserver stays registered: it takes traffic as soon as its port accepts, before it can answer (503 not ready; 429 while the lab's CRD storage initialises), " +
			"and keeps taking it after its listener closed until two connects fail (resets).",
		Source:   "DESIGN.md (fresh apiserver answers 503 before /readyz is 200; LB routing in that window passes the 503s on); NLB TCP health checks (AWS default)",
		Settings: []string{"lb-health-check=tcp", "lb-healthy-threshold=1", "keep-registered=true"},
	},
	{
		Name: "etcd-stall",
		Models: "master-1's link to etcd stalls for 16 s right after its restart put it back in service; the LB keeps it in service because /readyz's etcd checks answer from their last result between probes (--etcd-*check-timeout=30s). TLS completes, nothing answers: " +
			"requests routed to master-1 in the first 4 s (16 s - 12 s header timeout) fail with header timeouts, on new and reused connections; later ones succeed late.",
		Source:   "issue 5; k8s.io/apiserver storagebackend/factory/etcd3.go (newETCD3Check caches and rate-limits the etcd check)",
		Settings: []string{"etcd-stall=16s", "etcd-stall-on=master-1", "etcd-check-timeout=30s"},
	},
	{
		Name: "aws-4.17-regression",
		Models: "Reproduces the 4.17 AWS field shape: 4-7 s of `timeout awaiting response headers` on kube-api, openshift-api and oauth-api, new and reused connections alike. Through a pass-through LB that shape needs every apiserver traffic reaches to complete TLS and " +
			"then hold requests past the 12 s header timeout at once (one stalled target of three gives one request in three, and reused pollers just move to a healthy connection). So: when master-0's restarted apiserver is back in service, every apiserver's storage stalls for " +
			"17.5 s (etcd not answering, the cost a restarting apiserver's cache fill can put on etcd), the LB keeps the targets in service (etcd checks answering from cache, 30 s timeouts), and requests sent in the first 5.5 s time out: a ~5.5 s gap on all six pollers, header timeouts only.",
		Source:   "DESIGN.md field facts (origin disruption backends, 4.17 AWS, header timeouts on new and reused); the storage stall as the trigger is this profile's hypothesis, not a sourced fact",
		Settings: []string{"etcd-stall=17500ms", "etcd-stall-on=master-0", "etcd-stall-all=true", "etcd-check-timeout=30s"},
	},
}

// Profiles lists the named profiles.
func Profiles() []Profile { return append([]Profile(nil), profiles...) }

// ProfileNames lists the profiles' names.
func ProfileNames() []string {
	var out []string
	for _, p := range profiles {
		out = append(out, p.Name)
	}
	return out
}

// LookupProfile returns the named profile.
func LookupProfile(name string) (Profile, error) {
	for _, p := range profiles {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("unknown lab profile %q; valid: %s", name, strings.Join(ProfileNames(), ", "))
}

// Apply sets the profile's knobs on o and records its name.
func (p Profile) Apply(o *Options) error {
	if err := SetAll(o, p.Settings); err != nil {
		return fmt.Errorf("profile %s: %w", p.Name, err)
	}
	o.Profile = p.Name
	return nil
}
