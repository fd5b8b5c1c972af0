// Package origin reads and writes the file formats of openshift/origin's
// monitor (the e2e interval files and backend-disruption.json) and applies
// origin's own rules to repro's samples, so that repro's results load into
// origin's intervals chart and sippy as a CI run's do, and a CI run's files
// load into repro.
//
// The types and rules follow openshift/origin:
//   - pkg/monitor/monitorapi/types.go: Interval, Locator, Message, the
//     locator key order of OldLocator (sortKeys), Interval.String and
//     Intervals.Duration (each interval counts at least the given minimum);
//   - pkg/monitor/monitorapi/disruption.go: BackendDisruptionSeconds (Error
//     intervals only, 1 s minimum each, the total rounded to the second);
//   - pkg/monitor/backenddisruption/disruption_backend_sampler.go
//     (consumeSamples): a new interval when the error text changes, a
//     DisruptionEnded Info interval when a backend answers again (or answers
//     at all: the first sample is compared with "never checked before"), an
//     open interval closed one sampling interval after the last sample;
//   - pkg/monitor/backenddisruption/disruption_locator.go: the messages and
//     the DNS rule (only `dial tcp: lookup.*: i/o timeout` is a sampler
//     outage, a Warning);
//   - pkg/monitortests/testframework/disruptionserializer/monitortest.go:
//     BackendDisruptionList as written today;
//   - pkg/monitor/serialization/serialize.go: the serializations (whole-
//     second RFC 3339 times, metav1.Time);
//   - pkg/monitortests/kubeapiserver/apiservergracefulrestart: the
//     APIServerGracefulShutdown intervals and their server locator;
//   - pkg/disruption/ci (TestDescriptor): the newer backend names and the
//     load-balancer, protocol and target locator keys.
//
// Origin's files have come in three serializations over the years; Decode
// reads all of them: the structured form (locator and message objects), the
// dual form of the transition (string locator and message beside
// tempStructuredLocator and tempStructuredMessage, or the string and the
// object under the same key twice), and the string-only form
// ("node/NAME", "reason/NodeUpdate phase/Drain ..."). Encode writes each.
package origin
