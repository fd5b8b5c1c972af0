// Package write writes the derived files of a results folder from package
// report's model: intervals.json (the sippy/origin intervals schema),
// backend-disruption.json (origin's BackendDisruptionList), junit.xml, a
// human summary.txt, placements.json when the folder has a rollout
// timeline, and report.html (package report/htmlreport).
//
// Rebuild ties them to a results folder: it loads the folder through
// report (samples.jsonl, run.json, events.jsonl, lb-connections.jsonl) and
// accepts extra interval items (e.g. rollout events) to merge into
// intervals.json; AddSummarySection lets a package that reads the written
// files (diagnose) end summary.txt with its own section.
//
// Beside repro's own files, Rebuild writes origin's:
// e2e-timelines_spyglass_<run id>.json and backend-disruption_<run id>.json,
// named as sippy finds a CI run's and computed by origin's own rules
// (report.OriginIntervals, report.WholeSeconds): whole-second times, each
// interval at least 1 s and the total rounded; the rollout as
// APIServerGracefulShutdown, KubeEvent and OperatorState intervals. repro's
// own files keep milliseconds; summary.txt says where the two disagree.
package write
