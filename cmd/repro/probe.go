package main

import (
	"errors"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
	"github.com/repro-tools/repro/scenarios"
)

func init() { subcommands = append(subcommands, newProbeCmd) }

type probeOptions struct {
	duration time.Duration
	polling  pollingFlags
	out      string
}

func newProbeCmd(o *rootOptions) *cobra.Command {
	po := &probeOptions{}
	cmd := &cobra.Command{
		Use:   "probe --duration D",
		Short: "Poll the API backends over new and reused connections and record every request",
		Long: `Poll every chosen API backend of the kubeconfig's cluster (found the way oc
finds it: --kubeconfig, KUBECONFIG, ~/.kube/config, in-cluster) with two
pollers, one opening a new TCP+TLS connection per request and one reusing its
connection, every --interval, for --duration. It changes nothing: it is the
baseline scenario of "repro run", with no trigger. Every backend is checked
once first; one that answers 401, 403 or 404 is named and not polled.

Every request is recorded in samples.jsonl with millisecond timing;
intervals.json, backend-disruption.json and summary.txt are derived from it
at the end (and can be rebuilt with "repro report DIR"). Ctrl-C ends the run
early and keeps everything measured.

Backends: ` + strings.Join(prober.BackendNames(), ", ") + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runProbe(cmd, o, po) },
	}
	f := cmd.Flags()
	f.DurationVar(&po.duration, "duration", 0, "how long to poll (required), e.g. 10m")
	po.polling.bind(f)
	f.StringVar(&po.out, "out", "", "results folder (default ./repro-results/<UTC timestamp>-probe)")
	o.bindClusterFlags(cmd)
	return cmd
}

func runProbe(cmd *cobra.Command, o *rootOptions, po *probeOptions) error {
	ctx := cmd.Context()
	if po.duration <= 0 {
		return errors.New("--duration is required and must be positive, e.g. --duration 10m")
	}
	polling, err := po.polling.settings()
	if err != nil {
		return err
	}
	target, err := probeTarget(o)
	if err != nil {
		return err
	}
	sc, err := scenarios.Lookup("baseline")
	if err != nil {
		return err
	}
	out := po.out
	if out == "" {
		out = results.DefaultDir("probe", time.Now())
	}
	plan, err := scenarios.NewPlan(scenarios.PlanOptions{
		Command: "probe", Args: os.Args, Scenario: sc, Baseline: po.duration,
		Polling: polling, Cluster: target, Out: out,
		Stdout: cmd.OutOrStdout(), Stderr: os.Stderr, Log: o.logger(), LogTo: o.logToFile,
		Progress: func(pr *prober.Prober, total time.Duration) (*zap.Logger, func()) {
			d := startProgress(ctx, pr, total, o, nil)
			return d.logger(), d.finish
		},
	})
	if err != nil {
		return err
	}
	res, err := plan.Run(ctx)
	if err != nil {
		return notMeasured(err, "interrupted before polling started")
	}
	return finishRun(cmd.OutOrStdout(), res, 0)
}
