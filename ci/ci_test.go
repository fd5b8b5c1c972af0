package ci_test

import (
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

	"github.com/repro-tools/repro/ci"
	"github.com/repro-tools/repro/ci/citest"
)

var base = time.Date(2024, 7, 10, 3, 0, 0, 0, time.UTC)

func prowURL(build string) string {
	return "https://prow.ci.openshift.org/view/gs/origin-ci-test/logs/" + citest.Job + "/" + build
}

func TestParseRef(t *testing.T) {
	for _, b := range citest.ReportBuilds {
		r, err := ci.ParseRef(prowURL(b))
		if err != nil {
			t.Fatal(err)
		}
		if r.Bucket != "test-platform-results" || r.Named != "origin-ci-test" || r.Job != citest.Job || r.Build != b || r.Prefix != "logs/"+citest.Job+"/"+b {
			t.Errorf("%s: %+v", b, r)
		}
		if r.ProwURL() != "https://prow.ci.openshift.org/view/gs/test-platform-results/logs/"+citest.Job+"/"+b {
			t.Errorf("prow URL %s", r.ProwURL())
		}
	}
	cases := map[string]ci.Ref{
		"https://gcsweb-ci.apps.ci.l2s4.p1.openshiftapps.com/gcs/test-platform-results/logs/" + citest.Job + "/1813938460914880512/":                                              {Bucket: "test-platform-results", Job: citest.Job, Build: "1813938460914880512"},
		"https://gcsweb-ci.apps.ci.l2s4.p1.openshiftapps.com/gcs/origin-ci-test/logs/" + citest.Job + "/1813938460914880512/artifacts/e2e-aws-ovn-upgrade/":                       {Bucket: "test-platform-results", Job: citest.Job, Build: "1813938460914880512"},
		"gs://test-platform-results/logs/" + citest.Job + "/1813938460914880512":                                                                                                  {Bucket: "test-platform-results", Job: citest.Job, Build: "1813938460914880512"},
		"gs://test-platform-results/pr-logs/pull/openshift_origin/29000/pull-ci-openshift-origin-master-e2e-aws-ovn-upgrade/1812000000000000001":                                  {Bucket: "test-platform-results", Job: "pull-ci-openshift-origin-master-e2e-aws-ovn-upgrade", Build: "1812000000000000001", Repo: "openshift_origin", PR: "29000"},
		"https://prow.ci.openshift.org/view/gs/test-platform-results/pr-logs/pull/openshift_origin/29000/pull-ci-openshift-origin-master-e2e-aws-ovn-upgrade/1812000000000000001": {Bucket: "test-platform-results", Job: "pull-ci-openshift-origin-master-e2e-aws-ovn-upgrade", Build: "1812000000000000001", Repo: "openshift_origin", PR: "29000"},
	}
	for in, want := range cases {
		got, err := ci.ParseRef(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got.Bucket != want.Bucket || got.Job != want.Job || got.Build != want.Build || got.Repo != want.Repo || got.PR != want.PR {
			t.Errorf("%s: got %+v", in, got)
		}
	}
	for _, bad := range []string{
		"https://example.com/foo",
		"gs://test-platform-results/logs/" + citest.Job,
		"gs://test-platform-results/logs/" + citest.Job + "/latest",
		"https://prow.ci.openshift.org/view/gs/test-platform-results/logs/../x/1",
		"s3://bucket/logs/job/1",
	} {
		_, err := ci.ParseRef(bad)
		if err == nil {
			t.Errorf("%s: accepted", bad)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "prow.ci.openshift.org/view/gs/") || !strings.Contains(msg, "gs://") {
			t.Errorf("%s: %q is not one line naming the accepted forms", bad, msg)
		}
	}
}

func refs(t *testing.T, builds ...string) []ci.Ref {
	var out []ci.Ref
	for _, b := range builds {
		r, err := ci.ParseRef(prowURL(b))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

type counter struct{ objects, done, bytes, planned atomic.Int64 }

func (c *counter) Plan(o int, b int64) { c.objects.Add(int64(o)); c.planned.Add(b) }
func (c *counter) Transferred(n int64) { c.bytes.Add(n) }
func (c *counter) Done()               { c.done.Add(1) }

func TestFetchReportRunsCacheOffline(t *testing.T) {
	citest.Serve(t, citest.ReportRuns(base))
	cache := t.TempDir()
	c := citest.Client(t, cache)
	var p counter
	c.Progress = &p
	ctx := context.Background()
	start := time.Now()
	res, err := c.Gather(ctx, ci.Request{Refs: refs(t, citest.ReportBuilds...), Audit: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fetched %d runs from the emulator in %v (%d objects, %d bytes)", len(res.Runs), time.Since(start), p.done.Load(), p.bytes.Load())
	// Only the audited run has gathered audit logs; the others say so.
	if len(res.Failures) != 3 {
		t.Fatalf("failures: %v", res.Failures)
	}
	for _, l := range res.Failures {
		if !strings.Contains(l, "no gathered audit logs under artifacts/e2e-aws-ovn-upgrade/gather-extra/artifacts/audit_logs/") {
			t.Errorf("failure %q", l)
		}
	}
	if len(res.Runs) != 4 || p.objects.Load() != p.done.Load() || p.bytes.Load() < p.planned.Load() {
		t.Fatalf("runs %d, progress %d/%d objects, %d/%d bytes", len(res.Runs), p.done.Load(), p.objects.Load(), p.bytes.Load(), p.planned.Load())
	}
	for _, r := range res.Runs {
		// The contract: object names under the run's prefix are the
		// folder's relative paths.
		want := filepath.Join(cache, "test-platform-results", "logs", citest.Job, r.Build)
		if r.Dir != want {
			t.Errorf("dir %s, want %s", r.Dir, want)
		}
		tl, _ := filepath.Glob(filepath.Join(r.Dir, "artifacts", citest.Target, "openshift-e2e-test", "artifacts", "junit", "e2e-timelines_spyglass_*.json"))
		bd, _ := filepath.Glob(filepath.Join(r.Dir, "artifacts", citest.Target, "openshift-e2e-test", "artifacts", "junit", "backend-disruption_*.json"))
		if len(tl) != 2 || len(bd) != 2 {
			t.Errorf("%s: %d timelines, %d backend-disruption files", r.Build, len(tl), len(bd))
		}
		for _, f := range []string{"prowjob.json", "started.json", "finished.json"} {
			if _, err := os.Stat(filepath.Join(r.Dir, f)); err != nil {
				t.Error(err)
			}
		}
		if _, err := os.Stat(filepath.Join(r.Dir, "build-log.txt")); err == nil {
			t.Errorf("%s: build-log.txt fetched", r.Build)
		}
		rec, err := ci.ReadRun(r.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Complete != (r.Build == citest.ReportBuilds[3]) || rec.Target != citest.Target || rec.Job != citest.Job || rec.Bucket != "test-platform-results" || rec.NamedBucket != "origin-ci-test" ||
			rec.ProwURL != "https://prow.ci.openshift.org/view/gs/test-platform-results/logs/"+citest.Job+"/"+r.Build || rec.Started.IsZero() || rec.Result == "" || rec.FetchedAt.IsZero() {
			t.Errorf("record %+v", rec)
		}
		var raw map[string]any
		b, _ := os.ReadFile(filepath.Join(r.Dir, ci.RunFile))
		json.Unmarshal(b, &raw)
		for _, k := range []string{"bucket", "job", "build", "target", "prowURL", "fetchedAt", "complete", "missing"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("%s lacks %q", ci.RunFile, k)
			}
		}
	}
	audited := res.Runs[3]
	logs, _ := filepath.Glob(filepath.Join(audited.Dir, "artifacts", citest.Target, "gather-extra", "artifacts", "audit_logs", "kube-apiserver", "*.gz"))
	if len(logs) != 6 {
		t.Errorf("%d gathered kube-apiserver logs, want 6", len(logs))
	}
	if _, err := os.Stat(filepath.Join(audited.Dir, "artifacts", citest.Target, "gather-extra", "artifacts", "audit_logs", "etcd")); err == nil {
		t.Error("etcd's audit logs fetched")
	}

	// Fetched once: a second gather reads the cache.
	first := map[string]time.Time{}
	for _, r := range res.Runs {
		first[r.Build] = r.FetchedAt
	}
	var p2 counter
	c.Progress = &p2
	res2, err := c.Gather(ctx, ci.Request{Refs: refs(t, citest.ReportBuilds...)})
	if err != nil || res2.Partial() || len(res2.Runs) != 4 {
		t.Fatalf("second gather: %v %v", err, res2.Failures)
	}
	for _, r := range res2.Runs {
		if !r.FetchedAt.Equal(first[r.Build]) {
			t.Errorf("%s fetched again", r.Build)
		}
	}
	if p2.objects.Load() != 0 {
		t.Errorf("second gather planned %d objects", p2.objects.Load())
	}

	// --offline: no storage client at all.
	off := ci.NewClient(nil, &ci.Cache{Root: cache}, 4)
	off.Offline = true
	res3, err := off.Gather(ctx, ci.Request{Refs: refs(t, citest.ReportBuilds...)})
	if err != nil || res3.Partial() || len(res3.Runs) != 4 {
		t.Fatalf("offline: %v %v", err, res3.Failures)
	}
	res4, err := off.Gather(ctx, ci.Request{Refs: refs(t, "1800000000000000000")})
	if err != nil || !res4.Partial() || !strings.Contains(res4.Failures[0], "not in the cache") {
		t.Fatalf("offline, uncached: %v %v", err, res4.Failures)
	}
}

func TestPartialRuns(t *testing.T) {
	runs := []citest.RunSpec{
		{Build: "1813000000000000001", Kind: citest.Disrupted, Started: base},
		{Build: "1813000000000000002", Kind: citest.NoTimeline, Started: base.Add(time.Hour)},
		{Build: "1813000000000000003", Kind: citest.Truncated, Started: base.Add(2 * time.Hour)},
		{Build: "1813000000000000004", Kind: citest.Running, Started: base.Add(3 * time.Hour)},
	}
	citest.Serve(t, runs)
	c := citest.Client(t, t.TempDir())
	res, err := c.Gather(context.Background(), ci.Request{Refs: refs(t, "1813000000000000001", "1813000000000000002", "1813000000000000003", "1813000000000000004", "1813000000000000099")})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial() {
		t.Fatal("not partial")
	}
	all := strings.Join(res.Failures, "\n")
	for _, want := range []string{
		"1813000000000000002: no timeline",
		"1813000000000000003: artifacts/e2e-aws-ovn-upgrade/openshift-e2e-test/artifacts/junit/e2e-timelines_spyglass_",
		"truncated JSON",
		"1813000000000000004: finished.json: not found (404)",
		"1813000000000000099: prowjob.json: not found (404)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no line with %q in:\n%s", want, all)
		}
	}
	for _, l := range res.Failures {
		if strings.Contains(l, "1813000000000000001") {
			t.Errorf("the whole run has a failure line: %s", l)
		}
	}
	// The good run and the partial ones are still handed on; the missing
	// one is not.
	if len(res.Runs) != 4 {
		t.Errorf("%d runs handed on, want 4", len(res.Runs))
	}
	for _, r := range res.Runs {
		if r.Complete != (r.Build == "1813000000000000001") {
			t.Errorf("%s complete=%v", r.Build, r.Complete)
		}
		// No temporary file is left behind.
		filepath.WalkDir(r.Dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.Contains(d.Name(), ".tmp-") {
				t.Errorf("temporary file left: %s", p)
			}
			return nil
		})
	}
}

// history is a job's history of n runs, one an hour, every fifth disrupted,
// the rest clean.
func history(n int) []citest.RunSpec {
	var out []citest.RunSpec
	for i := range n {
		k := citest.Clean
		if i%5 == 2 {
			k = citest.Disrupted
		}
		out = append(out, citest.RunSpec{Build: fmt.Sprintf("18130000000000%05d", i*37), Kind: k, Started: base.Add(time.Duration(i) * time.Hour)})
	}
	return out
}

func TestHistoryNarrowsByBisection(t *testing.T) {
	runs := history(60)
	citest.Serve(t, runs)
	c := citest.Client(t, t.TempDir())
	since, until := base.Add(20*time.Hour), base.Add(30*time.Hour)
	h, err := c.History(context.Background(), citest.Bucket, citest.Job, since, until, 0)
	if err != nil {
		t.Fatal(err)
	}
	if h.Listed != 60 || len(h.Builds) != 10 || h.Builds[0] != runs[20].Build || h.Builds[9] != runs[29].Build {
		t.Fatalf("listed %d, chose %v", h.Listed, h.Builds)
	}
	// Two bisections over 60 IDs: about 2*log2(60) reads, not 60.
	t.Logf("%d started.json read to narrow %d builds", h.Probed, h.Listed)
	if h.Probed > 14 {
		t.Errorf("read %d started.json files to narrow 60 builds", h.Probed)
	}
	h, err = c.History(context.Background(), citest.Bucket, citest.Job, since, time.Time{}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Builds) != 5 || h.Builds[4] != runs[59].Build {
		t.Errorf("--limit 5 kept %v", h.Builds)
	}
	h, err = c.History(context.Background(), citest.Bucket, citest.Job, base.Add(100*time.Hour), time.Time{}, 0)
	if err != nil || len(h.Builds) != 0 {
		t.Errorf("window after the last run: %v %v", h, err)
	}
}

func TestTriageSelectsAndPicksClean(t *testing.T) {
	runs := history(20)
	citest.Serve(t, runs)
	cache := t.TempDir()
	c := citest.Client(t, cache)
	res, err := c.Gather(context.Background(), ci.Request{Job: citest.Job, Since: base.Add(5 * time.Hour), Until: base.Add(15 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Partial() {
		t.Fatal(res.Failures)
	}
	// Runs 5..14: 7 and 12 disrupted (kube-api-new-connections 6 s in the
	// upgrade phase, 2 s in the conformance phase).
	if res.Scanned != 10 || res.Selected != 2 || res.Skipped != 7 || res.NoData != 0 {
		t.Fatalf("scanned %d selected %d skipped %d nodata %d\n%s", res.Scanned, res.Selected, res.Skipped, res.NoData, strings.Join(res.Triage, "\n"))
	}
	if len(res.Runs) != 3 || len(res.Clean) != 1 {
		t.Fatalf("%d runs, %d clean", len(res.Runs), len(res.Clean))
	}
	var clean string
	for _, r := range res.Runs {
		if res.Clean[r.Dir] {
			clean = r.Build
		}
	}
	// Nearest in time to a selected run: 6 (an hour before 7; 8 and 11,
	// 13 are as near, the earliest index wins).
	if clean != runs[6].Build {
		t.Errorf("clean run %s, want %s", clean, runs[6].Build)
	}
	// Skipped runs have no timelines on disk.
	for _, i := range []int{5, 9, 10} {
		tl, _ := filepath.Glob(filepath.Join(cache, citest.Bucket, "logs", citest.Job, runs[i].Build, "artifacts", citest.Target, "openshift-e2e-test", "artifacts", "junit", "e2e-timelines_*"))
		if len(tl) != 0 {
			t.Errorf("skipped run %d has timelines", i)
		}
	}
	if !strings.Contains(strings.Join(res.Triage, "\n"), "kube-api-new-connections 8s  selected") {
		t.Errorf("triage lines:\n%s", strings.Join(res.Triage, "\n"))
	}
	// A higher threshold selects nothing and fetches no clean run.
	res, err = c.Gather(context.Background(), ci.Request{Job: citest.Job, Since: base.Add(5 * time.Hour), Until: base.Add(15 * time.Hour), Threshold: 10 * time.Second})
	if err != nil || res.Selected != 0 || len(res.Runs) != 0 {
		t.Errorf("threshold 10s: %v selected %d runs %d", err, res.Selected, len(res.Runs))
	}
}

func TestTriageFromSippy(t *testing.T) {
	runs := history(10)
	citest.Serve(t, runs)
	var asked atomic.Value
	sippy := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/jobs/runs/disruption" {
			http.NotFound(w, r)
			return
		}
		ids := strings.Split(r.URL.Query().Get("job_run_names"), ",")
		asked.Store(ids)
		type row struct {
			JobRunName        string  `json:"job_run_name"`
			BackendName       string  `json:"backend_name"`
			DisruptionSeconds float64 `json:"disruption_seconds"`
		}
		var rows []row
		for _, id := range ids {
			secs := 0.0
			if id == runs[3].Build {
				secs = 7
			}
			rows = append(rows, row{id, "kube-api-new-connections", secs}, row{id, "ingress-to-console-new-connections", 9})
		}
		json.NewEncoder(w).Encode(map[string]any{"rows": rows})
	}))
	defer sippy.Close()
	cache := t.TempDir()
	c := citest.Client(t, cache)
	res, err := c.Gather(context.Background(), ci.Request{Job: citest.Job, Since: base, Sippy: true, SippyURL: sippy.URL, HTTP: sippy.Client()})
	if err != nil || res.Partial() {
		t.Fatalf("%v %v", err, res.Failures)
	}
	if ids, _ := asked.Load().([]string); len(ids) != 10 {
		t.Errorf("sippy asked for %v", ids)
	}
	// ingress disruption is not apiserver disruption: only run 3 is
	// selected, though every run has 9 s of it.
	if res.Scanned != 10 || res.Selected != 1 || len(res.Clean) != 1 || len(res.Runs) != 2 {
		t.Fatalf("scanned %d selected %d clean %d runs %d", res.Scanned, res.Selected, len(res.Clean), len(res.Runs))
	}
	// With Sippy, the triage read no backend-disruption file of a skipped
	// run.
	bd, _ := filepath.Glob(filepath.Join(cache, citest.Bucket, "logs", citest.Job, runs[8].Build, "artifacts", "*", "*", "*", "junit", "backend-disruption_*"))
	if len(bd) != 0 {
		t.Errorf("skipped run's backend-disruption files fetched: %v", bd)
	}
}

func TestCacheEvictsOldestFirst(t *testing.T) {
	citest.Serve(t, citest.ReportRuns(base))
	cache := t.TempDir()
	c := citest.Client(t, cache)
	ctx := context.Background()
	var dirs []string
	for _, b := range citest.ReportBuilds[:3] {
		res, err := c.Gather(ctx, ci.Request{Refs: refs(t, b)})
		if err != nil || res.Partial() {
			t.Fatal(err, res.Failures)
		}
		dirs = append(dirs, res.Runs[0].Dir)
		time.Sleep(10 * time.Millisecond)
	}
	ev, err := (&ci.Cache{Root: cache}).Evict(nil)
	if err != nil || len(ev.Runs) != 0 {
		t.Fatalf("unbounded cache evicted %v %v", ev, err)
	}
	one := ev.Size / 3
	// Room for two runs; the newest is kept even if older ones would do.
	ev, err = (&ci.Cache{Root: cache, Max: 2*one + one/2}).Evict(map[string]bool{dirs[0]: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Runs) != 1 || !strings.HasSuffix(ev.Runs[0], citest.ReportBuilds[1]) {
		t.Fatalf("evicted %v, want the oldest not kept (%s)", ev.Runs, citest.ReportBuilds[1])
	}
	if _, err := os.Stat(dirs[1]); !os.IsNotExist(err) {
		t.Errorf("evicted folder still there: %v", err)
	}
	// A folder whose record is gone is fetched again, not trusted.
	os.Remove(filepath.Join(dirs[2], ci.RunFile))
	res, err := c.Gather(ctx, ci.Request{Refs: refs(t, citest.ReportBuilds[2])})
	if err != nil || res.Partial() || !res.Runs[0].Complete {
		t.Fatalf("refetch: %v %v", err, res.Failures)
	}
}

func TestObjectSizeBound(t *testing.T) {
	citest.Serve(t, citest.ReportRuns(base))
	c := citest.Client(t, t.TempDir())
	c.MaxObject = 4 << 10
	res, err := c.Gather(context.Background(), ci.Request{Refs: refs(t, citest.ReportBuilds[0])})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial() || !strings.Contains(strings.Join(res.Failures, "\n"), "over the 4096-byte bound") {
		t.Errorf("failures %v", res.Failures)
	}
}

// BenchmarkGather fetches 40 runs whole (two timelines and two
// backend-disruption files each) from the emulator into a fresh cache, then
// reads them again from the cache.
func BenchmarkGather(b *testing.B) {
	var runs []citest.RunSpec
	var rs []ci.Ref
	for i := range 40 {
		build := fmt.Sprintf("18140000000000%05d", i)
		runs = append(runs, citest.RunSpec{Build: build, Kind: citest.Disrupted, Started: base.Add(time.Duration(i) * time.Hour)})
		r, _ := ci.JobRef(citest.Bucket, citest.Job, build)
		rs = append(rs, r)
	}
	citest.ServeB(b, runs)
	for b.Loop() {
		gcs, err := ci.NewStorage(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		c := ci.NewClient(gcs, &ci.Cache{Root: b.TempDir()}, ci.DefaultParallel)
		start := time.Now()
		res, err := c.Gather(context.Background(), ci.Request{Refs: rs})
		if err != nil || res.Partial() {
			b.Fatal(err, res.Failures)
		}
		cold := time.Since(start)
		start = time.Now()
		if _, err := c.Gather(context.Background(), ci.Request{Refs: rs}); err != nil {
			b.Fatal(err)
		}
		warm := time.Since(start)
		b.ReportMetric(float64(len(rs))/cold.Seconds(), "runs/s-fetched")
		b.ReportMetric(float64(len(rs))/warm.Seconds(), "runs/s-cached")
		gcs.Close()
	}
}
