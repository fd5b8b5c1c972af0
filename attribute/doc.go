// Package attribute answers "where did each failed request go?" from the
// apiservers' own audit logs.
//
// Every request repro sends carries its own Audit-ID; kube-apiserver (and the
// aggregated openshift-apiserver and oauth-apiserver behind it) log that ID
// with every audit event. After a run, attribute reads the audit logs of every
// control-plane node through the node logs API, the path
// "oc adm node-logs NODE --path=kube-apiserver/audit.log" reads
// (openshift/oc pkg/cli/admin/node/logs.go; the kubelet serves /var/log at
// /logs/ with a file server, kubernetes pkg/kubelet/kubelet.go), rotated files
// included (lumberjack's audit-<UTC time>.log backups, as openshift/must-gather
// collection-scripts/gather_audit_logs lists them), and gives each failed
// sample one verdict:
//
//	answered               a response is logged (node, code, the latency the
//	                       server saw) at or before the time the client gave up
//	received-not-answered  the request is logged as received, and no response
//	                       was logged before the client gave up (or only after)
//	not-received           no log has it, and every log covered the window
//	unknown                a log was unreadable or did not cover the window
//
// OpenShift's audit profiles (openshift/library-go
// pkg/operator/apiserver/audit/manifests/base-policy.yaml, and the Default
// profile's catch-all Metadata rule) omit the RequestReceived stage: a request
// is logged once, at ResponseComplete (or Panic), when the handler returns. A
// stalled request is therefore only logged when it finally completes (the
// stall ends, or the server's request timeout fires), with its
// requestReceivedTimestamp; until then it is absent. attribute handles that:
// a ResponseComplete logged after the client gave up is received-not-answered,
// and "absent" only becomes not-received when the logs reach past the client's
// give-up by the server's request timeout (or when the client never wrote the
// request, so nothing could be received).
//
// Logs are streamed line by line: only lines carrying one of the failed
// samples' Audit-IDs are decoded, so memory is bounded by the number of failed
// samples, not by the size of the logs; rotated files that end before the run
// began are not read at all, and within a large file the start of the run's
// window is found with HTTP range requests.
package attribute
