package lab

import (
	"os"
	"path/filepath"
	"time"
)

// auditPolicy is shaped like OpenShift's Default audit profile
// (openshift/library-go pkg/operator/apiserver/audit/manifests/base-policy.yaml
// and the Default profile's rules): RequestReceived is omitted everywhere,
// events and the health endpoints are not logged, everything else is logged
// at Metadata. A request is therefore logged once, when its handler returns,
// which is what attribution has to cope with on a cluster.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
omitStages:
- "RequestReceived"
rules:
- level: None
  resources:
  - group: ""
    resources: ["events"]
- level: None
  userGroups: ["system:authenticated", "system:unauthenticated"]
  nonResourceURLs:
  - "/api*"
  - "/version"
  - "/healthz"
  - "/readyz"
  - "/livez"
- level: Metadata
  omitStages:
  - "RequestReceived"
`

// Audit log rotation: 1 MB files, so a lab run rotates every half minute or
// so (12 pollers at 10 Hz write about 40 KB/s per apiserver, measured) and
// reading rotated files is exercised as on a cluster, whose kube-apiserver
// rotates at 100 MB; 100 backups keep about 40 minutes, more than a run at
// --lab-timing aws.
const (
	auditMaxSizeMB  = "1"
	auditMaxBackups = "100"
)

// nodeLogDir is the node's /var/log: what its kubelet endpoint serves at
// /logs/.
func (n *Node) nodeLogDir() string { return filepath.Join(n.lab.dir, "nodes", n.name, "var", "log") }

// writeAuditPolicy writes the policy file all apiservers share.
func (l *Lab) writeAuditPolicy() (string, error) {
	p := filepath.Join(l.dir, "audit-policy.yaml")
	return p, os.WriteFile(p, []byte(auditPolicy), 0o644)
}

// upstreamRequestTimeout is kube-apiserver's --request-timeout default
// (k8s.io/apiserver pkg/server/options/server_run_options.go), which
// OpenShift keeps for kube-apiserver.
const upstreamRequestTimeout = 60 * time.Second

// RequestTimeout is the apiservers' --request-timeout: the upstream 60 s on
// the lab's time scale. A request stalled inside an apiserver is ended, and
// so audit-logged, within it; attribution waits that long past a failure
// before it calls an unlogged request not received.
func (l *Lab) RequestTimeout() time.Duration {
	f := l.opts.Timing.Factor
	if f <= 0 {
		f = 1
	}
	return upstreamRequestTimeout / time.Duration(f)
}

// auditArgs are the apiserver's audit flags: JSON lines into
// /var/log/kube-apiserver/audit.log of its node, rotated by size, as
// OpenShift's kube-apiserver writes them.
func (n *Node) auditArgs() []string {
	if n.lab.auditPolicy == "" {
		return nil
	}
	return []string{
		"--audit-policy-file=" + n.lab.auditPolicy,
		"--audit-log-path=" + filepath.Join(n.nodeLogDir(), "kube-apiserver", "audit.log"),
		"--audit-log-format=json",
		"--audit-log-maxsize=" + auditMaxSizeMB,
		"--audit-log-maxbackup=" + auditMaxBackups,
		"--request-timeout=" + n.lab.RequestTimeout().String(),
	}
}
