package scenarios

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/net/http/httpproxy"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
	"github.com/repro-tools/repro/trigger"
)

func TestProxyFor(t *testing.T) {
	env := &httpproxy.Config{HTTPSProxy: "http://user:secret@proxy.corp:3128", NoProxy: ".internal.corp"}
	for _, tc := range []struct {
		server, want string
	}{
		{"https://api.cluster.example.com:6443", "http://proxy.corp:3128"},
		{"https://api.cluster.internal.corp:6443", ""},
		// net/http never proxies loopback (the lab).
		{"https://127.0.0.1:6443", ""},
	} {
		got, err := ProxyFor(&rest.Config{}, tc.server, env)
		if err != nil || got != tc.want {
			t.Errorf("ProxyFor(%s) = %q, %v; want %q", tc.server, got, err, tc.want)
		}
	}
	// The kubeconfig's proxy-url wins over the environment.
	rc := &rest.Config{Proxy: func(*http.Request) (*url.URL, error) { return url.Parse("socks5://bastion:1080") }}
	if got, _ := ProxyFor(rc, "https://api.cluster.example.com:6443", env); got != "socks5://bastion:1080" {
		t.Errorf("kubeconfig proxy-url: %q", got)
	}
}

func TestAuthKind(t *testing.T) {
	for want, rc := range map[string]*rest.Config{
		"token":              {BearerToken: "sha256~secret"},
		"client-certificate": {TLSClientConfig: rest.TLSClientConfig{CertData: []byte("pem")}},
		"exec:oc-oidc":       {ExecProvider: &clientcmdapi.ExecConfig{Command: "/usr/local/bin/oc-oidc"}},
		"basic":              {Username: "kubeadmin", Password: "secret"},
		"none":               {},
	} {
		if got := AuthKind(rc); got != want {
			t.Errorf("AuthKind = %q, want %q", got, want)
		}
	}
}

// livePrepared is a prepared live rollout as a 4.17 cluster on AWS would
// give it, for the consent decisions.
func livePrepared(t *testing.T, out *bytes.Buffer) *prepared {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	pr, err := prober.New(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	bs, _ := prober.LookupBackends(prober.DefaultBackendNames)
	s := &Session{
		Scenario: Scenario{Name: "apiserver-rollout", Rollout: true}, Iterations: 1, RunID: "20261203t120000",
		Timings: LiveTimings(), Polling: Polling{Backends: bs, Interval: 100 * time.Millisecond},
		Target: Target{Live: true, Context: "admin"}, Out: out,
	}
	st := trigger.Status{LatestAvailableRevision: 8}
	for _, n := range []string{"ip-10-0-12-34.ec2.internal", "ip-10-0-45-67.ec2.internal", "ip-10-0-89-10.ec2.internal"} {
		st.Nodes = append(st.Nodes, trigger.NodeState{Name: n, CurrentRevision: 8})
	}
	return &prepared{
		s: s, prober: pr, status: st,
		info:  trigger.ClusterInfo{ServerVersion: "v1.30.5", OpenShift: true, Version: "4.17.3", Platform: "AWS", ControlPlaneTopology: "HighlyAvailable"},
		clock: &results.Clock{Offset: 12 * time.Millisecond, Resolution: 21 * time.Millisecond, Samples: 25, Consistent: true},
		run:   &results.Run{Auth: "client-certificate"},
	}
}

func TestConsent(t *testing.T) {
	t.Run("no terminal, no --yes: stops after printing the target", func(t *testing.T) {
		var out bytes.Buffer
		p := livePrepared(t, &out)
		err := p.consent()
		if err == nil || !strings.Contains(err.Error(), "needs --yes") {
			t.Fatalf("consent: %v, want the --yes error", err)
		}
		t.Logf("what a live run prints before it asks:\n%s", out.String())
		for _, want := range []string{"server:         https://127.0.0.1:", "context:        admin", "cluster:        OpenShift 4.17.3 on AWS, HighlyAvailable control plane, Kubernetes v1.30.5", `{"spec":{"forceRedeploymentReason":"repro-20261203t120000-1"}}`} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("preview lacks %q:\n%s", want, out.String())
			}
		}
	})
	t.Run("answered no", func(t *testing.T) {
		var out bytes.Buffer
		p := livePrepared(t, &out)
		asked := ""
		p.s.Confirm = func(preview string) (bool, error) { asked = preview; return false, nil }
		if err := p.consent(); !errors.Is(err, ErrDeclined) || !strings.Contains(asked, "OpenShift 4.17.3") {
			t.Fatalf("consent: %v (asked %q), want ErrDeclined after showing the cluster", err, asked)
		}
	})
	t.Run("answered yes", func(t *testing.T) {
		p := livePrepared(t, &bytes.Buffer{})
		p.s.Confirm = func(string) (bool, error) { return true, nil }
		if err := p.consent(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("--yes", func(t *testing.T) {
		var out bytes.Buffer
		p := livePrepared(t, &out)
		p.s.Yes = true
		p.s.Confirm = func(string) (bool, error) { t.Fatal("asked despite --yes"); return false, nil }
		if err := p.consent(); err != nil || !strings.Contains(out.String(), "going on: --yes") {
			t.Fatalf("consent: %v, out %q", err, out.String())
		}
	})
	for name, mut := range map[string]func(*Session){
		"the lab":    func(s *Session) { s.Target.Live = false },
		"no rollout": func(s *Session) { s.Scenario.Rollout = false },
	} {
		t.Run(name+" is not asked", func(t *testing.T) {
			p := livePrepared(t, &bytes.Buffer{})
			mut(p.s)
			if err := p.consent(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSessionProbe plays the baseline scenario (repro probe) against a real
// TLS server that does not serve oauthclients to this user: that backend is
// one line and not polled, the others are, and run.json records the auth
// kind without the token, and the clock.
func TestSessionProbe(t *testing.T) {
	const token = "sha256~do-not-log-me"
	srv := kubeServer(t, "/apis/oauth.openshift.io")
	bs, _ := prober.LookupBackends([]string{"kube-api", "oauth-api"})
	var out bytes.Buffer
	core, logs := observer.New(zap.WarnLevel)
	s := &Session{
		Log:     zap.New(core),
		Command: "probe", Args: []string{"repro", "probe", "--token", token}, Scenario: Scenario{Name: "baseline"},
		Timings: Timings{Baseline: 300 * time.Millisecond},
		Polling: Polling{Backends: bs, Interval: 20 * time.Millisecond, ProbeTimeout: time.Second},
		Target:  Target{Config: &rest.Config{Host: srv.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, Live: true},
		Out:     &out,
	}
	f, err := results.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := s.Run(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); strings.Count(got, "\n") != 0 || !strings.HasPrefix(got, "not polled: oauth-api: 403 Forbidden") {
		t.Errorf("output %q, want one line naming oauth-api", got)
	}
	if run.Status != results.StatusComplete || run.Auth != "token" || run.Clock == nil || run.Clock.Samples != 25 {
		t.Errorf("run: status %s, auth %q, clock %+v", run.Status, run.Auth, run.Clock)
	}
	if w := logs.FilterMessageSnippet("bearer token").All(); len(w) != 1 {
		t.Errorf("%d warnings about the bearer token, want 1: %v", len(w), logs.All())
	}
	for _, e := range logs.All() {
		if strings.Contains(e.Message, token) {
			t.Errorf("a log line holds the token: %s", e.Message)
		}
	}
	b, err := os.ReadFile(f.Path(results.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(token)) {
		t.Errorf("run.json holds the token:\n%s", b)
	}
	names := map[string]bool{}
	if _, err := results.ReadJSONL(f.Path(results.SamplesFile), func(line []byte) error {
		names[string(line[:min(len(line), 40)])] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for l := range names {
		if strings.Contains(l, "oauth") {
			t.Errorf("oauth-api was polled: %s", l)
		}
	}
}

// A vantage point that cannot be reached is one line before anything is
// measured; a backend refused at one vantage point is dropped at every one.
func TestUnreachableVantageIsOneLine(t *testing.T) {
	srv := kubeServer(t)
	closed := httptest.NewTLSServer(http.NotFoundHandler())
	gone := closed.URL
	closed.Close()
	bs, _ := prober.LookupBackends([]string{"kube-api", "cache-kube-api"})
	var out bytes.Buffer
	s := &Session{
		Log: zap.NewNop(), Command: "probe", Args: []string{"repro", "probe"}, Scenario: Scenario{Name: "baseline"},
		Timings: Timings{Baseline: 200 * time.Millisecond},
		Polling: Polling{Backends: bs, Interval: 20 * time.Millisecond, ProbeTimeout: time.Second,
			Targets: []prober.Target{{}, {Vantage: "direct", Node: "master-0", URL: srv.URL}, {Vantage: "direct", Node: "master-1", URL: gone}}},
		Target: Target{Config: &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, Live: true},
		Out:    &out,
	}
	f, err := results.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Run(context.Background(), f)
	if err == nil || !strings.HasPrefix(err.Error(), "vantage direct master-1 is unreachable: kube-api: cannot reach "+gone) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "master-0") {
		t.Errorf("error %v, want one line naming direct master-1 only", err)
	}
}

// kubeServer is a kube-apiserver without OpenShift's config API that
// answers every list, and 403 under each forbidden path prefix.
func kubeServer(t *testing.T, forbidden ...string) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range forbidden {
			if strings.HasPrefix(r.URL.Path, p) {
				http.Error(w, `{"kind":"Status","code":403}`, http.StatusForbidden)
				return
			}
		}
		switch {
		case r.URL.Path == "/version":
			w.Write([]byte(`{"gitVersion":"v1.34.4"}`))
		case strings.HasPrefix(r.URL.Path, "/apis/config.openshift.io"):
			http.NotFound(w, r)
		default:
			w.Write([]byte(`{"kind":"List"}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
