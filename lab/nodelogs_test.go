package lab_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/repro-tools/repro/attribute"
	"github.com/repro-tools/repro/lab"
)

// TestAuditLogsThroughTheNodeProxy: a request with a known Audit-ID sent to
// the lab is found in its apiserver's audit log, read through
// /api/v1/nodes/NODE/proxy/logs/kube-apiserver/ like on a cluster.
func TestAuditLogsThroughTheNodeProxy(t *testing.T) {
	l := startLab(t, lab.Options{})
	if l.Nodes()[0].KubeletAddr() == "" {
		t.Skip("this host has no non-loopback address: the lab runs without kubelet endpoints")
	}
	cfg := l.RESTConfig()
	hc := httpClient(t, cfg, true)
	id := uuid.NewString()
	req, _ := http.NewRequest(http.MethodGet, cfg.Host+"/api/v1/namespaces/default", nil)
	req.Header.Set("Audit-ID", id)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET namespace: %d", resp.StatusCode)
	}
	src, err := attribute.NewNodeLogs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := src.Nodes(ctx)
	if err != nil || len(nodes) != 3 {
		t.Fatalf("nodes %v: %v", nodes, err)
	}
	var found []string
	deadline := time.Now().Add(10 * time.Second)
	for len(found) == 0 && time.Now().Before(deadline) {
		for _, n := range nodes {
			names, err := src.List(ctx, n, "kube-apiserver")
			if err != nil {
				t.Fatalf("listing %s: %v", n, err)
			}
			if !contains(names, "audit.log") {
				t.Fatalf("%s: listing %v has no audit.log", n, names)
			}
			rc, _, _, err := src.Open(ctx, n, "kube-apiserver", "audit.log", 0)
			if err != nil {
				t.Fatal(err)
			}
			st, err := attribute.Scan(rc, map[string]struct{}{id: {}}, time.Time{}, false, func(ev attribute.Event) {
				if ev.Stage != attribute.StageResponseComplete || ev.Code() != 200 || !strings.Contains(ev.RequestURI, "/namespaces/default") {
					t.Errorf("event %+v", ev)
				}
				found = append(found, n)
			})
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d lines, %d bytes", n, st.Lines, st.Bytes)
		}
		if len(found) == 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if len(found) != 1 {
		t.Fatalf("audit ID %s found on %v, want exactly one node", id, found)
	}
	// The aggregated replicas log where OpenShift's do, so attribution
	// finds them beside kube-apiserver's; a component the lab does not run
	// is a missing directory, not an error.
	for _, comp := range []string{"openshift-apiserver", "oauth-apiserver"} {
		files, err := src.List(ctx, nodes[0], comp)
		if err != nil || !contains(files, "audit.log") {
			t.Errorf("%s dir on %s: %v %v, want audit.log listed", comp, nodes[0], files, err)
		}
	}
	if _, err := src.List(ctx, nodes[0], "no-such-component"); err != attribute.ErrNoDir {
		t.Errorf("a component the lab does not run: %v, want ErrNoDir", err)
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
