package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/report/compare"
	"github.com/repro-tools/repro/results"
)

// DefaultAtLeast is the share threshold of the pattern table, seconds: the
// low end of the original report's 4-7 s rollout gap.
const DefaultAtLeast = 4.0

// CISet selects runs for one side of a comparison.
type CISet struct {
	// Name says what the set is ("job periodic-...-4.16-...", "before 2024-07-15").
	Name  string              `json:"name"`
	Match func(r *CIRun) bool `json:"-"`
}

// JobSet selects the runs of one job.
func JobSet(job string) CISet {
	return CISet{Name: "job " + job, Match: func(r *CIRun) bool { return r.Job == job }}
}

// VersionSet selects the runs that upgraded to a version ("4.17").
func VersionSet(to string) CISet {
	return CISet{Name: "to " + to, Match: func(r *CIRun) bool { return r.ToVersion == to }}
}

// LabelSet selects the runs whose prowjob label key has the value.
func LabelSet(key, value string) CISet {
	return CISet{Name: key + "=" + value, Match: func(r *CIRun) bool { return r.Labels[key] == value }}
}

// DateSets splits runs at a time: started before it, and at or after it.
func DateSets(at time.Time) (before, after CISet) {
	d := at.UTC().Format(time.RFC3339)
	return CISet{Name: "before " + d, Match: func(r *CIRun) bool { return !r.Start.IsZero() && r.Start.Before(at) }},
		CISet{Name: "from " + d, Match: func(r *CIRun) bool { return !r.Start.IsZero() && !r.Start.Before(at) }}
}

// CIOptions shape AnalyzeCIRuns.
type CIOptions struct {
	// Window is how far either side of a disruption evidence is read
	// (DefaultEvidenceWindow when zero).
	Window time.Duration
	// AtLeast is the pattern table's threshold, seconds (DefaultAtLeast
	// when zero).
	AtLeast float64
	// Workers bounds the runs read at once (GOMAXPROCS when zero): each
	// holds one run's intervals in memory.
	Workers int
	// A and B, when both set, are compared per pattern and backend.
	A, B *CISet
	// Alpha is the rank test's significance level (0.05 when zero).
	Alpha float64
}

// CIRunReport is one run analysed.
type CIRunReport struct {
	Run        *CIRun              `json:"run"`
	Placements []Placement         `json:"placements"`
	Windows    []*DisruptionWindow `json:"windows"`
	// Liveness is TRT's verdict on the measuring side (LivenessVerdict)
	// from LivenessFailures network-liveness failures.
	Liveness         string `json:"liveness"`
	LivenessFailures int    `json:"livenessFailures"`
	// Seconds is the run's disruption per pattern and backend.
	Seconds map[string]map[string]float64 `json:"seconds"`
	// APIServerSeconds is the run's disruption over every apiserver
	// backend, summed: 0 makes the run a clean one.
	APIServerSeconds float64 `json:"apiserverSeconds"`
	// Clean is the build of the clean run of the same job this run's
	// evidence was compared with ("" when there was none).
	Clean string `json:"clean,omitempty"`
	// Errors are the run's files that could not be read, one line each.
	Errors []string `json:"errors,omitempty"`
	// Signals are the evidence within the run's windows (and its
	// canaries' failures), in the shared schema; SignalsDropped counts
	// those beyond the per-run bound.
	Signals        []results.Signal `json:"-"`
	SignalsDropped int              `json:"signalsDropped,omitempty"`

	keys map[string]bool // every signal key of the run, for the clean-run comparison
}

// PatternStats are one pattern's figures for one backend over a set of
// runs. Percentiles are over every run analysed, undisrupted runs counting
// 0 s, as Sippy's per-job percentiles are; so do the runs the fetcher
// triaged out (CIRun.Triaged), whose own figures were under its threshold.
type PatternStats struct {
	Pattern string              `json:"pattern"`
	Backend string              `json:"backend"`
	Kind    results.BackendKind `json:"kind"`
	Runs    int                 `json:"runs"`
	// Affected counts runs with any disruption of the pattern.
	Affected int     `json:"affected"`
	Median   float64 `json:"median"`
	P95      float64 `json:"p95"`
	Max      float64 `json:"max"`
	// AtLeast counts the runs at or above the threshold; Share is their
	// share of Runs.
	AtLeast int     `json:"atLeast"`
	Share   float64 `json:"share"`

	values []float64
}

// AnyAPIServer is the pattern table's row for a run's worst apiserver
// backend (the most seconds of any one).
const AnyAPIServer = "any apiserver backend"

// CompareRow is one pattern and backend, set A against set B.
type CompareRow struct {
	Pattern string       `json:"pattern"`
	Backend string       `json:"backend"`
	A       PatternStats `json:"a"`
	B       PatternStats `json:"b"`
	// P is the two-sided Mann-Whitney U p-value of the per-run seconds;
	// Testable says the sample sizes can reach Alpha at all.
	P            float64 `json:"p"`
	Alpha        float64 `json:"alpha"`
	Testable     bool    `json:"testable"`
	Significant  bool    `json:"significant"`
	ProbBGreater float64 `json:"probBGreater"`
}

// CICompare is two sets compared.
type CICompare struct {
	A    string       `json:"a"`
	B    string       `json:"b"`
	NA   int          `json:"na"`
	NB   int          `json:"nb"`
	Rows []CompareRow `json:"rows"`
}

// CIReport is many CI runs analysed.
type CIReport struct {
	WindowSeconds float64        `json:"windowSeconds"`
	AtLeast       float64        `json:"atLeastSeconds"`
	Runs          []*CIRunReport `json:"runs"`
	Patterns      []PatternStats `json:"patterns"`
	Compare       *CICompare     `json:"compare,omitempty"`
	// Unreadable counts runs none of whose interval files could be read.
	Unreadable int `json:"unreadable"`
}

// AnalyzeCIRuns places every run's disruption, gathers the evidence beside
// it, pairs each disrupted run with the nearest clean run of its job, and
// builds the per-pattern table and, when asked, the comparison. Runs are
// read a few at a time and their intervals dropped once analysed, so
// memory holds Workers runs' intervals, not all of them. A run that cannot
// be read is reported in its Errors, never a stop; the error is the
// context's.
func AnalyzeCIRuns(ctx context.Context, runs []*CIRun, o CIOptions) (*CIReport, error) {
	if o.Window <= 0 {
		o.Window = DefaultEvidenceWindow
	}
	if o.AtLeast <= 0 {
		o.AtLeast = DefaultAtLeast
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Alpha <= 0 {
		o.Alpha = 0.05
	}
	rep := &CIReport{WindowSeconds: o.Window.Seconds(), AtLeast: o.AtLeast, Runs: make([]*CIRunReport, len(runs))}
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < o.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				rep.Runs[i] = analyzeRun(runs[i], o.Window)
			}
		}()
	}
	var err error
feed:
	for i := range runs {
		select {
		case next <- i:
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	kept := rep.Runs[:0]
	for _, rr := range rep.Runs {
		if rr != nil {
			kept = append(kept, rr)
		}
	}
	rep.Runs = kept
	for _, rr := range rep.Runs {
		if len(rr.Run.Run.Files) == 0 && !rr.Run.Triaged {
			rep.Unreadable++
		}
	}
	pairClean(rep.Runs)
	rep.Patterns = patternTable(rep.Runs, o.AtLeast)
	if o.A != nil && o.B != nil && o.A.Match != nil && o.B.Match != nil {
		rep.Compare = compareSets(rep.Runs, *o.A, *o.B, o.AtLeast, o.Alpha)
	}
	return rep, err
}

// analyzeRun reads one run, places and gathers, and lets its intervals go.
func analyzeRun(r *CIRun, w time.Duration) *CIRunReport {
	rr := &CIRunReport{Run: r, Seconds: map[string]map[string]float64{}, keys: map[string]bool{}}
	kept := r.Run.Files[:0]
	for _, f := range r.Run.Files {
		ivs, err := readNeeded(f.Path)
		if err != nil {
			rr.Errors = append(rr.Errors, err.Error())
			continue
		}
		f.Intervals = ivs
		kept = append(kept, f)
	}
	r.Run.Files = kept
	rr.Placements = Place(r.Run)
	sampled := map[string]bool{}
	for _, f := range r.Run.Files {
		r.versionsFrom(f.Intervals)
		for _, iv := range f.Intervals {
			if iv.IsDisruption() && BackendKind(iv) == results.KindAPIServer {
				sampled[iv.Locator.BackendDisruptionName()] = true
			}
		}
	}
	for _, p := range rr.Placements {
		if rr.Seconds[p.Pattern] == nil {
			rr.Seconds[p.Pattern] = map[string]float64{}
		}
		rr.Seconds[p.Pattern][p.Backend] += p.Seconds
		if p.Kind == results.KindAPIServer {
			rr.APIServerSeconds += p.Seconds
		}
	}
	rr.Windows = windows(rr.Placements, sampled)
	for _, f := range r.Run.Files {
		for _, iv := range f.Intervals {
			s, ok := SignalOf(iv)
			if !ok {
				continue
			}
			rr.keys[signalKey(s)] = true
			if s.Kind == results.SignalMeasuringUnreliable {
				rr.LivenessFailures++
			}
			if attach(rr.Windows, s, w) || s.Kind == results.SignalMeasuringUnreliable {
				if len(rr.Signals) < maxSignalsPerRun {
					rr.Signals = append(rr.Signals, s)
				} else {
					rr.SignalsDropped++
				}
			}
		}
	}
	rr.Liveness = LivenessVerdict(rr.LivenessFailures)
	for i := range r.Run.Files {
		r.Run.Files[i].Intervals = nil // the run is analysed: let its intervals go
	}
	return rr
}

// evidenceSources are the interval sources the analysis reads beyond
// disruption and the rollout: the evidence (SignalOf).
var evidenceSources = map[string]bool{
	sourceEtcdLog: true, sourceEtcdLeadership: true, sourceEtcdDiskCommit: true, sourceEtcdDiskWalFsync: true,
	sourceCPUMonitor: true, sourceAlert: true, sourceOVSVswitchdLog: true, sourceNodeMonitor: true, sourceMachineMonitor: true,
	sourceKubeletLog: true, sourceClusterOperator: true, sourceClusterOpMonitor: true, origin.SourceOperatorState: true,
	sourceClusterVersion: true, sourceVersionState: true, sourceE2ETest: true, origin.SourceNodeState: true,
	origin.SourceAPIServerGracefulShutdown: true, origin.SourceDisruption: true,
}

// needed keeps, in place, the intervals the analysis reads: disruption,
// the rollout's windows and kube-apiserver events, node updates, the
// ClusterVersion, and the evidence; a CI run's files are mostly pod
// events and logs it does not read, which are let go at once.
func needed(ivs []origin.Interval) []origin.Interval {
	out := ivs[:0]
	for _, iv := range ivs {
		if evidenceSources[iv.Source] || iv.IsDisruption() || isKubeAPIServerEvent(iv) || isClusterVersion(iv) {
			out = append(out, iv)
		}
	}
	// a copy of exact size, so the file's whole array goes with the rest
	return append(make([]origin.Interval, 0, len(out)), out...)
}

// pairClean pairs each disrupted run with the clean run of the same job
// nearest in time, as TRT pairs them, and dismisses the window signals the
// clean run also had (references/cross-run-comparison.md: signals present
// in a clean run are not causes).
func pairClean(rs []*CIRunReport) {
	for _, rr := range rs {
		if rr.APIServerSeconds == 0 || len(rr.Windows) == 0 {
			continue
		}
		var best *CIRunReport
		var bestD time.Duration
		for _, c := range rs {
			if c == rr || c.APIServerSeconds != 0 || c.Run.Job != rr.Run.Job || len(c.Run.Run.Files) == 0 {
				continue
			}
			d := c.Run.Start.Sub(rr.Run.Start)
			if c.Run.Start.IsZero() || rr.Run.Start.IsZero() {
				d = time.Duration(int64(buildNumber(c.Run.Build)) - int64(buildNumber(rr.Run.Build)))
			}
			if d < 0 {
				d = -d
			}
			if best == nil || d < bestD {
				best, bestD = c, d
			}
		}
		if best == nil {
			continue
		}
		rr.Clean = best.Run.Name()
		for _, w := range rr.Windows {
			w.Dismissed = nil
			for k := range w.keys {
				if best.keys[k] {
					w.Dismissed = append(w.Dismissed, k)
				}
			}
			sort.Strings(w.Dismissed)
		}
	}
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func statsOf(pattern, backend string, kind results.BackendKind, values []float64, atLeast float64) PatternStats {
	v := append([]float64(nil), values...)
	sort.Float64s(v)
	st := PatternStats{Pattern: pattern, Backend: backend, Kind: kind, Runs: len(v), values: v}
	for _, x := range v {
		if x > 0 {
			st.Affected++
		}
		if x >= atLeast {
			st.AtLeast++
		}
	}
	st.Median, st.P95 = percentile(v, 0.5), percentile(v, 0.95)
	if len(v) > 0 {
		st.Max = v[len(v)-1]
		st.Share = float64(st.AtLeast) / float64(len(v))
	}
	return st
}

// perRun is every run's seconds of one pattern on one backend (AnyAPIServer:
// the run's worst apiserver backend), 0 for runs without it.
func perRun(rs []*CIRunReport, pattern, backend string) []float64 {
	out := make([]float64, 0, len(rs))
	for _, rr := range rs {
		if len(rr.Run.Run.Files) == 0 && !rr.Run.Triaged {
			continue // nothing read: not a 0 s run
		}
		m := rr.Seconds[pattern]
		if backend != AnyAPIServer {
			out = append(out, m[backend])
			continue
		}
		worst := 0.0
		for b, s := range m {
			if d, _ := results.DescribeBackend(b); d.Kind == results.KindAPIServer && s > worst {
				worst = s
			}
		}
		out = append(out, worst)
	}
	return out
}

// rows are the pattern table's (pattern, backend) pairs with any disruption.
func rows(rs []*CIRunReport) [][2]string {
	var out [][2]string
	for _, pat := range Patterns {
		bs := map[string]bool{}
		api := false
		for _, rr := range rs {
			for b, s := range rr.Seconds[pat] {
				if s > 0 {
					bs[b] = true
					api = api || kindOf(b) == results.KindAPIServer
				}
			}
		}
		if api {
			out = append(out, [2]string{pat, AnyAPIServer})
		}
		names := make([]string, 0, len(bs))
		for b := range bs {
			names = append(names, b)
		}
		sort.Strings(names)
		for _, b := range names {
			out = append(out, [2]string{pat, b})
		}
	}
	return out
}

func kindOf(backend string) results.BackendKind {
	if backend == AnyAPIServer {
		return results.KindAPIServer
	}
	d, _ := results.DescribeBackend(backend)
	return d.Kind
}

func patternTable(rs []*CIRunReport, atLeast float64) []PatternStats {
	var out []PatternStats
	for _, pb := range rows(rs) {
		out = append(out, statsOf(pb[0], pb[1], kindOf(pb[1]), perRun(rs, pb[0], pb[1]), atLeast))
	}
	return out
}

func compareSets(rs []*CIRunReport, a, b CISet, atLeast, alpha float64) *CICompare {
	var ra, rb []*CIRunReport
	for _, rr := range rs {
		if a.Match(rr.Run) {
			ra = append(ra, rr)
		}
		if b.Match(rr.Run) {
			rb = append(rb, rr)
		}
	}
	c := &CICompare{A: a.Name, B: b.Name, NA: len(ra), NB: len(rb)}
	for _, pb := range rows(rs) {
		k := kindOf(pb[1])
		sa := statsOf(pb[0], pb[1], k, perRun(ra, pb[0], pb[1]), atLeast)
		sb := statsOf(pb[0], pb[1], k, perRun(rb, pb[0], pb[1]), atLeast)
		row := CompareRow{Pattern: pb[0], Backend: pb[1], A: sa, B: sb, P: 1, Alpha: alpha}
		if len(sa.values) > 0 && len(sb.values) > 0 {
			t := compare.RankTest(sa.values, sb.values, alpha)
			row.P, row.Testable, row.Significant = t.P, t.Testable, t.Significant
			// Unrounded, as import's JSON has always carried it.
			row.ProbBGreater = compare.ProbGreater(sa.values, sb.values)
		}
		c.Rows = append(c.Rows, row)
	}
	return c
}

// WriteSignals writes the run's evidence to a results folder as
// results.SignalsFile (one Signal per line), so that repro diagnose reads
// it beside the imported samples.
func WriteSignals(dir string, rr *CIRunReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	w, err := results.CreateJSONL(filepath.Join(dir, results.SignalsFile))
	if err != nil {
		return err
	}
	for i := range rr.Signals {
		if err := w.Write(&rr.Signals[i]); err != nil {
			w.Close()
			return fmt.Errorf("%s: %v", dir, err)
		}
	}
	return w.Close()
}

// CIRunFile holds an imported CI run's labels in its results folder.
const CIRunFile = "ci-run.json"

// WriteCIFolder writes a results folder for one analysed CI run: what
// WriteFolder writes (the run's files are read again, as the analysis let
// their intervals go), the evidence as results.SignalsFile, and the run's
// labels and windows as CIRunFile. The caller then rebuilds the derived
// files with write.Rebuild, as for any imported folder.
func WriteCIFolder(dir string, rr *CIRunReport, o OutOptions) error {
	r := rr.Run.Run
	files := make([]File, 0, len(r.Files))
	for _, f := range r.Files {
		ivs, err := readNeeded(f.Path)
		if err != nil {
			return err
		}
		f.Intervals = ivs
		files = append(files, f)
	}
	r.Files = files
	o.CI = rr.Run
	if err := WriteFolder(dir, r, rr.Placements, o); err != nil {
		return err
	}
	if err := WriteSignals(dir, rr); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rr, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, CIRunFile), append(js, '\n'), 0o644)
}
