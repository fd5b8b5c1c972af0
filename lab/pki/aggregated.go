package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"path/filepath"
)

// FrontProxyClientName is the front-proxy client certificate's CN, the one
// name kube-apiserver's --requestheader-allowed-names admits (a lab
// choice of name).
const FrontProxyClientName = "system:openshift-aggregator"

// AggregatedClientName is the user the aggregated API servers authenticate
// to the kube-apiserver as, for delegated authentication, authorization and
// their informers.
const AggregatedClientName = "system:openshift-apiserver"

// Aggregation is the material for the aggregation layer: a front-proxy CA
// of its own (kube-apiserver's --requestheader-client-ca-file), the client
// certificate kube-apiserver proxies with, and the aggregated servers'
// serving and client certificates (signed by the lab CA, which the
// APIServices' caBundle and the kube-apiservers' client CA are).
type Aggregation struct {
	FrontProxyCA string
	// ProxyClientCert/Key are kube-apiserver's --proxy-client-cert-file
	// and --proxy-client-key-file.
	ProxyClientCert, ProxyClientKey string
	// ServingCert/Key serve every aggregated replica; SANs cover the
	// Services' in-cluster names and the host's address.
	ServingCert, ServingKey string
	// ClientCert/Key authenticate the replicas to the kube-apiservers.
	ClientCert, ClientKey string
}

// IssueAggregation writes the aggregation layer's certificates into the PKI
// directory; ip is the address the replicas listen on, serviceNames the
// Services' DNS names (api.openshift-apiserver.svc, ...).
func (b *Bundle) IssueAggregation(ip net.IP, serviceNames []string) (Aggregation, error) {
	a := Aggregation{
		FrontProxyCA:    filepath.Join(b.Dir, "front-proxy-ca.crt"),
		ProxyClientCert: filepath.Join(b.Dir, "front-proxy-client.crt"),
		ProxyClientKey:  filepath.Join(b.Dir, "front-proxy-client.key"),
		ServingCert:     filepath.Join(b.Dir, "aggregated-serving.crt"),
		ServingKey:      filepath.Join(b.Dir, "aggregated-serving.key"),
		ClientCert:      filepath.Join(b.Dir, "aggregated-client.crt"),
		ClientKey:       filepath.Join(b.Dir, "aggregated-client.key"),
	}
	// The front-proxy CA is separate from the client CA, as on a cluster:
	// a certificate from it proves "the aggregator forwarded this", which no
	// ordinary client certificate may claim.
	fpCA, fpDER, fpKey, err := newCA("repro-lab-front-proxy-ca")
	if err != nil {
		return a, err
	}
	if err := writeCertKey(a.FrontProxyCA, filepath.Join(b.Dir, "front-proxy-ca.key"), fpDER, fpKey); err != nil {
		return a, err
	}
	pcDER, pcKey, err := issueLeaf(&x509.Certificate{
		Subject:     pkix.Name{CommonName: FrontProxyClientName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, fpCA, fpKey)
	if err != nil {
		return a, err
	}
	if err := writeCertKey(a.ProxyClientCert, a.ProxyClientKey, pcDER, pcKey); err != nil {
		return a, err
	}

	ips := []net.IP{net.ParseIP("127.0.0.1")}
	if ip != nil {
		ips = append(ips, ip)
	}
	sDER, sKey, err := b.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "aggregated-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    append([]string{"localhost"}, serviceNames...),
		IPAddresses: ips,
	})
	if err != nil {
		return a, fmt.Errorf("aggregated serving certificate: %w", err)
	}
	if err := writeCertKey(a.ServingCert, a.ServingKey, sDER, sKey); err != nil {
		return a, err
	}
	cDER, cKey, err := b.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: AggregatedClientName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return a, fmt.Errorf("aggregated client certificate: %w", err)
	}
	return a, writeCertKey(a.ClientCert, a.ClientKey, cDER, cKey)
}
