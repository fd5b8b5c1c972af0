package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/repro-tools/repro/results"
)

// ExtraIntervals produces interval items to merge into intervals.json, e.g.
// the rollout timeline from events.jsonl.
type ExtraIntervals func(f *results.Folder, a *Analysis) ([]IntervalItem, error)

// RebuildOption configures Rebuild.
type RebuildOption func(*rebuildConfig)

type rebuildConfig struct {
	extras []ExtraIntervals
}

// WithExtraIntervals adds a producer of interval items to intervals.json.
func WithExtraIntervals(fn ExtraIntervals) RebuildOption {
	return func(c *rebuildConfig) { c.extras = append(c.extras, fn) }
}

// Rebuild regenerates intervals.json, backend-disruption.json and
// summary.txt of a results folder from its samples.jsonl, offline. run.json
// is used when present. A folder without samples is an error.
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
	sets := [][]IntervalItem{IntervalItems(a.Intervals)}
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
	buf.Reset()
	if err := WriteSummary(&buf, a, run); err != nil {
		return nil, err
	}
	if err := f.WriteFile(results.SummaryFile, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("write summary: %w", err)
	}
	return a, nil
}
