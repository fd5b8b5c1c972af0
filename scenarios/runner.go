package scenarios

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
	"github.com/repro-tools/repro/trigger"
)

// Config is everything one scenario run needs. The caller builds the prober
// and the clients (against a live cluster or the lab) and owns the folder.
type Config struct {
	Scenario   Scenario
	Timings    Timings
	Iterations int
	// RunID makes each forceRedeploymentReason unique: repro-<RunID>-<n>.
	RunID string
	// Force goes on when preflight finds the cluster not settled.
	Force   bool
	Prober  *prober.Prober
	Clients *trigger.Clients
	Folder  *results.Folder
	Run     *results.Run
	Log     *zap.Logger
	// OnEvent, if set, sees every timeline event as it is recorded (for
	// live progress). It must not block.
	OnEvent func(results.Event)
	// ClockOffset, when not zero, is the cluster's clock minus ours: the
	// rollout's server-stamped event times are moved onto our clock by it.
	ClockOffset time.Duration
}

// Execute runs the scenario: it starts the pollers, streams their samples to
// samples.jsonl and the timeline to events.jsonl, waits the baseline, then
// for each iteration triggers a rollout, follows it to convergence and cools
// down. Whatever happens (interrupt, timeout, error), the pollers are stopped,
// both files are flushed and closed, and run.json records how the run ended:
// the folder is always readable. The returned error says why a run did not
// complete; ctx's cancellation is reported as context.Canceled.
func Execute(ctx context.Context, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Iterations < 1 {
		cfg.Iterations = 1
	}
	samples, err := results.CreateJSONL(cfg.Folder.Path(results.SamplesFile))
	if err != nil {
		return err
	}
	events, err := results.CreateJSONL(cfg.Folder.Path(results.EventsFile))
	if err != nil {
		samples.Close()
		return err
	}
	r := &runner{cfg: cfg, events: events}

	// The scenario ends the pollers after its last stage with Stop, which
	// waits for the requests still open (each ends by the probe timeout):
	// a server that stopped answering near the end is measured, not
	// dropped. An interrupt (ctx) skips that wait.
	defer cfg.Prober.Stop()
	var writeErr error
	var drained sync.WaitGroup
	drained.Add(1)
	go func() {
		defer drained.Done()
		for s := range cfg.Prober.Run(ctx) {
			if writeErr == nil {
				if err := samples.Write(&s); err != nil {
					writeErr = err
					cfg.Log.Error("writing samples failed; nothing more is saved", zap.Error(err))
				}
			}
		}
	}()

	runErr := r.stages(ctx)
	r.record(results.Event{Kind: results.KindPhase, Reason: results.PhaseEnd})
	cfg.Prober.Stop()
	drained.Wait()

	if err := samples.Close(); err != nil && writeErr == nil {
		writeErr = err
	}
	if err := events.Close(); err != nil && writeErr == nil {
		writeErr = err
	}
	if runErr == nil && writeErr != nil {
		runErr = fmt.Errorf("writing results: %w", writeErr)
	}
	return runErr
}

type runner struct {
	cfg    Config
	mu     sync.Mutex
	events *results.JSONLWriter
}

// record stamps e with the current time where it has none and writes it.
func (r *runner) record(e results.Event) {
	now := time.Now()
	if e.Time.IsZero() {
		e.Time = now
	}
	if e.Observed.IsZero() {
		e.Observed = now
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.events.Write(e); err != nil {
		r.cfg.Log.Error("writing events failed", zap.Error(err))
	}
	if r.cfg.OnEvent != nil {
		r.cfg.OnEvent(e)
	}
}

func (r *runner) phase(name string, iteration int) {
	r.record(results.Event{Kind: results.KindPhase, Reason: name, Iteration: iteration})
	r.cfg.Log.Info("stage", zap.String("stage", name), zap.Int("iteration", iteration))
}

func (r *runner) stages(ctx context.Context) error {
	t := r.cfg.Timings
	r.phase(results.PhaseBaseline, 0)
	if err := sleep(ctx, t.Baseline); err != nil {
		return err
	}
	if !r.cfg.Scenario.Rollout {
		return nil
	}
	for n := 1; n <= r.cfg.Iterations; n++ {
		if err := r.iteration(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) iteration(ctx context.Context, n int) error {
	c := r.cfg.Clients
	before, _, err := trigger.Preflight(ctx, c, true)
	if err != nil {
		return err
	}
	if n > 1 && !before.Converged() {
		return fmt.Errorf("iteration %d: the previous rollout has not settled (%s)", n, before)
	}
	reason := trigger.Reason(r.cfg.RunID, n)
	r.phase(results.PhaseRollout, n)
	since := time.Now()
	if _, err := trigger.Trigger(ctx, c, reason, false); err != nil {
		return err
	}
	r.record(results.Event{Time: since, Kind: results.KindTrigger, Iteration: n, Revision: before.LatestAvailableRevision,
		Reason: reason, Message: fmt.Sprintf("forceRedeploymentReason set to %s (latest revision was %d)", reason, before.LatestAvailableRevision)})
	r.cfg.Log.Info("rollout triggered", zap.Int("iteration", n), zap.String("reason", reason), zap.Int32("fromRevision", before.LatestAvailableRevision))

	fctx, cancel := context.WithTimeout(ctx, r.cfg.Timings.FollowTimeout)
	defer cancel()
	st, err := trigger.Follow(fctx, c, trigger.FollowOptions{
		FromRevision: before.LatestAvailableRevision, Since: since, Settle: r.cfg.Timings.Settle, Iteration: n,
		ClockOffset: r.cfg.ClockOffset,
	}, r.record)
	if err != nil {
		if errors.Is(err, trigger.ErrTimeout) {
			return fmt.Errorf("iteration %d: %w after %v (raise the follow timeout if the cluster is slow)", n, err, r.cfg.Timings.FollowTimeout)
		}
		return err
	}
	// Follow returns once convergence has held for the settle time, so
	// "took" counts it; the summary's "completed in" stops at convergence.
	r.cfg.Log.Info("rollout complete", zap.Int("iteration", n), zap.String("status", st.String()),
		zap.Duration("took", time.Since(since).Round(time.Millisecond)), zap.Duration("includingSettle", r.cfg.Timings.Settle))
	r.phase(results.PhaseCoolDown, n)
	return sleep(ctx, r.cfg.Timings.CoolDown)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
