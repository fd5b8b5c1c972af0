package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/net/http/httpproxy"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/awslb"
	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
	"github.com/repro-tools/repro/trigger"
)

// Target is the cluster a session runs against.
type Target struct {
	Config *rest.Config
	// Live is true for a real cluster, false for the lab.
	Live bool
	// Context is the kubeconfig context in use ("" with --server or on the lab).
	Context string
	// Lab holds the lab's settings for run.json (nil on a cluster).
	Lab *results.LabRecord
	// Credentials says where the credentials came from, for the preview
	// and run.json (zero on the lab).
	Credentials results.Credentials
}

// Polling are the pollers' settings.
type Polling struct {
	Backends []prober.Backend
	// Targets are the vantage points polled from (none: the config's
	// server, the external load balancer).
	Targets      []prober.Target
	Interval     time.Duration
	ProbeTimeout time.Duration
	HTTP2        bool
	// AWSLB polls the AWS API load balancers' target health (--aws-lb).
	AWSLB bool
	// Control is a URL outside the cluster polled beside the local control
	// target (--control), "" for none.
	Control string
}

// Session is one measured run: the checks that keep a live run safe and its
// numbers truthful, then the scenario, with the samples and the timeline
// streamed into the results folder. "repro run" and "repro probe" (the
// baseline scenario, no trigger) both go through it; cmd/repro only parses
// flags and prints.
type Session struct {
	// Command is run.json's command: "run" or "probe".
	Command string
	// Args is the command line, for run.json (secrets are redacted).
	Args       []string
	Scenario   Scenario
	Timings    Timings
	Iterations int
	RunID      string
	// Force goes on when preflight finds kube-apiserver not settled.
	Force   bool
	Polling Polling
	// ExtraPermissions are checked with the rollout's before anything
	// changes (attribution's, the vantage points').
	ExtraPermissions []trigger.Permission
	MaxDisruption    time.Duration
	Target           Target
	// Yes is the user's consent, given up front (--yes), to roll out a live
	// cluster.
	Yes bool
	// Confirm, when someone can be asked (a terminal), is asked after the
	// checks and before the first patch of a live rollout, with what is
	// about to be rolled out. Without Yes or Confirm a live rollout stops.
	Confirm func(preview string) (bool, error)
	// Out gets what a user must see before the run: backends that cannot be
	// polled, the preview of a live rollout.
	Out io.Writer
	Log *zap.Logger
	// Progress, if set, starts the live display of the prober's counters.
	// It returns the logger to use while it shows and a function that stops
	// it. total is the planned length, 0 when unknown.
	Progress func(pr *prober.Prober, total time.Duration) (*zap.Logger, func())
	// OnEvent, if set, sees every timeline event (for the live display).
	OnEvent func(results.Event)
	// BeforeFinish, if set, may add to run.json after the pollers stopped
	// and before it is written for the last time.
	BeforeFinish func(*results.Run)
	// DuringRun, if set, starts beside the pollers once the checks passed
	// (the metrics scraper); the function it returns stops it when they stop.
	DuringRun func(ctx context.Context) (stop func())
}

// ErrDeclined is returned when the user answers no to the confirmation.
var ErrDeclined = errors.New("not confirmed; nothing was changed")

// clockCorrectionThreshold is the clock offset above which the rollout's
// server-stamped event times are moved onto our clock: below it, the
// offset is within what a placement claims (tenths of a second).
const clockCorrectionThreshold = 100 * time.Millisecond

// prepared is a session whose checks passed: nothing was changed yet.
type prepared struct {
	s       *Session
	clients *trigger.Clients
	prober  *prober.Prober
	run     *results.Run
	status  trigger.Status
	info    trigger.ClusterInfo
	clock   *results.Clock
	awslb   *awslb.Poller
}

// prepare runs every check before a session changes anything: the cluster
// is reachable, the user may do everything a rollout does
// (SelfSubjectAccessReviews), kube-apiserver is settled, every backend
// answers, the clock offset; and records what could distort the numbers
// (proxy, auth kind, clock) for run.json.
func (s *Session) prepare(ctx context.Context) (*prepared, error) {
	if s.Log == nil {
		s.Log = zap.NewNop()
	}
	if s.Out == nil {
		s.Out = io.Discard
	}
	rc := s.Target.Config
	p := &prepared{s: s}
	var err error
	if p.clients, err = trigger.NewClients(rc); err != nil {
		return nil, err
	}
	auth := AuthKind(rc)
	if auth == "token" {
		s.Log.Warn("the kubeconfig authenticates with a bearer token: on OpenShift it is checked through the oauth-apiserver, and a restarted kube-apiserver starts with a cold token cache, so 401s during a rollout are an authentication outage, not a network one; a client-certificate kubeconfig (the installer's auth/kubeconfig) avoids them")
	}
	if rc.Insecure && s.Target.Live {
		s.Log.Warn("TLS verification is off (insecure-skip-tls-verify): the server's certificate is not checked, so this may not be the cluster you named")
	}
	if p.info, err = trigger.Describe(ctx, p.clients); err != nil {
		return nil, err
	}
	if s.Scenario.Rollout {
		perms := append([]trigger.Permission(nil), trigger.RolloutPermissions...)
		perms = append(perms, s.ExtraPermissions...)
		for _, b := range s.Polling.Backends {
			perms = append(perms, trigger.BackendPermission(b.Path))
		}
		missing, err := trigger.MissingPermissions(ctx, p.clients.Kube, perms)
		if err != nil {
			return nil, err
		}
		if len(missing) > 0 {
			return nil, trigger.MissingError(missing)
		}
		if p.status, p.info, err = trigger.Preflight(ctx, p.clients, s.Force); err != nil {
			return nil, err
		}
		if !p.status.Converged() {
			s.Log.Warn("kube-apiserver is not settled; going on because of --force", zap.String("state", p.status.String()))
		}
	}
	if p.prober, err = s.checkedProber(ctx); err != nil {
		return nil, err
	}
	if c, err := p.prober.MeasureClockOffset(ctx, 25, 45*time.Millisecond); err != nil {
		s.Log.Warn("could not measure the clock offset to the cluster", zap.Error(err))
	} else {
		p.clock = &c
		if c.Offset.Abs() > clockCorrectionThreshold {
			if c.Consistent {
				c.CorrectedEvents = true
				p.clock = &c
				s.Log.Warn("the cluster's clock is off ours; the rollout's event times are corrected by it", zap.String("offset", c.String()))
			} else {
				s.Log.Warn("the cluster's servers disagree about the time by more than 100 ms; placements against their events may be off by that much", zap.String("offset", c.String()))
			}
		}
	}
	proxy, err := ProxyFor(rc, p.prober.Server(), httpproxy.FromEnvironment())
	if err != nil {
		return nil, err
	}

	run := results.NewRun(s.Command, s.Args, time.Now())
	run.Server = p.prober.Server()
	run.Auth, run.Proxy, run.Clock = auth, proxy, p.clock
	if s.Target.Credentials.Source != "" {
		c := s.Target.Credentials
		run.Credentials = &c
	}
	maxDis := results.Duration(s.MaxDisruption)
	run.Settings = results.Settings{
		Interval: results.Duration(s.Polling.Interval), ProbeTimeout: results.Duration(s.Polling.ProbeTimeout),
		Backends: backendNames(s.Polling.Backends), HTTP2: s.Polling.HTTP2, Pollers: p.prober.PollerNames(),
		InFlightBound: prober.InFlightBound(s.Polling.ProbeTimeout, s.Polling.Interval),
		Baseline:      results.Duration(s.Timings.Baseline),
		MaxDisruption: &maxDis,
	}
	x := &run.Extra
	if s.Scenario.Rollout {
		run.Settings.CoolDown = results.Duration(s.Timings.CoolDown)
		run.Settings.FollowTimeout = results.Duration(s.Timings.FollowTimeout)
		run.Settings.Settle = results.Duration(s.Timings.Settle)
		x.Iterations, x.RunID, x.RevisionBefore = s.Iterations, s.RunID, p.status.LatestAvailableRevision
	}
	x.Scenario = s.Scenario.Name
	info := p.info
	x.Cluster = &info
	if s.Target.Live {
		x.Target, x.Context = "cluster", s.Target.Context
	} else {
		x.Target, x.Lab = "lab", s.Target.Lab
	}
	p.run = run
	if err := s.prepareAWSLB(ctx, p); err != nil {
		p.prober.Close()
		return nil, err
	}
	return p, nil
}

// checkedProber builds the prober and checks every backend once: one that
// answers 401/403/404 or cannot be reached is one line on Out and is not
// polled; when none is left the session stops.
func (s *Session) checkedProber(ctx context.Context) (*prober.Prober, error) {
	build := func(bs []prober.Backend) (*prober.Prober, error) {
		return prober.New(s.Target.Config,
			prober.WithBackends(bs...),
			prober.WithInterval(s.Polling.Interval),
			prober.WithProbeTimeout(s.Polling.ProbeTimeout),
			prober.WithHTTP2(s.Polling.HTTP2),
			prober.WithTargets(s.Polling.Targets...),
			// On the lab a refused dial keeps its address, which the lab
			// load balancer's flow records are keyed by.
			prober.WithBoundDials(!s.Target.Live),
			prober.WithLogger(s.Log))
	}
	pr, err := build(s.Polling.Backends)
	if err != nil {
		return nil, err
	}
	// A backend is kept when no vantage point found a problem with it; a
	// vantage point (other than the default) that cannot be reached at all
	// stops the session with one line for it.
	var keep []prober.Backend
	var problems, unreachable []string
	bad := map[string]bool{}
	seenTarget := map[string]bool{}
	checks := pr.CheckBackends(ctx)
	for _, c := range checks {
		if ctx.Err() != nil {
			pr.Close()
			return nil, ctx.Err()
		}
		if c.Problem == "" {
			continue
		}
		if v := c.Sample.Vantage; v != "" && c.Sample.StatusCode == 0 {
			where := strings.TrimSpace(v + " " + c.Sample.Target)
			if !seenTarget[where] {
				seenTarget[where] = true
				unreachable = append(unreachable, fmt.Sprintf("vantage %s is unreachable: %s", where, c.Problem))
			}
			continue
		}
		bad[c.Backend.Name] = true
		problems = append(problems, c.Problem)
	}
	if len(unreachable) > 0 {
		pr.Close()
		return nil, fmt.Errorf("%s (drop that --vantage, or run from where it is reachable)", strings.Join(unreachable, "; "))
	}
	for _, b := range s.Polling.Backends {
		if !bad[b.Name] {
			keep = append(keep, b)
		}
	}
	if len(problems) == 0 {
		return pr, nil
	}
	pr.Close()
	if len(keep) == 0 {
		return nil, fmt.Errorf("no backend can be polled:\n  %s", strings.Join(problems, "\n  "))
	}
	for _, p := range problems {
		fmt.Fprintf(s.Out, "not polled: %s\n", p)
	}
	s.Polling.Backends = keep
	return build(keep)
}

// preview is what a live rollout prints before it asks.
func (p *prepared) preview() string {
	s := p.s
	var b strings.Builder
	fmt.Fprintf(&b, "about to force %d kube-apiserver rollout(s) on this cluster:\n", s.Iterations)
	fmt.Fprintf(&b, "  server:         %s\n", p.prober.Server())
	ctxName := s.Target.Context
	if ctxName == "" {
		ctxName = "(none: --server)"
	}
	fmt.Fprintf(&b, "  context:        %s\n", ctxName)
	fmt.Fprintf(&b, "  cluster:        %s\n", DescribeCluster(p.info))
	fmt.Fprintf(&b, "  kube-apiserver: %s\n", p.status)
	auth := p.run.Auth
	if c := s.Target.Credentials; c.Source != "" {
		auth += " from " + c.String()
	}
	fmt.Fprintf(&b, "  auth:           %s\n", auth)
	if s.Target.Config != nil && s.Target.Config.Insecure {
		fmt.Fprintf(&b, "  TLS:            the server's certificate is NOT verified (insecure-skip-tls-verify)\n")
	}
	if p.run.Proxy != "" {
		fmt.Fprintf(&b, "  proxy:          %s (new connections are new to the proxy only)\n", p.run.Proxy)
	}
	if p.clock != nil {
		fmt.Fprintf(&b, "  clock offset:   %s\n", p.clock)
	}
	fmt.Fprintf(&b, "  polling:        %s, new and reused connections, every %v\n", strings.Join(backendNames(s.Polling.Backends), ", "), s.Polling.Interval)
	fmt.Fprintf(&b, "  the change:     merge patch %s on kubeapiservers.operator.openshift.io/%s, after a %v baseline\n",
		trigger.Patch(trigger.Reason(s.RunID, 1)), trigger.OperatorName, s.Timings.Baseline)
	return b.String()
}

// consent asks for a live rollout's go-ahead once the checks passed.
func (p *prepared) consent() error {
	s := p.s
	if !s.Target.Live || !s.Scenario.Rollout {
		return nil
	}
	preview := p.preview()
	switch {
	case s.Yes:
		fmt.Fprint(s.Out, preview)
		fmt.Fprintln(s.Out, "going on: --yes")
		return nil
	case s.Confirm == nil:
		fmt.Fprint(s.Out, preview)
		return errors.New("a live rollout needs --yes when there is no terminal to confirm on; nothing was changed")
	}
	ok, err := s.Confirm(preview)
	if err != nil {
		return err
	}
	if !ok {
		return ErrDeclined
	}
	return nil
}

// DryRun runs every check, prints what a live rollout would print before it
// asks, and has the server validate the first patch without applying it.
// Nothing is changed and nothing is written.
func (s *Session) DryRun(ctx context.Context) error {
	p, err := s.prepare(ctx)
	if err != nil {
		return err
	}
	defer p.prober.Close()
	fmt.Fprint(s.Out, p.preview())
	if s.Scenario.Rollout {
		if _, err := trigger.Trigger(ctx, p.clients, trigger.Reason(s.RunID, 1), true); err != nil {
			return fmt.Errorf("the server refused the patch in a dry run: %w", err)
		}
		fmt.Fprintln(s.Out, "the server accepted the patch in a server-side dry run")
	}
	return nil
}

// Run runs every check, asks for a live rollout's go-ahead, then plays the
// scenario into folder and finishes run.json. It returns the run record
// (nil when it stopped before measuring, with folder untouched) and why
// the run did not complete.
func (s *Session) Run(ctx context.Context, folder *results.Folder) (*results.Run, error) {
	p, err := s.prepare(ctx)
	if err != nil {
		return nil, err
	}
	defer p.prober.Close()
	if err := p.consent(); err != nil {
		return nil, err
	}
	run := p.run
	if err := folder.WriteRun(run); err != nil {
		return nil, err
	}
	s.Log.Info("running", zap.String("scenario", s.Scenario.Name), zap.String("server", run.Server), zap.String("out", folder.Dir()),
		zap.Int("iterations", s.Iterations), zap.Duration("baseline", s.Timings.Baseline))
	log, stop := s.Log, func() {}
	if s.Progress != nil {
		total := time.Duration(0)
		if !s.Scenario.Rollout {
			total = s.Timings.Baseline
		}
		log, stop = s.Progress(p.prober, total)
	}
	cfg := Config{
		Scenario: s.Scenario, Timings: s.Timings, Iterations: s.Iterations, RunID: s.RunID, Force: s.Force,
		Prober: p.prober, Clients: p.clients, Folder: folder, Run: run, Log: log, OnEvent: s.OnEvent,
	}
	if p.clock != nil && p.clock.CorrectedEvents {
		cfg.ClockOffset = p.clock.Offset
	}
	finishEvidence := s.startEvidence(ctx, p, folder)
	stopDuring := func() {}
	if s.DuringRun != nil {
		stopDuring = s.DuringRun(ctx)
	}
	runErr := Execute(ctx, cfg)
	stopDuring()
	finishEvidence(run)
	stop()
	if s.BeforeFinish != nil {
		s.BeforeFinish(run)
	}
	status := results.StatusComplete
	switch {
	case ctx.Err() != nil:
		status = results.StatusInterrupted
	case runErr != nil:
		status = results.StatusFailed
		run.Error = runErr.Error()
	}
	// Whatever wrote signals during the run is on disk before run.json
	// says it ended; a later writer (the monitoring query) reopens it.
	if err := folder.CloseSignals(); err != nil {
		s.Log.Warn("writing the run's signals failed", zap.Error(err))
	}
	run.Finish(time.Now(), status)
	if err := folder.WriteRun(run); err != nil && runErr == nil {
		runErr = err
	}
	return run, runErr
}

// DescribeCluster says in one line what a cluster is, e.g. "OpenShift
// 4.17.3 on AWS, HighlyAvailable control plane, Kubernetes v1.30.5".
func DescribeCluster(i trigger.ClusterInfo) string {
	if !i.OpenShift {
		return "Kubernetes " + i.ServerVersion + ", not OpenShift"
	}
	return fmt.Sprintf("OpenShift %s on %s, %s control plane, Kubernetes %s", i.Version, i.Platform, i.ControlPlaneTopology, i.ServerVersion)
}

// AuthKind says how rc authenticates, never with the secret: token,
// client-certificate, exec:<command>, auth-provider:<name>, basic or none.
func AuthKind(rc *rest.Config) string {
	switch {
	case rc.ExecProvider != nil:
		return "exec:" + filepath.Base(rc.ExecProvider.Command)
	case rc.AuthProvider != nil:
		return "auth-provider:" + rc.AuthProvider.Name
	case rc.BearerToken != "" || rc.BearerTokenFile != "":
		return "token"
	case len(rc.CertData) > 0 || rc.CertFile != "":
		return "client-certificate"
	case rc.Username != "":
		return "basic"
	}
	return "none"
}

// ProxyFor is the proxy a request to server goes through: the kubeconfig's
// proxy-url, else HTTPS_PROXY/HTTP_PROXY minus NO_PROXY, as net/http's
// ProxyFromEnvironment (which the pollers use) decides it from env. It is ""
// when requests go direct; userinfo is removed.
func ProxyFor(rc *rest.Config, server string, env *httpproxy.Config) (string, error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", fmt.Errorf("server URL %q: %w", server, err)
	}
	var proxy *url.URL
	if rc.Proxy != nil {
		proxy, err = rc.Proxy(&http.Request{URL: u})
	} else {
		proxy, err = env.ProxyFunc()(u)
	}
	if err != nil {
		return "", fmt.Errorf("proxy for %s: %w", server, err)
	}
	if proxy == nil {
		return "", nil
	}
	p := *proxy
	p.User = nil
	return p.String(), nil
}

func backendNames(bs []prober.Backend) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Name
	}
	return out
}
