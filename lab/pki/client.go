package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
)

// IssueClient returns a client certificate and key (PEM) signed by the lab's
// CA for user cn in groups orgs: kube-apiserver's x509 authenticator takes
// the common name as the user and the organizations as its groups, so a
// client holding it is authorized and sorted by API Priority and Fairness as
// that user (system:node:<name> in system:nodes for a kubelet).
func (b *Bundle) IssueClient(cn string, orgs ...string) (certPEM, keyPEM []byte, err error) {
	der, key, err := b.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: cn, Organization: orgs},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("client certificate for %s: %w", cn, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemCert(der), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
