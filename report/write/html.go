package write

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/htmlreport"
	"github.com/repro-tools/repro/results"
)

// htmlRun gathers what the page needs of one results folder; ps are its
// intervals' placements in the rollout (none without a timeline).
func htmlRun(d *folderData, label string, ps []report.Placement) (*htmlreport.Run, error) {
	f, run, a, tl, sb := d.folder, d.run, d.analysis, d.timeline, d.servedBy
	in := &htmlreport.Run{
		Label:         label,
		Info:          run,
		TruncatedLast: a.TruncatedLast,
		MeasuringHost: MeasuringHost(a, run),
		Events:        tl.Events,
		Sections:      d.sections,
		ForEachSample: func(fn func(*results.Sample)) error {
			var s results.Sample
			_, err := results.ReadJSONL(f.Path(results.SamplesFile), func(line []byte) error {
				s = results.Sample{}
				if err := s.UnmarshalJSON(line); err != nil {
					return err
				}
				fn(&s)
				return nil
			})
			return err
		},
	}
	if len(sb) > 0 {
		in.ServedBy = sb.Target
	}
	in.Verdict = a.Attribution.ByAuditID()
	sigs, _, err := results.ReadSignals(f.Path(results.SignalsFile))
	if err != nil {
		return nil, err
	}
	in.Signals = sigs
	for _, p := range a.Pollers {
		classes := map[string]int64{}
		for c, n := range p.Classes {
			classes[string(c)] = n
		}
		in.Pollers = append(in.Pollers, htmlreport.Poller{
			Name: p.Name, Backend: p.Backend, Connection: string(p.Connection),
			Samples: p.Samples, Failures: p.Failures, Skipped: p.Skipped, Aborted: p.Aborted,
			Disrupted: p.Disrupted, Longest: p.Longest, Intervals: p.Intervals, SamplerOutage: p.SamplerOutage,
			Protocol: p.Protocol, Classes: classes,
		})
	}
	where := map[string]string{}
	for _, p := range ps {
		where[p.Name+p.From.String()] = p.Where
	}
	for _, iv := range a.Intervals {
		in.Intervals = append(in.Intervals, htmlreport.Interval{
			Name: iv.Name, From: iv.From, To: iv.To, Class: string(iv.Class), SamplerOutage: iv.SamplerOutage,
			Open: iv.Open, Samples: iv.Samples, Message: iv.Message, AuditID: iv.AuditID, Where: where[iv.Name+iv.From.String()],
		})
	}
	for _, s := range tl.Stages {
		in.Stages = append(in.Stages, htmlreport.Stage{Name: s.Name, Iteration: s.Iteration, From: s.From, To: s.To})
	}
	for _, it := range tl.Iterations {
		hit := htmlreport.Iteration{N: it.N, Trigger: it.Trigger, Complete: it.Complete, Revision: it.Revision}
		for _, w := range it.Nodes {
			hit.Nodes = append(hit.Nodes, htmlreport.NodeWindow{Node: w.Node, Terminating: w.Terminating, Starting: w.Starting, Ready: w.Ready})
		}
		in.Iterations = append(in.Iterations, hit)
	}
	return in, nil
}

// writeHTML writes report.html into the folder.
func writeHTML(d *folderData, ps []report.Placement) error {
	f := d.folder
	in, err := htmlRun(d, filepath.Base(f.Dir()), ps)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := htmlreport.WriteRun(&buf, in); err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	return f.WriteFile(htmlreport.FileName, buf.Bytes())
}

// WriteCompareHTML writes one self-contained page comparing the results
// folders dirs: their totals side by side (one column per folder, in the
// order given) and their timelines, lanes and latency plots aligned on each
// run's first trigger (a run without one, e.g. a probe, is aligned on its
// first sample and says so). Each folder is read like Rebuild reads it
// (samples.jsonl, events.jsonl, run.json, lb-connections.jsonl); nothing is
// written into them.
func WriteCompareHTML(w io.Writer, dirs []string) error {
	if len(dirs) == 0 {
		return errors.New("no results folders to compare")
	}
	var runs []*htmlreport.Run
	for _, dir := range dirs {
		d, err := loadFolder(dir)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		var ps []report.Placement
		if len(d.timeline.Events) > 0 {
			ps = report.Place(d.analysis.Intervals, d.timeline)
		}
		in, err := htmlRun(d, filepath.Base(filepath.Clean(dir)), ps)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		runs = append(runs, in)
	}
	return htmlreport.WriteCompare(w, runs)
}
