package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/lab/binaries"
	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
	"github.com/repro-tools/repro/scenarios"
	"github.com/repro-tools/repro/trigger"
	"github.com/repro-tools/repro/vantage"
)

func init() { subcommands = append(subcommands, newRunCmd, newScenariosCmd) }

// exitOverLimit is the exit code of a run whose disruption exceeded --max-disruption.
const exitOverLimit = 3

type runOptions struct {
	scenario      string
	iterations    int
	out           string
	maxDisruption time.Duration
	dryRun        bool
	force         bool
	yes           bool
	useLab        bool
	baseline      time.Duration
	coolDown      time.Duration
	followTimeout time.Duration
	attribute     bool
	vantages      []string
	polling       pollingFlags
	lab           labFlags
	metrics       metricsFlags
}

// pollingFlags are the pollers' flags, shared by run and probe.
type pollingFlags struct {
	interval     time.Duration
	probeTimeout time.Duration
	backends     []string
	http2        bool
	awsLB        bool
	control      string
}

func (p *pollingFlags) bind(f *pflag.FlagSet) {
	f.DurationVar(&p.interval, "interval", prober.DefaultInterval, "time between two requests of each poller (minimum 10ms)")
	f.DurationVar(&p.probeTimeout, "probe-timeout", defaultProbeTimeout, "bound on each request; dial, TLS and response headers get 4/5 of it (default origin's 34s; on the lab divided by --lab-timing: 3.4s fast)")
	f.StringSliceVar(&p.backends, "backends", prober.DefaultBackendNames, "backends to poll: "+strings.Join(prober.BackendNames(), ", "))
	f.BoolVar(&p.http2, "http2", false, "negotiate HTTP/2 (default HTTP/1.1, like origin's sampler)")
	f.BoolVar(&p.awsLB, "aws-lb", false, "on AWS, poll the API load balancers' target health every second (AWS default credential chain, read-only describe calls; see README)")
	f.StringVar(&p.control, "control", "", "also poll this URL outside the cluster, on the same network path, to tell this side's network from the cluster's")
}

// minProbeTimeout is the smallest --probe-timeout taken: a TCP and TLS
// handshake and a response must fit in it, even on a loaded laptop.
const minProbeTimeout = 100 * time.Millisecond

// defaultProbeTimeout is --probe-timeout's default, the prober's own.
const defaultProbeTimeout = prober.DefaultProbeTimeout

// settings checks the polling flags and resolves the backends.
func (p *pollingFlags) settings() (scenarios.Polling, error) {
	if p.interval < prober.MinInterval {
		return scenarios.Polling{}, fmt.Errorf("--interval %v is below the minimum of %v", p.interval, prober.MinInterval)
	}
	if p.probeTimeout < minProbeTimeout {
		return scenarios.Polling{}, fmt.Errorf("--probe-timeout %v is below the minimum of %v (dial, TLS and response headers share 4/5 of it)", p.probeTimeout, minProbeTimeout)
	}
	if p.control != "" {
		if _, _, err := scenarios.ParseControlURL(p.control); err != nil {
			return scenarios.Polling{}, err
		}
	}
	backends, err := prober.LookupBackends(p.backends)
	if err != nil {
		return scenarios.Polling{}, fmt.Errorf("--backends: %w", err)
	}
	return scenarios.Polling{Backends: backends, Interval: p.interval, ProbeTimeout: p.probeTimeout, HTTP2: p.http2, AWSLB: p.awsLB, Control: p.control}, nil
}

func newScenariosCmd(o *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "scenarios",
		Short: "List the scenarios repro run can play",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range scenarios.List() {
				fmt.Fprintf(cmd.OutOrStdout(), "%-18s %s\n", s.Name, s.Summary)
			}
			return nil
		},
	}
}

func newRunCmd(o *rootOptions) *cobra.Command {
	ro := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run --scenario NAME",
		Short: "Force a kube-apiserver rollout while polling every API backend, and say where the disruption sits",
		Long: `Run a scenario against a cluster named with --kubeconfig, --context, --server
or KUBECONFIG or, when none is named (or with --lab), against the lab: real
kube-apiservers behind an NLB-like load balancer, started for the run. A
kubeconfig found elsewhere (~/.kube/config, in-cluster) is never used by run.

Before anything changes on a cluster, repro checks the permissions the run
needs (see "repro rbac"), that kube-apiserver is settled and that every
backend answers, then prints the server, context, cluster version and
platform and asks to go on (default no); without a terminal it needs --yes.

apiserver-rollout: the pollers start; after a baseline, kubeapiservers/cluster
spec.forceRedeploymentReason is set to repro-<run id>-<n> (nothing else is ever
changed) and the rollout is followed node by node until every node runs the new
revision; then a cool-down. --iterations repeats trigger, follow and cool-down.

Results go to --out: samples.jsonl, events.jsonl, intervals.json,
backend-disruption.json, placements.json, junit.xml, summary.txt, which
says where every disruption sits in the rollout, and repro.log.

--attribute then reads the control-plane nodes' audit logs and says where
each failed request went (attribution.jsonl; see "repro attribute").
--vantage (repeatable) polls from more places than the external load
balancer: internal-lb, direct (each apiserver), service-network (in-cluster).

--lab-load cl2-load gives the lab a cluster's load (kubelets, kube-proxies,
controllers listing, watching and writing as themselves through its load
balancer, in a process of their own): load.jsonl, run.json's extra.load and
summary.txt's load lines say per apiserver what it held and re-listed
(docs/lab.md).

Exit codes: 0 done within limits, 3 disruption over --max-disruption,
130 interrupted (partial results kept), 1 any other error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runScenario(cmd, o, ro) },
	}
	// Every flag of repro run is declared here.
	f := cmd.Flags()
	f.StringVar(&ro.scenario, "scenario", "", "scenario to run (see \"repro scenarios\")")
	f.IntVar(&ro.iterations, "iterations", 1, "rollouts to force in one run, each with its own figures")
	f.StringVar(&ro.out, "out", "", "results folder (default ./repro-results/<UTC timestamp>-<scenario>)")
	f.DurationVar(&ro.maxDisruption, "max-disruption", 0, "exit 3 when any backend-connection is disrupted longer than this in total (0: no limit)")
	f.BoolVar(&ro.dryRun, "dry-run", false, "run the checks, print the plan and the patch, check it with a server-side dry run, change nothing")
	f.BoolVar(&ro.force, "force", false, "go on even if kube-apiserver is already rolling out or not settled")
	f.BoolVar(&ro.yes, "yes", false, "roll out a live cluster without asking (needed when there is no terminal)")
	f.BoolVar(&ro.useLab, "lab", false, "run on the lab even when a cluster is named")
	f.DurationVar(&ro.baseline, "baseline", 0, "polling before the first trigger (default 60s live, 10s on the lab)")
	f.DurationVar(&ro.coolDown, "cool-down", 0, "polling after each rollout completes (default 60s live, 10s on the lab)")
	f.DurationVar(&ro.followTimeout, "follow-timeout", 0, "limit for one rollout to complete (default 60m live, 5m on the fast lab, 50m at --lab-timing aws)")
	f.BoolVar(&ro.attribute, "attribute", false, "after the run, say where each failed request went from the audit logs (as \"repro attribute\")")
	f.StringArrayVar(&ro.vantages, "vantage", nil, "where to poll from, repeatable: "+strings.Join(vantage.Names, ", ")+" (default external-lb)")
	ro.polling.bind(f)
	ro.metrics.bind(f)
	ro.lab.bind(cmd)
	// A run keeps the load balancer's records in its results folder.
	_ = cmd.Flags().MarkHidden("lb-records")
	_ = cmd.MarkFlagRequired("scenario")
	o.bindClusterFlags(cmd)
	return cmd
}

// explicitTarget reports whether the user named a cluster: --kubeconfig,
// --context, --server or KUBECONFIG. Only then does repro run go live.
func explicitTarget(o *rootOptions) bool {
	for _, f := range []*string{o.configFlags.KubeConfig, o.configFlags.Context, o.configFlags.APIServer} {
		if f != nil && *f != "" {
			return true
		}
	}
	return os.Getenv("KUBECONFIG") != ""
}

// foundKubeconfig names a cluster configuration oc would use although none
// was named (~/.kube/config or in-cluster), "" when there is none.
func foundKubeconfig() string {
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != "" {
		return "the in-cluster service account"
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".kube", "config")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// maxIterations bounds --iterations: each iteration is a full rollout
// (about 10-20 minutes on a cluster), so more is a typo, not a plan.
const maxIterations = 1000

// why says why a run uses the lab.
func why(ro *runOptions, found string) string {
	if ro.useLab {
		return "--lab"
	}
	w := "no cluster named (--kubeconfig, --context, --server or KUBECONFIG)"
	if found != "" {
		w += "; " + found + " was found and not used"
	}
	return w
}

// validate checks the run's own flags: one line for the first bad one.
func (ro *runOptions) validate() error {
	if ro.iterations < 1 || ro.iterations > maxIterations {
		return fmt.Errorf("--iterations must be 1..%d, got %d", maxIterations, ro.iterations)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--max-disruption", ro.maxDisruption}, {"--baseline", ro.baseline}, {"--cool-down", ro.coolDown}, {"--follow-timeout", ro.followTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("%s must not be negative, got %v", d.name, d.v)
		}
	}
	return nil
}

func runScenario(cmd *cobra.Command, o *rootOptions, ro *runOptions) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	sc, err := scenarios.Lookup(ro.scenario)
	if err != nil {
		return err
	}
	if err := ro.validate(); err != nil {
		return err
	}
	polling, err := ro.polling.settings()
	if err != nil {
		return err
	}
	labOpts, err := ro.lab.options()
	if err != nil {
		return err
	}
	found := foundKubeconfig()
	// A run, and its dry run, go live only when a cluster is named: a dry
	// run resolves its target exactly as the run does, so with no cluster
	// named it is the lab's dry run and touches no cluster at all.
	var onLab *scenarios.LabPlan
	if ro.useLab || !explicitTarget(o) {
		onLab = &scenarios.LabPlan{Options: labOpts, Sets: ro.lab.sets, Why: why(ro, found), Logger: o.quietLogger().Named("lab")}
	}
	view := newRolloutView(sc.Rollout)
	po := scenarios.PlanOptions{
		Command: "run", Args: os.Args, Scenario: sc, Iterations: ro.iterations, RunID: time.Now().UTC().Format("20060102t150405"),
		Lab: onLab, Baseline: ro.baseline, CoolDown: ro.coolDown, FollowTimeout: ro.followTimeout,
		Polling: polling, ProbeTimeoutSet: cmd.Flags().Changed("probe-timeout"), Vantages: ro.vantages,
		MaxDisruption: ro.maxDisruption, Force: ro.force, Yes: ro.yes, Out: ro.out,
		Evidence: scenarios.Evidence{Metrics: ro.metrics.plan()},
		Stdout:   out, Stderr: os.Stderr, Log: o.logger(), LogTo: o.logToFile, OnEvent: view.observe,
		Progress: func(pr *prober.Prober, total time.Duration) (*zap.Logger, func()) {
			d := startProgress(ctx, pr, total, o, view)
			return d.logger(), d.finish
		},
	}
	if ro.attribute {
		po.Evidence.Attribute = func(ctx context.Context, cfg *rest.Config, dir string, timeout time.Duration) error {
			return attributeRun(ctx, out, cfg, dir, timeout, po.Log)
		}
	}
	plan, err := scenarios.NewPlan(po)
	if err != nil {
		return err
	}

	if ro.dryRun {
		printPlan(out, ro, plan)
		if plan.Lab != nil {
			printLabPlan(out, plan.Lab.Options, plan.Polling.ProbeTimeout, plan.Lab.Why)
			fmt.Fprintln(out, "dry run: nothing was built, started or changed, and no request was sent")
			return nil
		}
		if plan.Cluster, err = runTarget(o); err != nil {
			return err
		}
		if err := plan.DryRun(ctx); err != nil {
			return err
		}
		fmt.Fprintln(out, "dry run: nothing was changed")
		return nil
	}

	if plan.Lab != nil {
		// The kernel load balancer runs in a network namespace of its own:
		// the whole run (lab and pollers) goes on in a repro inside one.
		if code, ran, err := enterNetns(ctx, &plan.Lab.Options, cmd.ErrOrStderr()); err != nil {
			return err
		} else if ran {
			return childExit(code)
		}
	} else {
		// Only the cluster the user named (see cluster.go).
		if plan.Cluster, err = runTarget(o); err != nil {
			return err
		}
		plan.Confirm = terminalConfirm(cmd)
	}
	res, err := plan.Run(ctx)
	if err != nil {
		return notMeasured(err, "interrupted before polling started; nothing was changed")
	}
	return finishRun(out, res, ro.maxDisruption)
}

// notMeasured turns a plan's stop before measuring into the exit code: an
// interrupt exits 130 with one line, interrupted saying at which point.
func notMeasured(err error, interrupted string) error {
	var nm *scenarios.NotMeasured
	if !errors.As(err, &nm) || !nm.Interrupted {
		return err
	}
	if nm.StartingLab {
		return withExitCode(exitInterrupted, errors.New("interrupted while starting the lab"))
	}
	return withExitCode(exitInterrupted, errors.New(interrupted))
}

// finishRun prints the summary and turns the run's outcome into the exit
// code.
func finishRun(out io.Writer, res *scenarios.Outcome, maxDisruption time.Duration) error {
	dir := res.Folder.Dir()
	if summary, err := os.ReadFile(res.Folder.Path(results.SummaryFile)); err == nil {
		fmt.Fprint(out, string(summary))
	}
	fmt.Fprintf(out, "\nresults: %s (%d samples)\n", dir, res.Samples)
	switch {
	case res.Run.Status == results.StatusInterrupted:
		return withExitCode(exitInterrupted, fmt.Errorf("interrupted; partial results kept in %s", dir))
	case res.Err != nil:
		return fmt.Errorf("%w; results so far kept in %s", res.Err, dir)
	}
	if len(res.OverLimit) > 0 {
		var parts []string
		for _, p := range res.OverLimit {
			parts = append(parts, fmt.Sprintf("%s %d ms", p.Name, p.Disrupted.Milliseconds()))
		}
		return withExitCode(exitOverLimit, fmt.Errorf("disruption over --max-disruption %v: %s", maxDisruption, strings.Join(parts, ", ")))
	}
	if res.Refused > 0 {
		return fmt.Errorf("%d request(s) were refused with 401/403: the credentials expired or lost permission during the run (on OpenShift a token is checked through the oauth-apiserver); results kept in %s", res.Refused, dir)
	}
	return nil
}

// printPlan says what a run would do, for --dry-run.
func printPlan(out io.Writer, ro *runOptions, p *scenarios.Plan) {
	sc, t := p.Scenario, p.Timings
	target := "the lab (started for the run)"
	if p.Lab == nil {
		target = "the kubeconfig's cluster"
	}
	fmt.Fprintf(out, "plan: scenario %s on %s\n", sc.Name, target)
	fmt.Fprintf(out, "  pollers: %s, new and reused connections, every %v\n", strings.Join(ro.polling.backends, ", "), ro.polling.interval)
	fmt.Fprintf(out, "  baseline %v\n", t.Baseline)
	if sc.Rollout {
		for n := 1; n <= ro.iterations; n++ {
			fmt.Fprintf(out, "  iteration %d: patch kubeapiservers.operator.openshift.io/cluster (merge) %s\n", n, trigger.Patch(trigger.Reason(p.RunID, n)))
			fmt.Fprintf(out, "    follow the rollout (limit %v, settle %v), then cool down %v\n", t.FollowTimeout, t.Settle, t.CoolDown)
		}
	}
}

// printLabPlan says, for a lab dry run, what lab a run would start, from
// the validated options; it looks at the binary cache and builds nothing.
func printLabPlan(out io.Writer, o lab.Options, probeTimeout time.Duration, why string) {
	fmt.Fprintf(out, "lab (%s):\n", why)
	fmt.Fprintf(out, "  %d nodes, timing %s, load balancer %s, listen %s\n", o.Nodes, o.Timing.Name, o.LB, o.Listen)
	kas := "kube-apiserver " + binaries.KubeAPIServer.Version
	if o.KubeAPIServer != "" {
		kas = "kube-apiserver " + o.KubeAPIServer
	} else if spec, err := lab.KubeAPIServerSpec(o.KubeVersion); err == nil {
		kas = "kube-apiserver " + spec.Version
		if _, ok, err := binaries.Path(spec, binaries.Options{}); err == nil && !ok {
			kas += " (not built yet: the run builds it first, about " + spec.ColdBuild.String() + "; \"repro lab build\" does it now)"
		}
	}
	fmt.Fprintf(out, "  %s\n", kas)
	fmt.Fprintf(out, "  shutdown delay %v, grace period %v, min ready time %v, probe interval %v\n", o.ShutdownDelay, o.GracePeriod, o.MinReadyTime, o.ProbeInterval)
	fmt.Fprintf(out, "  load balancer health check every %v, timeout %v, healthy after %d, unhealthy after %d\n", o.Health.Interval, o.Health.Timeout, o.Health.HealthyThreshold, o.Health.UnhealthyThreshold)
	if o.Profile != "" {
		fmt.Fprintf(out, "  profile %s\n", o.Profile)
	}
	fmt.Fprintf(out, "  probe timeout %v\n", probeTimeout)
}
