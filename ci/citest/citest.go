// Package citest serves prow-shaped CI run trees from an in-process GCS
// emulator (github.com/fsouza/fake-gcs-server/fakestorage), for the tests of
// the ci package and of repro import.
package citest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/repro-tools/repro/ci"
	"github.com/repro-tools/repro/origin"
)

// Bucket is the bucket the emulator serves runs from (what origin-ci-test
// URLs are read from).
const Bucket = "test-platform-results"

// Job is the original report's upgrade job.
const Job = "periodic-ci-openshift-release-master-ci-4.17-upgrade-from-stable-4.16-e2e-aws-ovn-upgrade"

// Target is its ci-operator target.
const Target = "e2e-aws-ovn-upgrade"

// Report builds are the four builds the original report named, oldest
// first.
var ReportBuilds = []string{"1811039682226556928", "1813213432246177792", "1813847818029240320", "1813938460914880512"}

// Kind says what a run of the tree holds.
type Kind int

// Run kinds.
const (
	// Disrupted has two timeline files (upgrade and conformance phases)
	// with apiserver disruption, and their backend-disruption files.
	Disrupted Kind = iota
	// Clean has two timeline files and 0 s on every backend.
	Clean
	// NoTimeline has its metadata and backend-disruption files, no
	// timeline.
	NoTimeline
	// Truncated has a timeline file cut short.
	Truncated
	// Audited is Disrupted with its own audit IDs and gathered audit logs
	// that hold them.
	Audited
	// Running has no finished.json yet.
	Running
)

// RunSpec is one run of the tree.
type RunSpec struct {
	Build   string
	Kind    Kind
	Started time.Time
}

// AuditIDs of the Audited run's failed requests: the first is logged as
// received and answered only after the client gave up, the second answered
// (500) before it, the third is in no log.
var AuditIDs = []string{"0f9b6c1e-0000-4000-8000-000000000001", "0f9b6c1e-0000-4000-8000-000000000002", "0f9b6c1e-0000-4000-8000-000000000003"}

// Objects builds the objects of runs.
func Objects(t testing.TB, runs []RunSpec) []fakestorage.Object {
	t.Helper()
	var objs []fakestorage.Object
	add := func(name string, content []byte) {
		objs = append(objs, fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: Bucket, Name: name, ContentType: "application/json"}, Content: content})
	}
	fixUpgrade, fixConformance := fixtureTimelines(t)
	for _, r := range runs {
		// The fixture's times moved to the run's own start, so that every
		// file of a run lies within it.
		upgrade, conformance := shift(fixUpgrade, r.Started.Sub(fixtureStart)), shift(fixConformance, r.Started.Sub(fixtureStart))
		p := "logs/" + Job + "/" + r.Build + "/"
		add(p+"prowjob.json", prowJob(r.Build))
		add(p+"started.json", fmt.Appendf(nil, `{"timestamp":%d,"repos":{}}`, r.Started.Unix()))
		if r.Kind != Running {
			res := "FAILURE"
			if r.Kind == Clean {
				res = "SUCCESS"
			}
			add(p+"finished.json", fmt.Appendf(nil, `{"timestamp":%d,"passed":%v,"result":%q}`, r.Started.Add(3*time.Hour).Unix(), res == "SUCCESS", res))
		}
		add(p+"build-log.txt", []byte("ci-operator log\n"))
		junit := p + "artifacts/" + Target + "/openshift-e2e-test/artifacts/junit/"
		add(junit+"junit_e2e__20240717-100000.xml", []byte("<testsuites/>"))
		var files [][]origin.Interval
		switch r.Kind {
		case Clean, Running:
			files = [][]origin.Interval{cleanOf(upgrade), cleanOf(conformance)}
		case Audited:
			files = [][]origin.Interval{auditedTimeline(r.Started), cleanOf(conformance)}
		default:
			files = [][]origin.Interval{upgrade, conformance}
		}
		for i, ivs := range files {
			suffix := fmt.Sprintf("_%s-%02d0000", r.Started.Format("20060102"), 10+i)
			var bd bytes.Buffer
			if err := origin.WriteBackendDisruption(&bd, origin.BackendDisruptionFor(ivs)); err != nil {
				t.Fatal(err)
			}
			add(junit+"backend-disruption"+suffix+".json", bd.Bytes())
			var tl bytes.Buffer
			if err := origin.Encode(&tl, ivs, origin.FormatStructured); err != nil {
				t.Fatal(err)
			}
			switch {
			case r.Kind == NoTimeline:
			case r.Kind == Truncated && i == 0:
				add(junit+"e2e-timelines_spyglass"+suffix+".json", tl.Bytes()[:tl.Len()/2])
			default:
				add(junit+"e2e-timelines_spyglass"+suffix+".json", tl.Bytes())
			}
		}
		if r.Kind == Audited {
			objs = append(objs, auditLogs(t, p+"artifacts/"+Target+"/gather-extra/artifacts/audit_logs/", r.Started)...)
		}
	}
	return objs
}

// Serve starts an emulator holding runs and points STORAGE_EMULATOR_HOST at
// it for the test.
func Serve(t *testing.T, runs []RunSpec) *fakestorage.Server { return serve(t, runs) }

// Client opens a ci client on the emulator Serve started
// (STORAGE_EMULATOR_HOST), with its cache in cacheDir.
func Client(t *testing.T, cacheDir string) *ci.Client {
	t.Helper()
	gcs, err := ci.NewStorage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gcs.Close() })
	return ci.NewClient(gcs, &ci.Cache{Root: cacheDir, Max: ci.DefaultCacheMax}, 4)
}

// ServeB is Serve for a benchmark.
func ServeB(b *testing.B, runs []RunSpec) *fakestorage.Server { return serve(b, runs) }

func serve(t interface {
	testing.TB
	Setenv(k, v string)
}, runs []RunSpec) *fakestorage.Server {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		InitialObjects: Objects(t, runs),
		Scheme:         "http",
		Host:           "127.0.0.1",
		// Reads go to the XML API at the emulator host itself.
		PublicHost: "127.0.0.1",
		Port:       0,
		Writer:     ioDiscard{},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	t.Setenv("STORAGE_EMULATOR_HOST", srv.URL())
	return srv
}

type ioDiscard struct{}

func (ioDiscard) Write(b []byte) (int, error) { return len(b), nil }

// ReportRuns are the original report's four builds (disrupted, disrupted,
// clean, audited), started a day apart.
func ReportRuns(base time.Time) []RunSpec {
	return []RunSpec{
		{Build: ReportBuilds[0], Kind: Disrupted, Started: base},
		{Build: ReportBuilds[1], Kind: Disrupted, Started: base.Add(24 * time.Hour)},
		{Build: ReportBuilds[2], Kind: Clean, Started: base.Add(48 * time.Hour)},
		{Build: ReportBuilds[3], Kind: Audited, Started: base.Add(72 * time.Hour)},
	}
}

func prowJob(build string) []byte {
	b, _ := json.Marshal(map[string]any{
		"kind": "ProwJob",
		"spec": map[string]any{
			"type": "periodic",
			"job":  Job,
			"pod_spec": map[string]any{"containers": []any{map[string]any{
				"args":  []string{"--gcs-upload-secret=/secrets/gcs/service-account.json", "--image-import-pull-secret=/etc/pull-secret/.dockerconfigjson", "--lease-server-credentials-file=/etc/boskos/credentials", "--report-credentials-file=/etc/report/credentials", "--secret-dir=/secrets/ci-pull-credentials", "--target=" + Target, "--variant=ci-4.17-upgrade-from-stable-4.16"},
				"image": "ci-operator:latest",
			}}},
		},
		"status": map[string]any{"build_id": build, "state": "failure"},
	})
	return b
}

// fixtureTimelines reads the importer's origin-shaped upgrade job fixture:
// its upgrade and conformance phase files.
func fixtureTimelines(t testing.TB) (upgrade, conformance []origin.Interval) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "importer", "testdata", "1900000000000000001", "artifacts", "e2e-aws-ovn-upgrade", "openshift-e2e-test", "artifacts", "junit")
	var err error
	if upgrade, err = origin.ReadFile(filepath.Join(dir, "e2e-timelines_spyglass_20260304-100000.json")); err != nil {
		t.Fatal(err)
	}
	if conformance, err = origin.ReadFile(filepath.Join(dir, "e2e-timelines_spyglass_20260304-120000.json")); err != nil {
		t.Fatal(err)
	}
	return upgrade, conformance
}

// fixtureStart is when the importer's fixture run begins.
var fixtureStart = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

func shift(ivs []origin.Interval, d time.Duration) []origin.Interval {
	out := make([]origin.Interval, len(ivs))
	for i, iv := range ivs {
		if !iv.From.IsZero() {
			iv.From = iv.From.Add(d)
		}
		if !iv.To.IsZero() {
			iv.To = iv.To.Add(d)
		}
		out[i] = iv
	}
	return out
}

// cleanOf drops the Error disruption intervals.
func cleanOf(ivs []origin.Interval) []origin.Interval {
	var out []origin.Interval
	for _, iv := range ivs {
		if iv.IsDisruption() && iv.Level == origin.LevelError {
			continue
		}
		out = append(out, iv)
	}
	return out
}

// Node names of the audited run's control plane.
var Nodes = []string{"ip-10-0-1-10.us-east-2.compute.internal", "ip-10-0-2-20.us-east-2.compute.internal", "ip-10-0-3-30.us-east-2.compute.internal"}

// FailedAt is when the audited run's failed requests were sent, after its
// start.
const FailedAt = 40 * time.Minute

func disruption(name, conn, id, text string, from time.Time, secs int) origin.Interval {
	return origin.Interval{
		Level:  origin.LevelError,
		Source: origin.SourceDisruption,
		Locator: origin.Locator{Type: origin.LocatorTypeDisruption, Keys: map[string]string{
			origin.KeyBackendDisruptionName: name, origin.KeyConnection: conn, origin.KeyDisruption: "openshift-tests"}},
		Message: origin.NewMessage(origin.ReasonDisruptionBegan,
			"backend-disruption-name/"+name+" connection/"+conn+" disruption/openshift-tests stopped responding to GET requests over "+conn+" connections: "+text,
			map[string]string{origin.AnnotationRequestAuditID: id}),
		From: from,
		To:   from.Add(time.Duration(secs) * time.Second),
	}
}

func auditedTimeline(start time.Time) []origin.Interval {
	at := start.Add(FailedAt)
	timeout := `Get "https://api.ci.example:6443/api/v1/namespaces/default": net/http: timeout awaiting response headers`
	return []origin.Interval{
		disruption("kube-api-new-connections", "new", AuditIDs[0], timeout, at, 5),
		disruption("kube-api-reused-connections", "reused", AuditIDs[1], "error running request: 500 Internal Server Error: etcdserver: request timed out", at.Add(time.Second), 2),
		disruption("openshift-api-new-connections", "new", AuditIDs[2], timeout, at.Add(2*time.Second), 4),
		disruption("oauth-api-new-connections", "new", "", timeout, at.Add(3*time.Second), 3),
	}
}

func stageOf(line string) string {
	_, after, _ := strings.Cut(line, `"stageTimestamp":"`)
	return after
}

// auditLogs gzips each node's kube-apiserver audit log (current and one
// rotated backup) as gather-extra names them, with its listing.
func auditLogs(t testing.TB, prefix string, start time.Time) []fakestorage.Object {
	at := start.Add(FailedAt).UTC()
	line := func(id, stage string, code int, recv, logged time.Time) string {
		return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":%q,"stage":%q,"requestURI":"/api/v1/namespaces/default","verb":"get","userAgent":"openshift-tests","responseStatus":{"metadata":{},"code":%d},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`,
			id, stage, code, recv.Format(time.RFC3339Nano), logged.Format(time.RFC3339Nano))
	}
	filler := func(from, to time.Time) []string {
		var out []string
		for ts := from; ts.Before(to); ts = ts.Add(10 * time.Second) {
			out = append(out, line("filler-"+ts.Format("150405"), "ResponseComplete", 200, ts, ts.Add(3*time.Millisecond)))
		}
		return out
	}
	var objs []fakestorage.Object
	var listing []string
	for i, node := range Nodes {
		cur := filler(at.Add(-10*time.Minute), at.Add(5*time.Minute))
		switch i {
		case 0:
			// Received, then logged 25 s later: after the client gave
			// up at 16 s.
			cur = append(cur, line(AuditIDs[0], "ResponseComplete", 504, at.Add(20*time.Millisecond), at.Add(25*time.Second)))
		case 1:
			cur = append(cur, line(AuditIDs[1], "ResponseComplete", 500, at.Add(time.Second+10*time.Millisecond), at.Add(time.Second+400*time.Millisecond)))
		}
		backup := filler(at.Add(-2*time.Hour), at.Add(-10*time.Minute))
		files := map[string][]string{
			"audit.log": cur,
			"audit-" + at.Add(-10*time.Minute).Format("2006-01-02T15-04-05.000") + ".log": backup,
		}
		for name, lines := range files {
			// Logged in stage-time order, as the apiserver writes them.
			sort.Slice(lines, func(i, j int) bool { return stageOf(lines[i]) < stageOf(lines[j]) })
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write([]byte(strings.Join(lines, "\n") + "\n"))
			zw.Close()
			objs = append(objs, fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: Bucket, Name: prefix + "kube-apiserver/" + node + "-" + name + ".gz"}, Content: b.Bytes()})
			listing = append(listing, node+" "+name)
		}
	}
	objs = append(objs, fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: Bucket, Name: prefix + "kube-apiserver.audit_logs_listing"}, Content: []byte(strings.Join(listing, "\n") + "\n")})
	// etcd's audit logs are gathered too; attribution never reads them.
	objs = append(objs, fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: Bucket, Name: prefix + "etcd/" + Nodes[0] + "-audit.log.gz"}, Content: []byte("not read")})
	return objs
}
