// Package report turns samples into disruption intervals and writes them in
// the formats OpenShift's release tooling reads: intervals.json (the
// sippy/origin intervals schema), backend-disruption.json (origin's
// BackendDisruptionList) and a human summary.txt.
//
// Computing is kept apart from writing: Analyze and ComputeIntervals are
// pure functions of samples; IntervalItems, BackendDisruption and
// WriteSummary render an Analysis; Rebuild ties them to a results folder and
// accepts extra interval items (e.g. rollout events) to merge into
// intervals.json. Comparing folders is package report/compare, which
// builds on this model.
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
// Beside repro's own files, Rebuild writes origin's:
// e2e-timelines_spyglass_<run id>.json and backend-disruption_<run id>.json,
// named as sippy finds a CI run's and computed by origin's own rules (package
// origin): a new interval when the error text changes, DisruptionEnded
// intervals, only a DNS lookup i/o timeout as a sampler outage, whole-second
// times, each interval at least 1 s and the total rounded; the rollout as
// APIServerGracefulShutdown, KubeEvent and OperatorState intervals. repro's
// own files keep milliseconds; summary.txt says where the two disagree.
package report
