package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

func init() { subcommands = append(subcommands, newProbeCmd) }

type probeOptions struct {
	duration     time.Duration
	interval     time.Duration
	probeTimeout time.Duration
	backends     []string
	http2        bool
	out          string
}

func newProbeCmd(o *rootOptions) *cobra.Command {
	po := &probeOptions{}
	cmd := &cobra.Command{
		Use:   "probe --duration D",
		Short: "Poll the API backends over new and reused connections and record every request",
		Long: `Poll every chosen API backend of the kubeconfig's cluster with two pollers,
one opening a new TCP+TLS connection per request and one reusing its
connection, every --interval, for --duration. Every request is recorded in
samples.jsonl with millisecond timing; intervals.json, backend-disruption.json
and summary.txt are derived from it at the end (and can be rebuilt with
"repro report DIR"). Ctrl-C ends the run early and keeps everything measured.

Backends: ` + strings.Join(prober.BackendNames(), ", ") + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runProbe(cmd, o, po) },
	}
	f := cmd.Flags()
	f.DurationVar(&po.duration, "duration", 0, "how long to poll (required), e.g. 10m")
	f.DurationVar(&po.interval, "interval", prober.DefaultInterval, "time between two requests of each poller (minimum 10ms)")
	f.DurationVar(&po.probeTimeout, "probe-timeout", prober.DefaultProbeTimeout, "bound on each request; dial, TLS and response headers get 4/5 of it")
	f.StringSliceVar(&po.backends, "backends", prober.DefaultBackendNames, "backends to poll: "+strings.Join(prober.BackendNames(), ", "))
	f.BoolVar(&po.http2, "http2", false, "negotiate HTTP/2 (default HTTP/1.1, like origin's sampler)")
	f.StringVar(&po.out, "out", "", "results folder (default ./repro-results/<UTC timestamp>-probe)")
	return cmd
}

func runProbe(cmd *cobra.Command, o *rootOptions, po *probeOptions) error {
	ctx := cmd.Context()
	log := o.logger()
	if po.duration <= 0 {
		return errors.New("--duration is required and must be positive, e.g. --duration 10m")
	}
	if po.interval < prober.MinInterval {
		return fmt.Errorf("--interval %v is below the minimum of %v", po.interval, prober.MinInterval)
	}
	if po.probeTimeout <= 0 {
		return fmt.Errorf("--probe-timeout must be positive, got %v", po.probeTimeout)
	}
	backends, err := prober.LookupBackends(po.backends)
	if err != nil {
		return fmt.Errorf("--backends: %w", err)
	}
	rc, err := restConfig(o)
	if err != nil {
		return err
	}
	pr, err := prober.New(rc,
		prober.WithBackends(backends...),
		prober.WithInterval(po.interval),
		prober.WithProbeTimeout(po.probeTimeout),
		prober.WithDuration(po.duration),
		prober.WithHTTP2(po.http2),
		prober.WithLogger(log))
	if err != nil {
		return err
	}
	defer pr.Close()

	out := po.out
	if out == "" {
		out = results.DefaultDir("probe", time.Now())
	}
	folder, err := results.Create(out)
	if err != nil {
		return err
	}

	first, err := pr.Preflight(ctx)
	if err != nil {
		folder.RemoveIfEmpty()
		if ctx.Err() != nil {
			return withExitCode(exitInterrupted, errors.New("interrupted before polling started"))
		}
		return err
	}
	switch {
	case first.StatusCode == 401 || first.StatusCode == 403:
		log.Warn("the server refuses the kubeconfig's credentials; polling anyway, failures will be classed http-other",
			zap.Int("status", first.StatusCode), zap.String("error", first.Error))
	case first.ErrorClass != results.ClassNone:
		log.Warn("preflight request failed; polling anyway", zap.String("class", string(first.ErrorClass)), zap.String("error", first.Error))
	}

	run := results.NewRun("probe", os.Args, time.Now())
	run.Server = pr.Server()
	run.Settings = map[string]any{
		"duration":      po.duration.String(),
		"interval":      po.interval.String(),
		"probeTimeout":  po.probeTimeout.String(),
		"backends":      names(backends),
		"http2":         po.http2,
		"inFlightBound": prober.InFlightBound(po.probeTimeout, po.interval),
	}
	if err := folder.WriteRun(run); err != nil {
		return err
	}
	w, err := results.CreateJSONL(folder.Path(results.SamplesFile))
	if err != nil {
		return err
	}

	log.Info("polling", zap.String("server", pr.Server()), zap.Strings("pollers", pr.PollerNames()),
		zap.Duration("interval", po.interval), zap.Duration("duration", po.duration), zap.String("out", folder.Dir()))
	display := startProgress(ctx, pr, po.duration, log, nil)
	samples := pr.Run(ctx)
	var writeErr error
	for s := range samples {
		if writeErr != nil {
			continue // keep draining so the pollers finish
		}
		if err := w.Write(&s); err != nil {
			writeErr = err
			display.logger().Error("writing samples failed; polling continues but nothing more is saved", zap.Error(err))
		}
	}
	display.finish()
	if err := w.Close(); err != nil && writeErr == nil {
		writeErr = err
	}

	status := results.StatusComplete
	if ctx.Err() != nil {
		status = results.StatusInterrupted
	}
	if writeErr != nil {
		status = results.StatusFailed
		run.Error = writeErr.Error()
	}
	run.Finish(time.Now(), status)
	if err := folder.WriteRun(run); err != nil {
		return err
	}
	if writeErr != nil {
		return fmt.Errorf("writing %s: %v", folder.Path(results.SamplesFile), writeErr)
	}

	a, err := report.Rebuild(folder.Dir())
	if err != nil {
		return fmt.Errorf("report on %s: %w (samples are kept; rerun \"repro report %s\")", folder.Dir(), err, folder.Dir())
	}
	if summary, err := os.ReadFile(folder.Path(results.SummaryFile)); err == nil {
		fmt.Fprint(cmd.OutOrStdout(), string(summary))
	}
	fmt.Fprintf(cmd.OutOrStdout(), "\nresults: %s (%d samples)\n", folder.Dir(), a.Samples)
	if status == results.StatusInterrupted {
		return withExitCode(exitInterrupted, fmt.Errorf("interrupted; partial results kept in %s", folder.Dir()))
	}
	var refused int64
	for _, p := range a.Pollers {
		refused += p.Unauthorized
	}
	if refused > 0 {
		return fmt.Errorf("%d request(s) were refused with 401/403: the kubeconfig's credentials are expired or lack permission; results kept in %s", refused, folder.Dir())
	}
	return nil
}

// restConfig loads the client configuration the way oc does, and says so
// plainly when there is none (client-go would silently fall back to
// http://localhost:8080).
func restConfig(o *rootOptions) (*rest.Config, error) {
	inCluster := os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != ""
	explicitServer := o.configFlags.APIServer != nil && *o.configFlags.APIServer != ""
	if !inCluster && !explicitServer {
		raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %s", oneLine(err.Error()))
		}
		if len(raw.Clusters) == 0 {
			return nil, errors.New("no kubeconfig found: pass --kubeconfig or set KUBECONFIG (looked at $KUBECONFIG and ~/.kube/config)")
		}
	}
	rc, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %s", oneLine(err.Error()))
	}
	return rc, nil
}

func names(bs []prober.Backend) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Name
	}
	return out
}

// oneLine folds a multi-line error message into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
