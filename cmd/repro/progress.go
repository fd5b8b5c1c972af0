package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"go.uber.org/zap"
	"golang.org/x/term"

	"github.com/repro-tools/repro/prober"
)

// progressDisplay renders the prober's live counters: on a terminal one
// line per backend-connection (mpb) with every log line printed above the
// bars; otherwise plain lines, one per stage or node change and a periodic
// poller line.
type progressDisplay struct {
	stop chan struct{}
	done chan struct{}
	log  *zap.Logger
	sink *logSink
}

// newBars is the container every progress display of repro draws its bars
// in: on w, redrawn four times a second, each bar width columns wide.
func newBars(ctx context.Context, w io.Writer, width int) *mpb.Progress {
	return mpb.NewWithContext(ctx, mpb.WithOutput(w), mpb.WithRefreshRate(250*time.Millisecond), mpb.WithWidth(width))
}

// startProgress starts rendering. total is the planned run length (0 when
// it runs until interrupted). Call finish when the prober is done.
// view, when not nil, adds the run's stage and one line per node of the
// rollout under way.
func startProgress(ctx context.Context, pr *prober.Prober, total time.Duration, o *rootOptions, view *rolloutView) *progressDisplay {
	d := &progressDisplay{stop: make(chan struct{}), done: make(chan struct{}), log: o.logger(), sink: o.sink}
	if d.sink == nil {
		d.sink = newLogSink(os.Stderr)
	}
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		go d.lineLoop(pr, total, view)
		return d
	}
	p := newBars(context.WithoutCancel(ctx), os.Stderr, 24)
	// Every log line, the lab's and client-go's too, goes through the
	// container: it prints above the bars, which are redrawn below it. A
	// line written to stderr past the container would leave a stale copy
	// of the bars in the scrollback.
	lines := newLineQueue(p)
	d.sink.setConsole(lines)
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
				d.sink.setConsole(nil)
				lines.close()
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

// lineLoop prints plain progress lines: one whenever the stage or a
// node's phase changes, and the pollers' counters every pollerLineEvery.
func (d *progressDisplay) lineLoop(pr *prober.Prober, total time.Duration, view *rolloutView) {
	defer close(d.done)
	w := d.sink.consoleWriter()
	start := time.Now()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	last, lastPollers := "", start
	for {
		select {
		case <-d.stop:
			return
		case now := <-t.C:
			if view != nil {
				if st := view.state(); st != last {
					last = st
					fmt.Fprintf(w, "%s progress: %s\n", now.Format("15:04:05.000"), st)
				}
			}
			if now.Sub(lastPollers) >= pollerLineEvery {
				lastPollers = now
				var parts []string
				for _, s := range pr.Stats() {
					parts = append(parts, fmt.Sprintf("%s %d/%d/%.3fs", s.Name, s.Samples, s.Failures, s.Disrupted.Seconds()))
				}
				fmt.Fprintf(w, "%s pollers (samples/failures/disrupted), %s: %s\n", now.Format("15:04:05.000"), elapsedLine(now.Sub(start), total), strings.Join(parts, ", "))
			}
		}
	}
}

// pollerLineEvery is how often a run without a terminal prints the pollers' counters.
const pollerLineEvery = 10 * time.Second

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

// lineQueue hands log lines to the progress container from its own
// goroutine: the container takes a line only at its next refresh (up to
// 250 ms), and a poller that logs must not wait for that. When more than
// its capacity is waiting, lines are dropped from the screen (repro.log
// keeps them).
type lineQueue struct {
	ch   chan []byte
	done chan struct{}
}

func newLineQueue(w io.Writer) *lineQueue {
	q := &lineQueue{ch: make(chan []byte, 256), done: make(chan struct{})}
	go func() {
		defer close(q.done)
		for b := range q.ch {
			w.Write(b)
		}
	}()
	return q
}

func (q *lineQueue) Write(b []byte) (int, error) {
	select {
	case q.ch <- append([]byte(nil), b...):
	default:
	}
	return len(b), nil
}

// close waits for the queued lines to be printed; no Write may follow.
func (q *lineQueue) close() {
	close(q.ch)
	<-q.done
}
