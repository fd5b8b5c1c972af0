package lab

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// The lab's kubelet endpoints serve each node's /var/log at /logs/ the way
// a kubelet does (kubernetes pkg/kubelet/kubelet.go: a file server on
// /var/log behind /logs/), over TLS with a kubelet serving certificate,
// accepting only clients with a certificate of the lab's CA (the apiservers'
// --kubelet-client-certificate). The Node objects carry their address and
// port (status.addresses, status.daemonEndpoints.kubeletEndpoint), so
// /api/v1/nodes/NODE/proxy/logs/... goes through the apiserver's real node
// proxy, as "oc adm node-logs" does on a cluster.
//
// The node proxy refuses addresses that are not global unicast (kubernetes
// pkg/registry/core/node/strategy.go isProxyableHostname), so the endpoints
// listen on the host's first non-loopback address; a host without one runs
// the lab without them.

// kubeletEndpoint is one node's /logs/ server.
type kubeletEndpoint struct {
	srv  *http.Server
	addr *net.TCPAddr
}

// hostAddress returns the host's first global unicast IPv4 address (IPv6
// when there is none), nil without any.
func hostAddress() net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var v6 net.IP
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || !ipn.IP.IsGlobalUnicast() {
			continue
		}
		if ip4 := ipn.IP.To4(); ip4 != nil {
			return ip4
		}
		if v6 == nil {
			v6 = ipn.IP
		}
	}
	return v6
}

// setupNodeLogs prepares what the apiservers need before they start: the
// audit policy, each node's /var/log, the kubelet client certificate and the
// kubelet endpoints' listeners.
func (l *Lab) setupNodeLogs() error {
	var err error
	if l.auditPolicy, err = l.writeAuditPolicy(); err != nil {
		return err
	}
	for _, n := range l.nodes {
		if err := os.MkdirAll(filepath.Join(n.nodeLogDir(), "kube-apiserver"), 0o755); err != nil {
			return err
		}
	}
	ip := hostAddress()
	if ip == nil {
		l.log.Warn("no non-loopback address on this host: the lab runs without kubelet log endpoints (the apiservers' node proxy refuses loopback), so repro attribute cannot read its audit logs")
		return nil
	}
	if l.kubeletClient, err = l.pki.IssueKubeletClient(); err != nil {
		return err
	}
	for _, n := range l.nodes {
		cert, err := l.pki.IssueKubeletServing(n.name, ip)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
		if err != nil {
			l.log.Warn("cannot listen for the kubelet log endpoints; the lab runs without them", zap.Error(err))
			l.closeKubelets()
			l.kubeletClient.Cert = ""
			return nil
		}
		tlsCfg := &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    l.pki.CAPool,
			MinVersion:   tls.VersionTLS12,
		}
		mux := http.NewServeMux()
		mux.Handle("/logs/", http.StripPrefix("/logs/", http.FileServer(http.Dir(n.nodeLogDir()))))
		srv := &http.Server{Handler: mux, TLSConfig: tlsCfg, ReadHeaderTimeout: 10 * time.Second, ErrorLog: zap.NewStdLog(l.log.Named("kubelet-" + n.name))}
		n.kubelet = &kubeletEndpoint{srv: srv, addr: ln.Addr().(*net.TCPAddr)}
		go func() { _ = srv.ServeTLS(ln, "", "") }()
	}
	l.log.Info("kubelet log endpoints up", zap.String("address", ip.String()))
	return nil
}

// kubeletArgs are the apiserver's kubelet client flags.
func (l *Lab) kubeletArgs() []string {
	if l.kubeletClient.Cert == "" {
		return nil
	}
	return []string{
		"--kubelet-certificate-authority=" + l.pki.CACert,
		"--kubelet-client-certificate=" + l.kubeletClient.Cert,
		"--kubelet-client-key=" + l.kubeletClient.Key,
		"--kubelet-preferred-address-types=InternalIP",
	}
}

// registerKubelets points each Node object at its kubelet endpoint.
func (l *Lab) registerKubelets(ctx context.Context) error {
	for _, n := range l.nodes {
		if n.kubelet == nil {
			continue
		}
		ep := n.kubelet.addr
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := l.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ep.IP.String()}, {Type: corev1.NodeHostName, Address: n.name}}
			node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(ep.Port)
			_, err = l.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("registering the kubelet endpoint of %s: %w", n.name, err)
		}
	}
	return nil
}

// closeKubelets stops the kubelet endpoints.
func (l *Lab) closeKubelets() {
	for _, n := range l.nodes {
		if n.kubelet != nil {
			if err := n.kubelet.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				l.log.Debug("closing a kubelet endpoint", zap.Error(err))
			}
			n.kubelet = nil
		}
	}
}

// NodeLogDir is the node's /var/log, which its kubelet endpoint serves.
func (n *Node) NodeLogDir() string { return n.nodeLogDir() }

// KubeletAddr is the node's kubelet endpoint ("" when the lab runs without).
func (n *Node) KubeletAddr() string {
	if n.kubelet == nil {
		return ""
	}
	return n.kubelet.addr.String()
}
