package importer

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/repro-tools/repro/ci"
	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/results"
)

// CI run folders.
//
// A CI run on disk is a folder whose relative paths are the object names
// under the run's prefix in the bucket, as prow's GCS uploader writes them
// and TRT's download_timelines.py reads them (openshift-eng/ai-helpers
// plugins/ci/skills/analyze-disruption): prowjob.json, started.json,
// finished.json and artifacts/<target>/openshift-e2e-test/artifacts/junit/
// with origin's e2e-timelines_spyglass_*.json and backend-disruption_*.json
// (an upgrade job writes two of each: the upgrade, then the conformance
// tests). The fetcher (package ci) may add results.CIRunManifestFile.

// CIRun is one CI job run on disk, labelled.
type CIRun struct {
	Dir    string `json:"dir"`
	Bucket string `json:"bucket,omitempty"`
	Job    string `json:"job,omitempty"`
	Build  string `json:"build,omitempty"`
	// Target is ci-operator's target (from prowjob.json's --target).
	Target string `json:"target,omitempty"`
	// Start and End are started.json's and finished.json's timestamps.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Result is finished.json's result (SUCCESS, FAILURE, ...), "" when
	// the run has not finished or the file is missing.
	Result string `json:"result,omitempty"`
	// Platform is the cloud, from prowjob.json's ci-operator.openshift.io/cloud
	// label or else the job name.
	Platform string `json:"platform,omitempty"`
	// FromVersion and ToVersion are the releases the run upgraded from
	// and to ("4.16", "4.17"), from the job name or the ClusterVersion
	// intervals; empty when neither says.
	FromVersion string `json:"fromVersion,omitempty"`
	ToVersion   string `json:"toVersion,omitempty"`
	// Labels are prowjob.json's labels.
	Labels  map[string]string `json:"labels,omitempty"`
	ProwURL string            `json:"prowURL,omitempty"`
	// Missing names the files the run folder lacks.
	Missing []string `json:"missing,omitempty"`
	// BackendDisruption is origin's own figure per backend, seconds,
	// summed over the run's backend-disruption_*.json files.
	BackendDisruption map[string]float64 `json:"backendDisruption,omitempty"`
	// Triaged says the fetcher left the timelines out on purpose: the
	// run's own backend-disruption figures were under the triage
	// threshold. Such a run counts 0 s in every pattern, not as unreadable.
	Triaged bool `json:"triaged,omitempty"`
	// Run is the run's interval files (read when analysed).
	Run Run `json:"-"`
}

// Name is the run's name in tables: its build ID, else its folder.
func (r *CIRun) Name() string {
	if r.Build != "" {
		return r.Build
	}
	return filepath.Base(filepath.Clean(r.Dir))
}

// ProwLink is the run's prow page
// (https://prow.ci.openshift.org/view/gs/<bucket>/logs/<job>/<build>).
func (r *CIRun) ProwLink() string {
	if r.ProwURL != "" {
		return r.ProwURL
	}
	if r.Bucket == "" || r.Job == "" || r.Build == "" {
		return ""
	}
	return "https://prow.ci.openshift.org/view/gs/" + r.Bucket + "/logs/" + r.Job + "/" + r.Build
}

// SippyLink is Sippy's intervals page of the run, the link TRT's parser
// gives (parse_disruption.py generate_links).
func (r *CIRun) SippyLink() string {
	if r.Job == "" || r.Build == "" {
		return ""
	}
	return "https://sippy.dptools.openshift.org/sippy-ng/job_runs/" + r.Build + "/" + r.Job + "/intervals"
}

// Bounds on the small files of a run folder, so a corrupt or hostile file
// cannot take the memory: prowjob.json is tens of kilobytes, the others
// smaller.
const (
	maxSmallFile = 16 << 20
)

func readSmallJSON(path string, v any) error {
	if _, err := os.Stat(path); err != nil {
		return err // the caller tells a missing file from a bad one
	}
	f, err := results.OpenRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSmallFile+1))
	if err != nil {
		return err
	}
	if len(data) > maxSmallFile {
		return fmt.Errorf("%s: larger than %d MB", path, maxSmallFile>>20)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %v (truncated download? fetch the run again)", path, err)
	}
	return nil
}

// started and finished are prow's started.json and finished.json
// (sigs.k8s.io/prow pkg/pod-utils/gcs metadata).
type started struct {
	Timestamp int64 `json:"timestamp"`
}

type finished struct {
	Timestamp *int64 `json:"timestamp"`
	Passed    *bool  `json:"passed"`
	Result    string `json:"result"`
}

// upgradeJob matches the versions in an upgrade job's name:
// "...-ci-4.17-upgrade-from-stable-4.16-..." upgraded from 4.16 to 4.17.
var upgradeJob = regexp.MustCompile(`(\d+\.\d+)-upgrade-from-(?:stable-|candidate-|nightly-|ci-)?(\d+\.\d+)`)

// minorUpgradeJob: "...-4.17-e2e-aws-upgrade" without a from version is
// an upgrade within 4.17.
var minorUpgradeJob = regexp.MustCompile(`(?:^|-)(\d+\.\d+)-.*upgrade`)

// platforms are the clouds origin's job names carry, as ci-operator's
// cloud label spells them.
var platforms = []string{"aws", "gcp", "azure", "vsphere", "metal", "openstack", "ovirt", "nutanix", "ibmcloud", "alibaba", "powervs"}

// OpenCIRun reads a CI run folder's labels and finds its interval files;
// it reads no interval yet. A missing file is named in Missing, not an
// error: the error is for a folder that cannot be read at all.
func OpenCIRun(dir string) (*CIRun, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%s: not a CI run folder (give the folder holding prowjob.json and artifacts/)", dir)
	}
	r := &CIRun{Dir: dir, Labels: map[string]string{}, BackendDisruption: map[string]float64{}}
	var m results.CIRunManifest
	if err := readSmallJSON(filepath.Join(dir, results.CIRunManifestFile), &m); err == nil {
		r.Bucket, r.Job, r.Build, r.Target, r.ProwURL = m.Bucket, m.Job, m.Build, m.Target, m.ProwURL
		r.Missing = append(r.Missing, m.Missing...)
		if len(m.Stages) > 0 {
			r.Triaged = true
			for _, st := range m.Stages {
				r.Triaged = r.Triaged && st != "timelines"
			}
		}
	} else if !os.IsNotExist(err) {
		r.Missing = append(r.Missing, err.Error())
	}
	// <root>/<bucket>/logs/<job>/<build>
	parts := strings.Split(filepath.ToSlash(filepath.Clean(dir)), "/")
	for i := len(parts) - 3; i >= 1; i-- {
		if parts[i] == "logs" {
			if r.Bucket == "" {
				r.Bucket = parts[i-1]
			}
			if r.Job == "" {
				r.Job = parts[i+1]
			}
			if r.Build == "" {
				r.Build = parts[i+2]
			}
			break
		}
	}
	var pj ci.ProwJob
	switch err := readSmallJSON(filepath.Join(dir, "prowjob.json"), &pj); {
	case err == nil:
		for k, v := range pj.Metadata.Labels {
			r.Labels[k] = v
		}
		if r.Job == "" {
			r.Job = pj.Spec.Job
		}
		if r.ProwURL == "" {
			r.ProwURL = pj.Status.URL
		}
		if r.Target == "" {
			r.Target = pj.Target()
		}
	case os.IsNotExist(err):
		r.Missing = append(r.Missing, "prowjob.json")
	default:
		r.Missing = append(r.Missing, err.Error())
	}
	var s started
	switch err := readSmallJSON(filepath.Join(dir, "started.json"), &s); {
	case err == nil && s.Timestamp > 0:
		r.Start = time.Unix(s.Timestamp, 0).UTC()
	case err == nil || os.IsNotExist(err):
		r.Missing = append(r.Missing, "started.json")
	default:
		r.Missing = append(r.Missing, err.Error())
	}
	var f finished
	switch err := readSmallJSON(filepath.Join(dir, "finished.json"), &f); {
	case err == nil:
		if f.Timestamp != nil {
			r.End = time.Unix(*f.Timestamp, 0).UTC()
		}
		r.Result = f.Result
		if r.Result == "" && f.Passed != nil {
			r.Result = map[bool]string{true: "SUCCESS", false: "FAILURE"}[*f.Passed]
		}
	case os.IsNotExist(err):
		r.Missing = append(r.Missing, "finished.json")
	default:
		r.Missing = append(r.Missing, err.Error())
	}
	r.Platform = r.Labels["ci-operator.openshift.io/cloud"]
	if r.Platform == "" {
		for _, tok := range strings.Split(r.Job, "-") {
			for _, p := range platforms {
				if tok == p && r.Platform == "" {
					r.Platform = p
				}
			}
		}
	}
	if mm := upgradeJob.FindStringSubmatch(r.Job); mm != nil {
		r.ToVersion, r.FromVersion = mm[1], mm[2]
	} else if mm := minorUpgradeJob.FindStringSubmatch(r.Job); mm != nil {
		r.ToVersion, r.FromVersion = mm[1], mm[1]
	}
	if r.ToVersion == "" {
		r.ToVersion = r.Labels["job-release"]
	}
	if err := r.findFiles(); err != nil {
		return nil, err
	}
	return r, nil
}

// findFiles finds the interval files and reads origin's
// backend-disruption figures. With a known target only that target's
// junit folder is searched, as TRT's downloader does; without one, the
// whole folder.
func (r *CIRun) findFiles() error {
	root := r.Dir
	if r.Target != "" {
		j := filepath.Join(r.Dir, "artifacts", r.Target, "openshift-e2e-test", "artifacts", "junit")
		if st, err := os.Stat(j); err == nil && st.IsDir() {
			root = j
		}
	}
	byDir := map[string][]string{}
	var bds []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable corner is reported as missing files below
		}
		if d.IsDir() {
			if d.Name() == "gather-extra" || d.Name() == "must-gather" {
				return filepath.SkipDir
			}
			return nil
		}
		n := d.Name()
		switch {
		case isTimelines(n) || isEvents(n):
			byDir[filepath.Dir(p)] = append(byDir[filepath.Dir(p)], n)
		case strings.HasPrefix(n, backendDisruptionPrefix) && strings.HasSuffix(n, ".json"):
			bds = append(bds, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %v", r.Dir, err)
	}
	var files []string
	for dir, names := range byDir {
		for _, n := range pick(names) {
			files = append(files, filepath.Join(dir, n))
		}
	}
	if len(files) == 0 && !r.Triaged {
		r.Missing = append(r.Missing, "e2e-timelines_spyglass_*.json")
	}
	r.Run = newRun(r.Name(), r.Dir, files)
	if len(bds) == 0 {
		r.Missing = append(r.Missing, backendDisruptionPrefix+"*.json")
	}
	sort.Strings(bds)
	for _, p := range bds {
		var l origin.BackendDisruptionList
		if err := readSmallJSON(p, &l); err != nil {
			r.Missing = append(r.Missing, err.Error())
			continue
		}
		for n, b := range l.BackendDisruptions {
			if b != nil {
				r.BackendDisruption[n] += b.DisruptedDuration.Seconds()
			}
		}
	}
	return nil
}

// versionIn finds "to 4.17.0-..." and "from 4.16.3" in ClusterVersion
// messages ("Working towards 4.17.0-0.ci-2024-07-17-...").
var (
	versionTo   = regexp.MustCompile(`(?:towards|to|Updating to|version) (\d+\.\d+)\.\d+`)
	versionFrom = regexp.MustCompile(`from (\d+\.\d+)\.\d+`)
)

// versionsFrom fills the versions the job name did not give from the
// ClusterVersion intervals.
func (r *CIRun) versionsFrom(ivs []origin.Interval) {
	if r.FromVersion != "" && r.ToVersion != "" {
		return
	}
	for _, iv := range ivs {
		if !isClusterVersion(iv) {
			continue
		}
		h := iv.Message.HumanMessage
		if m := versionTo.FindStringSubmatch(h); m != nil && r.ToVersion == "" {
			r.ToVersion = m[1]
		}
		if m := versionFrom.FindStringSubmatch(h); m != nil && r.FromVersion == "" {
			r.FromVersion = m[1]
		}
	}
}

// buildNumber orders builds by ID (prow's IDs grow with time).
func buildNumber(b string) uint64 {
	n, _ := strconv.ParseUint(b, 10, 64)
	return n
}

// backendDisruptionPrefix is origin's per-run disruption summary file
// (pkg/monitortests/testframework/disruptionserializer).
const backendDisruptionPrefix = "backend-disruption_"
