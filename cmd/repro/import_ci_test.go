package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/ci/citest"
)

func reportURL(build string) string {
	return "https://prow.ci.openshift.org/view/gs/origin-ci-test/logs/" + citest.Job + "/" + build
}

func TestImportCIRuns(t *testing.T) {
	base := time.Date(2024, 7, 10, 3, 0, 0, 0, time.UTC)
	runs := citest.ReportRuns(base)
	runs = append(runs,
		citest.RunSpec{Build: "1814000000000000001", Kind: citest.NoTimeline, Started: base.Add(96 * time.Hour)},
		citest.RunSpec{Build: "1814000000000000002", Kind: citest.Truncated, Started: base.Add(97 * time.Hour)})
	citest.Serve(t, runs)
	cache := t.TempDir()
	args := []string{"import", "--cache-dir", cache}
	for _, b := range citest.ReportBuilds {
		args = append(args, reportURL(b))
	}
	// The original report's four prow URLs, beside a local folder.
	code, out, err := runRepro(t, append(args, fixture)...)
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	for _, b := range citest.ReportBuilds {
		if !strings.Contains(out, b) {
			t.Errorf("output names no run %s:\n%s", b, out)
		}
	}
	if !strings.Contains(out, "1900000000000000001") || !strings.Contains(out, "fetched ") {
		t.Errorf("output:\n%s", out)
	}
	// --offline reads the cache only: the emulator is not asked.
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1")
	code, out, err = runRepro(t, append(args, "--offline")...)
	if code != 0 {
		t.Fatalf("offline: exit %d: %v\n%s", code, err, out)
	}
	code, out, err = runRepro(t, "import", "--cache-dir", cache, "--offline", "gs://test-platform-results/logs/"+citest.Job+"/1800000000000000000")
	if code != 1 || err == nil || !strings.Contains(err.Error(), "not in the cache") {
		t.Errorf("offline, uncached: exit %d\n%s", code, out)
	}
}

func TestImportCIPartialAndBadInput(t *testing.T) {
	base := time.Date(2024, 7, 10, 3, 0, 0, 0, time.UTC)
	citest.Serve(t, []citest.RunSpec{
		{Build: citest.ReportBuilds[0], Kind: citest.Disrupted, Started: base},
		{Build: "1814000000000000001", Kind: citest.NoTimeline, Started: base.Add(time.Hour)},
		{Build: "1814000000000000002", Kind: citest.Truncated, Started: base.Add(2 * time.Hour)},
	})
	cache := t.TempDir()
	code, out, err := runRepro(t, "import", "--cache-dir", cache, reportURL(citest.ReportBuilds[0]), reportURL("1814000000000000001"), reportURL("1814000000000000002"), reportURL("1814000000000000003"))
	if code != exitPartial {
		t.Fatalf("exit %d, want %d: %v\n%s", code, exitPartial, err, out)
	}
	if !strings.HasPrefix(err.Error(), "partial: 3 run(s) or file(s)") {
		t.Errorf("error %v", err)
	}
	for _, want := range []string{"1814000000000000001: no timeline", "truncated JSON", "1814000000000000003: prowjob.json: not found (404)"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	code, out, err = runRepro(t, "import", "https://prow.ci.openshift.org/job-history/gs/origin-ci-test/logs/"+citest.Job)
	if code != 1 || strings.Count(strings.TrimSpace(err.Error()), "\n") != 0 || !strings.Contains(err.Error(), "gs://BUCKET/logs/JOB/BUILD") {
		t.Errorf("bad URL: exit %d %v\n%s", code, err, out)
	}
	for _, bad := range [][]string{
		{"import", "--since", "2024-07-01", fixture},
		{"import", "--job", citest.Job},
		{"import", "--job", citest.Job, "--since", "yesterday"},
		{"import", "--job", citest.Job, "--since", "2024-07-02", "--until", "2024-07-01"},
		{"import", "--cache-max-size", "lots", reportURL(citest.ReportBuilds[0])},
		{"import", "--job", citest.Job, "--since", "2024-07-01", "--compare-by", "job"},
		{"import", "--compare-by", "colour", fixture},
	} {
		if code, _, err := runRepro(t, bad...); code != 1 || err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: exit %d %v", bad, code, err)
		}
	}
}

func TestImportCIJobHistoryAndAudit(t *testing.T) {
	base := time.Date(2024, 7, 10, 3, 0, 0, 0, time.UTC)
	var runs []citest.RunSpec
	for i := range 12 {
		k := citest.Clean
		switch i {
		case 4:
			k = citest.Disrupted
		case 8:
			k = citest.Audited
		}
		runs = append(runs, citest.RunSpec{Build: fmt.Sprintf("18130000000000%05d", i), Kind: k, Started: base.Add(time.Duration(i) * time.Hour)})
	}
	citest.Serve(t, runs)
	cache := t.TempDir()
	html := filepath.Join(t.TempDir(), "runs.html")
	outDir := filepath.Join(t.TempDir(), "runs")
	code, out, err := runRepro(t, "import", "--cache-dir", cache, "--job", citest.Job, "--since", "2024-07-10T05:00:00Z", "--until", "2024-07-10T12:00:00Z", "--audit", "--html", html, "--out", outDir, "--compare-by", "date=2024-07-10T09:00:00Z")
	// Only the audited run has gathered audit logs; the others say so.
	if code != exitPartial {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	for _, want := range []string{
		"12 builds listed",
		"triage (each run's backend-disruption files): 7 runs scanned, 2 selected (at least 1s on an apiserver backend), 4 skipped, 0 without figures; 1 clean run(s) added for the A/B",
		"Attribution of " + citest.Job + "/1813000000000000008 (4 failed intervals, 3 with an audit ID): 1 answered, 1 received-not-answered, 1 not-received, 0 unknown",
		"no gathered audit logs under",
		"before 2024-07-10T09:00:00Z",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	// The fetched runs went to the importer's analysis in one call: its
	// page, and one results folder per run.
	if page, err := os.ReadFile(html); err != nil || !strings.Contains(string(page), "1813000000000000008") {
		t.Errorf("--html: %v", err)
	}
	if folders, _ := filepath.Glob(filepath.Join(outDir, "*", "summary.txt")); len(folders) != 3 {
		t.Errorf("--out wrote %d run folders, want 3", len(folders))
	}
	if strings.Contains(out, "1813000000000000006: no gathered") {
		t.Errorf("a skipped run was fetched whole:\n%s", out)
	}
	tl, _ := filepath.Glob(filepath.Join(cache, citest.Bucket, "logs", citest.Job, "*", "artifacts", citest.Target, "openshift-e2e-test", "artifacts", "junit", "e2e-timelines_spyglass_*"))
	if len(tl) != 6 {
		t.Errorf("%d timeline files fetched, want 6 (two runs selected, one clean)", len(tl))
	}
}
