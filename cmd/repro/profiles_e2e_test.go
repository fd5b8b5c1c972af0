package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

// The fault profiles, end to end: each runs one real rollout on the lab with
// `repro run --lab-profile P` (so the flags are exercised as a user types
// them) and holds the measured disruption against what the injected
// mechanism predicts. They live here, next to the other binary-driven lab
// runs, because they need the built repro and its results folder.
//
// Short runs on the fast time scale (AWS durations / 10: shutdown delay
// 12.9 s, LB detection 1 s x 2, probe timeout 3.4 s, so 2.72 s per phase):
// baseline 3 s, cool-down 5 s, --min-ready-time 2 s, one iteration: about
// 70-85 s each. Each test restates its profile's prediction on that scale
// and on the load balancer that ran: repro run re-runs itself in a network
// namespace where it can (as root), so the kernel LB (pass-through, as an
// NLB) is the one these runs measure there, the Go proxy elsewhere.

// profileRun is one measured rollout on a profile.
type profileRun struct {
	dir string
	// header is the run's per-phase timeout (4/5 of its probe timeout):
	// a request unanswered this long fails with a header timeout.
	header time.Duration
	// lab holds the lab's effective settings, as run.json records them.
	lab    labRecord
	a      *report.Analysis
	faults []results.LabFault
	places []report.Placement
}

func runProfile(t *testing.T, profile string, extra ...string) profileRun {
	t.Helper()
	return runProfileExit(t, profile, 0, extra...)
}

// runProfileExit is runProfile for a run expected to exit with wantCode.
func runProfileExit(t *testing.T, profile string, wantCode int, extra ...string) profileRun {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a lab rollout")
	}
	labDir, labArgs := labDirArgs(t)
	out := filepath.Join(t.TempDir(), "results")
	keepIfFailed(t, out, labDir)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	args := append([]string{"run", "--scenario", "apiserver-rollout", "--out", out, "--lab-profile", profile,
		"--baseline", "3s", "--cool-down", "5s", "--min-ready-time", "2s"}, labArgs...)
	started := time.Now()
	res := repro(t, ctx, append(args, extra...)...)
	t.Logf("%s: run took %s", profile, time.Since(started).Round(time.Second))
	noLabProcesses(t, labDir)
	if res.code != wantCode {
		t.Fatalf("exit %d, want %d", res.code, wantCode)
	}
	return loadProfileRun(t, out, profile)
}

// loadProfileRun reads a profile's results folder (a run's, or a sweep
// point's) with the checks every profile run must pass.
func loadProfileRun(t *testing.T, out, profile string) profileRun {
	t.Helper()
	r := readRun(t, out)
	pr := profileRun{dir: out}
	remarshal(t, r.Extra.Lab, &pr.lab)
	if pr.lab.Profile != profile || len(pr.lab.Knobs) != len(lab.KnobKeys()) || pr.lab.Timing != lab.TimingFast.Name {
		t.Fatalf("run.json lab settings: %+v, want profile %s, fast timing and every knob", pr.lab, profile)
	}
	if want, _, _ := lab.ResolveLB(lab.LBAuto); pr.lab.LB != lab.LBKernel && pr.lab.LB != lab.LBProxy {
		t.Fatalf("run.json lab lb %q, want kernel or proxy", pr.lab.LB)
	} else if os.Geteuid() == 0 && pr.lab.LB != lab.LBKernel {
		// As root repro can always make a network namespace.
		t.Fatalf("run.json lab lb %q, want kernel (root; this process would pick %s)", pr.lab.LB, want)
	}
	t.Logf("%s: %s load balancer", profile, pr.lab.LB)
	probe := r.Settings.ProbeTimeout.D()
	if want := lab.TimingFast.Scale(prober.DefaultProbeTimeout); probe != want {
		t.Fatalf("run.json probe timeout %v, want origin's %v on the fast scale, %v", probe, prober.DefaultProbeTimeout, want)
	}
	pr.header = probe * 4 / 5
	pr.faults = r.Extra.LabFaults
	var err error
	if pr.a, err = report.LoadSamples(filepath.Join(out, results.SamplesFile)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, results.PlacementsFile))
	if err != nil {
		t.Fatal(err)
	}
	var pf struct {
		Placements []report.Placement `json:"placements"`
	}
	if err := json.Unmarshal(b, &pf); err != nil {
		t.Fatal(err)
	}
	pr.places = pf.Placements
	for _, p := range pr.a.Pollers {
		t.Logf("%-34s failures %3d disrupted %6dms classes %v", p.Name, p.Failures, p.Disrupted.Milliseconds(), p.Classes)
	}
	for _, p := range pr.places {
		t.Logf("  %s %s %dms %s served by %s", p.Name, p.Class, int(p.DurationMs), p.Where, p.ServedBy)
	}
	return pr
}

// labRecord is what repro run records of its lab in run.json.
type labRecord struct {
	Profile string            `json:"profile"`
	Timing  string            `json:"timing"`
	Knobs   map[string]string `json:"knobs"`
	// LB is the load balancer that ran: kernel or proxy.
	LB string `json:"lb"`
}

// kernel reports whether the run's load balancer was the kernel one.
func (l labRecord) kernel() bool { return l.LB == lab.LBKernel }

// newConnClasses fails when a new-connection poller failed with a class
// outside allowed.
func newConnClasses(t *testing.T, pr profileRun, allowed ...results.ErrorClass) {
	t.Helper()
	for _, p := range pr.a.Pollers {
		if p.Connection != results.NewConnections {
			continue
		}
		for c, n := range p.Classes {
			if !slices.Contains(allowed, c) {
				t.Errorf("%s: %d failures of class %s, the %s load balancer predicts only %v on new connections", p.Name, n, c, pr.lab.LB, allowed)
			}
		}
	}
}

// newConnFailures sums the new-connection pollers' failures of the given
// classes, or all their failures when none is given.
func newConnFailures(pr profileRun, classes ...results.ErrorClass) int64 {
	n := int64(0)
	for _, p := range pr.a.Pollers {
		if p.Connection != results.NewConnections {
			continue
		}
		if len(classes) == 0 {
			n += p.Failures
		}
		for _, c := range classes {
			n += p.Classes[c]
		}
	}
	return n
}

// knob returns a duration knob's effective value.
func (l labRecord) knob(t *testing.T, key string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(l.Knobs[key])
	if err != nil {
		t.Fatalf("run.json lab knob %s=%q: %v", key, l.Knobs[key], err)
	}
	return d
}

func remarshal(t *testing.T, in, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

// interval is the prober's default poll interval: a failure interval can
// only be measured to within it.
const interval = prober.DefaultInterval

// stalled are the classes of a request sent to an apiserver that does not
// answer: a header timeout, or the probe's whole timeout when the request
// was written late (a redial on a loaded machine), so that the 4/5 header
// timeout had not run out yet; sentUnanswered checks the latter.
var stalled = []results.ErrorClass{results.ClassHeaderTimeout, results.ClassClientTimeout}

// sentUnanswered fails when a client-timeout sample is not a request that
// was written and never answered.
func sentUnanswered(t *testing.T, pr profileRun) {
	t.Helper()
	if _, err := results.ReadJSONL(filepath.Join(pr.dir, results.SamplesFile), func(line []byte) error {
		var s results.Sample
		if err := s.UnmarshalJSON(line); err != nil {
			return err
		}
		if s.ErrorClass == results.ClassClientTimeout && (s.Phases.WroteRequest == 0 || s.Phases.FirstByte != 0) {
			t.Errorf("%s-%s seq %d: client-timeout with request written at %v and first byte at %v, want written and never answered", s.Backend, s.Connection, s.Seq, s.Phases.WroteRequest, s.Phases.FirstByte)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// onlyClasses fails when any poller failed with a class outside allowed.
func onlyClasses(t *testing.T, pr profileRun, allowed ...results.ErrorClass) {
	t.Helper()
	for _, p := range pr.a.Pollers {
		for c, n := range p.Classes {
			ok := false
			for _, a := range allowed {
				ok = ok || c == a
			}
			if !ok {
				t.Errorf("%s: %d failures of class %s, the mechanism predicts only %v", p.Name, n, c, allowed)
			}
		}
	}
}

// servedByRolledNode fails when a failed request went to an apiserver other
// than the node being rolled at that moment: these mechanisms act on the
// rolled node's traffic only.
func servedByRolledNode(t *testing.T, pr profileRun) {
	t.Helper()
	for _, p := range pr.places {
		if p.ServedBy == "" || p.Node == "" {
			continue
		}
		for _, part := range strings.Split(p.ServedBy, ",") {
			if !strings.HasPrefix(strings.TrimSpace(part), p.Node) {
				t.Errorf("%s at %s: failed requests went to %s, not only to the rolled %s", p.Name, p.From.Format("15:04:05.000"), p.ServedBy, p.Node)
			}
		}
	}
}

func TestProfileEtcdStall(t *testing.T) {
	pr := runProfile(t, "etcd-stall", "--attribute")
	checkAttributionEtcdStall(t, pr.dir)
	checkDiagnosis(t, pr.dir, "etcd-stall")
	if len(pr.faults) != 1 || pr.faults[0].Node != "master-1" || len(pr.faults[0].Nodes) != 1 {
		t.Fatalf("fault windows %+v, want one stall of master-1's link", pr.faults)
	}
	f := pr.faults[0]
	// Prediction (fast scale): the 6 s stall less the 2.72 s header
	// timeout, 3.28 s in which requests routed to master-1 are not
	// answered in time; /readyz sees the stall only when a check times out
	// (3 s) and the LB takes 1-3 s more, so master-1 stays in service
	// through most of the window, and the requests still waiting when it
	// is taken out are reset (connection termination).
	window := f.To.Sub(f.From) - pr.header
	if window <= 0 {
		t.Fatalf("the %v stall is shorter than the %v header timeout: nothing to measure", f.To.Sub(f.From), pr.header)
	}
	newFailures := int64(0)
	for _, p := range pr.a.Pollers {
		if p.Connection == results.NewConnections {
			newFailures += p.Classes[results.ClassHeaderTimeout] + p.Classes[results.ClassReset] + p.Classes[results.ClassEOF]
		}
		// Only master-1's share of the requests fails, so no poller can
		// lose more than the window plus the etcd client's resume (1 s).
		if p.Disrupted > window+time.Second {
			t.Errorf("%s: %v disrupted, more than the %v window", p.Name, p.Disrupted, window)
		}
	}
	for _, iv := range pr.a.Intervals {
		if iv.Class == results.ClassHeaderTimeout && (iv.From.Before(f.From.Add(-interval)) || iv.From.After(f.From.Add(window+time.Second))) {
			t.Errorf("%s: header timeout at %s outside the stall's %s + %v", iv.Name, iv.From.Format("15:04:05.000"), f.From.Format("15:04:05.000"), window)
		}
	}
	// New connections keep being routed to master-1 until the LB takes it
	// out: in 3.28 s the six new-connection pollers send ~200 requests, a
	// third of them to master-1; each either times out on headers or, if
	// still waiting when the LB judges master-1 unhealthy (its etcd check
	// times out after 3 s, then two failed checks), is reset by AWS's
	// connection termination (measured: 14 header timeouts and 1 reset in
	// one run, 16 and 47 in another).
	if newFailures < 10 {
		t.Errorf("%d failed requests on new connections, want the LB to have kept sending them to the stalled master-1", newFailures)
	}
	for _, p := range pr.places {
		if p.Class == string(results.ClassHeaderTimeout) && !strings.HasPrefix(p.ServedBy, "master-1") {
			t.Errorf("%s: header timeouts served by %q, want master-1", p.Name, p.ServedBy)
		}
	}
	// Besides the stall: the healthy lab's costs, a 429 at a listener's
	// close and what AWS's connection termination does to a request on a
	// connection the LB routed to the rolled node in the instant before
	// its unhealthy verdict (measured once: a reset while writing the
	// request, not-received).
	onlyClasses(t, pr, append(append([]results.ErrorClass{results.ClassHTTP429}, stalled...), terminated...)...)
	sentUnanswered(t, pr)
}

// terminated are the classes of a request on a connection the load
// balancer resets when its target turns unhealthy (AWS's connection
// termination, the lab's default).
var terminated = []results.ErrorClass{results.ClassReset, results.ClassEOF}

// refusals are what a client sees of a connection the LB sent to a port
// that refuses: the reset cuts the TLS handshake or the request.
var refusals = []results.ErrorClass{results.ClassReset, results.ClassEOF, results.ClassTLS, results.ClassConnectRefused}

func TestProfileLateDeregistration(t *testing.T) {
	pr := runProfile(t, "late-deregistration")
	checkDiagnosis(t, pr.dir, "late-deregistration")
	checkLBHealthRecords(t, pr.dir)
	checkControlSamples(t, pr.dir)
	// Routed to the rolled node between its listener closing (the 12.9 s
	// shutdown delay after SIGTERM) and 14 s after the LB marked it
	// unhealthy (1-3 s after SIGTERM: two failed checks 1 s apart): at
	// most 14 + 3 - 12.9 = 4.1 s per node, a share of the requests; its
	// successor may already answer 503 or 429.
	late := pr.lab.knob(t, "lb-late-deregistration") + 3*pr.lab.knob(t, "lb-health-interval") - pr.lab.knob(t, "shutdown-delay")
	// Its successor binds its port when configured and serves it only
	// later: a handshake routed there meanwhile waits, and times out if
	// serving starts too late (longer on a loaded machine).
	onlyClasses(t, pr, append(refusals, results.ClassHTTP5xx, results.ClassHTTP429, results.ClassTLSHandshakeTimeout)...)
	servedByRolledNode(t, pr)
	total := int64(0)
	for _, p := range pr.a.Pollers {
		total += p.Failures
		if p.Disrupted > 3*(late+interval) {
			t.Errorf("%s: %v disrupted, more than three nodes' late windows of %v", p.Name, p.Disrupted, late)
		}
	}
	if total == 0 {
		t.Error("no failure: late routing to a stopped apiserver must show")
	}
}

// readLBResets counts connections the LB closed with a reset on a health
// transition.
func readLBResets(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	if _, err := results.ReadJSONL(filepath.Join(dir, results.LBConnectionsFile), func(line []byte) error {
		var e struct {
			Event    string `json:"event"`
			ClosedBy string `json:"closedBy"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		if e.Event == "close" && e.ClosedBy == "reset" {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestProfileBlackhole(t *testing.T) {
	pr := runProfile(t, "blackhole", "--attribute")
	checkAttributionBlackhole(t, pr.dir)
	checkDiagnosis(t, pr.dir, "blackhole")
	// A reused connection the stopping apiserver closed is kept open towards
	// the client: its next request times out waiting for headers. New
	// connections late-routed there go unanswered in the TLS handshake:
	// the 2.72 s handshake timeout (fast scale) ends them long before the
	// 15 s blackhole does, so they are tls-handshake-timeout; one sent in
	// the window's last 2.72 s is reset when it ends.
	//
	// Through the kernel LB (pass-through) the SYN itself is dropped: new
	// connections late-routed there fail their connect after the dial's
	// 2.72 s (connect-timeout), and nothing else.
	onlyClasses(t, pr, append(refusals, results.ClassTLSHandshakeTimeout, results.ClassConnectTimeout, results.ClassHeaderTimeout, results.ClassHTTP5xx, results.ClassHTTP429)...)
	servedByRolledNode(t, pr)
	if pr.lab.kernel() {
		// A refusal can still come through in the ~5 ms before the kernel
		// LB's stop watcher starts the drop window, a connection accepted
		// in the instant the listener closed is closed unanswered (eof,
		// reset; measured once: written 2 ms before the listener closed;
		// when the drop window began before that close reached the client,
		// the close is dropped too and the request waits for headers:
		// header-timeout, measured once on a loaded machine), and the
		// successor answers 503/429 as through the proxy. The drop window
		// lasts seconds, those instants milliseconds: the connect timeouts
		// are most of it.
		newConnClasses(t, pr, results.ClassConnectTimeout, results.ClassConnectRefused, results.ClassEOF, results.ClassReset, results.ClassHeaderTimeout, results.ClassHTTP5xx, results.ClassHTTP429)
		timeouts := newConnFailures(pr, results.ClassConnectTimeout)
		all := newConnFailures(pr) - newConnFailures(pr, results.ClassHTTP5xx, results.ClassHTTP429)
		if timeouts == 0 || timeouts*2 <= all {
			t.Errorf("%d connect timeouts of %d unanswered new-connection failures: the kernel LB's drop rules did not swallow late-routed SYNs", timeouts, all)
		}
		return
	}
	//
	// Measured: kube-apiserver answers "Connection: close" while it drains
	// (shutdown delay), so HTTP/1.1 keep-alive pollers leave the stopping
	// apiserver seconds before its packets are dropped, and reused
	// connections are not hit; the header timeouts a blackhole gives on
	// reused connections need a connection still open at the stop
	// (lab/lb TestBlackholeDropsNewAndEstablishedConnectionsToAStoppedTarget).
	tlsTimeouts := int64(0)
	for _, p := range pr.a.Pollers {
		if p.Connection == results.NewConnections {
			tlsTimeouts += p.Classes[results.ClassTLSHandshakeTimeout]
			if p.Classes[results.ClassHeaderTimeout] > 0 {
				t.Errorf("%s: header timeouts on new connections, which a blackhole cannot give (the apiserver never saw them)", p.Name)
			}
		}
	}
	if tlsTimeouts == 0 {
		t.Error("no TLS handshake timeout on new connections: late-routed connections were not blackholed")
	}
}

// checkShortShutdownDelay also proves --max-disruption: the gap is real
// and short, so a 1 ms limit must fail the run with exit 3 and a failing
// junit case.
//
// The short-shutdown-delay profile's rollout is the 0 s point of
// TestSweepShortShutdownDelay (run with --max-disruption 1ms --attribute),
// which calls this: one rollout fewer in CI.
func checkShortShutdownDelay(t *testing.T, pr profileRun) {
	t.Helper()
	checkAttributionShortShutdownDelay(t, pr.dir)
	checkDiagnosis(t, pr.dir, "short-shutdown-delay")
	junit, err := os.ReadFile(filepath.Join(pr.dir, results.JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(junit), "<failure") {
		t.Errorf("junit.xml has no failing test case:\n%s", junit)
	}
	// Refused between the listener closing (at SIGTERM) and the LB's
	// verdict (2 checks 1 s apart, 1-3 s): at most 3 s per node, a share
	// of requests.
	onlyClasses(t, pr, append(refusals, results.ClassHTTP429)...)
	servedByRolledNode(t, pr)
	if pr.lab.kernel() {
		// Pass-through: the stopped node's kernel refuses the SYN itself.
		// Two brief windows at its listener's close give the rest: the
		// 429s WithRetryAfter answers from the delay's end until in-flight
		// requests drained, and a connection accepted in the instant the
		// listener closed (eof, reset). The refusal window is the LB's
		// detection (seconds), those are the drain (milliseconds): the
		// refusals are most of it. Through the proxy there are none.
		newConnClasses(t, pr, results.ClassConnectRefused, results.ClassHTTP429, results.ClassEOF, results.ClassReset)
		refused, all := newConnFailures(pr, results.ClassConnectRefused), newConnFailures(pr)
		if refused*2 <= all {
			t.Errorf("%d of %d new-connection failures connect-refused, want most: the kernel LB passes the SYN to the stopped node", refused, all)
		}
	}
	total := int64(0)
	for _, p := range pr.a.Pollers {
		total += p.Failures
		if p.Disrupted > 3*(3*time.Second+interval) {
			t.Errorf("%s: %v disrupted, more than three detection windows", p.Name, p.Disrupted)
		}
	}
	if total == 0 {
		t.Error("no failure: connections routed to an apiserver that stopped listening must show")
	}
}

func TestProfileEarlyHealthy(t *testing.T) {
	pr := runProfile(t, "early-healthy")
	checkDiagnosis(t, pr.dir, "early-healthy")
	// A restarted apiserver takes traffic from its first accepted connect:
	// 503 before ready, 429 while CRD storage initialises; and, checked by
	// TCP, the stopping one takes traffic after its listener closed until
	// two connects fail (resets).
	// A TCP check passes from the moment the successor binds its port,
	// before it serves it: handshakes routed there wait, as in
	// late-deregistration.
	onlyClasses(t, pr, append(refusals, results.ClassHTTP5xx, results.ClassHTTP429, results.ClassTLSHandshakeTimeout)...)
	servedByRolledNode(t, pr)
	total := int64(0)
	for _, p := range pr.a.Pollers {
		total += p.Failures
	}
	if total == 0 {
		t.Error("no failure: an apiserver in service before it can answer must show")
	}
}

// keepIfFailed copies a failed test's results and lab folders under
// $REPRO_KEEP_FAILED (CI sets it to its artifacts), so a timing-dependent
// failure can be read afterwards instead of rerun.
func keepIfFailed(t *testing.T, dirs ...string) {
	keep := os.Getenv("REPRO_KEEP_FAILED")
	if keep == "" {
		return
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, d := range dirs {
			dst := filepath.Join(keep, t.Name(), filepath.Base(d))
			if err := copyRegular(dst, d); err != nil {
				t.Logf("keeping %s: %v", d, err)
				continue
			}
			t.Logf("kept %s in %s", d, dst)
		}
	})
}

// copyRegular copies the regular files under src to dst, leaving out
// sockets and anything over 64 MiB (etcd's database).
func copyRegular(dst, src string) error {
	return filepath.WalkDir(src, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if info, err := e.Info(); err != nil || !info.Mode().IsRegular() || info.Size() > 64<<20 {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}
