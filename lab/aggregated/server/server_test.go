package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/repro-tools/repro/lab/binaries"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startEtcd runs the lab's own etcd build, as the lab does.
func startEtcd(t *testing.T) string {
	t.Helper()
	bin, err := binaries.Ensure(context.Background(), binaries.Etcd, binaries.Options{Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	client := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	peer := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.Command(bin, "--name=t", "--data-dir="+t.TempDir(), "--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer, "--initial-cluster=t="+peer, "--unsafe-no-fsync", "--log-level=warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return client
}

// testPKI writes a CA, a serving certificate for 127.0.0.1 and returns a
// client certificate in system:masters, which delegated authorization
// always allows.
func testPKI(t *testing.T, dir string) (caFile, certFile, keyFile string, client tls.Certificate, pool *x509.CertPool) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	pool = x509.NewCertPool()
	pool.AddCert(ca)
	issue := func(n int64, tmpl *x509.Certificate) ([]byte, *ecdsa.PrivateKey) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = big.NewInt(n), now.Add(-time.Hour), now.Add(time.Hour)
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, k.Public(), caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	pemOf := func(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }
	caFile = filepath.Join(dir, "ca.crt")
	os.WriteFile(caFile, pemOf("CERTIFICATE", caDER), 0o644)
	sDER, sKey := issue(2, &x509.Certificate{Subject: pkix.Name{CommonName: "server"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	certFile, keyFile = filepath.Join(dir, "s.crt"), filepath.Join(dir, "s.key")
	os.WriteFile(certFile, pemOf("CERTIFICATE", sDER), 0o644)
	kb, _ := x509.MarshalECPrivateKey(sKey)
	os.WriteFile(keyFile, pemOf("EC PRIVATE KEY", kb), 0o600)
	cDER, cKey := issue(3, &x509.Certificate{Subject: pkix.Name{CommonName: "tester", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	client = tls.Certificate{Certificate: [][]byte{cDER}, PrivateKey: cKey}
	return
}

// TestServesImageStreamsFromEtcdOverTLS runs the image.openshift.io role on
// a real etcd and checks discovery, OpenAPI, create, get, list, watch and
// the etcd key, over TLS with a client certificate.
func TestServesImageStreamsFromEtcdOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	etcd := startEtcd(t)
	dir := t.TempDir()
	caFile, certFile, keyFile, clientCert, pool := testPKI(t, dir)
	port := freePort(t)
	policy := filepath.Join(dir, "audit-policy.yaml")
	os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o644)
	o := NewOptions()
	args := []string{
		"--group=image.openshift.io",
		"--etcd-servers=" + etcd,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + certFile, "--tls-private-key-file=" + keyFile,
		"--client-ca-file=" + caFile,
		"--audit-log-path=" + filepath.Join(dir, "audit.log"), "--audit-policy-file=" + policy,
		"--shutdown-delay-duration=1s",
	}
	fs := newFlagSet(o)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	// No kube-apiserver here: client certificates authenticate and
	// system:masters is always authorized.
	o.Recommended.Authentication.RemoteKubeConfigFileOptional = true
	o.Recommended.Authorization.RemoteKubeConfigFileOptional = true
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("server did not stop within 30s of its context ending")
		}
	})

	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}}}}
	base := "https://127.0.0.1:" + strconv.Itoa(port)
	do := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Audit-ID", "test-"+method+strings.ReplaceAll(path, "/", "-"))
		resp, err := hc.Do(req)
		if err != nil {
			return 0, []byte(err.Error())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, b := do("GET", "/readyz", "")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after 60s: %d %s", code, b)
		}
		time.Sleep(100 * time.Millisecond)
	}

	code, b := do("GET", "/apis/image.openshift.io/v1", "")
	if code != 200 || !strings.Contains(string(b), `"name":"imagestreams"`) || !strings.Contains(string(b), `"kind":"ImageStream"`) {
		t.Fatalf("discovery: %d %s", code, b)
	}
	if code, b := do("GET", "/apis", ""); code != 200 || !strings.Contains(string(b), `"image.openshift.io/v1"`) {
		t.Fatalf("/apis: %d %s", code, b)
	}
	for _, p := range []string{"/openapi/v2", "/openapi/v3/apis/image.openshift.io/v1"} {
		code, b := do("GET", p, "")
		if code != 200 || !strings.Contains(string(b), "ImageStream") || !strings.Contains(string(b), "ObjectMeta") {
			t.Fatalf("%s: %d %.300s", p, code, b)
		}
	}

	// A watch opened before the create must see it.
	wreq, _ := http.NewRequest("GET", base+"/apis/image.openshift.io/v1/namespaces/default/imagestreams?watch=true", nil)
	wresp, err := hc.Do(wreq)
	if err != nil {
		t.Fatal(err)
	}
	defer wresp.Body.Close()
	events := make(chan string, 4)
	go func() {
		dec := json.NewDecoder(wresp.Body)
		for {
			var ev struct {
				Type   string
				Object imagev1.ImageStream
			}
			if dec.Decode(&ev) != nil {
				close(events)
				return
			}
			events <- ev.Type + " " + ev.Object.Name
		}
	}()

	is := `{"apiVersion":"image.openshift.io/v1","kind":"ImageStream","metadata":{"name":"lab"},"spec":{"lookupPolicy":{"local":true}}}`
	if code, b := do("POST", "/apis/image.openshift.io/v1/namespaces/default/imagestreams", is); code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	code, b = do("GET", "/apis/image.openshift.io/v1/namespaces/default/imagestreams/lab", "")
	var got imagev1.ImageStream
	if code != 200 || json.Unmarshal(b, &got) != nil || got.Kind != "ImageStream" || got.APIVersion != "image.openshift.io/v1" || !got.Spec.LookupPolicy.Local {
		t.Fatalf("get: %d %s", code, b)
	}
	code, b = do("GET", "/apis/image.openshift.io/v1/namespaces/default/imagestreams?fieldSelector=metadata.name%3Dlab", "")
	var list imagev1.ImageStreamList
	if code != 200 || json.Unmarshal(b, &list) != nil || len(list.Items) != 1 || list.Kind != "ImageStreamList" {
		t.Fatalf("list: %d %s", code, b)
	}
	if code, b := do("GET", "/apis/image.openshift.io/v1/namespaces/default/imagestreams?resourceVersion=0", ""); code != 200 || !strings.Contains(string(b), `"name":"lab"`) {
		t.Fatalf("list from the watch cache: %d %s", code, b)
	}
	select {
	case ev := <-events:
		if ev != "ADDED lab" {
			t.Fatalf("watch event %q, want ADDED lab", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s of the create")
	}
	// Tables are what kubectl get asks for.
	req, _ := http.NewRequest("GET", base+"/apis/image.openshift.io/v1/namespaces/default/imagestreams", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tbl metav1.Table
	_ = json.NewDecoder(resp.Body).Decode(&tbl)
	resp.Body.Close()
	if len(tbl.Rows) != 1 {
		t.Fatalf("table rows %d, want 1", len(tbl.Rows))
	}
	// The object is in etcd under openshift-apiserver's prefix.
	kv := etcdGet(t, etcd, EtcdPrefix+"/imagestreams/default/lab")
	if !strings.Contains(kv, "ImageStream") {
		t.Fatalf("etcd key %s/imagestreams/default/lab: %q", EtcdPrefix, kv)
	}
	audit, _ := os.ReadFile(filepath.Join(dir, "audit.log"))
	if !strings.Contains(string(audit), "test-GET-apis-image.openshift.io-v1-namespaces-default-imagestreams-lab") {
		t.Fatalf("audit log lacks the request's Audit-ID:\n%.500s", audit)
	}
}

// etcdGet reads a key through etcd's JSON gateway (v3 API over HTTP).
func etcdGet(t *testing.T, etcd, key string) string {
	t.Helper()
	body := fmt.Sprintf(`{"key":%q}`, b64(key))
	resp, err := http.Post(etcd+"/v3/kv/range", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r struct{ Kvs []struct{ Value []byte } }
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Kvs) == 0 {
		return "no such key: " + string(raw)
	}
	return string(r.Kvs[0].Value)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func newFlagSet(o *Options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	return fs
}
