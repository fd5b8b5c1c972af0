package pki

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"testing"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: not PEM", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The front-proxy client must chain to its own CA only: a certificate from
// the lab CA claiming the front proxy's name must not be trusted as the
// aggregator, and the proxy client must not pass as an ordinary client.
func TestIssueAggregation(t *testing.T) {
	b, err := Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP("192.0.2.7")
	a, err := b.IssueAggregation(ip, []string{"api.openshift-apiserver.svc"})
	if err != nil {
		t.Fatal(err)
	}
	fp := x509.NewCertPool()
	fp.AddCert(readCert(t, a.FrontProxyCA))
	pc := readCert(t, a.ProxyClientCert)
	if pc.Subject.CommonName != FrontProxyClientName {
		t.Errorf("proxy client CN %q", pc.Subject.CommonName)
	}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if _, err := pc.Verify(x509.VerifyOptions{Roots: fp, KeyUsages: client}); err != nil {
		t.Errorf("proxy client does not chain to the front-proxy CA: %v", err)
	}
	if _, err := pc.Verify(x509.VerifyOptions{Roots: b.CAPool, KeyUsages: client}); err == nil {
		t.Error("proxy client chains to the lab CA: any client could pose as the aggregator")
	}
	sc := readCert(t, a.ServingCert)
	if _, err := sc.Verify(x509.VerifyOptions{Roots: b.CAPool, DNSName: "api.openshift-apiserver.svc"}); err != nil {
		t.Errorf("serving certificate not valid for the Service name under the lab CA (the APIServices' caBundle): %v", err)
	}
	if err := sc.VerifyHostname("192.0.2.7"); err != nil {
		t.Errorf("serving certificate not valid for the host address: %v", err)
	}
	cc := readCert(t, a.ClientCert)
	if _, err := cc.Verify(x509.VerifyOptions{Roots: b.CAPool, KeyUsages: client}); err != nil || cc.Subject.CommonName != AggregatedClientName {
		t.Errorf("aggregated client certificate %q: %v", cc.Subject.CommonName, err)
	}
}
