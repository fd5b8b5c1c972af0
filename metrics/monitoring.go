package metrics

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	routeclient "github.com/openshift/client-go/route/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The cluster monitoring stack's query endpoint: thanos-querier's route in
// openshift-monitoring (openshift/cluster-monitoring-operator
// assets/thanos-querier/route.yaml), whose proxy lets in a bearer token
// allowed to "get namespaces" (what cluster-monitoring-view grants).
const (
	MonitoringNamespace = "openshift-monitoring"
	ThanosQuerierRoute  = "thanos-querier"
	// MonitoringRole is the ClusterRole that reads cluster monitoring.
	MonitoringRole = "cluster-monitoring-view"
)

// ErrNoToken says the kubeconfig cannot reach cluster monitoring: its
// route's proxy takes only bearer tokens.
var ErrNoToken = errors.New("the cluster's monitoring (thanos-querier's route) takes only a bearer token, and this kubeconfig authenticates otherwise (a client certificate): etcd and node CPU are not read; log in with a token (oc login) that has the " + MonitoringRole + " role to get them")

// bearerToken is the user's own token from cfg, "" when it has none.
func bearerToken(cfg *rest.Config) (string, error) {
	if cfg.BearerToken != "" {
		return cfg.BearerToken, nil
	}
	if cfg.BearerTokenFile != "" {
		b, err := os.ReadFile(cfg.BearerTokenFile)
		if err != nil {
			return "", fmt.Errorf("reading the kubeconfig's token file: %w", err)
		}
		return string(trimSpace(b)), nil
	}
	return "", ErrNoToken
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// ClusterMonitoring finds thanos-querier's route and returns its address
// and a transport that sends the user's own token. The route's certificate
// is verified against the system's roots, the kubeconfig's CA and the
// cluster's default ingress CA (openshift-config-managed/default-ingress-cert,
// which the ingress operator publishes for exactly this). Nothing is
// created on the cluster.
func ClusterMonitoring(ctx context.Context, cfg *rest.Config) (string, http.RoundTripper, error) {
	token, err := bearerToken(cfg)
	if err != nil {
		return "", nil, err
	}
	rc, err := routeclient.NewForConfig(cfg)
	if err != nil {
		return "", nil, err
	}
	gctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	route, err := rc.RouteV1().Routes(MonitoringNamespace).Get(gctx, ThanosQuerierRoute, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil, fmt.Errorf("no route %s/%s: this cluster's monitoring is not reachable from outside (not OpenShift, or monitoring disabled)", MonitoringNamespace, ThanosQuerierRoute)
	case apierrors.IsForbidden(err):
		return "", nil, fmt.Errorf("not allowed to read route %s/%s: bind the %s ClusterRole to read cluster monitoring", MonitoringNamespace, ThanosQuerierRoute, MonitoringRole)
	case err != nil:
		return "", nil, fmt.Errorf("reading route %s/%s: %w", MonitoringNamespace, ThanosQuerierRoute, err)
	}
	host := route.Spec.Host
	for _, in := range route.Status.Ingress {
		if in.Host != "" {
			host = in.Host
			break
		}
	}
	if host == "" {
		return "", nil, fmt.Errorf("route %s/%s has no host", MonitoringNamespace, ThanosQuerierRoute)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if len(cfg.TLSClientConfig.CAData) > 0 {
		pool.AppendCertsFromPEM(cfg.TLSClientConfig.CAData)
	} else if cfg.TLSClientConfig.CAFile != "" {
		if b, err := os.ReadFile(cfg.TLSClientConfig.CAFile); err == nil {
			pool.AppendCertsFromPEM(b)
		}
	}
	if kc, err := kubernetes.NewForConfig(cfg); err == nil {
		if cm, err := kc.CoreV1().ConfigMaps("openshift-config-managed").Get(gctx, "default-ingress-cert", metav1.GetOptions{}); err == nil {
			pool.AppendCertsFromPEM([]byte(cm.Data["ca-bundle.crt"]))
		}
	}
	base := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
	}
	return "https://" + host, &bearerTransport{token: token, rt: base}, nil
}

type bearerTransport struct {
	token string
	rt    http.RoundTripper
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}
