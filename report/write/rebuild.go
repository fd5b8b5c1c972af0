package write

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/htmlreport"
	"github.com/repro-tools/repro/results"
)

// ExtraIntervals produces interval items to merge into intervals.json, e.g.
// the rollout timeline from events.jsonl.
type ExtraIntervals func(f *results.Folder, a *report.Analysis) ([]origin.Interval, error)

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

// summarySections are added to the end of summary.txt by Rebuild, once every
// other derived file (placements.json included) is written.
var summarySections []summarySection

type summarySection struct {
	title string
	write func(dir string, w io.Writer) error
}

// AddSummarySection registers a section of summary.txt written from the
// rebuilt folder dir; a package that write cannot import (diagnose, which
// reads the files written here) adds its own this way.
// report.html shows the same text under title.
func AddSummarySection(title string, fn func(dir string, w io.Writer) error) {
	summarySections = append(summarySections, summarySection{title, fn})
}

// Rebuild regenerates intervals.json, backend-disruption.json, junit.xml,
// summary.txt and report.html of a results folder from its samples.jsonl,
// offline, and origin's own files beside them (see RebuildOrigin). run.json is used when present. When the folder has a rollout timeline
// (events.jsonl), the rollout joins intervals.json, every disruption is
// placed in it (placements.json and a section of summary.txt) and, on the
// lab, attributed to the apiservers its requests went to. A folder without
// samples is an error.
func Rebuild(dir string, opts ...RebuildOption) (*report.Analysis, error) {
	var cfg rebuildConfig
	for _, o := range opts {
		o(&cfg)
	}
	d, err := loadFolder(dir)
	if err != nil {
		return nil, err
	}
	f, run, a, tl := d.folder, d.run, d.analysis, d.timeline
	sets := [][]origin.Interval{IntervalItems(a.Intervals), RolloutItems(tl)}
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
	buf.Reset()
	// Each poller's load balancer is its vantage (PollerSummary.Vantage,
	// from its samples); the others are origin's external-lb.
	if err := WriteBackendDisruption(&buf, BackendDisruptionFor(a)); err != nil {
		return nil, err
	}
	if err := f.WriteFile(results.BackendDisruptionFile, buf.Bytes()); err != nil {
		return nil, err
	}
	originSection, err := writeOriginFiles(f, run, a, tl)
	if err != nil {
		return nil, err
	}
	limit := cfg.maxDisruption
	if limit == 0 && run != nil {
		if v := run.Settings.MaxDisruption; v != nil {
			limit = v.D()
		}
	}
	buf.Reset()
	suite := "repro"
	if run != nil {
		suite = "repro " + run.Command
		if sc := run.Extra.Scenario; sc != "" {
			suite += " " + sc
		}
	}
	if err := WriteJUnit(&buf, suite, a, limit); err != nil {
		return nil, err
	}
	if err := f.WriteFile(results.JUnitFile, buf.Bytes()); err != nil {
		return nil, err
	}
	buf.Reset()
	if err := WriteSummary(&buf, a, run); err != nil {
		return nil, err
	}
	buf.Write(originSection)
	var ps []report.Placement
	if len(tl.Events) > 0 {
		ps = report.Place(a.Intervals, tl)
		if err := report.AttributeServedBy(f, ps, d.servedBy); err != nil {
			return nil, err
		}
		section, err := writeRollout(f, a, tl, ps)
		if err != nil {
			return nil, err
		}
		buf.Write(section)
	}
	for _, s := range summarySections {
		var sb bytes.Buffer
		if err := s.write(dir, &sb); err != nil {
			fmt.Fprintf(&sb, "(section not written: %v)\n", err)
		}
		buf.WriteString("\n")
		buf.Write(sb.Bytes())
		d.sections = append(d.sections, htmlreport.Section{Title: s.title, Text: sb.String()})
	}
	if err := f.WriteFile(results.SummaryFile, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("write summary: %w", err)
	}
	if err := writeHTML(d, ps); err != nil {
		return nil, err
	}
	return a, nil
}

// RebuildOrigin regenerates only origin's files of a results folder:
// e2e-timelines_spyglass_<run id>.json (origin's interval file, in its
// structured serialization, the rollout in origin's vocabulary) and
// backend-disruption_<run id>.json (origin's BackendDisruptionList), both
// by origin's rules. It returns their paths.
func RebuildOrigin(dir string) ([]string, error) {
	d, err := loadFolder(dir)
	if err != nil {
		return nil, err
	}
	if _, err := writeOriginFiles(d.folder, d.run, d.analysis, d.timeline); err != nil {
		return nil, err
	}
	a, b := OriginFiles(OriginRunID(d.run, dir))
	return []string{d.folder.Path(a), d.folder.Path(b)}, nil
}

// folderData is a results folder read for deriving files from it.
type folderData struct {
	folder   *results.Folder
	run      *results.Run // nil without run.json
	analysis *report.Analysis
	timeline *report.Timeline
	servedBy results.LBConnections // nil without lb-connections.jsonl
	// sections are the registered summary sections, for report.html.
	sections []htmlreport.Section
}

// loadFolder reads what every derived file is built from: samples.jsonl
// (required), and run.json, events.jsonl and lb-connections.jsonl when
// present. A run.json that exists but cannot be read is an error.
func loadFolder(dir string) (*folderData, error) {
	f, err := results.Open(dir)
	if err != nil {
		return nil, err
	}
	d := &folderData{folder: f}
	if d.run, err = f.ReadRun(); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			if _, statErr := os.Stat(f.Path(results.RunFile)); statErr == nil {
				return nil, err
			}
		}
		d.run = nil
	}
	if d.analysis, err = report.LoadSamples(f.Path(results.SamplesFile)); err != nil {
		if errors.Is(err, report.ErrNoSamples) {
			return nil, fmt.Errorf("%v; nothing to report: %s", err, whyNoSamples(d.run))
		}
		return nil, err
	}
	if d.timeline, err = report.LoadTimeline(f); err != nil {
		return nil, err
	}
	if d.servedBy, err = results.ReadLBConnections(f.Path(results.LBConnectionsFile)); err != nil {
		return nil, err
	}
	return d, nil
}

// whyNoSamples says why a run recorded no sample, from how run.json says
// it ended.
func whyNoSamples(run *results.Run) string {
	if run == nil {
		return "there is no run.json either; is this a results folder?"
	}
	switch run.Status {
	case results.StatusInterrupted:
		return "the run was interrupted before its first request was answered"
	case results.StatusFailed:
		return "the run failed before its first request was answered: " + oneLine(run.Error, 200)
	case results.StatusRunning:
		return "run.json still says running: the run was killed before its first samples were written, or is still running"
	}
	return "the run ended before its first request was answered; run it again with a longer --duration"
}
