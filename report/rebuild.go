package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/repro-tools/repro/results"
)

// ExtraIntervals produces interval items to merge into intervals.json, e.g.
// the rollout timeline from events.jsonl.
type ExtraIntervals func(f *results.Folder, a *Analysis) ([]IntervalItem, error)

// RebuildOption configures Rebuild.
type RebuildOption func(*rebuildConfig)

type rebuildConfig struct {
	extras        []ExtraIntervals
	maxDisruption time.Duration
}

// WithMaxDisruption sets the limit junit.xml fails a backend-connection
// over. Without it the limit recorded in run.json's settings is used.
func WithMaxDisruption(d time.Duration) RebuildOption {
	return func(c *rebuildConfig) { c.maxDisruption = d }
}

// WithExtraIntervals adds a producer of interval items to intervals.json.
func WithExtraIntervals(fn ExtraIntervals) RebuildOption {
	return func(c *rebuildConfig) { c.extras = append(c.extras, fn) }
}

// Rebuild regenerates intervals.json, backend-disruption.json, junit.xml,
// summary.txt and report.html of a results folder from its samples.jsonl,
// offline. run.json is used when present. When the folder has a rollout timeline
// (events.jsonl), the rollout joins intervals.json, every disruption is
// placed in it (placements.json and a section of summary.txt) and, on the
// lab, attributed to the apiservers its requests went to. A folder without
// samples is an error.
func Rebuild(dir string, opts ...RebuildOption) (*Analysis, error) {
	var cfg rebuildConfig
	for _, o := range opts {
		o(&cfg)
	}
	f, err := results.Open(dir)
	if err != nil {
		return nil, err
	}
	run, err := f.ReadRun()
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			if _, statErr := os.Stat(f.Path(results.RunFile)); statErr == nil {
				return nil, err
			}
		}
		run = nil
	}
	a, err := LoadSamples(f.Path(results.SamplesFile))
	if err != nil {
		return nil, err
	}
	tl, err := LoadTimeline(f)
	if err != nil {
		return nil, err
	}
	sets := [][]IntervalItem{IntervalItems(a.Intervals), RolloutItems(tl)}
	for _, extra := range cfg.extras {
		items, err := extra(f, a)
		if err != nil {
			return nil, err
		}
		sets = append(sets, items)
	}
	var buf bytes.Buffer
	if err := WriteIntervals(&buf, sets...); err != nil {
		return nil, err
	}
	if err := f.WriteFile(results.IntervalsFile, buf.Bytes()); err != nil {
		return nil, err
	}
	lb := ""
	if run != nil {
		if v, ok := run.Extra["loadBalancerType"].(string); ok {
			lb = v
		}
	}
	buf.Reset()
	if err := WriteBackendDisruption(&buf, BackendDisruptionFor(a, lb)); err != nil {
		return nil, err
	}
	if err := f.WriteFile(results.BackendDisruptionFile, buf.Bytes()); err != nil {
		return nil, err
	}
	limit := cfg.maxDisruption
	if limit == 0 && run != nil {
		if v, ok := run.Settings["maxDisruption"].(string); ok {
			limit, _ = time.ParseDuration(v)
		}
	}
	buf.Reset()
	suite := "repro"
	if run != nil {
		suite = "repro " + run.Command
		if sc, ok := run.Extra["scenario"].(string); ok {
			suite += " " + sc
		}
	}
	if err := WriteJUnit(&buf, suite, a, limit); err != nil {
		return nil, err
	}
	if err := f.WriteFile(JUnitFile, buf.Bytes()); err != nil {
		return nil, err
	}
	buf.Reset()
	if err := WriteSummary(&buf, a, run); err != nil {
		return nil, err
	}
	if len(tl.Events) > 0 {
		section, err := writeRollout(f, a, tl)
		if err != nil {
			return nil, err
		}
		buf.Write(section)
	}
	if err := f.WriteFile(results.SummaryFile, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("write summary: %w", err)
	}
	if err := writeHTML(f, run, a, tl); err != nil {
		return nil, err
	}
	return a, nil
}
