// Package report turns samples into disruption intervals and writes them in
// the formats OpenShift's release tooling reads: intervals.json (the
// sippy/origin intervals schema), backend-disruption.json (origin's
// BackendDisruptionList) and a human summary.txt.
//
// Computing is kept apart from writing: Analyze and ComputeIntervals are
// pure functions of samples; IntervalItems, BackendDisruption and
// WriteSummary render an Analysis; Rebuild ties them to a results folder and
// accepts extra interval items (e.g. rollout events) to merge into
// intervals.json.
//
// The interval rule is origin's, at the prober's resolution: per poller, in
// sequence order, a run of failed samples is one interval from the first
// failed request's start to the start of the next successful one; a change
// of error class starts a new interval; an interval still open at the end
// closes at the poller's last sample's end. DNS failures are intervals too
// but marked as a sampler outage (Warning, DisruptionSamplerOutageBegan)
// and not counted as disruption, as origin does. Samples aborted by an
// interrupted run are ignored.
package report
