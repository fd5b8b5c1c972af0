package diagnose

import "github.com/repro-tools/repro/results"

// Mechanism is one candidate explanation of a measured gap: what it
// predicts a results folder shows, where it is documented and what rules it
// out.
type Mechanism struct {
	// Name is the lab profile's name for the mechanisms a profile models,
	// a short hypothesis name otherwise.
	Name string `json:"name"`
	// Profile says the lab can inject it (repro run --lab-profile Name).
	Profile bool `json:"labProfile"`
	// Summary says what happens, in one sentence.
	Summary string `json:"summary"`
	// Fingerprint is the prediction, as checks against a folder's figures.
	Fingerprint []Check `json:"fingerprint"`
	// Timing says where in the rollout it shows and how its length scales
	// with the timings.
	Timing string `json:"timing"`
	// Source cites where the mechanism is documented.
	Source string `json:"source"`
	// RuledOutBy says what evidence would rule it out.
	RuledOutBy string `json:"ruledOutBy"`
	// Baseline marks the mechanism of no disruption (healthy): when it
	// holds and every failure was a single request (no two in a row on a
	// poller), it ranks first on its own; another mechanism's shares over
	// a few single failures (one 503 is "100% answered on aggregated
	// pollers") are no evidence of a gap.
	Baseline bool `json:"baseline,omitempty"`
}

// Short names of error-class groups used by the fingerprints.
var (
	refusals      = []results.ErrorClass{results.ClassReset, results.ClassEOF, results.ClassConnectRefused, results.ClassTLS}
	lbRefusals    = []results.ErrorClass{results.ClassReset, results.ClassEOF, results.ClassConnectRefused, results.ClassTLS, results.ClassHTTP5xx, results.ClassHTTP429}
	unanswered    = []results.ErrorClass{results.ClassTLSHandshakeTimeout, results.ClassConnectTimeout}
	stopped       = []results.ErrorClass{results.ClassReset, results.ClassEOF, results.ClassConnectRefused, results.ClassConnectTimeout, results.ClassTLSHandshakeTimeout}
	notReady      = []results.ErrorClass{results.ClassHTTP5xx, results.ClassHTTP429}
	answeredEarly = []results.ErrorClass{results.ClassHTTP5xx, results.ClassHTTP429, results.ClassReset, results.ClassEOF, results.ClassTLS, results.ClassConnectRefused}
)

// Attribution verdicts (attribution.jsonl, package attribute).
const (
	VerdictAnswered            = "answered"
	VerdictReceivedNotAnswered = "received-not-answered"
	VerdictNotReceived         = "not-received"
	VerdictUnknown             = "unknown"
)

// catalogue lists every mechanism: the lab profiles' first, in
// lab/profiles.go's order, then the field hypotheses (reset-on-unhealthy was a profile; it is now the lab's default LB behaviour). The shares a check
// asks for are the fraction of failed samples (or of placed intervals) a
// mechanism that explains the gap must account for; 0.8 where it should be
// nearly all of them, lower where the mechanism mixes with its own side
// effects (net/http's retries, a successor answering 503).
var catalogue = []Mechanism{
	{
		Name: "healthy", Profile: true, Baseline: true,
		Summary:     "The shipped configuration: a 129 s shutdown delay against 20 s of LB detection, restarted apiservers held out until ready, so a rollout costs no request, or single ones (a 429 at a listener's close, a reset by the NLB's connection termination).",
		Fingerprint: []Check{noFailures()},
		Timing:      "No disruption at any time of the rollout, whatever its length.",
		Source:      "openshift/cluster-kube-apiserver-operator pkg/operator/configobservation/apiserver/observe_termination_duration.go (129 s); openshift/installer pkg/asset/manifests/aws/cluster.go (health check 10 s x 2)",
		RuledOutBy:  "More than a few single failed requests on any backend-connection.",
	},
	{
		Name: "late-deregistration", Profile: true,
		Summary: "The LB keeps routing to a target long after it turned unhealthy; once the apiserver stops listening (after its shutdown delay) the connections routed there are refused, then answered 503 by its successor.",
		Fingerprint: []Check{everyBackend(),
			classes(0.8, lbRefusals...),
			sigterm(0.8, false),
			lbVerdict(0.6, true),
			cacheToo(),
			phases(0.6, "terminating", "starting"),
			servedByRolled(0.6),
			verdicts(0.6, false, VerdictNotReceived, VerdictAnswered),
			healthyVsReady(0.6, false),
		},
		Timing:     "At the end of each rolled node's terminating phase (its listener closing) into its starting phase; length per node = deregistration delay + detection - shutdown delay (140 + 20 - 129 = 31 s on AWS), gone once the shutdown delay exceeds deregistration plus detection.",
		Source:     "OCPBUGS-86789 (NLB routed to an unhealthy target for 50 s and more); AWS Elastic Load Balancing docs, target groups: deregistration delay",
		RuledOutBy: "Failures within the LB's detection after the node's SIGTERM (the apiserver was still listening then), failures on apiservers other than the rolled one, or while no node is rolling.",
	},
	{
		Name:        "reset-on-unhealthy",
		Summary:     "The LB resets every established connection to a target when it turns unhealthy (the NLB's default, so the lab's too); a keep-alive connection still open to the draining apiserver dies and net/http retries most such GETs, so at most a few reused-connection requests fail per node.",
		Fingerprint: []Check{classes(0.8, results.ClassReset, results.ClassEOF), connectionShare(results.ReusedConnections, 0.5, false), fewPerPoller(2), phases(0.6, "terminating"), sigterm(0.6, true), servedByRolled(0.6)},
		Timing:      "10-20 s after each node's SIGTERM (the LB's detection), in its terminating phase; at most about one failed request per reused poller per node, independent of the shutdown delay.",
		Source:      "kubernetes-sigs/cluster-api-provider-aws #5475 (NLB target_health_state.unhealthy.connection_termination); AWS Elastic Load Balancing docs, target group attributes",
		RuledOutBy:  "Failures on new connections, or many failures per poller.",
	},
	{
		Name: "blackhole", Profile: true,
		Summary:     "Packets between the LB and a stopped apiserver are dropped instead of refused, and the LB still routes new connections there (late routing): their TLS handshakes go unanswered, and its successor answers 503 while not ready.",
		Fingerprint: []Check{everyBackend(), classes(0.8, append(append([]results.ErrorClass{}, unanswered...), lbRefusals...)...), silentHandshakes(0.2), connectionShare(results.NewConnections, 0.8, false), cacheToo(), phases(0.6, "terminating", "starting"), sigterm(0.6, false), lbVerdict(0.6, true), servedByRolled(0.6), verdicts(0.6, false, VerdictNotReceived, VerdictAnswered)},
		Timing:      "From the rolled apiserver's stop until the LB stops routing to it (starting phase, end of terminating); length set by the late-routing window, not by the header timeout.",
		Source:      "late-deregistration's routing (OCPBUGS-86789); packets lost between LB and target as the cause of TLS handshake timeouts, as the lab's blackhole profile models them",
		RuledOutBy:  "Header timeouts (the handshake completed), refusals instead of silence, or failures on apiservers that were not stopped.",
	},
	{
		Name: "short-shutdown-delay", Profile: true,
		Summary:     "kube-apiserver's shutdown delay is shorter than the LB's detection: the apiserver stops listening while the LB still routes new connections to it, which are refused.",
		Fingerprint: []Check{everyBackend(), classes(0.8, refusals...), connectionShare(results.NewConnections, 0.8, false), cacheToo(), phases(0.6, "terminating"), sigterm(0.8, true), servedByRolled(0.6), verdicts(0.6, false, VerdictNotReceived)},
		Timing:      "In each rolled node's terminating phase, from SIGTERM + shutdown delay until the LB marks it unhealthy; length per node = detection - shutdown delay (20 s with a 0 s delay on AWS), none once the delay exceeds the detection.",
		Source:      "openshift/cluster-kube-apiserver-operator pkg/operator/configobservation/apiserver/observe_termination_duration.go (SingleReplica: 0 s); k8s.io/apiserver pkg/server/options/server_run_options.go (--shutdown-delay-duration)",
		RuledOutBy:  "Failures on reused connections only, failures after the node's process exited, or on apiservers that were not rolling.",
	},
	{
		Name: "early-healthy", Profile: true,
		Summary:     "The LB checks TCP connect instead of /readyz and a restarting apiserver stays registered: it takes traffic before it can answer (503, 429) and after its listener closed (resets).",
		Fingerprint: []Check{everyBackend(), classes(0.8, answeredEarly...), answeredPerNode(notReady...), phases(0.6, "terminating", "starting"), sigterm(0.6, false), lbVerdict(0.6, false), healthyVsReady(0.6, true), servedByRolled(0.6), verdicts(0.6, false, VerdictAnswered)},
		Timing:      "At each restarted node's start (starting phase, just before ready); length = the new apiserver's warm-up, independent of the shutdown delay.",
		Source:      "AWS Elastic Load Balancing docs, target group health checks (TCP default); k8s.io/apiserver pkg/server/healthz (a fresh kube-apiserver answers 503 until /readyz is 200)",
		RuledOutBy:  "No 503/429 answers, or failures while no apiserver is starting.",
	},
	{
		Name: "pinned-connections", Profile: true,
		Summary: "The NLB's connection termination is off: a keep-alive connection to a target that turned unhealthy stays pinned to it, and once its apiserver stops, what the client sends on it goes nowhere (the target is unreachable), so the next request there waits for headers that never come.",
		// Prediction, written before the lab profile ran: header timeouts
		// only, all on reused connections, at most one per reused poller
		// per rolled node (the poller redials after its timeout), sent to
		// the rolled node as its apiserver stopped, with the LB's health
		// verdict in time and the servers well.
		Fingerprint: []Check{notAnswered(0.8), connectionShare(results.ReusedConnections, 0.9, false), fewPerPoller(1),
			phases(0.6, "terminating", "starting"), servedByRolled(0.6), lbVerdict(0.6, true), noStoragePressure()},
		Timing:     "Once per reused poller whose connection sits on the rolled node when its apiserver stops (the end of its shutdown delay); each such request fails after the full header timeout; not tied to late routing, and gone with the NLB's default connection termination.",
		Source:     "kubernetes-sigs/cluster-api-provider-aws #5800 (NLB connection termination off); AWS Elastic Load Balancing docs, target group attributes (target_health_state.unhealthy.connection_termination.enabled, default true)",
		RuledOutBy: "Failures on new connections, the LB resetting established connections when the target turned unhealthy, or more than one failure per reused poller per rolled node.",
	},
	{
		Name: "etcd-stall", Profile: true,
		Summary:     "One apiserver's link to etcd stalls right after its restart; /readyz keeps answering from its cached etcd check, so the LB keeps it in service and quorum reads sent there go unanswered.",
		Fingerprint: []Check{notAnswered(0.8), connectionShare(results.NewConnections, 0.6, false), quorumOnly(), phases(0.6, "ready"), servedByOne(0.8), verdicts(0.6, false, VerdictReceivedNotAnswered)},
		Timing:      "After the stalled node's restart (its ready phase); length = stall - header timeout (60 - 27.2 = 32.8 s on AWS), none when the stall is shorter than the header timeout; shorter when /readyz's check times out first and the LB takes the node out (the NLB then resets the hung requests).",
		Source:      "kubernetes staging/src/k8s.io/apiserver/pkg/storage/storagebackend/factory/etcd3.go (newETCD3Check caches and rate-limits the etcd check)",
		RuledOutBy:  "Failures on cache-* pollers, failures spread over every apiserver, or answered requests (attribution).",
	},
	{
		Name: "aggregated-etcd-stall", Profile: true,
		Summary:     "One node's openshift-apiserver and oauth-apiserver lose etcd; the aggregator keeps sending them a share of the aggregated APIs' requests, through every kube-apiserver, until their readiness takes them out of their Services' endpoints, and those requests go unanswered while kube-api is served.",
		Fingerprint: []Check{aggregatedOnly(), notAnswered(0.8)},
		Timing:      "From the stall's start until the stalled replicas leave the endpoints (their etcd readiness check's 2 s timeout plus one readiness probe period); not tied to kube-apiserver's own phases.",
		Source:      "kubernetes staging/src/k8s.io/apiserver/pkg/util/proxy/proxy.go (ResolveEndpoint picks a random ready endpoint); kubernetes staging/src/k8s.io/apiserver/pkg/storage/storagebackend/factory/etcd3.go (the etcd readiness check)",
		RuledOutBy:  "Failures on kube-api or cache-kube-api pollers, or answered requests (attribution).",
	},
	{
		Name: "loaded", Profile: true,
		Summary:     "A cluster's own clients (kubelets, kube-proxies, controllers) ride the rollout: the rolled apiserver's watches are cut and re-list and re-watch against the survivors at once; if that storm exhausts the survivors' request handling (priority-and-fairness seats, CPU), requests of every variant of every backend sent to them go unanswered, and the load's own writes fail with them.",
		Fingerprint: []Check{notAnswered(0.8), everyVariant(), servedBySpread(2), relistStorm()},
		Timing:      "From the moment the rolled node's watches are cut (its listener closing, or the LB's connection termination when it turns unhealthy) for as long as the survivors take to serve the re-lists; its length grows with the objects listed and the watches cut, not with the shutdown delay.",
		Source:      "openshift-eng/ai-helpers plugins/ci/skills/analyze-disruption SKILL.md (every variant of every backend at once: control-plane resource exhaustion); kubernetes/enhancements KEP-3157 (the cost of re-lists on the apiserver); kubernetes/perf-tests clusterloader2/testing/load/config.yaml (the load's sizes)",
		RuledOutBy:  "No failed load write or no re-list on the survivors, failures on one apiserver only, or answered failures (429, 5xx) instead of silence.",
	},
	{
		Name:        "lb-routes-to-stopped-target",
		Summary:     "The LB sends new connections to a target whose apiserver process has exited, before its health checks fail.",
		Fingerprint: []Check{everyBackend(), classes(0.8, stopped...), phases(0.6, "starting"), cacheToo(), servedByRolled(0.6), verdicts(0.6, true, VerdictNotReceived), noStoragePressure()},
		Timing:      "In the rolled node's starting phase (old process gone, new one not ready); length bounded by the LB's unhealthy detection after the exit.",
		Source:      "AWS Elastic Load Balancing docs, target group health checks (unhealthy threshold x interval); openshift/origin pkg/monitortests/kubeapiserver/disruptionlegacyapiservers (new-connection pollers)",
		RuledOutBy:  "Requests received by an apiserver (attribution), or failures while the node still had a process listening.",
	},
	{
		Name:        "storage-stall-readyz-misses",
		Summary:     "Apiservers' storage (etcd) stalls without /readyz noticing, so quorum reads hang while watch-cache reads are served.",
		Fingerprint: []Check{notAnswered(0.8), quorumOnly(), verdicts(0.6, true, VerdictReceivedNotAnswered), storagePressure()},
		Timing:      "Any time; length = stall - header timeout, on whichever apiservers share the stalled storage.",
		Source:      "kubernetes staging/src/k8s.io/apiserver/pkg/storage/storagebackend/factory/etcd3.go (cached etcd health check); kubernetes staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go (resourceVersion=0 lists served from the watch cache)",
		RuledOutBy:  "Failures on cache-* pollers, or requests never received by any apiserver.",
	},
	{
		Name:        "shared-stall",
		Summary:     "Something every apiserver shares (etcd quorum, the network, the LB itself) stops answering: header timeouts on requests sent to several apiservers at once.",
		Fingerprint: []Check{notAnswered(0.8), servedBySpread(2), verdicts(0.6, false, VerdictReceivedNotAnswered, VerdictNotReceived), storagePressure(), everyVariant()},
		Timing:      "Any time, not tied to one node's phase; length = the shared stall less the header timeout.",
		Source:      "openshift/origin pkg/monitortests/kubeapiserver/disruptionlegacyapiservers (all pollers share the LB and etcd)",
		RuledOutBy:  "Failed requests sent to one apiserver only.",
	},
	{
		Name:        "aggregator",
		Summary:     "kube-apiserver's aggregator cannot reach openshift-apiserver or oauth-apiserver (stale endpoints, the aggregated server rolling): aggregated APIs fail while kube-api is served.",
		Fingerprint: []Check{aggregatedOnly(), classes(0.6, results.ClassHTTP5xx, results.ClassHeaderTimeout, results.ClassHTTPOther), verdicts(0.6, false, VerdictAnswered, VerdictReceivedNotAnswered)},
		Timing:      "Any time the aggregated servers or their endpoints change; not tied to kube-apiserver's own rollout phases.",
		Source:      "kubernetes staging/src/k8s.io/kube-aggregator/pkg/apiserver/handler_proxy.go (503 when the APIService's service is unavailable); openshift/origin pkg/monitortests/kubeapiserver/disruptionlegacyapiservers (openshift-api, oauth-api backends)",
		RuledOutBy:  "Failures on kube-api or cache-kube-api pollers.",
	},
	{
		Name:    "aggregated-path-not-ready",
		Summary: "A restarted kube-apiserver is ready, and taken back by the LB, before its own path to the aggregated API servers is: its aggregator answers the openshift-api and oauth-api requests it proxies with 503 (\"network is unreachable\", \"http2: client connection lost\") while kube-api is served.",
		// Prediction: 503 answers on openshift-api/oauth-api only (cache-*
		// too: the aggregator proxies those as well), from the newly
		// restarted apiserver, right after it turned ready. The lab cannot
		// inject a path fault between one kube-apiserver and the
		// aggregated servers with its knobs, so this is a catalogue entry
		// tested on fixtures only.
		Fingerprint: []Check{aggregatedOnly(), classes(0.8, results.ClassHTTP5xx), phases(0.6, "ready"), servedByRolled(0.6), verdicts(0.6, false, VerdictAnswered)},
		Timing:      "Right after each rolled node's new kube-apiserver turns ready, until its path to the aggregated servers (the pod network on that node) is up; only through that apiserver.",
		Source:      "OCPBUGS-100065; openshift/kubernetes #2730, #2748 (a new kube-apiserver ready before it can reach the aggregated API servers)",
		RuledOutBy:  "Failures on kube-api pollers, header timeouts instead of 503 answers, or failed requests served by apiservers other than the newly restarted one.",
	},
	{
		Name:        "authentication-outage",
		Summary:     "A restarted kube-apiserver starts with a cold token cache and checks OAuth tokens through oauth-apiserver; while that path fails, requests are answered 401.",
		Fingerprint: []Check{classes(0.8, results.ClassAuth), phases(0.6, "starting", "ready"), verdicts(0.6, false, VerdictAnswered)},
		Timing:      "Right after a node's new apiserver is ready, until its token cache is warm or oauth-apiserver answers.",
		Source:      "kubernetes staging/src/k8s.io/apiserver/pkg/authentication/token/cache/cached_token_authenticator.go; openshift/oauth-apiserver (token reviews for sha256~ tokens)",
		RuledOutBy:  "No 401/403 answers; 401s spread over the whole run (expired credentials).",
	},
}

// Catalogue returns every mechanism, the lab profiles' first.
func Catalogue() []Mechanism { return append([]Mechanism(nil), catalogue...) }

// Lookup returns the named mechanism.
func Lookup(name string) (Mechanism, bool) {
	for _, m := range catalogue {
		if m.Name == name {
			return m, true
		}
	}
	return Mechanism{}, false
}
