package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/attribute"
	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
	"github.com/repro-tools/repro/trigger"
	"github.com/repro-tools/repro/vantage"
)

// PlanOptions are a run's choices as its caller made them (cmd/repro, from
// its flags). NewPlan works out what follows from running on the lab or on
// a cluster; Plan.Run plays it.
type PlanOptions struct {
	// Command is run.json's command: "run" or "probe".
	Command string
	// Args is the command line, for run.json (secrets are redacted).
	Args       []string
	Scenario   Scenario
	Iterations int
	RunID      string
	// Lab, when set, runs the plan on a lab started for it; otherwise it
	// runs on Cluster.
	Lab *LabPlan
	// Cluster is the live cluster. The caller alone decides which cluster
	// and which credentials (a cluster the user named, never one found
	// lying around) and hands the plan the resolved target; it may set it
	// on the Plan after NewPlan, before DryRun or Run. Unused with Lab.
	Cluster Target
	// Baseline, CoolDown and FollowTimeout replace the lab's or the
	// cluster's default (LabTimings, LiveTimings) when positive.
	Baseline, CoolDown, FollowTimeout time.Duration
	Polling                           Polling
	// ProbeTimeoutSet says Polling.ProbeTimeout was chosen; otherwise the
	// lab divides origin's probe timeout by its time scale, as it divides
	// every other duration of the rollout.
	ProbeTimeoutSet bool
	// Vantages are where to poll from (vantage.Names); none is the
	// external load balancer alone.
	Vantages      []string
	MaxDisruption time.Duration
	// Force goes on when preflight finds kube-apiserver not settled.
	Force bool
	// Yes is the user's consent, given up front, to roll out a live cluster.
	Yes bool
	// Out is the results folder ("" is results.DefaultDir for the scenario).
	Out      string
	Evidence Evidence

	// Stdout gets what the user must see: the lab starting, the backends
	// not polled, a live rollout's preview, the monitoring not read.
	Stdout io.Writer
	// Stderr gets the builds' progress and the lab's teardown notice.
	Stderr io.Writer
	Log    *zap.Logger
	// LogTo, if set, copies every log line into path (the folder's
	// results.LogFile) until the function it returns is called; that
	// function may be called more than once.
	LogTo func(path string) (stop func(), err error)
	// Confirm asks for a live rollout's go-ahead (see Session.Confirm).
	Confirm func(preview string) (bool, error)
	// Progress and OnEvent drive a live display (see Session).
	Progress func(pr *prober.Prober, total time.Duration) (*zap.Logger, func())
	OnEvent  func(results.Event)
}

// LabPlan is the lab a plan starts for its run.
type LabPlan struct {
	Options lab.Options
	// Sets are the lab's changes as the user typed them, recorded in
	// run.json so that a run with a candidate fix names itself.
	Sets []string
	// Why says why the run uses the lab; it starts the lab's first line.
	Why string
	// Logger gets the lab's process chatter.
	Logger *zap.Logger
}

// Evidence is what a plan gathers beside the pollers' samples. The
// pollers' own sources (the AWS load balancers' health, the control
// target) are in Polling; the lab's fault windows, apiserver logs and load
// balancer health records are always kept on the lab.
type Evidence struct {
	// Metrics, when set, scrapes the apiservers' own /metrics during the
	// run and reads the monitoring over its window after it.
	Metrics *MetricsPlan
	// Attribute, when set, runs after the run to say where each failed
	// request went from the audit logs of the cluster cfg points at,
	// writing into the results folder dir; requestTimeout is how long an
	// apiserver may take to log a request. On the lab it runs before the
	// lab stops: its kubelet endpoints serve the audit logs.
	Attribute func(ctx context.Context, cfg *rest.Config, dir string, requestTimeout time.Duration) error
}

// Plan is a run decided: where it runs, its timings, its pollers and
// vantage points, and the evidence it gathers.
type Plan struct {
	PlanOptions
	// Timings are the stages' durations: the lab's or the cluster's
	// defaults, with the options' overrides.
	Timings Timings
}

// NewPlan checks the options and works out what follows from where the run
// goes: on the lab the default timings and probe timeout follow its time
// scale, and the lab runs a Prometheus when the run reads monitoring.
func NewPlan(o PlanOptions) (*Plan, error) {
	vs, err := vantage.Parse(o.Vantages)
	if err != nil {
		return nil, err
	}
	o.Vantages = vs
	t := LiveTimings()
	if o.Lab != nil {
		if o.Polling.AWSLB {
			return nil, errors.New("--aws-lb reads a live AWS cluster's load balancers; the lab records its own load balancer's health in every run: drop --aws-lb or name the cluster (--kubeconfig)")
		}
		l := *o.Lab
		o.Lab = &l
		if o.Evidence.Metrics != nil {
			l.Options.Prometheus = o.Evidence.Metrics.Monitoring
		}
		t = LabTimings()
		if !o.ProbeTimeoutSet {
			o.Polling.ProbeTimeout = l.Options.Timing.Scale(prober.DefaultProbeTimeout)
		}
		// A rollout at AWS timing takes three times (129 s + start + 30 s).
		t.FollowTimeout = time.Duration(lab.TimingFast.Factor/l.Options.Timing.Factor) * t.FollowTimeout
	}
	for _, d := range []struct {
		given time.Duration
		into  *time.Duration
	}{{o.Baseline, &t.Baseline}, {o.CoolDown, &t.CoolDown}, {o.FollowTimeout, &t.FollowTimeout}} {
		if d.given > 0 {
			*d.into = d.given
		}
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	return &Plan{PlanOptions: o, Timings: t}, nil
}

// session is the measured part of the plan, before its target is known.
func (p *Plan) session() *Session {
	return &Session{
		Command: p.Command, Args: p.Args, Scenario: p.Scenario, Timings: p.Timings, Iterations: p.Iterations, RunID: p.RunID,
		Force: p.Force, Polling: p.Polling, MaxDisruption: p.MaxDisruption, Yes: p.Yes, Out: p.Stdout, Log: p.Log,
		Progress: p.Progress, OnEvent: p.OnEvent,
	}
}

// DryRun runs a live plan's checks and has the server validate the first
// patch (Session.DryRun); it changes nothing and writes nothing. A lab plan
// has nothing to check without starting the lab: the caller describes it.
func (p *Plan) DryRun(ctx context.Context) error {
	if p.Lab != nil {
		return errors.New("a lab plan has no dry run: it would start the lab")
	}
	s := p.session()
	s.Target = p.Cluster
	return s.DryRun(ctx)
}

// NotMeasured is Run's error when it stopped before measuring anything:
// nothing of the run is kept but, at most, its log.
type NotMeasured struct {
	// StartingLab says the lab did not start.
	StartingLab bool
	// Interrupted says the run's context was cancelled.
	Interrupted bool
	Err         error
}

func (e *NotMeasured) Error() string {
	if e.StartingLab {
		return "lab did not start: " + e.Err.Error()
	}
	return e.Err.Error()
}

func (e *NotMeasured) Unwrap() error { return e.Err }

// Outcome is what a run that measured left behind, read back from its
// folder as "repro report" reads it.
type Outcome struct {
	Folder *results.Folder
	Run    *results.Run
	// Err says why the run did not complete (nil when it did).
	Err error
	// Samples is the number of samples the report analysed.
	Samples int64
	// OverLimit are the backend-connections disrupted longer than
	// MaxDisruption in total.
	OverLimit []report.PollerSummary
	// Refused counts the requests answered 401 or 403: credentials that
	// expired or lost permission during the run.
	Refused int64
}

// Run plays the plan: it makes the results folder, starts the lab (or
// takes the caller's cluster), resolves the vantage points, runs the
// session with its evidence, and derives the report from the folder. It
// returns a *NotMeasured error when it stopped before measuring, and
// another error when the folder, the log or the report failed; otherwise
// the Outcome says how the run went.
func (p *Plan) Run(ctx context.Context) (*Outcome, error) {
	dir := p.Out
	if dir == "" {
		dir = results.DefaultDir(p.Scenario.Name, time.Now())
	}
	folder, err := results.Create(dir)
	if err != nil {
		return nil, err
	}
	closeLog := func() {}
	if p.LogTo != nil {
		if closeLog, err = p.LogTo(folder.Path(results.LogFile)); err != nil {
			return nil, err
		}
	}
	defer closeLog()
	s := p.session()
	var l *lab.Lab
	if p.Lab != nil {
		if l, err = p.startLab(ctx, folder); err != nil {
			closeLog()
			folder.RemoveIfEmpty()
			return nil, &NotMeasured{StartingLab: true, Interrupted: ctx.Err() != nil, Err: err}
		}
		defer p.stopLab(ctx, l)
		p.onLab(s, l, folder)
	} else {
		s.Target = p.Cluster
		s.Confirm = p.Confirm
	}
	if p.Evidence.Attribute != nil && l == nil {
		s.ExtraPermissions = append(s.ExtraPermissions, trigger.AttributionPermissions...)
	}
	if err := p.setVantages(ctx, s, l); err != nil {
		closeLog()
		folder.RemoveIfEmpty()
		return nil, err
	}
	var mr *metricsRun
	if p.Evidence.Metrics != nil {
		mr = setupMetrics(s, l, folder, p.Evidence.Metrics, p.Log)
	}
	run, runErr := s.Run(ctx, folder)
	if run == nil {
		// Stopped before measuring: nothing of the run is kept but its log.
		closeLog()
		removeIfOnlyLog(folder)
		return nil, &NotMeasured{Interrupted: ctx.Err() != nil, Err: runErr}
	}
	if mr != nil {
		mr.finish(ctx, p.Stdout, s, run)
	}
	if p.Evidence.Attribute != nil {
		timeout := attribute.DefaultRequestTimeout
		if l != nil {
			timeout = l.RequestTimeout()
		}
		if err := p.Evidence.Attribute(ctx, s.Target.Config, folder.Dir(), timeout); err != nil {
			p.Log.Warn("attribution failed; rerun \"repro attribute "+folder.Dir()+"\"", zap.Error(err))
		}
	}
	a, err := write.Rebuild(folder.Dir(), write.WithMaxDisruption(p.MaxDisruption))
	if err != nil {
		return nil, fmt.Errorf("report on %s: %w (samples are kept; rerun \"repro report %s\")", folder.Dir(), err, folder.Dir())
	}
	o := &Outcome{Folder: folder, Run: run, Err: runErr, Samples: a.Samples, OverLimit: report.OverLimit(a, p.MaxDisruption)}
	for _, pl := range a.Pollers {
		o.Refused += pl.Unauthorized
	}
	return o, nil
}

// setVantages resolves the vantage points into the pollers' targets (on the
// lab, direct is each apiserver's own port) and adds what they read to the
// permissions checked before a live rollout.
func (p *Plan) setVantages(ctx context.Context, s *Session, l *lab.Lab) error {
	names := p.Vantages
	if len(names) == 0 || (len(names) == 1 && names[0] == vantage.ExternalLB) {
		return nil
	}
	var targets []prober.Target
	if l != nil {
		for _, n := range names {
			switch n {
			case vantage.ExternalLB:
				targets = append(targets, prober.Target{})
			case vantage.Direct:
				host := strings.TrimPrefix(l.URL(), "https://")
				host = host[:strings.LastIndex(host, ":")]
				for _, node := range l.Nodes() {
					targets = append(targets, prober.Target{Vantage: vantage.Direct, Node: node.Name(), URL: node.URL(), ServerName: host})
				}
			default:
				return fmt.Errorf("--vantage %s: the lab has only its load balancer (external-lb) and its apiservers' own ports (direct)", n)
			}
		}
	} else {
		c, err := vantage.NewClients(s.Target.Config)
		if err != nil {
			return err
		}
		// A few reads (Infrastructure, EndpointSlices, Nodes), bounded
		// together like one of the trigger's calls.
		rctx, cancel := context.WithTimeout(ctx, trigger.CallTimeout)
		targets, err = vantage.Resolve(rctx, c, s.Target.Config.Host, names)
		cancel()
		if err != nil {
			return err
		}
		s.ExtraPermissions = append(s.ExtraPermissions, trigger.VantagePermissions...)
	}
	s.Polling.Targets = targets
	return nil
}

// removeIfOnlyLog removes a results folder that holds nothing but its
// log: the run stopped before measuring and says why on the screen.
func removeIfOnlyLog(f *results.Folder) {
	ents, err := os.ReadDir(f.Dir())
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Name() != results.LogFile {
			return
		}
	}
	if err := os.Remove(filepath.Join(f.Dir(), results.LogFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return
	}
	f.RemoveIfEmpty()
}
