package attribute_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/attribute"
	"github.com/repro-tools/repro/results"
)

// auditLine renders an event the way kube-apiserver's JSON audit backend
// writes it at Metadata level (field order and shape of audit.k8s.io/v1).
func auditLine(id, stage, uri string, code int, received, logged time.Time) string {
	status := ""
	if code > 0 {
		status = fmt.Sprintf(`"responseStatus":{"metadata":{},"code":%d},`, code)
	}
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%s","stage":"%s","requestURI":"%s","verb":"get","user":{"username":"system:admin","groups":["system:masters","system:authenticated"]},"sourceIPs":["10.0.0.5"],"userAgent":"repro/v0.3.0 kube-api-new-connections","objectRef":{"resource":"namespaces","name":"default","apiVersion":"v1"},%s"requestReceivedTimestamp":"%s","stageTimestamp":"%s","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}`,
		id, stage, uri, status, received.UTC().Format("2006-01-02T15:04:05.000000Z"), logged.UTC().Format("2006-01-02T15:04:05.000000Z"))
}

// filler writes n unrelated events, one every step from t.
func filler(b *strings.Builder, t time.Time, n int, step time.Duration) time.Time {
	for i := 0; i < n; i++ {
		fmt.Fprintln(b, auditLine(fmt.Sprintf("other-%d-%d", t.UnixNano(), i), "ResponseComplete", "/api/v1/namespaces/openshift-etcd/pods", 200, t, t.Add(2*time.Millisecond)))
		t = t.Add(step)
	}
	return t
}

// cluster serves the node list and the node logs API from dirs, one per
// node, through Go's file server as the kubelet does.
func cluster(t *testing.T, root string, nodes []string, forbidden map[string]bool) *rest.Config {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/nodes", func(w http.ResponseWriter, r *http.Request) {
		list := corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}}
		for _, n := range nodes {
			list.Items = append(list.Items, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&list)
	})
	for _, n := range nodes {
		prefix := "/api/v1/nodes/" + n + "/proxy/logs/"
		fs := http.StripPrefix(prefix, http.FileServer(http.Dir(filepath.Join(root, n))))
		mux.HandleFunc(prefix, func(w http.ResponseWriter, r *http.Request) {
			if forbidden[n] {
				http.Error(w, `nodes "`+n+`" is forbidden: User "dev" cannot get resource "nodes/proxy"`, http.StatusForbidden)
				return
			}
			fs.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gz(t *testing.T, s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.String()
}

func sample(backend string, seq uint64, id string, start time.Time, d time.Duration, class results.ErrorClass, code int, written bool) results.Sample {
	s := results.Sample{Backend: backend, Connection: results.NewConnections, Seq: seq, Start: start, Duration: d, ErrorClass: class, StatusCode: code, AuditID: id}
	if written {
		s.Phases.WroteRequest = 5 * time.Millisecond
	}
	return s
}

func byID(recs []attribute.Record) map[string]attribute.Record {
	m := map[string]attribute.Record{}
	for _, r := range recs {
		m[r.AuditID] = r
	}
	return m
}

func TestCorrelateVerdicts(t *testing.T) {
	root := t.TempDir()
	// Recent enough that the logs are read before "late"'s request
	// timeout has passed.
	t0 := time.Now().UTC().Truncate(time.Second).Add(-30 * time.Second)
	nodes := []string{"master-0", "master-1", "master-2"}

	// The failed samples, sent at t0+10s and later.
	stalled := sample("kube-api", 1, "stalled", t0.Add(10*time.Second), 4*time.Second, results.ClassHeaderTimeout, 0, true)
	server5xx := sample("kube-api", 2, "five-oh-three", t0.Add(11*time.Second), 20*time.Millisecond, results.ClassHTTP5xx, 503, true)
	handshake := sample("kube-api", 3, "handshake", t0.Add(12*time.Second), 30*time.Millisecond, results.ClassTLS, 0, false)
	late := sample("kube-api", 4, "late", t0.Add(170*time.Second), 4*time.Second, results.ClassHeaderTimeout, 0, true)
	shutdown429 := sample("kube-api", 5, "shutdown-429", t0.Add(13*time.Second), 5*time.Millisecond, results.ClassHTTP429, 429, true)
	aggregated := sample("openshift-api", 6, "aggregated", t0.Add(14*time.Second), 4*time.Second, results.ClassHeaderTimeout, 0, true)
	lost := sample("kube-api", 7, "lost", t0.Add(15*time.Second), 4*time.Second, results.ClassHeaderTimeout, 0, true)
	cancelled := sample("kube-api", 9, "cancelled", t0.Add(16*time.Second), 2720*time.Millisecond, results.ClassHeaderTimeout, 0, true)
	ok := sample("kube-api", 8, "fine", t0.Add(16*time.Second), 4*time.Millisecond, results.ClassNone, 200, true)
	failed := []results.Sample{stalled, server5xx, handshake, late, shutdown429, aggregated, lost, ok, cancelled}

	for i, n := range nodes {
		// A backup rotated before the run holds a decoy event for
		// "handshake": it must not be read at all.
		var old strings.Builder
		end := filler(&old, t0.Add(-10*time.Minute), 50, time.Second)
		fmt.Fprintln(&old, auditLine("handshake", "ResponseComplete", "/api/v1/namespaces/default", 200, end, end))
		write(t, filepath.Join(root, n, "kube-apiserver", "audit-"+t0.Add(-5*time.Minute).Format("2006-01-02T15-04-05.000")+".log"), old.String())

		// A compressed backup rotated during the run: t0-1m .. t0+12s.
		var rot strings.Builder
		c := filler(&rot, t0.Add(-time.Minute), 60, time.Second)
		if n == "master-0" {
			fmt.Fprintln(&rot, auditLine("five-oh-three", "ResponseComplete", "/api/v1/namespaces/default", 503, server5xx.Start.Add(time.Millisecond), server5xx.Start.Add(15*time.Millisecond)))
		}
		c = filler(&rot, c, 12, time.Second)
		write(t, filepath.Join(root, n, "kube-apiserver", "audit-"+c.Format("2006-01-02T15-04-05.000")+".log.gz"), gz(t, rot.String()))

		// The current file, to t0+3m, its last line cut mid-write.
		var cur strings.Builder
		c = filler(&cur, c, 5, time.Second)
		if n == "master-1" {
			// Stalled: logged 20 s after it was received, long after
			// the client gave up at +4 s.
			fmt.Fprintln(&cur, auditLine("stalled", "ResponseComplete", "/api/v1/namespaces/default", 200, stalled.Start.Add(2*time.Millisecond), stalled.Start.Add(20*time.Second)))
			// Answered 50 ms after receipt: the response was lost on
			// the way back.
			fmt.Fprintln(&cur, auditLine("lost", "ResponseComplete", "/api/v1/namespaces/default", 200, lost.Start.Add(time.Millisecond), lost.Start.Add(50*time.Millisecond)))
			// Stalled on storage, ended with a 500 by the client's
			// disconnect: logged a hair before the client's own clock
			// says it gave up (measured so on the lab).
			fmt.Fprintln(&cur, auditLine("cancelled", "ResponseComplete", "/api/v1/namespaces/default", 500, cancelled.Start.Add(3*time.Millisecond), cancelled.End().Add(-2*time.Millisecond)))
		}
		if n == "master-0" {
			fmt.Fprintln(&cur, auditLine("aggregated", "ResponseComplete", "/apis/image.openshift.io/v1/namespaces/default/imagestreams", 200, aggregated.Start.Add(time.Millisecond), aggregated.Start.Add(9*time.Second)))
		}
		c = filler(&cur, c, 160, time.Second)
		cur.WriteString(auditLine("cut", "ResponseComplete", "/api/v1/namespaces/default", 200, c, c)[:120])
		write(t, filepath.Join(root, n, "kube-apiserver", "audit.log"), cur.String())
		write(t, filepath.Join(root, n, "kube-apiserver", "termination.log"), "not an audit log\n")

		// openshift-apiserver runs on two nodes only.
		if i < 2 {
			var oas strings.Builder
			c := filler(&oas, t0.Add(-time.Minute), 70, time.Second)
			if n == "master-1" {
				fmt.Fprintln(&oas, auditLine("aggregated", "ResponseComplete", "/apis/image.openshift.io/v1/namespaces/default/imagestreams", 200, aggregated.Start.Add(3*time.Millisecond), aggregated.Start.Add(9*time.Second-time.Millisecond)))
			}
			filler(&oas, c, 200, time.Second)
			write(t, filepath.Join(root, n, "openshift-apiserver", "audit.log"), oas.String())
		}
	}
	cfg := cluster(t, root, nodes, nil)
	src, err := attribute.NewNodeLogs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var progressed atomic.Int64
	res, err := attribute.Correlate(context.Background(), src, failed, attribute.Options{
		From: t0, To: t0.Add(175 * time.Second),
		Progress: func(p attribute.Progress) {
			if p.Done {
				progressed.Add(1)
			}
		},
		AnsweredBy: func(s *results.Sample) string {
			if s.AuditID == "shutdown-429" {
				return "master-2"
			}
			return ""
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 8 {
		t.Fatalf("%d records, want 8 (the successful sample is not attributed): %+v", len(res.Records), res.Records)
	}
	got := byID(res.Records)
	check := func(id, verdict, node string, detail ...string) {
		t.Helper()
		r := got[id]
		if r.Verdict != verdict || r.Node != node {
			t.Errorf("%s: verdict %s on %q, want %s on %q (%s)", id, r.Verdict, r.Node, verdict, node, r.Detail)
		}
		for _, d := range detail {
			if !strings.Contains(r.Detail, d) {
				t.Errorf("%s: detail %q lacks %q", id, r.Detail, d)
			}
		}
	}
	check("stalled", attribute.ReceivedNotAnswered, "master-1", "only 16.0 s after the client gave up")
	check("five-oh-three", attribute.Answered, "master-0", "ResponseComplete 503")
	check("handshake", attribute.NotReceived, "", "never written")
	check("late", attribute.Unknown, "", "within the 1m0s a stalled request may take to be logged")
	check("shutdown-429", attribute.Answered, "master-2", "in no audit log")
	check("aggregated", attribute.ReceivedNotAnswered, "master-0", "hops: kube-apiserver master-0 ResponseComplete 200 -> openshift-apiserver master-1 ResponseComplete 200")
	check("lost", attribute.Answered, "master-1", "lost on the way back")
	check("cancelled", attribute.ReceivedNotAnswered, "master-1", "ResponseComplete 500 2 ms before the client gave up", "because the client went away")
	if r := got["five-oh-three"]; r.Code != 503 || r.ServerLatencyMs != 14 {
		t.Errorf("five-oh-three: code %d latency %v ms, want 503 and 14", r.Code, r.ServerLatencyMs)
	}
	if h := got["aggregated"].Hops; len(h) != 2 || h[0].Server != attribute.KubeAPIServer || h[1].Server != attribute.OpenShiftAPIServer {
		t.Errorf("aggregated hops %+v", h)
	}
	for _, l := range res.Logs {
		switch {
		case l.Server == attribute.KubeAPIServer:
			if l.Err != nil || len(l.Files) != 2 || !strings.HasSuffix(l.Files[0], ".log.gz") || l.Files[1] != "audit.log" {
				t.Errorf("%s on %s: files %v err %v, want the rotated .gz and audit.log", l.Server, l.Node, l.Files, l.Err)
			}
			if l.Cut != 1 {
				t.Errorf("%s on %s: %d cut lines, want the one cut mid-write", l.Server, l.Node, l.Cut)
			}
		case l.Server == attribute.OpenShiftAPIServer && l.Node == "master-2", l.Server == attribute.OAuthAPIServer:
			if !l.Absent {
				t.Errorf("%s on %s: want absent", l.Server, l.Node)
			}
		}
	}
	if n := progressed.Load(); n != 3*2+2 {
		t.Errorf("%d files reported done, want 8", n)
	}

	// Written out and read back, one line per failed sample.
	path := filepath.Join(t.TempDir(), results.AttributionFile)
	if err := attribute.WriteRecords(path, res.Records); err != nil {
		t.Fatal(err)
	}
	back, err := attribute.ReadRecords(path)
	if err != nil || len(back) != 8 {
		t.Fatalf("read back %d records: %v", len(back), err)
	}
	raw, _ := os.ReadFile(path)
	for _, k := range []string{`"backend":`, `"connection":`, `"seq":`, `"audit_id":`, `"verdict":`, `"node":`, `"stage":`, `"detail":`} {
		if !bytes.Contains(raw, []byte(k)) {
			t.Errorf("attribution.jsonl lacks %s", k)
		}
	}
}

// A log that cannot be read leaves the samples it could have explained
// unknown, naming it, and the RBAC that is missing.
func TestUnreadableLogIsNamed(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	nodes := []string{"master-0", "master-1"}
	for _, n := range nodes {
		var b strings.Builder
		filler(&b, t0.Add(-time.Minute), 300, time.Second)
		write(t, filepath.Join(root, n, "kube-apiserver", "audit.log"), b.String())
	}
	cfg := cluster(t, root, nodes, map[string]bool{"master-1": true})
	src, _ := attribute.NewNodeLogs(cfg)
	s := sample("kube-api", 1, "gone", t0.Add(10*time.Second), time.Second, results.ClassConnectRefused, 0, false)
	res, err := attribute.Correlate(context.Background(), src, []results.Sample{s}, attribute.Options{Servers: []string{attribute.KubeAPIServer}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Records[0]
	if r.Verdict != attribute.Unknown || !strings.Contains(r.Detail, "kube-apiserver on master-1 unreadable") || !strings.Contains(r.Detail, "nodes/proxy") {
		t.Errorf("verdict %s: %s", r.Verdict, r.Detail)
	}
}

// A large file is entered at the run's window with range requests, not read
// from its start.
func TestLargeFileIsSeeked(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	var b strings.Builder
	c := filler(&b, t0.Add(-3*time.Hour), 12000, time.Second) // ~12 MB before the run
	runStart := c.Add(10 * time.Minute)
	filler(&b, c, 500, time.Second)
	fmt.Fprintln(&b, auditLine("wanted", "ResponseComplete", "/api/v1/namespaces/default", 200, runStart, runStart.Add(30*time.Second)))
	filler(&b, runStart.Add(31*time.Second), 200, time.Second)
	write(t, filepath.Join(root, "master-0", "kube-apiserver", "audit.log"), b.String())
	size := int64(b.Len())

	cfg := cluster(t, root, []string{"master-0"}, nil)
	src, _ := attribute.NewNodeLogs(cfg)
	var read int64
	s := sample("kube-api", 1, "wanted", runStart, 5*time.Second, results.ClassHeaderTimeout, 0, true)
	res, err := attribute.Correlate(context.Background(), src, []results.Sample{s}, attribute.Options{
		Servers: []string{attribute.KubeAPIServer}, From: runStart, To: runStart.Add(10 * time.Second),
		Progress: func(p attribute.Progress) {
			if p.Done {
				read += p.Read
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Records[0]; r.Verdict != attribute.ReceivedNotAnswered || r.Node != "master-0" {
		t.Errorf("verdict %s on %s: %s", r.Verdict, r.Node, r.Detail)
	}
	if read <= 0 || read > size/2 {
		t.Errorf("read %d of %d bytes: the window's start was not sought", read, size)
	}
	t.Logf("read %d of %d bytes", read, size)
}

func TestSelectFiles(t *testing.T) {
	names := []string{"audit.log", "audit-2026-12-04T00-50-00.000.log", "audit-2026-12-04T01-05-00.000.log.gz",
		"audit-2026-12-04T01-20-00.000.log", "audit-2026-12-04T01-40-00.000.log", "termination.log", ".lock", "audit.log.terminating"}
	from := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	got := attribute.SelectFiles(names, from, from.Add(10*time.Minute))
	var ns []string
	for _, f := range got {
		ns = append(ns, f.Name)
	}
	want := "audit-2026-12-04T01-05-00.000.log.gz audit-2026-12-04T01-20-00.000.log"
	if strings.Join(ns, " ") != want {
		t.Errorf("selected %v, want %s", ns, want)
	}
	if !got[0].Gzip {
		t.Error("the .gz backup is not marked compressed")
	}
	got = attribute.SelectFiles(names, from, time.Time{})
	if len(got) != 4 || got[3].Name != "audit.log" {
		t.Errorf("without an end: %+v", got)
	}
}

func TestParseListing(t *testing.T) {
	// Go's http.FileServer listing, what the kubelet's /logs/ serves.
	dir := t.TempDir()
	write(t, filepath.Join(dir, "audit.log"), "x")
	write(t, filepath.Join(dir, "audit-2026-12-04T01-05-00.000.log"), "x")
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	rec := httptest.NewRecorder()
	http.FileServer(http.Dir(dir)).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	got := attribute.ParseListing(rec.Body.Bytes())
	if strings.Join(got, " ") != "audit-2026-12-04T01-05-00.000.log audit.log" {
		t.Errorf("listing %q parsed as %v", rec.Body.String(), got)
	}
}

func TestScanCountsCutAndOversizedLines(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	var b strings.Builder
	fmt.Fprintln(&b, auditLine("a", "ResponseComplete", "/x", 200, t0, t0))
	fmt.Fprintln(&b, `{"kind":"Event","auditID":"b","stage":"ResponseComplete","requestObject":"`+strings.Repeat("x", 2<<20)+`"}`)
	fmt.Fprintln(&b, auditLine("c", "ResponseComplete", "/x", 200, t0, t0.Add(time.Second)))
	b.WriteString(auditLine("d", "ResponseComplete", "/x", 200, t0, t0)[:50])
	var seen []string
	st, err := attribute.Scan(strings.NewReader(b.String()), map[string]struct{}{"a": {}, "b": {}, "c": {}, "d": {}}, time.Time{}, false, func(ev attribute.Event) { seen = append(seen, ev.AuditID) })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "a,c" || st.Oversized != 1 || st.Cut != 1 || st.Lines != 4 || !st.Last.Equal(t0.Add(time.Second)) {
		t.Errorf("seen %v, stats %+v", seen, st)
	}
}
