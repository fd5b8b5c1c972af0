// Package pki generates the lab's certificates at start: a CA, a serving
// certificate for the apiservers on loopback, an admin client certificate in
// system:masters, and the service-account signing key pair.
//
// Everything is made fresh per lab so no key outlives it; private keys are
// written 0600.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the paths of the generated material inside the lab's directory.
type Files struct {
	Dir string
	// CACert is the CA certificate: it signs the serving and client
	// certificates and is the apiservers' --client-ca-file.
	CACert string
	CAKey  string
	// ServingCert/ServingKey serve every apiserver; SANs cover 127.0.0.1,
	// ::1, localhost and the in-cluster service names.
	ServingCert string
	ServingKey  string
	// AdminCert/AdminKey authenticate as system:admin in system:masters.
	AdminCert string
	AdminKey  string
	// SAKey/SAPub are the service-account token signing key pair.
	SAKey string
	SAPub string
}

// Bundle holds the generated material in memory as well, so Go clients need
// not read the files back.
type Bundle struct {
	Files
	CAPEM        []byte
	AdminCertPEM []byte
	AdminKeyPEM  []byte
	CAPool       *x509.CertPool
}

// Generate writes a fresh PKI into dir (created 0700).
func Generate(dir string) (*Bundle, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	b := &Bundle{Files: Files{
		Dir:         dir,
		CACert:      filepath.Join(dir, "ca.crt"),
		CAKey:       filepath.Join(dir, "ca.key"),
		ServingCert: filepath.Join(dir, "serving.crt"),
		ServingKey:  filepath.Join(dir, "serving.key"),
		AdminCert:   filepath.Join(dir, "admin.crt"),
		AdminKey:    filepath.Join(dir, "admin.key"),
		SAKey:       filepath.Join(dir, "sa.key"),
		SAPub:       filepath.Join(dir, "sa.pub"),
	}}
	ca, caDER, caKey, err := newCA("repro-lab-ca")
	if err != nil {
		return nil, err
	}
	b.CAPEM = pemCert(caDER)
	if err := writeCertKey(b.CACert, b.CAKey, caDER, caKey); err != nil {
		return nil, err
	}
	b.CAPool = x509.NewCertPool()
	b.CAPool.AddCert(ca)

	issue := func(tmpl *x509.Certificate, certPath, keyPath string) ([]byte, []byte, error) {
		der, key, err := issueLeaf(tmpl, ca, caKey)
		if err != nil {
			return nil, nil, err
		}
		if err := writeCertKey(certPath, keyPath, der, key); err != nil {
			return nil, nil, err
		}
		kb, _ := x509.MarshalECPrivateKey(key)
		return pemCert(der), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), nil
	}
	if _, _, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local", "api.lab.local", "api-int.lab.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback, net.ParseIP("10.0.0.1")},
	}, b.ServingCert, b.ServingKey); err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	b.AdminCertPEM, b.AdminKeyPEM, err = issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, b.AdminCert, b.AdminKey)
	if err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}
	// Service-account tokens are RS256 in Kubernetes by default; an RSA key
	// keeps the lab's tokens like a cluster's.
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	if err := writeKey(b.SAKey, sa); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(sa.Public())
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(b.SAPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return nil, err
	}
	return b, nil
}

// newCA makes a self-signed CA (organisation repro) named cn, valid for a
// week from an hour ago.
func newCA(cn string) (*x509.Certificate, []byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"repro"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return ca, der, key, nil
}

// issueLeaf signs tmpl (its subject, SANs and extended key usage) with
// ca's key for a fresh P-256 key, valid for a week from an hour ago.
func issueLeaf(tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(7 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	return der, key, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func writeCertKey(certPath, keyPath string, der []byte, key crypto.Signer) error {
	if err := os.WriteFile(certPath, pemCert(der), 0o644); err != nil {
		return err
	}
	return writeKey(keyPath, key)
}

// writeKey writes a private key readable by the owner only.
func writeKey(path string, key crypto.Signer) error {
	var blk *pem.Block
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		b, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return err
		}
		blk = &pem.Block{Type: "EC PRIVATE KEY", Bytes: b}
	case *rsa.PrivateKey:
		blk = &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}
	default:
		return fmt.Errorf("unsupported key type %T", key)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := pem.Encode(f, blk); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
