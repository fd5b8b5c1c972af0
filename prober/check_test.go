package prober

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func tlsConfigFor(srv *httptest.Server) *rest.Config {
	return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

func TestCheckBackends(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/apis/oauth.openshift.io"):
			http.Error(w, `oauthclients.oauth.openshift.io is forbidden: User "dev" cannot list resource "oauthclients"`, http.StatusForbidden)
		case strings.HasPrefix(r.URL.Path, "/apis/image.openshift.io"):
			http.NotFound(w, r)
		default:
			w.Write([]byte(`{"kind":"Namespace"}`))
		}
	}))
	defer srv.Close()
	bs, _ := LookupBackends(DefaultBackendNames)
	pr, err := New(tlsConfigFor(srv), WithBackends(bs...), WithProbeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	got := map[string]string{}
	for _, c := range pr.CheckBackends(context.Background()) {
		got[c.Backend.Name] = c.Problem
	}
	if len(got) != len(DefaultBackendNames) || got["kube-api"] != "" || !strings.Contains(got["oauth-api"], "403 Forbidden") || !strings.Contains(got["openshift-api"], "404 Not Found") {
		t.Errorf("checks %q", got)
	}
	for name, p := range got {
		if strings.Contains(p, "\n") {
			t.Errorf("%s: problem spans lines: %q", name, p)
		}
	}

	srv.Close()
	for _, c := range pr.CheckBackends(context.Background()) {
		if !strings.Contains(c.Problem, "cannot reach") {
			t.Errorf("%s on a closed server: %q, want cannot reach", c.Backend.Name, c.Problem)
		}
	}
}

// TestMeasureClockOffset serves Date headers from a clock set ahead by a
// known offset. Prediction, written before the first run: 25 samples 45 ms
// apart cover 1.1 s, so every phase of the server's second is hit within
// 45 ms and the range narrows to about 45 ms plus a loopback round trip;
// the injected offset lies inside Offset ± Resolution.
func TestMeasureClockOffset(t *testing.T) {
	for _, injected := range []time.Duration{2345 * time.Millisecond, -870 * time.Millisecond} {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Date", time.Now().Add(injected).UTC().Format(http.TimeFormat))
		}))
		pr, err := New(tlsConfigFor(srv), WithProbeTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		c, err := pr.MeasureClockOffset(context.Background(), 25, 45*time.Millisecond)
		pr.Close()
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("injected %v: measured %v, best RTT %v", injected, c, c.BestRTT)
		if !c.Consistent || c.Samples != 25 {
			t.Errorf("injected %v: %+v, want 25 consistent samples", injected, c)
		}
		if d := (c.Offset - injected).Abs(); d > c.Resolution+time.Millisecond {
			t.Errorf("injected %v: measured %v, off by %v, outside its resolution", injected, c, d)
		}
		if c.Resolution > 100*time.Millisecond {
			t.Errorf("injected %v: resolution %v, want the samples to narrow it under 100ms", injected, c.Resolution)
		}
	}
}

// TestMeasureClockOffsetInconsistent has two servers behind one URL whose
// clocks disagree by 3 s: the ranges cannot overlap, and the result says so.
func TestMeasureClockOffsetInconsistent(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		skew := time.Duration(0)
		if n.Add(1)%2 == 0 {
			skew = 3 * time.Second
		}
		w.Header().Set("Date", time.Now().Add(skew).UTC().Format(http.TimeFormat))
	}))
	defer srv.Close()
	pr, err := New(tlsConfigFor(srv), WithProbeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	c, err := pr.MeasureClockOffset(context.Background(), 6, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if c.Consistent {
		t.Errorf("two clocks 3 s apart measured as consistent: %v", c)
	}
}
