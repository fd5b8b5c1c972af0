package pki

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
)

func TestGenerate(t *testing.T) {
	b, err := Generate(t.TempDir() + "/pki")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{b.CAKey, b.ServingKey, b.AdminKey, b.SAKey} {
		st, err := os.Stat(k)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v err %v, want 0600", k, st.Mode().Perm(), err)
		}
	}
	serving, err := tls.LoadX509KeyPair(b.ServingCert, b.ServingKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(serving.Certificate[0])
	for _, name := range []string{"127.0.0.1", "localhost", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: b.CAPool, DNSName: name}); err != nil {
			t.Errorf("serving cert for %s: %v", name, err)
		}
	}
	admin, err := tls.X509KeyPair(b.AdminCertPEM, b.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := x509.ParseCertificate(admin.Certificate[0])
	if _, err := a.Verify(x509.VerifyOptions{Roots: b.CAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin cert: %v", err)
	}
	if len(a.Subject.Organization) != 1 || a.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin groups %v, want system:masters", a.Subject.Organization)
	}
}
