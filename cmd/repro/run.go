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
	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
	"github.com/repro-tools/repro/scenarios"
	"github.com/repro-tools/repro/trigger"
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
	useLab        bool
	baseline      time.Duration
	coolDown      time.Duration
	followTimeout time.Duration
	interval      time.Duration
	probeTimeout  time.Duration
	backends      []string
	http2         bool
	lab           labFlags
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
		Long: `Run a scenario against the cluster of the kubeconfig (--kubeconfig, KUBECONFIG,
~/.kube/config or in-cluster) or, when there is none (or with --lab), against the
lab: real kube-apiservers behind an NLB-like load balancer, started for the run.

apiserver-rollout: the pollers start; after a baseline, kubeapiservers/cluster
spec.forceRedeploymentReason is set to repro-<run id>-<n> (nothing else is ever
changed) and the rollout is followed node by node until every node runs the new
revision; then a cool-down. --iterations repeats trigger, follow and cool-down.

Results go to --out: samples.jsonl, events.jsonl, intervals.json,
backend-disruption.json, placements.json, junit.xml and summary.txt, which
says where every disruption sits in the rollout.

Exit codes: 0 done within limits, 3 disruption over --max-disruption,
130 interrupted (partial results kept), 1 any other error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runScenario(cmd, o, ro) },
	}
	f := cmd.Flags()
	f.StringVar(&ro.scenario, "scenario", "", "scenario to run (see \"repro scenarios\")")
	f.IntVar(&ro.iterations, "iterations", 1, "rollouts to force in one run, each with its own figures")
	f.StringVar(&ro.out, "out", "", "results folder (default ./repro-results/<UTC timestamp>-<scenario>)")
	f.DurationVar(&ro.maxDisruption, "max-disruption", 0, "exit 3 when any backend-connection is disrupted longer than this in total (0: no limit)")
	f.BoolVar(&ro.dryRun, "dry-run", false, "print the plan and the patch, check it with a server-side dry run, change nothing")
	f.BoolVar(&ro.force, "force", false, "go on even if kube-apiserver is already rolling out or not settled")
	f.BoolVar(&ro.useLab, "lab", false, "run on the lab even when a kubeconfig is available")
	f.DurationVar(&ro.baseline, "baseline", 0, "polling before the first trigger (default 60s live, 10s on the lab)")
	f.DurationVar(&ro.coolDown, "cool-down", 0, "polling after each rollout completes (default 60s live, 10s on the lab)")
	f.DurationVar(&ro.followTimeout, "follow-timeout", 0, "limit for one rollout to complete (default 60m live, 5m on the lab)")
	f.DurationVar(&ro.interval, "interval", prober.DefaultInterval, "time between two requests of each poller (minimum 10ms)")
	f.DurationVar(&ro.probeTimeout, "probe-timeout", prober.DefaultProbeTimeout, "bound on each request; dial, TLS and response headers get 4/5 of it")
	f.StringSliceVar(&ro.backends, "backends", prober.DefaultBackendNames, "backends to poll: "+strings.Join(prober.BackendNames(), ", "))
	f.BoolVar(&ro.http2, "http2", false, "negotiate HTTP/2 (default HTTP/1.1, like origin's sampler)")
	ro.lab.bind(cmd)
	// A run keeps the load balancer's records in its results folder.
	_ = cmd.Flags().MarkHidden("lb-records")
	_ = cmd.MarkFlagRequired("scenario")
	return cmd
}

// kubeconfigGiven reports whether the user pointed repro at a cluster: a
// flag, KUBECONFIG, ~/.kube/config or an in-cluster service account.
func kubeconfigGiven(o *rootOptions) bool {
	if o.configFlags.KubeConfig != nil && *o.configFlags.KubeConfig != "" {
		return true
	}
	if o.configFlags.APIServer != nil && *o.configFlags.APIServer != "" {
		return true
	}
	if os.Getenv("KUBECONFIG") != "" || os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return true
	}
	if home, err := os.UserHomeDir(); err == nil {
		if _, err := os.Stat(filepath.Join(home, ".kube", "config")); err == nil {
			return true
		}
	}
	return false
}

func runScenario(cmd *cobra.Command, o *rootOptions, ro *runOptions) error {
	ctx := cmd.Context()
	log := o.logger()
	out := cmd.OutOrStdout()
	sc, err := scenarios.Lookup(ro.scenario)
	if err != nil {
		return err
	}
	if ro.iterations < 1 {
		return fmt.Errorf("--iterations must be at least 1, got %d", ro.iterations)
	}
	if ro.interval < prober.MinInterval {
		return fmt.Errorf("--interval %v is below the minimum of %v", ro.interval, prober.MinInterval)
	}
	backends, err := prober.LookupBackends(ro.backends)
	if err != nil {
		return fmt.Errorf("--backends: %w", err)
	}
	onLab := ro.useLab || !kubeconfigGiven(o)
	labOpts, err := ro.lab.options()
	if err != nil {
		return err
	}
	timings := scenarios.LiveTimings()
	if onLab {
		timings = scenarios.LabTimings()
	}
	for _, d := range []struct {
		flag time.Duration
		into *time.Duration
	}{{ro.baseline, &timings.Baseline}, {ro.coolDown, &timings.CoolDown}, {ro.followTimeout, &timings.FollowTimeout}} {
		if d.flag > 0 {
			*d.into = d.flag
		}
	}
	runID := time.Now().UTC().Format("20060102t150405")

	if ro.dryRun {
		return dryRun(cmd, o, ro, sc, timings, runID, onLab)
	}

	outDir := ro.out
	if outDir == "" {
		outDir = results.DefaultDir(sc.Name, time.Now())
	}
	folder, err := results.Create(outDir)
	if err != nil {
		return err
	}

	var rc *rest.Config
	var theLab *lab.Lab
	if onLab {
		why := "no kubeconfig given"
		if ro.useLab {
			why = "--lab"
		}
		fmt.Fprintf(out, "%s: starting the lab (%d real kube-apiservers behind an NLB-like load balancer)\n", why, labOpts.Nodes)
		opts := labOpts
		opts.Logger = log.Named("lab")
		opts.BuildProgress = os.Stderr
		opts.ConnRecords = folder.Path(lbRecordsFile)
		started := time.Now()
		theLab, err = startLab(ctx, opts)
		if err != nil {
			folder.RemoveIfEmpty()
			if ctx.Err() != nil {
				return withExitCode(exitInterrupted, errors.New("interrupted while starting the lab"))
			}
			return fmt.Errorf("lab did not start: %w", err)
		}
		defer theLab.Stop()
		fmt.Fprintf(out, "lab is up in %s at %s\n", time.Since(started).Round(time.Millisecond), theLab.URL())
		rc = theLab.RESTConfig()
	} else {
		if rc, err = restConfig(o); err != nil {
			folder.RemoveIfEmpty()
			return err
		}
	}

	clients, err := trigger.NewClients(rc)
	if err != nil {
		return err
	}
	st, info, err := trigger.Preflight(ctx, clients, ro.force || !sc.Rollout)
	if err != nil {
		folder.RemoveIfEmpty()
		return err
	}
	if !st.Converged() && sc.Rollout {
		log.Warn("kube-apiserver is not settled; going on because of --force", zap.String("state", st.String()))
	}
	pr, err := prober.New(rc,
		prober.WithBackends(backends...),
		prober.WithInterval(ro.interval),
		prober.WithProbeTimeout(ro.probeTimeout),
		prober.WithHTTP2(ro.http2),
		prober.WithLogger(log))
	if err != nil {
		return err
	}
	defer pr.Close()

	run := results.NewRun("run", os.Args, time.Now())
	run.Server = pr.Server()
	run.Settings = map[string]any{
		"interval": ro.interval.String(), "probeTimeout": ro.probeTimeout.String(),
		"backends": names(backends), "http2": ro.http2,
		"inFlightBound": prober.InFlightBound(ro.probeTimeout, ro.interval),
		"baseline":      timings.Baseline.String(), "coolDown": timings.CoolDown.String(),
		"followTimeout": timings.FollowTimeout.String(), "settle": timings.Settle.String(),
		"maxDisruption": ro.maxDisruption.String(),
	}
	run.SetExtra("scenario", sc.Name)
	run.SetExtra("iterations", ro.iterations)
	run.SetExtra("runID", runID)
	run.SetExtra("cluster", info)
	run.SetExtra("revisionBefore", st.LatestAvailableRevision)
	if onLab {
		run.SetExtra("target", "lab")
		run.SetExtra("lab", labSettings(theLab))
	} else {
		run.SetExtra("target", "cluster")
	}
	if err := folder.WriteRun(run); err != nil {
		return err
	}
	log.Info("running", zap.String("scenario", sc.Name), zap.String("server", pr.Server()), zap.String("out", folder.Dir()),
		zap.Int("iterations", ro.iterations), zap.Duration("baseline", timings.Baseline))

	view := newRolloutView(sc.Rollout)
	display := startProgress(ctx, pr, 0, log, view)
	runErr := scenarios.Execute(ctx, scenarios.Config{
		Scenario: sc, Timings: timings, Iterations: ro.iterations, RunID: runID, Force: ro.force,
		Prober: pr, Clients: clients, Folder: folder, Run: run, Log: display.logger(), OnEvent: view.observe,
	})
	display.finish()

	if theLab != nil {
		// The fault windows the lab applied, to line up with the gaps.
		run.SetExtra("labFaults", theLab.FaultEvents())
		if err := keepLabLogs(theLab, folder); err != nil {
			log.Warn("could not copy the apiserver logs into the results", zap.Error(err))
		}
	}
	status := results.StatusComplete
	switch {
	case ctx.Err() != nil:
		status = results.StatusInterrupted
	case runErr != nil:
		status = results.StatusFailed
		run.Error = runErr.Error()
	}
	run.Finish(time.Now(), status)
	if err := folder.WriteRun(run); err != nil {
		return err
	}
	a, err := report.Rebuild(folder.Dir(), report.WithMaxDisruption(ro.maxDisruption))
	if err != nil {
		return fmt.Errorf("report on %s: %w (samples are kept; rerun \"repro report %s\")", folder.Dir(), err, folder.Dir())
	}
	if summary, err := os.ReadFile(folder.Path(results.SummaryFile)); err == nil {
		fmt.Fprint(out, string(summary))
	}
	fmt.Fprintf(out, "\nresults: %s (%d samples)\n", folder.Dir(), a.Samples)
	switch {
	case status == results.StatusInterrupted:
		return withExitCode(exitInterrupted, fmt.Errorf("interrupted; partial results kept in %s", folder.Dir()))
	case runErr != nil:
		return fmt.Errorf("%w; results so far kept in %s", runErr, folder.Dir())
	}
	if over := report.OverLimit(a, ro.maxDisruption); len(over) > 0 {
		var parts []string
		for _, p := range over {
			parts = append(parts, fmt.Sprintf("%s %d ms", p.Name, p.Disrupted.Milliseconds()))
		}
		return withExitCode(exitOverLimit, fmt.Errorf("disruption over --max-disruption %v: %s", ro.maxDisruption, strings.Join(parts, ", ")))
	}
	return nil
}

// startLab starts the lab so that Ctrl-C aborts its start (a first build
// takes minutes) but not the running lab: on an interrupt the pollers must
// stop before the apiservers do, or the teardown itself would be measured as
// disruption. The caller stops the lab; if repro dies, the parent-death
// signal takes the lab's processes with it.
func startLab(ctx context.Context, opts lab.Options) (*lab.Lab, error) {
	labCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	started := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			abort()
		case <-started:
		}
	}()
	l, err := lab.Start(labCtx, opts)
	close(started)
	if err != nil {
		abort()
		return nil, err
	}
	go func() {
		<-l.Done()
		abort()
	}()
	return l, nil
}

// lbRecordsFile is where a lab run keeps the load balancer's connection
// records, which attribute each sample to the apiserver that served it.
const lbRecordsFile = "lb-connections.jsonl"

func labSettings(l *lab.Lab) map[string]any {
	o := l.Options()
	return map[string]any{
		"nodes": o.Nodes, "shutdownDelay": o.ShutdownDelay.String(), "gracePeriod": o.GracePeriod.String(),
		"minReadyTime": o.MinReadyTime.String(), "lbHealthInterval": o.Health.Interval.String(),
		"lbHealthTimeout": o.Health.Timeout.String(), "lbHealthyThreshold": o.Health.HealthyThreshold,
		"lbUnhealthyThreshold": o.Health.UnhealthyThreshold, "kubeAPIServer": o.KubeAPIServer,
		"profile": o.Profile, "knobs": lab.Settings(o),
	}
}

// keepLabLogs copies every apiserver process's log into the results folder,
// before the lab's temporary directory (which also holds its keys) goes away.
func keepLabLogs(l *lab.Lab, f *results.Folder) error {
	dir := f.Path("apiserver-logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range l.Nodes() {
		for i, p := range n.Processes() {
			if err := copyFile(p.LogPath, filepath.Join(dir, fmt.Sprintf("%s-%d-revision-%d.log", n.Name(), i, p.Revision))); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// dryRun prints what a run would do and, on a cluster, has the server
// validate the patch without applying it. Nothing is changed and the lab is
// not started.
func dryRun(cmd *cobra.Command, o *rootOptions, ro *runOptions, sc scenarios.Scenario, t scenarios.Timings, runID string, onLab bool) error {
	out := cmd.OutOrStdout()
	target := "the lab (started for the run)"
	if !onLab {
		target = "the kubeconfig's cluster"
	}
	fmt.Fprintf(out, "plan: scenario %s on %s\n", sc.Name, target)
	fmt.Fprintf(out, "  pollers: %s, new and reused connections, every %v\n", strings.Join(ro.backends, ", "), ro.interval)
	fmt.Fprintf(out, "  baseline %v\n", t.Baseline)
	if sc.Rollout {
		for n := 1; n <= ro.iterations; n++ {
			fmt.Fprintf(out, "  iteration %d: patch kubeapiservers.operator.openshift.io/cluster (merge) %s\n", n, trigger.Patch(trigger.Reason(runID, n)))
			fmt.Fprintf(out, "    follow the rollout (limit %v, settle %v), then cool down %v\n", t.FollowTimeout, t.Settle, t.CoolDown)
		}
	}
	if onLab {
		fmt.Fprintln(out, "dry run: nothing was started or changed")
		return nil
	}
	rc, err := restConfig(o)
	if err != nil {
		return err
	}
	clients, err := trigger.NewClients(rc)
	if err != nil {
		return err
	}
	st, info, err := trigger.Preflight(cmd.Context(), clients, ro.force)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "cluster: %s (%s)\n", rc.Host, describeCluster(info))
	fmt.Fprintf(out, "kube-apiserver: %s\n", st)
	if sc.Rollout {
		if _, err := trigger.Trigger(cmd.Context(), clients, trigger.Reason(runID, 1), true); err != nil {
			return fmt.Errorf("the server refused the patch in a dry run: %w", err)
		}
		fmt.Fprintln(out, "the server accepted the patch in a server-side dry run")
	}
	fmt.Fprintln(out, "dry run: nothing was changed")
	return nil
}

func describeCluster(i trigger.ClusterInfo) string {
	if !i.OpenShift {
		return "Kubernetes " + i.ServerVersion + ", not OpenShift"
	}
	return fmt.Sprintf("OpenShift %s on %s, %s control plane, Kubernetes %s", i.Version, i.Platform, i.ControlPlaneTopology, i.ServerVersion)
}
