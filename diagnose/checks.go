package diagnose

import (
	"fmt"
	"sort"
	"strings"

	"github.com/repro-tools/repro/results"
)

// Missing evidence, as diagnose names it.
const (
	MissingCache       = "no cache-* pollers in this run"
	MissingAggregated  = "no openshift-api/oauth-api and kube-api pollers in this run"
	MissingTimeline    = "no rollout timeline (events.jsonl)"
	MissingServedBy    = "no record of which apiserver failed requests went to (the lab load balancer's connection records, or attribution; an AWS load balancer's target health cannot say which target a connection went to)"
	MissingAttribution = "no attribution"
	MissingLBVerdicts  = "no load balancer health verdicts (target health records, the lab's or --aws-lb's, or the lab LB's connection resets)"
	MissingLoad        = "no cluster load in this run (--lab-load)"
	MissingSignals     = "no server-side signals (signals.jsonl: server metrics, or the evidence imported beside a CI run's disruptions)"
)

// Check is one predicted feature of a mechanism's fingerprint.
type Check struct {
	// Name is what is checked, e.g. "error classes".
	Name string `json:"name"`
	// Predicts says the prediction in words.
	Predicts string `json:"predicts"`
	// Required marks a check without which the mechanism is not testable.
	Required bool `json:"required,omitempty"`
	eval     func(f *Figures) outcome
}

// outcome is one check against one folder: missing names absent evidence;
// otherwise ok says it held and share is the figure compared.
type outcome struct {
	missing  string
	ok       bool
	share    float64
	evidence string
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

func ratio(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

func classNames(cs []results.ErrorClass) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, "/")
}

// singleLosses is how many failed samples one poller may have in a
// rollout without a gap to explain: a healthy rollout can lose single
// requests, a 429 at a listener's close and a reset of a connection the LB
// opened to a node in the instant before its unhealthy verdict (AWS's
// connection termination), about one of each per poller per run.
const singleLosses = 3

// signatureMin is how many failures sharing one signature make evidence
// rather than noise. A declared guess: a healthy rollout loses single
// requests of different kinds (a 429 at a listener's close, a reset by the
// NLB's connection termination); three of one kind that a healthy rollout
// does not produce (silence), all on one connection type, is a pattern (the
// measured case: three header timeouts, all on reused connections, from
// connections pinned to an unreachable target, CAPA #5800).
const signatureMin = 3

// silences are the classes of a request nothing answered. A healthy
// rollout's single losses are answers or refusals (a 429 at a listener's
// close, a 503 from a fresh apiserver, a reset by the NLB's connection
// termination); silence is never one of them.
var silences = map[results.ErrorClass]bool{results.ClassHeaderTimeout: true, results.ClassTLSHandshakeTimeout: true,
	results.ClassConnectTimeout: true, results.ClassClientTimeout: true}

func noFailures() Check {
	return Check{Name: "failed samples", Predicts: fmt.Sprintf("none, or at most %d single requests on any backend-connection, not %d or more timeouts sharing one signature", singleLosses, signatureMin), eval: func(f *Figures) outcome {
		evidence := fmt.Sprintf("%d failed of %d samples, at most %d on one backend-connection", f.Failures, f.Samples, f.MaxPoller)
		if o := f.Outcomes; o != nil && f.Failures > 0 && o.Discounted >= f.Failures {
			return outcome{ok: true, share: 1, evidence: evidence + fmt.Sprintf("; all of them inside %d window(s) where the measuring side was unreliable (discounted)", f.UnreliableWindows)}
		}
		if f.Signature != "" && f.Failures >= signatureMin {
			var class results.ErrorClass
			for c := range f.Classes {
				class = c
			}
			if silences[class] {
				return outcome{ok: false, share: 1 - ratio(f.Failures, f.Samples),
					evidence: evidence + "; all " + fmt.Sprint(f.Failures) + " share one signature (" + f.Signature + "): a pattern, not single losses"}
			}
		}
		return outcome{ok: f.MaxPoller <= singleLosses, share: 1 - ratio(f.Failures, f.Samples), evidence: evidence}
	}}
}

// notAnswered asks for a share of failures that were written and left
// without an answer (see Figures.Unanswered).
func notAnswered(min float64) Check {
	return Check{Name: "unanswered", Predicts: fmt.Sprintf("at least %s of failures sent and never answered (header timeouts, or cut after waiting)", pct(min)), eval: func(f *Figures) outcome {
		s := ratio(f.Unanswered, f.Failures)
		return outcome{ok: s >= min, share: s, evidence: fmt.Sprintf("%s of failures sent and never answered (%d of %d: header-timeout=%d, the rest reset/eof after waiting %s or more; all: %s)",
			pct(s), f.Unanswered, f.Failures, f.Classes[results.ClassHeaderTimeout], f.HeaderTimeout/10, f.classList())}
	}}
}

func classes(min float64, cs ...results.ErrorClass) Check {
	return Check{Name: "error classes", Predicts: fmt.Sprintf("at least %s of failures %s", pct(min), classNames(cs)), eval: func(f *Figures) outcome {
		var n int64
		for _, c := range cs {
			n += f.Classes[c]
		}
		s := ratio(n, f.Failures)
		return outcome{ok: s >= min, share: s, evidence: fmt.Sprintf("%s of failures %s (%d of %d; all: %s)", pct(s), classNames(cs), n, f.Failures, f.classList())}
	}}
}

// silentHandshakes asks for a share of connections that were accepted and
// then never answered the TLS handshake (or never connected), beside a
// wider classes check.
func silentHandshakes(min float64) Check {
	c := classes(min, results.ClassTLSHandshakeTimeout, results.ClassConnectTimeout)
	c.Name = "silent handshakes"
	return c
}

// answeredPerNode asks for failures answered with cs (503, 429) at least
// once per rolled node: a mechanism that sends traffic to every restarted
// apiserver before it is ready makes each of them answer some. A count,
// not a share: the share of such answers among all failures depends on
// how long each apiserver takes from serving to ready against how long
// the LB keeps routing to a closed listener, which the mechanism does not
// fix (on the lab's fast scale with its real aggregated servers, 11-13%
// of failures in three runs; core paths are served before ready, so only
// the aggregated and CRD paths answer 503 then).
func answeredPerNode(cs ...results.ErrorClass) Check {
	return Check{Name: "answered failures", Predicts: fmt.Sprintf("at least one failure a rolled node answered %s", classNames(cs)), eval: func(f *Figures) outcome {
		var n int64
		for _, c := range cs {
			n += f.Classes[c]
		}
		nodes := int64(f.RolledNodes)
		if nodes == 0 {
			nodes = 3
		}
		return outcome{ok: n >= nodes, share: ratio(n, f.Failures),
			evidence: fmt.Sprintf("%d failures answered %s, %d nodes rolled (%s of failures)", n, classNames(cs), nodes, pct(ratio(n, f.Failures)))}
	}}
}

func connectionShare(conn results.ConnectionType, min float64, required bool) Check {
	return Check{Name: "connections", Predicts: fmt.Sprintf("at least %s of failures on %s connections", pct(min), conn), Required: required, eval: func(f *Figures) outcome {
		s := ratio(f.ByConn[conn], f.Failures)
		return outcome{ok: s >= min, share: s, evidence: fmt.Sprintf("%s of failures on %s connections (%d of %d)", pct(s), conn, f.ByConn[conn], f.Failures)}
	}}
}

func quorumOnly() Check {
	return Check{Name: "cache vs quorum", Predicts: "quorum reads fail, watch-cache reads (cache-*) do not", Required: true, eval: func(f *Figures) outcome {
		if !f.HasCache {
			return outcome{missing: MissingCache}
		}
		s := 1 - ratio(f.CacheFailures, f.Failures)
		return outcome{ok: f.CacheFailures*20 <= f.Failures, share: s,
			evidence: fmt.Sprintf("%d of %d failures on cache-* pollers", f.CacheFailures, f.Failures)}
	}}
}

func cacheToo() Check {
	return Check{Name: "cache vs quorum", Predicts: "cache-* pollers fail too (below storage: routing or the network)", eval: func(f *Figures) outcome {
		if !f.HasCache {
			return outcome{missing: MissingCache}
		}
		s := ratio(f.CacheFailures, f.Failures)
		return outcome{ok: s >= 0.15, share: s, evidence: fmt.Sprintf("%d of %d failures on cache-* pollers", f.CacheFailures, f.Failures)}
	}}
}

// everyBackend is the prediction of a mechanism below the apiservers'
// handlers (the LB, the listener): it cannot tell core from aggregated
// paths, so kube-api fails as the aggregated backends do.
func everyBackend() Check {
	return Check{Name: "core vs aggregated", Predicts: "kube-api fails as openshift-api/oauth-api do (the fault is below the request's path)", eval: func(f *Figures) outcome {
		if !f.HasAggregated || !f.HasCore {
			return outcome{missing: MissingAggregated}
		}
		core := f.Failures - f.AggregatedFailures
		s := ratio(core, f.Failures)
		return outcome{ok: s >= 0.1, share: s, evidence: fmt.Sprintf("%d of %d failures on kube-api pollers, %d on openshift-api/oauth-api ones", core, f.Failures, f.AggregatedFailures)}
	}}
}

func aggregatedOnly() Check {
	return Check{Name: "core vs aggregated", Predicts: "openshift-api/oauth-api fail, kube-api does not", Required: true, eval: func(f *Figures) outcome {
		if !f.HasAggregated || !f.HasCore {
			return outcome{missing: MissingAggregated}
		}
		s := ratio(f.AggregatedFailures, f.Failures)
		return outcome{ok: s >= 0.9, share: s, evidence: fmt.Sprintf("%d of %d failures on openshift-api/oauth-api pollers, %d on kube-api ones", f.AggregatedFailures, f.Failures, f.Failures-f.AggregatedFailures)}
	}}
}

func fewPerPoller(perNode int64) Check {
	return Check{Name: "failures per poller", Predicts: fmt.Sprintf("at most %d per reused poller per rolled node", perNode), eval: func(f *Figures) outcome {
		nodes := int64(f.RolledNodes)
		if nodes == 0 {
			nodes = 3
		}
		ok := f.MaxReusedPoller <= perNode*nodes && f.MaxReusedPoller > 0
		return outcome{ok: ok, share: 1, evidence: fmt.Sprintf("at most %d failures on one reused poller, %d nodes rolled", f.MaxReusedPoller, nodes)}
	}}
}

func phases(min float64, ps ...string) Check {
	return Check{Name: "rollout phase", Predicts: fmt.Sprintf("at least %s of failures while their node is %s", pct(min), strings.Join(ps, "/")), eval: func(f *Figures) outcome {
		if !f.Timeline {
			return outcome{missing: MissingTimeline}
		}
		// The phase of the apiserver failed requests went to, when known;
		// otherwise that of the node being rolled when each interval began.
		counts, what, served := f.ServedPhases, "failed requests' apiservers", true
		if len(counts) == 0 {
			counts, what, served = f.Phases, "intervals' rolled nodes", false
		}
		var n, total int64
		for p, c := range counts {
			total += c
			for _, want := range ps {
				if p == want {
					n += c
				}
			}
		}
		s := ratio(n, total)
		evidence := fmt.Sprintf("%s of %s %s (%d of %d; all: %s)", pct(s), what, strings.Join(ps, "/"), n, total, countList(counts))
		if served {
			evidence += known(f, total)
		}
		return outcome{ok: s >= min, share: s, evidence: evidence}
	}}
}

// sigterm asks for a share of failed requests sent within the LB's
// detection after their apiserver's node began terminating (early), or
// later in its termination and restart (late).
func sigterm(min float64, early bool) Check {
	key, words := "after-detection", "later than the LB's detection after their node's SIGTERM, before it was ready again"
	if early {
		key, words = "within-detection", "within the LB's detection after their node's SIGTERM"
	}
	return Check{Name: "offset from SIGTERM", Predicts: fmt.Sprintf("at least %s of failed requests %s", pct(min), words), eval: func(f *Figures) outcome {
		if !f.Timeline {
			return outcome{missing: MissingTimeline}
		}
		if !f.HasServedBy {
			return outcome{missing: MissingServedBy}
		}
		var total int64
		for _, n := range f.AfterSIGTERM {
			total += n
		}
		s := ratio(f.AfterSIGTERM[key], total)
		return outcome{ok: s >= min, share: s, evidence: fmt.Sprintf("%s of failed requests %s (%s; detection %s, %s)%s", pct(s), words, countList(f.AfterSIGTERM), f.Detection, f.DetectionFrom, known(f, total))}
	}}
}

// lbVerdict asks when the LB judged each rolled node unhealthy, from its
// resets of established connections: in time (within its detection after
// SIGTERM, /readyz failing as the apiserver drains) or only later (a check
// that cannot see the drain, such as TCP connect).
func lbVerdict(min float64, inTime bool) Check {
	words := "the LB judged at least %s of rolled nodes unhealthy only later than its detection after their SIGTERM, or never (no reset of their connections until then)"
	if inTime {
		words = "the LB judged at least %s of rolled nodes unhealthy within its detection after their SIGTERM (it reset their connections then)"
	}
	return Check{Name: "LB verdict", Predicts: fmt.Sprintf(words, pct(min)), eval: func(f *Figures) outcome {
		if !f.HasLBVerdicts {
			return outcome{missing: MissingLBVerdicts}
		}
		var total int64
		for _, n := range f.LBVerdicts {
			total += n
		}
		n := f.LBVerdicts["within-detection"]
		if !inTime {
			n = total - n
		}
		s := ratio(n, total)
		return outcome{ok: s >= min && total > 0, share: s, evidence: fmt.Sprintf("%s of rolled nodes (%s; detection %s)", pct(s), countList(f.LBVerdicts), f.Detection)}
	}}
}

func servedByRolled(min float64) Check {
	return Check{Name: "apiserver", Predicts: fmt.Sprintf("at least %s of failed requests went to the node being rolled", pct(min)), eval: func(f *Figures) outcome {
		if !f.HasServedBy {
			return outcome{missing: MissingServedBy}
		}
		s := ratio(f.ToRolled, f.ToRolled+f.ToOther)
		return outcome{ok: s >= min, share: s, evidence: fmt.Sprintf("%s of failed requests went to the rolled node (%d of %d; %s)%s", pct(s), f.ToRolled, f.ToRolled+f.ToOther, countList(f.Servers), known(f, f.ToRolled+f.ToOther))}
	}}
}

// known says, when a figure on the failed requests' apiservers rests on
// fewer than all of them, how many it rests on: the lab LB's records and
// attribution name the apiserver of only some (a refused request reaches
// none, so its audit log cannot).
func known(f *Figures, n int64) string {
	if n >= f.Failures {
		return ""
	}
	return fmt.Sprintf("; the apiserver is known for %d of %d failed requests", n, f.Failures)
}

func servedByOne(min float64) Check {
	return Check{Name: "apiserver", Predicts: fmt.Sprintf("at least %s of failed requests went to one apiserver", pct(min)), eval: func(f *Figures) outcome {
		if !f.HasServedBy {
			return outcome{missing: MissingServedBy}
		}
		top, total := topCount(f.Servers)
		s := ratio(top, total)
		return outcome{ok: s >= min && total > 0, share: s, evidence: fmt.Sprintf("%s of failed requests went to one apiserver (%s)", pct(s), countList(f.Servers))}
	}}
}

func servedBySpread(atLeast int) Check {
	return Check{Name: "apiserver", Predicts: fmt.Sprintf("failed requests went to %d or more apiservers, none taking over 70%%", atLeast), eval: func(f *Figures) outcome {
		if !f.HasServedBy {
			return outcome{missing: MissingServedBy}
		}
		top, total := topCount(f.Servers)
		s := 1 - ratio(top, total)
		ok := len(f.Servers) >= atLeast && ratio(top, total) <= 0.7
		return outcome{ok: ok, share: s, evidence: fmt.Sprintf("failed requests went to %d apiserver(s) (%s)", len(f.Servers), countList(f.Servers))}
	}}
}

func verdicts(min float64, required bool, vs ...string) Check {
	return Check{Name: "attribution", Predicts: fmt.Sprintf("at least %s of attributed failures %s", pct(min), strings.Join(vs, "/")), Required: required, eval: func(f *Figures) outcome {
		if !f.HasAttribution {
			return outcome{missing: MissingAttribution}
		}
		var n, total int64
		for v, c := range f.Verdicts {
			if v == VerdictUnknown {
				continue
			}
			total += c
			for _, want := range vs {
				if v == want {
					n += c
				}
			}
		}
		if total == 0 {
			return outcome{missing: "attribution has only unknown verdicts"}
		}
		s := ratio(n, total)
		return outcome{ok: s >= min, share: s, evidence: fmt.Sprintf("%s of attributed failures %s (%d of %d; all: %s)", pct(s), strings.Join(vs, "/"), n, total, countList(f.Verdicts))}
	}}
}

func topCount(m map[string]int64) (top, total int64) {
	for _, n := range m {
		total += n
		if n > top {
			top = n
		}
	}
	return top, total
}

// countList renders counts as "a=3 b=1", largest first.
func countList(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := k
		if name == "" {
			name = "none"
		}
		parts[i] = fmt.Sprintf("%s=%d", name, m[k])
	}
	return strings.Join(parts, " ")
}

// storageKinds are the signal kinds that say etcd or CPU was under
// pressure, in the order checks name them.
var storageKinds = []results.SignalKind{results.SignalEtcdSlowApply, results.SignalEtcdWALFsync, results.SignalEtcdBackendCommit,
	results.SignalEtcdLeaderChange, results.SignalEtcdRequestLatency, results.SignalNodeCPU}

// signalEvidence says which storage and CPU signals were seen near the
// failures, from which sources, and which kinds the file lacked.
func signalEvidence(sf *SignalFigures) (n int, text string) {
	var seen, absent []string
	has := map[results.SignalKind]bool{}
	for _, k := range sf.Kinds {
		has[k] = true
	}
	for _, k := range storageKinds {
		switch {
		case sf.Pressure[k] > 0:
			n += sf.Pressure[k]
			seen = append(seen, fmt.Sprintf("%s %d", k, sf.Pressure[k]))
		case !has[k]:
			absent = append(absent, string(k))
		}
	}
	text = fmt.Sprintf("%d of %d signals within %.0f s of a failure", sf.Near, sf.Read, SignalWindow.Seconds())
	if len(seen) > 0 {
		text += "; pressure: " + strings.Join(seen, ", ") + " (" + strings.Join(sf.Sources, ", ") + ")"
	} else {
		text += "; no etcd or CPU pressure among them"
	}
	if len(absent) > 0 {
		text += "; not measured: " + strings.Join(absent, ", ")
	}
	if sf.Unreliable > 0 {
		text += fmt.Sprintf("; the measuring side itself failed %d time(s) near them (network-liveness): discount these failures", sf.Unreliable)
	}
	return n, text
}

// storagePressure is what a stall of something every apiserver shares
// (etcd, the control-plane nodes) predicts: etcd or CPU signals beside the
// failures (TRT reads etcd "apply took too long", slow fdatasync and CPU
// alerts as the confirming evidence: openshift-eng/ai-helpers
// plugins/ci/skills/analyze-disruption references/timeline-analysis.md).
func storagePressure() Check {
	return Check{Name: "etcd/CPU signals", Predicts: "etcd or CPU pressure beside the failures (server metrics or CI signals)", eval: func(f *Figures) outcome {
		if f.Signals == nil {
			return outcome{missing: MissingSignals}
		}
		n, text := signalEvidence(f.Signals)
		return outcome{ok: n > 0, share: ratio(int64(n), int64(max(f.Signals.Near, 1))), evidence: text}
	}}
}

// noStoragePressure is what a load-balancer mechanism predicts: the
// servers and etcd were well while the LB routed requests wrong.
func noStoragePressure() Check {
	return Check{Name: "etcd/CPU signals", Predicts: "no etcd or CPU pressure beside the failures (the servers were well)", eval: func(f *Figures) outcome {
		if f.Signals == nil {
			return outcome{missing: MissingSignals}
		}
		n, text := signalEvidence(f.Signals)
		return outcome{ok: n == 0, share: 1 - ratio(int64(n), int64(max(f.Signals.Near, 1))), evidence: text}
	}}
}

// everyVariant is the blast radius of a shared stall: every variant of
// every backend (new and reused, cached and not) fails; TRT reads all four
// variants failing together as control-plane resource exhaustion.
func everyVariant() Check {
	return Check{Name: "blast radius", Predicts: "every variant of every backend fails (new and reused, cache-* and quorum)", eval: func(f *Figures) outcome {
		if !f.HasCache {
			return outcome{missing: MissingCache}
		}
		s := ratio(int64(f.FailedPollers), int64(f.Pollers))
		return outcome{ok: f.Pollers > 0 && f.FailedPollers == f.Pollers, share: s, evidence: fmt.Sprintf("%d of %d backend-connections failed", f.FailedPollers, f.Pollers)}
	}}
}

// relistStorm is what a control plane exhausted by its own clients predicts:
// the watches cut with the rolled apiserver re-list on the survivors, and the
// load's own writes, sent to the same survivors, fail beside the pollers'
// requests (a write is retried by nothing in the load, so a failure shows).
func relistStorm() Check {
	return Check{Name: "load re-lists", Predicts: "the load re-listed on the surviving apiservers and its own writes failed beside the failures", eval: func(f *Figures) outcome {
		if f.Load == nil {
			return outcome{missing: MissingLoad}
		}
		var relists, writes, writeErrors int
		for _, a := range f.Load.APIServers {
			relists += a.Relists
			writes += a.Writes
			writeErrors += a.WriteErrors
		}
		return outcome{ok: relists > 0 && writeErrors > 0, share: ratio(int64(writeErrors), int64(max(writes, 1))), evidence: LoadLine(f.Load)}
	}}
}

// LoadLine is the load's figures in one line, as diagnose cites them: per
// apiserver its re-lists (and the slowest) and failed writes, the load
// process's CPU and the machine's load average, so a reader can weigh a
// stall of the apiservers against one of the machine.
func LoadLine(l *results.LoadRecord) string {
	if l == nil {
		return ""
	}
	var per []string
	for _, a := range l.APIServers {
		per = append(per, fmt.Sprintf("%s %d re-lists (slowest %.0f ms), %d of %d writes failed (slowest %.0f ms)", a.Name, a.Relists, a.RelistMaxMS, a.WriteErrors, a.Writes, a.WriteMaxMS))
	}
	line := fmt.Sprintf("%s (scaled down by %d: %d clients, %d watches, %d objects)", l.Name, l.ScaleDown, l.Clients, l.Watches, l.Objects)
	if len(per) > 0 {
		line += ": " + strings.Join(per, "; ")
	}
	line += fmt.Sprintf("; load process CPU %.1f s, machine load average %.1f on %d cores", l.CPUSeconds, l.LoadAvg1, l.Cores)
	return line
}
