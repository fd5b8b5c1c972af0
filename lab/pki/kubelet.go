package pki

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// KubeletClient is the client certificate kube-apiserver presents to the
// kubelets (--kubelet-client-certificate/--kubelet-client-key), as
// OpenShift's kube-apiserver-operator issues it: CN
// system:kube-apiserver, O kube-master.
type KubeletClient struct {
	Cert, Key string
}

// loadCA reads the lab CA back from its files to sign more certificates.
func (b *Bundle) loadCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, err := os.ReadFile(b.CACert)
	if err != nil {
		return nil, nil, err
	}
	kb, err := os.ReadFile(b.CAKey)
	if err != nil {
		return nil, nil, err
	}
	cblk, _ := pem.Decode(cb)
	kblk, _ := pem.Decode(kb)
	if cblk == nil || kblk == nil {
		return nil, nil, errors.New("lab CA files are not PEM")
	}
	ca, err := x509.ParseCertificate(cblk.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kblk.Bytes)
	if err != nil {
		return nil, nil, err
	}
	return ca, key, nil
}

func (b *Bundle) sign(tmpl *x509.Certificate) ([]byte, *ecdsa.PrivateKey, error) {
	ca, caKey, err := b.loadCA()
	if err != nil {
		return nil, nil, err
	}
	return issueLeaf(tmpl, ca, caKey)
}

// IssueKubeletClient writes the apiservers' kubelet client certificate into
// the PKI directory.
func (b *Bundle) IssueKubeletClient() (KubeletClient, error) {
	der, key, err := b.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:kube-apiserver", Organization: []string{"kube-master"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return KubeletClient{}, fmt.Errorf("kubelet client certificate: %w", err)
	}
	kc := KubeletClient{Cert: filepath.Join(b.Dir, "kubelet-client.crt"), Key: filepath.Join(b.Dir, "kubelet-client.key")}
	return kc, writeCertKey(kc.Cert, kc.Key, der, key)
}

// IssueKubeletServing returns a kubelet serving certificate for node at ip,
// as a kubelet's: CN system:node:<node>, O system:nodes, the node's name and
// address as SANs. It stays in memory.
func (b *Bundle) IssueKubeletServing(node string, ip net.IP) (tls.Certificate, error) {
	der, key, err := b.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{node},
		IPAddresses: []net.IP{ip},
	})
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet serving certificate for %s: %w", node, err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
