package main

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

// These tests hold repro's promises about clusters and credentials against
// the built CLI: it never acts on a cluster the user did not name, never
// sends one cluster's credentials to another server, never writes a
// password it was given in a URL, and never hangs on a server that does
// not answer. Each uses a temp HOME whose ~/.kube/config holds a token for
// a local TLS server that records every request.

const foundToken = "FOUND-KUBECONFIG-SECRET"

// recorder is a TLS API server stand-in that answers every GET and POST
// with an empty object (/version with a version) and records each request.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	Method, Path, Query, Auth string
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{req.Method, req.URL.Path, req.URL.RawQuery, req.Header.Get("Authorization")})
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if req.URL.Path == "/version" {
			fmt.Fprint(w, `{"major":"1","minor":"34","gitVersion":"v1.34.4"}`)
			return
		}
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

func (r *recorder) caFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// homeWithKubeconfig is a temp HOME whose ~/.kube/config is content.
func homeWithKubeconfig(t *testing.T, content string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// connCounter accepts connections and counts them, answering nothing.
func connCounter(t *testing.T) (addr string, count func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var n int
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// Point 1: with no cluster named, a dry run is the lab's dry run: it sends
// nothing to the cluster of a kubeconfig found in HOME.
func TestDryRunIgnoresFoundKubeconfig(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	home := homeWithKubeconfig(t, kubeconfigFor(rec.URL, rec.caFile(t), foundToken, ""))
	for _, sc := range []string{"apiserver-rollout", "baseline"} {
		r := runCLI(t, cleanEnv(home), 60*time.Second, "run", "--scenario", sc, "--dry-run")
		if r.code != 0 {
			t.Fatalf("run --scenario %s --dry-run: exit %d\n%s", sc, r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "lab (") || !strings.Contains(r.stdout, "was found and not used") {
			t.Errorf("the dry run does not print the lab's plan and say the found kubeconfig is not used:\n%s", r.stdout)
		}
	}
	if reqs := rec.requests(); len(reqs) > 0 {
		t.Errorf("a dry run with no cluster named sent %d request(s) to the found kubeconfig's server, first %+v", len(reqs), reqs[0])
	}
}

// Point 2: with --server alone, run takes nothing from ~/.kube/config: not
// its token, not its cluster's proxy-url, not its exec plugin.
func TestServerAloneBorrowsNoCredentials(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	ca := rec.caFile(t)
	proxyAddr, proxyConns := connCounter(t)
	marker := filepath.Join(t.TempDir(), "exec-plugin-ran")
	plugin := filepath.Join(t.TempDir(), "plugin.sh")
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\ntouch "+marker+"\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"EXEC-SECRET\"}}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	homes := map[string]string{
		"token and proxy-url": homeWithKubeconfig(t, strings.Replace(kubeconfigFor(rec.URL, ca, foundToken, ""),
			"    certificate-authority:", "    proxy-url: http://"+proxyAddr+"\n    certificate-authority:", 1)),
		"exec plugin": homeWithKubeconfig(t, strings.Replace(kubeconfigFor(rec.URL, ca, foundToken, ""),
			"    token: "+foundToken+"\n", "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: "+plugin+"\n      interactiveMode: Never\n", 1)),
	}
	for name, home := range homes {
		for _, extra := range [][]string{{"--dry-run"}, {"--yes", "--out", filepath.Join(t.TempDir(), "out")}} {
			args := append([]string{"run", "--scenario", "apiserver-rollout", "--server", rec.URL, "--certificate-authority", ca}, extra...)
			r := runCLI(t, cleanEnv(home), 60*time.Second, args...)
			if r.timedOut {
				t.Fatalf("%s: repro %s did not exit", name, strings.Join(args, " "))
			}
			t.Logf("%s: repro %s: exit %d: %s", name, strings.Join(args, " "), r.code, errorLine(r.stderr))
		}
	}
	reqs := rec.requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the named server: the test proves nothing")
	}
	for _, q := range reqs {
		if q.Auth != "" {
			t.Errorf("%s %s carried credentials %q though none were given on the command line", q.Method, q.Path, q.Auth)
		}
		if q.Method == http.MethodPatch {
			t.Errorf("a PATCH was sent: %+v", q)
		}
	}
	if n := proxyConns(); n > 0 {
		t.Errorf("%d connection(s) went through the found kubeconfig's proxy-url", n)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the found kubeconfig's exec plugin ran")
	}
}

// Point 2: the credentials' source is recorded (never the secret), and
// TLS verification off is said; --token reaches the server.
func TestCredentialsSourceRecorded(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	ca := rec.caFile(t)
	out := filepath.Join(t.TempDir(), "flags")
	r := runCLI(t, cleanEnv(t.TempDir()), 60*time.Second, "probe", "--server", rec.URL, "--certificate-authority", ca,
		"--token", "FLAG-SECRET", "--duration", "1s", "--backends", "kube-api", "--out", out)
	if r.code != 0 {
		t.Fatalf("probe: exit %d\n%s", r.code, r.stderr)
	}
	run := readRunJSON(t, out)
	if run.Credentials == nil || run.Credentials.Source != "flags" || strings.Join(run.Credentials.Flags, ",") != "--token" {
		t.Errorf("run.json credentials = %+v, want source flags, flags [--token]", run.Credentials)
	}
	var sawFlagToken bool
	for _, q := range rec.requests() {
		sawFlagToken = sawFlagToken || q.Auth == "Bearer FLAG-SECRET"
	}
	if !sawFlagToken {
		t.Error("the --token was not sent")
	}

	kc := filepath.Join(t.TempDir(), "kc")
	if err := os.WriteFile(kc, []byte(kubeconfigFor(rec.URL, ca, "KC-SECRET", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(t.TempDir(), "kc-out")
	r = runCLI(t, cleanEnv(t.TempDir()), 60*time.Second, "probe", "--kubeconfig", kc, "--insecure-skip-tls-verify", "--certificate-authority", "",
		"--duration", "1s", "--backends", "kube-api", "--out", out2)
	// An empty --certificate-authority is refused with one line.
	if r.code != 1 || !strings.Contains(errorLine(r.stderr), "--certificate-authority is empty") {
		t.Errorf("empty --certificate-authority: exit %d, %q", r.code, errorLine(r.stderr))
	}
	noCA := strings.Replace(kubeconfigFor(rec.URL, ca, "KC-SECRET", ""), "    certificate-authority: "+ca+"\n", "    insecure-skip-tls-verify: true\n", 1)
	if err := os.WriteFile(kc, []byte(noCA), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, cleanEnv(t.TempDir()), 60*time.Second, "probe", "--kubeconfig", kc, "--duration", "1s", "--backends", "kube-api", "--out", out2)
	if r.code != 0 {
		t.Fatalf("probe --kubeconfig: exit %d\n%s", r.code, r.stderr)
	}
	run = readRunJSON(t, out2)
	want := results.Credentials{Source: "kubeconfig", File: kc, Context: "ctx", User: "u", Insecure: true}
	if run.Credentials == nil || run.Credentials.Source != want.Source || run.Credentials.File != want.File ||
		run.Credentials.Context != want.Context || run.Credentials.User != want.User || !run.Credentials.Insecure {
		t.Errorf("run.json credentials = %+v, want %+v", run.Credentials, want)
	}
	if !strings.Contains(r.stderr, "TLS verification is off") {
		t.Errorf("an insecure kubeconfig is not said:\n%s", r.stderr)
	}
	for _, dir := range []string{out, out2} {
		assertNotInFolder(t, dir, "FLAG-SECRET", "KC-SECRET")
	}
}

// Point 3: a password in --server reaches no file, log or terminal line.
func TestServerUserInfoNeverWritten(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	ca := rec.caFile(t)
	out := filepath.Join(t.TempDir(), "out")
	server := strings.Replace(rec.URL, "https://", "https://alice:PASSW0RD@", 1)
	r := runCLI(t, cleanEnv(t.TempDir()), 60*time.Second, "probe", "--server", server, "--certificate-authority", ca,
		"--duration", "1s", "--backends", "kube-api", "--out", out, "--log-level", "debug")
	if r.code != 0 {
		t.Fatalf("probe: exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "PASSW0RD") {
		t.Error("the password in --server was printed")
	}
	assertNotInFolder(t, out, "PASSW0RD")
	if run := readRunJSON(t, out); run.Server != rec.URL {
		t.Errorf("run.json server = %q, want %q", run.Server, rec.URL)
	}
	for _, q := range rec.requests() {
		if q.Auth != "" {
			t.Errorf("the URL's user info was sent as %q", q.Auth)
		}
	}
}

// Point 4: a server that accepts connections and never answers ends the
// startup check with one line, and the first SIGINT stops it at once.
func TestSilentServerDoesNotHang(t *testing.T) {
	t.Parallel()
	addr, _ := connCounter(t) // accepts, never answers, not even TLS
	silentTLS := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // TLS done, no answer
	}))
	t.Cleanup(silentTLS.Close)
	for _, server := range []string{"https://" + addr, silentTLS.URL} {
		args := []string{"probe", "--server", server, "--insecure-skip-tls-verify", "--duration", "3s", "--probe-timeout", "2s", "--out", filepath.Join(t.TempDir(), "out")}
		r := runCLI(t, cleanEnv(t.TempDir()), 90*time.Second, args...)
		if r.timedOut {
			t.Fatalf("repro %s was still running after 90s", strings.Join(args, " "))
		}
		if r.code == 0 || !strings.Contains(errorLine(r.stderr), "did not answer") {
			t.Errorf("repro %s: exit %d, %q; want a line saying the server did not answer", strings.Join(args, " "), r.code, errorLine(r.stderr))
		}

		// The first SIGINT stops it while it waits on the server.
		cmd := exec.Command(cli(t), args...)
		cmd.Env = cleanEnv(t.TempDir())
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
				t.Errorf("after SIGINT: %v, want exit %d\n%s", err, exitInterrupted, stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("repro did not stop within 30s of SIGINT while waiting on %s", server)
		}
	}
}

func readRunJSON(t *testing.T, dir string) *results.Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, results.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	var r results.Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// assertNotInFolder fails when any file under dir holds one of secrets.
func assertNotInFolder(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds %q", p, s)
			}
		}
		return nil
	})
}
