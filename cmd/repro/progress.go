package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"github.com/repro-tools/repro/prober"
)

// progressDisplay renders the prober's live counters: one line per
// backend-connection on a terminal (mpb), a periodic log line otherwise.
type progressDisplay struct {
	stop chan struct{}
	done chan struct{}
	log  *zap.Logger // logger that prints above the bars while they show
}

// startProgress starts rendering. total is the planned run length (0 when
// it runs until interrupted). Call finish when the prober is done.
// view, when not nil, adds the run's stage and one line per node of the
// rollout under way.
func startProgress(ctx context.Context, pr *prober.Prober, total time.Duration, base *zap.Logger, view *rolloutView) *progressDisplay {
	d := &progressDisplay{stop: make(chan struct{}), done: make(chan struct{}), log: base}
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		go d.logLoop(pr, total, base, view)
		return d
	}
	p := mpb.NewWithContext(context.WithoutCancel(ctx), mpb.WithOutput(os.Stderr), mpb.WithRefreshRate(250*time.Millisecond), mpb.WithWidth(24))
	d.log = loggerTo(p, base)
	names := pr.PollerNames()
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	ticks := int64(0)
	if total > 0 {
		ticks = int64((total + pr.Interval() - 1) / pr.Interval())
	}
	stats := make([]prober.PollerStats, len(names))
	statsAt := func(i int) prober.PollerStats { return stats[i] }
	bars := make([]*mpb.Bar, len(names))
	start := time.Now()
	for i, name := range names {
		i := i
		bars[i] = p.AddBar(ticks,
			mpb.PrependDecorators(decor.Name(name, decor.WC{W: width + 1, C: decor.DindentRight})),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
				return pollerLine(statsAt(i))
			})),
		)
	}
	clock := p.New(0, mpb.NopStyle(),
		mpb.PrependDecorators(decor.Any(func(decor.Statistics) string {
			line := elapsedLine(time.Since(start), total)
			if view != nil {
				line = view.stageLine(time.Now()) + "  " + line
			}
			return line
		})))
	// Node lines appear as the rollout reaches each node.
	var nodeBars []*mpb.Bar
	addNodeBars := func() {
		if view == nil {
			return
		}
		for i := len(nodeBars); i < view.nodeCount(); i++ {
			i := i
			nodeBars = append(nodeBars, p.New(0, mpb.NopStyle(),
				mpb.PrependDecorators(decor.Any(func(decor.Statistics) string {
					if lines := view.nodeLines(time.Now()); i < len(lines) {
						return "  " + lines[i]
					}
					return ""
				}))))
		}
	}
	go func() {
		defer close(d.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			st := pr.Stats()
			copy(stats, st)
			for i, s := range st {
				bars[i].SetCurrent(s.Samples)
			}
			addNodeBars()
			select {
			case <-d.stop:
				copy(stats, pr.Stats())
				for _, b := range bars {
					b.SetTotal(-1, true)
				}
				clock.SetTotal(-1, true)
				for _, b := range nodeBars {
					b.SetTotal(-1, true)
				}
				p.Wait()
				return
			case <-t.C:
			}
		}
	}()
	return d
}

// logger returns the logger to use while the display runs.
func (d *progressDisplay) logger() *zap.Logger { return d.log }

// finish stops rendering and waits for the last frame.
func (d *progressDisplay) finish() {
	close(d.stop)
	<-d.done
}

func (d *progressDisplay) logLoop(pr *prober.Prober, total time.Duration, log *zap.Logger, view *rolloutView) {
	defer close(d.done)
	start := time.Now()
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			var parts []string
			for _, s := range pr.Stats() {
				parts = append(parts, s.Name+": "+pollerLine(s))
			}
			fields := []zap.Field{zap.Strings("pollers", parts)}
			line := elapsedLine(time.Since(start), total)
			if view != nil {
				line = view.stageLine(time.Now()) + " " + line
				if nodes := view.nodeLines(time.Now()); len(nodes) > 0 {
					fields = append(fields, zap.Strings("nodes", nodes))
				}
			}
			log.Info("progress "+line, fields...)
		}
	}
}

func pollerLine(s prober.PollerStats) string {
	line := fmt.Sprintf("samples %6d  failures %5d  disrupted %9.3fs", s.Samples, s.Failures, s.Disrupted.Seconds())
	if s.SkippedTicks > 0 {
		line += fmt.Sprintf("  skipped %d", s.SkippedTicks)
	}
	if s.Failing {
		line += "  FAILING " + string(s.LastClass)
	}
	return line
}

func elapsedLine(elapsed, total time.Duration) string {
	elapsed = elapsed.Truncate(time.Second)
	if total <= 0 {
		return fmt.Sprintf("elapsed %v  (Ctrl-C stops early and keeps the results)", elapsed)
	}
	remaining := max(total.Truncate(time.Second)-elapsed, 0)
	return fmt.Sprintf("elapsed %v  remaining %v  (Ctrl-C stops early and keeps the results)", elapsed, remaining)
}

// loggerTo returns a console logger like the root one, at the same level,
// writing to w (the progress container, so lines print above the bars).
func loggerTo(w io.Writer, base *zap.Logger) *zap.Logger {
	level := zapcore.ErrorLevel
	for _, l := range []zapcore.Level{zapcore.DebugLevel, zapcore.InfoLevel, zapcore.WarnLevel} {
		if base.Core().Enabled(l) {
			level = l
			break
		}
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), level))
}
