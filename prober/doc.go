// Package prober polls Kubernetes API backends at high frequency over fresh
// and reused connections and streams one Sample per request.
//
// It follows the shape of openshift/origin's backend disruption sampler
// (pkg/monitor/backenddisruption/disruption_backend_sampler.go) at a finer
// grain: every backend is polled by two pollers, one
// that opens a new TCP+TLS connection for every request ("new") and one that
// keeps its connections alive ("reused"). Each request runs on its own
// goroutine, scheduled on an absolute timetable (base + phase +
// seq*interval, the pollers' phases spread evenly over one interval) so a
// hanging request never delays or compresses the schedule. Every request is
// traced with net/http/httptrace so a sample says how far it got (DNS,
// connect, TLS, request written, first byte) and whether its connection was
// reused.
//
// The prober never knows about rollouts or files: it hands Samples to its
// caller through a channel, in completion order.
package prober
