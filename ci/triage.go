package ci

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/repro-tools/repro/results"
)

// DefaultThreshold is the disruption on any apiserver backend from which a
// run's timelines are fetched. Origin counts every disruption interval as
// at least 1 s (pkg/monitor/monitorapi disruption.go), so this selects any
// run with apiserver disruption at all.
const DefaultThreshold = time.Second

// disruptionList is origin's backend-disruption_<suffix>.json
// (openshift/origin pkg/monitortests/testframework/disruptionserializer:
// BackendDisruptionList, no JSON tags). Only the figures triage needs are
// read.
type disruptionList struct {
	BackendDisruptions map[string]struct {
		Name              string
		BackendName       string
		ConnectionType    string
		DisruptedDuration json.RawMessage
	}
}

// ReadDisruption reads every backend-disruption_*.json under dir (the
// upgrade and the conformance phase of an upgrade job each write one) and
// returns each backend's disrupted time, summed over the files. ok is false
// when the folder holds none.
func ReadDisruption(dir string) (per map[string]time.Duration, ok bool, err error) {
	var files []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "backend-disruption") && strings.HasSuffix(d.Name(), ".json") {
			files = append(files, p)
		}
		return nil
	})
	per = map[string]time.Duration{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, false, err
		}
		var l disruptionList
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, false, fmt.Errorf("%s: %v", f, err)
		}
		for key, d := range l.BackendDisruptions {
			name := d.Name
			if name == "" {
				name = key
			}
			dur, err := parseDuration(d.DisruptedDuration)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %s: %v", f, name, err)
			}
			per[name] += dur
		}
	}
	return per, len(files) > 0, nil
}

// parseDuration reads a metav1.Duration ("4s", "1m2s") or, as older files
// and Sippy give it, a number of nanoseconds.
func parseDuration(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return time.ParseDuration(s)
	}
	var n float64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, err
	}
	return time.Duration(n), nil
}

// connSuffix and variantSuffix strip origin's sampler name down to its
// backend: kube-api-new-connections, and the newer
// kube-api-http1-external-lb-reused-connections.
var (
	connSuffix    = regexp.MustCompile(`-(new|reused)-connections?$`)
	variantSuffix = regexp.MustCompile(`-http[12](-[a-z0-9]+)*$`)
)

// BackendOf returns the backend a disruption name measures.
func BackendOf(name string) string {
	return variantSuffix.ReplaceAllString(connSuffix.ReplaceAllString(name, ""), "")
}

// APIServerBackend reports whether a disruption name is an apiserver
// backend's (results.DescribeBackend).
func APIServerBackend(name string) bool {
	d, _ := results.DescribeBackend(BackendOf(name))
	return d.APIServer()
}

// Candidate is one run as triage sees it.
type Candidate struct {
	Ref   Ref
	Start time.Time
	// Known is false when no disruption figures could be read.
	Known bool
	// Worst is the most disrupted apiserver backend and its time.
	Worst     string
	WorstTime time.Duration
}

// Score sets the candidate's worst apiserver backend from per-backend
// figures.
func (c *Candidate) Score(per map[string]time.Duration) {
	c.Known = true
	names := make([]string, 0, len(per))
	for n := range per {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if APIServerBackend(n) && per[n] > c.WorstTime {
			c.Worst, c.WorstTime = n, per[n]
		}
	}
}

// Triage is the outcome of selecting runs.
type Triage struct {
	// Selected are at or over the threshold; Clean the A/B runs (one per
	// job: the clean run nearest in time to a selected one); Skipped the
	// rest; NoData those whose figures could not be read.
	Selected, Clean, Skipped, NoData []int
}

// Select picks the runs at or over threshold on any apiserver backend, and
// for each job with a selected run the run of that job with 0 s on every
// apiserver backend that started nearest to one of them, for the A/B
// (openshift-eng/ai-helpers find_disruption_runs.py keeps a clean run of a
// selected job the same way).
func Select(cs []Candidate, threshold time.Duration) Triage {
	var t Triage
	byJob := map[string][]int{}
	for i, c := range cs {
		switch {
		case !c.Known:
			t.NoData = append(t.NoData, i)
		case c.WorstTime >= threshold && c.WorstTime > 0:
			t.Selected = append(t.Selected, i)
			byJob[c.Ref.Job] = append(byJob[c.Ref.Job], i)
		}
	}
	clean := map[int]bool{}
	jobs := make([]string, 0, len(byJob))
	for j := range byJob {
		jobs = append(jobs, j)
	}
	sort.Strings(jobs)
	for _, job := range jobs {
		best, bestGap := -1, time.Duration(0)
		for i, c := range cs {
			if c.Ref.Job != job || !c.Known || c.WorstTime != 0 {
				continue
			}
			for _, s := range byJob[job] {
				gap := c.Start.Sub(cs[s].Start)
				if gap < 0 {
					gap = -gap
				}
				if best < 0 || gap < bestGap {
					best, bestGap = i, gap
				}
			}
		}
		if best >= 0 {
			clean[best] = true
			t.Clean = append(t.Clean, best)
		}
	}
	sel := map[int]bool{}
	for _, i := range t.Selected {
		sel[i] = true
	}
	for i, c := range cs {
		if c.Known && !sel[i] && !clean[i] {
			t.Skipped = append(t.Skipped, i)
		}
	}
	return t
}
