// Package report is the model of a results folder: it turns samples into
// disruption intervals and per-poller figures (Analyze, LoadSamples), reads
// the rollout timeline (LoadTimeline, BuildTimeline), places every
// disruption in it (Place, GroupPlacements, AttributeServedBy), grades
// outcomes as a client-go client would see them, reads attribution.jsonl,
// and computes origin's intervals by origin's rules (OriginIntervals,
// WholeSeconds). Everything here computes; nothing writes a file.
//
// The folder layout shows the flow: report is the model, report/compare
// sets folders side by side on it, and report/write writes a folder's
// derived files from it (summary.txt, junit.xml, intervals.json,
// backend-disruption.json, placements.json, origin's files and, through
// report/htmlreport, report.html).
//
// The interval rule is origin's, at the prober's resolution: per poller, in
// sequence order, a run of failed samples is one interval from the first
// failed request's start to the start of the next successful one; a change
// of error class starts a new interval; an interval still open at the end
// closes at the poller's last sample's end. DNS failures are intervals too
// but marked as a sampler outage (Warning, DisruptionSamplerOutageBegan)
// and not counted as disruption, as origin does. Samples aborted by an
// interrupted run are ignored.
//
// Beside repro's own intervals, Analysis.Origin holds each poller's
// intervals by origin's own rules (package origin): a new interval when the
// error text changes, DisruptionEnded intervals, only a DNS lookup i/o
// timeout as a sampler outage; WholeSeconds rounds them as origin's 1 Hz
// sampler would have seen them.
package report
