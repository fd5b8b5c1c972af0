package compare

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchmath"

	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

// Comparing results folders (repro compare).
//
// The unit of comparison is one sample of disruption per backend-connection:
// for a folder with rollout iterations, one sample per iteration (the summed
// durations of the disruption intervals that start in that iteration's
// rollout or cool-down stage); for a folder without a rollout (probe,
// baseline), one sample of its whole-run total. A side pools the samples of
// all its folders.
//
// B is compared with A per backend-connection by a two-sided Mann-Whitney U
// test (rank-based: no assumption of normality, which disruption figures,
// mostly zeros with a few multi-second gaps, never meet; exact p-values
// including ties up to 25 samples per side) and by a practical threshold on
// the medians. B is worse when its median exceeds A's by more than the
// threshold and the test finds the difference significant; when the sample
// sizes are too small for the test ever to reach significance, the threshold
// alone decides and the verdict says so.

// CompareSchema names the version of the JSON written by repro compare
// --json. Field names under one schema version never change meaning.
const CompareSchema = "repro.compare/v1"

// DefaultAlpha is the significance level of the rank test.
const DefaultAlpha = 0.05

// Where keys: the node phase an interval started in (terminating, starting,
// ready, from Place), or one of these.
const (
	WhereCoolDown  = "cool-down"
	WhereOther     = "other"      // in an iteration's rollout, no node rolling yet
	WhereNoRollout = "no-rollout" // a folder without rollout iterations
)

// whereOrder is the display order of Where keys.
var whereOrder = []string{string(report.NodeTerminating), string(report.NodeStarting), string(report.NodeReady), WhereCoolDown, WhereOther, WhereNoRollout}

// Sample kinds of a folder.
const (
	KindIterations = "iterations" // one sample per rollout iteration
	KindWholeRun   = "whole-run"  // one sample: the folder had no rollout
)

// Per-backend-connection verdicts.
const (
	VerdictWorse          = "worse"           // beyond the threshold, and significant (or too few samples to test)
	VerdictBetter         = "better"          // the same the other way
	VerdictSlightlyWorse  = "slightly-worse"  // significant, but within the threshold
	VerdictSlightlyBetter = "slightly-better" // the same the other way
	VerdictNotSignificant = "not-significant" // beyond the threshold, but the test says it may be noise
	VerdictNoDifference   = "no-difference"   // within the threshold, not significant (or too few samples to test)
)

// Bases of a verdict.
const (
	BasisRankTest      = "rank-test+threshold"
	BasisThresholdOnly = "threshold-only"
)

// Threshold is the practical threshold B's median per-iteration disruption
// must exceed A's by, both absolutely and relatively, to count as worse (or
// fall below it by, to count as better). A zero part is no constraint.
type Threshold struct {
	Absolute time.Duration
	// Relative is a fraction of A's median: 0.2 for 20%.
	Relative float64
}

// DefaultThreshold is more than 1 s and more than 20%.
var DefaultThreshold = Threshold{Absolute: time.Second, Relative: 0.2}

// ParseThreshold reads a threshold such as "1s,20%", "500ms" or "10%".
// A part left out is no constraint.
func ParseThreshold(s string) (Threshold, error) {
	var t Threshold
	var seenAbs, seenRel bool
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
			return t, fmt.Errorf("threshold %q: empty part; use e.g. 1s,20%%", s)
		case strings.HasPrefix(part, "-"):
			return t, fmt.Errorf("threshold %q: %q is negative; each part must be positive or zero, e.g. 1s,20%%", s, part)
		case strings.Count(part, "%") > 0 && seenRel, !strings.HasSuffix(part, "%") && seenAbs:
			return t, fmt.Errorf("threshold %q: give at most one duration and one percentage, e.g. 1s,20%%", s)
		case strings.HasSuffix(part, "%"):
			v, err := strconv.ParseFloat(strings.TrimSuffix(part, "%"), 64)
			if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || seenRel {
				return t, fmt.Errorf("threshold %q: %q is not a percentage; use e.g. 1s,20%%", s, part)
			}
			t.Relative, seenRel = v/100, true
		default:
			d, err := time.ParseDuration(part)
			if err != nil || d < 0 || seenAbs {
				return t, fmt.Errorf("threshold %q: %q is not a duration; use e.g. 1s,20%%", s, part)
			}
			t.Absolute, seenAbs = d, true
		}
	}
	return t, nil
}

// String renders the threshold as ParseThreshold reads it.
func (t Threshold) String() string {
	return fmt.Sprintf("%s,%s%%", t.Absolute, strconv.FormatFloat(t.Relative*100, 'f', -1, 64))
}

// describe says the threshold in words.
func (t Threshold) describe() string {
	var parts []string
	if t.Absolute > 0 || t.Relative == 0 {
		parts = append(parts, "more than "+t.Absolute.String())
	}
	if t.Relative > 0 {
		parts = append(parts, "more than "+strconv.FormatFloat(t.Relative*100, 'f', -1, 64)+"%")
	}
	return strings.Join(parts, " and ")
}

// beyond reports whether a median of b is beyond the threshold above a
// median of a (both in seconds). With a at zero any increase is infinitely
// many percent.
func (t Threshold) beyond(a, b float64) bool {
	d := b - a
	if d <= t.Absolute.Seconds() || d <= 0 {
		return false
	}
	if a == 0 {
		return true
	}
	return d/a > t.Relative
}

// CompareOptions tunes Compare.
type CompareOptions struct {
	Threshold Threshold
	// Alpha is the significance level of the rank test; 0 means DefaultAlpha.
	Alpha float64
}

// Tally counts disruption intervals and their summed duration.
type Tally struct {
	Intervals int     `json:"intervals"`
	Seconds   float64 `json:"seconds"`
}

func (t *Tally) add(d time.Duration) {
	t.Intervals++
	t.Seconds = roundMs(t.Seconds + d.Seconds())
}

// IterationFigure is one sample: the disruption of one backend-connection in
// one iteration of one folder (or in the whole of a folder without rollout).
type IterationFigure struct {
	Folder string `json:"folder"`
	// Iteration is the iteration number, 0 for a whole-run sample.
	Iteration int     `json:"iteration"`
	Seconds   float64 `json:"seconds"`
	Intervals int     `json:"intervals"`
	// Classes tallies the intervals per error class.
	Classes map[string]Tally `json:"classes,omitempty"`
	// Where tallies the intervals per place in the rollout (see the Where
	// constants and NodePhase).
	Where map[string]Tally `json:"where,omitempty"`
}

// FolderFigures are the per-backend-connection samples of one results folder.
type FolderFigures struct {
	Dir string `json:"dir"`
	// Label is what the folder measured: "OpenShift 4.17.3 (AWS)", "lab",
	// or the folder's name.
	Label  string `json:"label"`
	Status string `json:"status,omitempty"`
	// Kind is KindIterations or KindWholeRun.
	Kind       string `json:"kind"`
	Iterations int    `json:"iterations"`
	// Incomplete counts iterations whose rollout did not complete.
	Incomplete int `json:"incompleteIterations,omitempty"`
	// Outside sums, per backend-connection, disruption outside every
	// iteration (the baseline): shown, not compared.
	Outside map[string]float64 `json:"outsideIterationsSeconds,omitempty"`
	// Pollers lists the backend-connections in display order.
	Pollers []string `json:"backendConnections"`
	// Samples holds each backend-connection's samples.
	Samples map[string][]IterationFigure `json:"-"`
	// Outcomes are each backend-connection's graded outcomes over the
	// whole folder (outcomes.go).
	Outcomes map[string]report.PollerOutcomes `json:"outcomes,omitempty"`
}

// FiguresOf derives a folder's samples from its analysis and timeline. It is
// a pure function; run may be nil.
func FiguresOf(dir string, run *results.Run, a *report.Analysis, tl *report.Timeline) FolderFigures {
	ff := FolderFigures{Dir: dir, Label: runLabel(run, dir), Samples: map[string][]IterationFigure{}, Outside: map[string]float64{}}
	if run != nil {
		ff.Status = run.Status
	}
	if tl == nil {
		tl = report.BuildTimeline(nil)
	}
	var iters []int
	seen := map[int]bool{}
	for _, it := range tl.Iterations {
		if it.N > 0 && !seen[it.N] {
			seen[it.N] = true
			iters = append(iters, it.N)
			if it.Complete.IsZero() {
				ff.Incomplete++
			}
		}
	}
	sort.Ints(iters)
	index := map[int]int{}
	for i, n := range iters {
		index[n] = i
	}
	if len(iters) == 0 {
		ff.Kind, ff.Iterations = KindWholeRun, 1
	} else {
		ff.Kind, ff.Iterations = KindIterations, len(iters)
	}
	if a.Outcomes != nil {
		ff.Outcomes = map[string]report.PollerOutcomes{}
		for _, po := range a.Outcomes.Pollers {
			ff.Outcomes[po.Name] = po
		}
	}
	for _, p := range a.Pollers {
		ff.Pollers = append(ff.Pollers, p.Name)
		figs := make([]IterationFigure, ff.Iterations)
		for i := range figs {
			figs[i] = IterationFigure{Folder: dir, Classes: map[string]Tally{}, Where: map[string]Tally{}}
			if len(iters) > 0 {
				figs[i].Iteration = iters[i]
			}
		}
		ff.Samples[p.Name] = figs
	}
	for _, pl := range report.Place(a.Intervals, tl) {
		figs, ok := ff.Samples[pl.Name]
		if !ok {
			continue
		}
		d := pl.To.Sub(pl.From)
		var f *IterationFigure
		where := WhereNoRollout
		if len(iters) == 0 {
			f = &figs[0]
		} else {
			n, stage := iterationOf(tl, pl)
			i, ok := index[n]
			if !ok {
				ff.Outside[pl.Name] = roundMs(ff.Outside[pl.Name] + d.Seconds())
				continue
			}
			f = &figs[i]
			switch {
			case stage == results.PhaseCoolDown:
				where = WhereCoolDown
			case pl.NodePhase != "" && pl.NodePhase != report.NodePending:
				where = string(pl.NodePhase)
			default:
				where = WhereOther
			}
		}
		f.Seconds = roundMs(f.Seconds + d.Seconds())
		f.Intervals++
		c := f.Classes[pl.Class]
		c.add(d)
		f.Classes[pl.Class] = c
		w := f.Where[where]
		w.add(d)
		f.Where[where] = w
	}
	if len(ff.Outside) == 0 {
		ff.Outside = nil
	}
	return ff
}

// iterationOf returns the iteration whose rollout or cool-down stage an
// interval starts in (0 for none) and the stage's name. A timeline without
// stages falls back on the placement's iteration.
func iterationOf(tl *report.Timeline, pl report.Placement) (int, string) {
	if len(tl.Stages) == 0 {
		return pl.Iteration, pl.Stage
	}
	st := tl.StageAt(pl.From)
	if st == nil || (st.Name != results.PhaseRollout && st.Name != results.PhaseCoolDown) {
		return 0, ""
	}
	return st.Iteration, st.Name
}

// runLabel names what a folder measured: the cluster's OpenShift and
// Kubernetes versions, platform and topology (results.ClusterRecord.Describe),
// or the lab's profile and what sets the run apart from it; else the folder's
// name.
func runLabel(run *results.Run, dir string) string {
	if run == nil {
		return filepath.Base(filepath.Clean(dir))
	}
	if run.Extra.Lab != nil || run.Extra.Target == "lab" {
		// What was measured: the profile and the kube-apiserver's version
		// always, then what sets this run apart from its profile (--lab-set
		// changes, a timing or LB other than the default).
		var parts []string
		l := run.Extra.Lab
		if l != nil {
			parts = append(parts, l.ProfileName())
		} else {
			// A folder with no lab record: its profile is not known.
			l = &results.LabRecord{}
		}
		kube := l.KubeVersion
		if kube == "" && run.Extra.Cluster != nil {
			kube = run.Extra.Cluster.ServerVersion
		}
		if kube != "" {
			parts = append(parts, "kube-apiserver "+kube)
		}
		parts = append(parts, l.Sets...)
		if l.Timing != "" && l.Timing != "fast" {
			parts = append(parts, l.Timing+" timing")
		}
		// The kernel LB is the default where it can run.
		if l.LB != "" && l.LB != "kernel" {
			parts = append(parts, l.LB+" LB")
		}
		if len(parts) == 0 {
			return "lab"
		}
		return "lab (" + strings.Join(parts, ", ") + ")"
	}
	if d := run.Extra.Cluster.Describe(); d != "" {
		return d
	}
	return filepath.Base(filepath.Clean(dir))
}

// Side is one side of a comparison: the folders named by one argument.
type Side struct {
	// Name is the argument as given, e.g. "runs-4.16/".
	Name    string
	Folders []FolderFigures
}

// LoadSide loads one argument of repro compare. A folder holding
// samples.jsonl is one results folder; any other folder is a parent whose
// immediate subfolders holding samples.jsonl form the side together (in name
// order; subfolders without samples are skipped). Errors are one line naming
// the folder.
func LoadSide(arg string) (Side, error) {
	s := Side{Name: arg}
	st, err := os.Stat(arg)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return s, fmt.Errorf("%s: no such folder", arg)
		}
		return s, fmt.Errorf("%s: %v", arg, err)
	}
	if !st.IsDir() {
		return s, fmt.Errorf("%s: not a folder", arg)
	}
	dirs := []string{arg}
	if !hasSamples(arg) {
		ents, err := os.ReadDir(arg)
		if err != nil {
			return s, fmt.Errorf("%s: %v", arg, err)
		}
		dirs = nil
		for _, e := range ents {
			if p := filepath.Join(arg, e.Name()); e.IsDir() && hasSamples(p) {
				dirs = append(dirs, p)
			}
		}
		if len(dirs) == 0 {
			return s, fmt.Errorf("%s: no samples: neither it nor any folder directly inside it holds %s", arg, results.SamplesFile)
		}
	}
	for _, d := range dirs {
		ff, err := LoadFolderFigures(d)
		if err != nil {
			return s, err
		}
		s.Folders = append(s.Folders, ff)
	}
	return s, nil
}

func hasSamples(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, results.SamplesFile))
	return err == nil && st.Mode().IsRegular()
}

// LoadFolderFigures loads one results folder: samples.jsonl (required, with
// at least one sample), events.jsonl and run.json (both optional).
func LoadFolderFigures(dir string) (FolderFigures, error) {
	f, err := results.Open(dir)
	if err != nil {
		return FolderFigures{}, err
	}
	a, err := report.LoadSamples(f.Path(results.SamplesFile))
	if err != nil {
		return FolderFigures{}, fmt.Errorf("%s: %v", dir, err)
	}
	tl, err := report.LoadTimeline(f)
	if err != nil {
		return FolderFigures{}, fmt.Errorf("%s: %v", dir, err)
	}
	run, err := f.ReadRun()
	if err != nil {
		run = nil // run.json is optional: the label falls back on the folder name
	}
	return FiguresOf(dir, run, a, tl), nil
}

// SideInfo describes one side in a Comparison.
type SideInfo struct {
	// Role is "A" for the reference, then "B", "C", ...
	Role string `json:"role"`
	Name string `json:"name"`
	// Label joins the distinct labels of the side's folders.
	Label      string          `json:"label"`
	Runs       int             `json:"runs"`
	Iterations int             `json:"iterations"`
	Folders    []FolderFigures `json:"folders"`
}

// ConnStats are one side's figures for one backend-connection.
type ConnStats struct {
	Role string `json:"role"`
	// N is the number of samples (iterations, or whole runs).
	N             int     `json:"n"`
	MedianSeconds float64 `json:"medianSeconds"`
	// P95Seconds is the 95th percentile, interpolated between closest
	// ranks (numpy's default); with few samples it is close to the max.
	P95Seconds  float64 `json:"p95Seconds"`
	MaxSeconds  float64 `json:"maxSeconds"`
	MeanSeconds float64 `json:"meanSeconds"`
	// Intervals counts the disruption intervals of all samples.
	Intervals int              `json:"intervals"`
	Classes   map[string]Tally `json:"classes"`
	Where     map[string]Tally `json:"where"`
	// Samples lists every sample in folder, then iteration order.
	Samples []IterationFigure `json:"samples"`
}

// TestResult is the outcome of the rank test for one backend-connection.
type TestResult struct {
	// Method is "mann-whitney-u" (two-sided).
	Method string `json:"method"`
	N1     int    `json:"n1"`
	N2     int    `json:"n2"`
	// P is the two-sided p-value (1 when every sample is equal).
	P     float64 `json:"p"`
	Alpha float64 `json:"alpha"`
	// MinAttainableP is the smallest p-value the test can give with these
	// sample sizes, 2/C(n1+n2, n1); Testable is whether it is below Alpha.
	MinAttainableP float64 `json:"minAttainableP"`
	Testable       bool    `json:"testable"`
	Significant    bool    `json:"significant"`
	// ProbBGreater is the probability that a random sample of B exceeds one
	// of A (ties count half): 0.5 is no shift, 1 is B above A every time.
	ProbBGreater float64 `json:"probBGreater"`
}

// Versus is one B side against A for one backend-connection.
type Versus struct {
	Role               string  `json:"role"`
	Name               string  `json:"name"`
	DeltaMedianSeconds float64 `json:"deltaMedianSeconds"`
	// DeltaPercent is the median's change relative to A's; null when A's
	// median is zero.
	DeltaPercent *float64 `json:"deltaPercent"`
	// BeyondThreshold is "worse", "better" or "" (within the threshold).
	BeyondThreshold string     `json:"beyondThreshold"`
	Test            TestResult `json:"test"`
	// Verdict is one of the Verdict constants; Basis says what it rests on.
	Verdict string `json:"verdict"`
	Basis   string `json:"basis"`
	// Reason is the verdict in one sentence.
	Reason string `json:"reason"`
}

// ConnResult is everything about one backend-connection.
type ConnResult struct {
	Name string `json:"name"`
	// Sides holds the stats of every side, in the order of Comparison.Sides.
	Sides []ConnStats `json:"sides"`
	// Versus holds every B side against A.
	Versus []Versus `json:"versus"`
}

// SideVerdict is the overall verdict of one B side against A.
type SideVerdict struct {
	Role string `json:"role"`
	Name string `json:"name"`
	// Verdict is "worse" (some backend-connection worse), "better" (some
	// better, none worse) or "no-difference".
	Verdict string `json:"verdict"`
	Worse   bool   `json:"worse"`
	// WorseOn and BetterOn name the backend-connections.
	WorseOn  []string `json:"worseOn"`
	BetterOn []string `json:"betterOn"`
	Summary  string   `json:"summary"`
}

// Comparison is the result of Compare, ready to render as text or JSON.
type Comparison struct {
	Schema string `json:"schema"`
	// Rule states the verdict rule applied, in words.
	Rule      string `json:"rule"`
	Threshold struct {
		Spec            string  `json:"spec"`
		AbsoluteSeconds float64 `json:"absoluteSeconds"`
		RelativePercent float64 `json:"relativePercent"`
	} `json:"threshold"`
	Alpha              float64       `json:"alpha"`
	Sides              []SideInfo    `json:"sides"`
	BackendConnections []string      `json:"backendConnections"`
	Results            []ConnResult  `json:"results"`
	Verdicts           []SideVerdict `json:"verdicts"`
	// Worse is true when some B side is worse than A: repro compare exits 3.
	Worse bool     `json:"worse"`
	Notes []string `json:"notes"`
}

// Compare compares every side after the first with the first. It is a pure
// function of the sides' figures; it needs at least two sides.
func Compare(sides []Side, opts CompareOptions) (*Comparison, error) {
	if len(sides) < 2 {
		return nil, fmt.Errorf("compare needs at least two sides (A and B), got %d", len(sides))
	}
	alpha := opts.Alpha
	if alpha <= 0 {
		alpha = DefaultAlpha
	}
	if alpha >= 1 {
		return nil, fmt.Errorf("alpha %v: must be between 0 and 1", alpha)
	}
	th := opts.Threshold
	c := &Comparison{Schema: CompareSchema, Alpha: alpha, Notes: []string{}}
	c.Threshold.Spec = th.String()
	c.Threshold.AbsoluteSeconds = th.Absolute.Seconds()
	c.Threshold.RelativePercent = th.Relative * 100
	c.Rule = fmt.Sprintf("B is worse than A when, on any backend-connection, B's median per-iteration disruption exceeds A's by %s, "+
		"and a two-sided Mann-Whitney U test of the per-iteration figures gives p < %s; "+
		"when the sample sizes cannot reach p < %s, the threshold alone decides", th.describe(), fmtP(alpha), fmtP(alpha))

	seen := map[string]bool{}
	kinds := map[string]bool{}
	for i, s := range sides {
		info := SideInfo{Role: role(i), Name: s.Name, Runs: len(s.Folders), Folders: s.Folders}
		var labels []string
		lseen := map[string]bool{}
		for _, f := range s.Folders {
			info.Iterations += f.Iterations
			kinds[f.Kind] = true
			if !lseen[f.Label] {
				lseen[f.Label] = true
				labels = append(labels, f.Label)
			}
			for _, p := range f.Pollers {
				if !seen[p] {
					seen[p] = true
					c.BackendConnections = append(c.BackendConnections, p)
				}
			}
			if f.Incomplete > 0 {
				c.Notes = append(c.Notes, fmt.Sprintf("%s: %d of %d iterations did not complete their rollout; their disruption still counts", f.Dir, f.Incomplete, f.Iterations))
			}
			if f.Status != "" && f.Status != results.StatusComplete {
				c.Notes = append(c.Notes, fmt.Sprintf("%s: run status %s", f.Dir, f.Status))
			}
			if len(f.Outside) > 0 {
				c.Notes = append(c.Notes, fmt.Sprintf("%s: disruption outside the iterations (baseline) is not compared: %s", f.Dir, outsideText(f)))
			}
		}
		info.Label = strings.Join(labels, " + ")
		c.Sides = append(c.Sides, info)
	}
	if kinds[KindIterations] && kinds[KindWholeRun] {
		c.Notes = append(c.Notes, "some folders have rollout iterations and some have none (whole-run samples): their figures measure different things")
	}
	c.Notes = append(c.Notes, "iterations are treated as independent samples; each backend-connection is tested on its own, so with many backend-connections one may look significant by chance: the practical threshold guards against acting on that")

	verdicts := make([]SideVerdict, len(sides)-1)
	for i := range verdicts {
		verdicts[i] = SideVerdict{Role: role(i + 1), Name: sides[i+1].Name, WorseOn: []string{}, BetterOn: []string{}}
	}
	for _, name := range c.BackendConnections {
		r := ConnResult{Name: name}
		for i, s := range sides {
			r.Sides = append(r.Sides, connStats(role(i), s, name))
		}
		a := r.Sides[0]
		for i := 1; i < len(sides); i++ {
			v := versus(a, r.Sides[i], sides[i].Name, th, alpha)
			r.Versus = append(r.Versus, v)
			if a.N == 0 || r.Sides[i].N == 0 {
				continue
			}
			switch v.Verdict {
			case VerdictWorse:
				verdicts[i-1].WorseOn = append(verdicts[i-1].WorseOn, name)
			case VerdictBetter:
				verdicts[i-1].BetterOn = append(verdicts[i-1].BetterOn, name)
			}
		}
		c.Results = append(c.Results, r)
	}
	for i := range verdicts {
		v := &verdicts[i]
		switch {
		case len(v.WorseOn) > 0:
			v.Verdict, v.Worse = VerdictWorse, true
			v.Summary = fmt.Sprintf("%s is worse than A on %d of %d backend-connections: %s", v.Role, len(v.WorseOn), len(c.BackendConnections), strings.Join(v.WorseOn, ", "))
			if len(v.BetterOn) > 0 {
				v.Summary += fmt.Sprintf("; better on %s", strings.Join(v.BetterOn, ", "))
			}
			c.Worse = true
		case len(v.BetterOn) > 0:
			v.Verdict = VerdictBetter
			v.Summary = fmt.Sprintf("%s is better than A on %d of %d backend-connections (%s), worse on none", v.Role, len(v.BetterOn), len(c.BackendConnections), strings.Join(v.BetterOn, ", "))
		default:
			v.Verdict = VerdictNoDifference
			v.Summary = fmt.Sprintf("no difference beyond the threshold between %s and A on any backend-connection", v.Role)
		}
	}
	c.Verdicts = verdicts
	return c, nil
}

func role(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return "S" + strconv.Itoa(i+1)
}

func outsideText(f FolderFigures) string {
	var parts []string
	for _, p := range f.Pollers {
		if s, ok := f.Outside[p]; ok {
			parts = append(parts, p+" "+fmtSeconds(s))
		}
	}
	return strings.Join(parts, ", ")
}

// connStats pools one backend-connection's samples over a side's folders.
func connStats(r string, s Side, name string) ConnStats {
	cs := ConnStats{Role: r, Classes: map[string]Tally{}, Where: map[string]Tally{}, Samples: []IterationFigure{}}
	var vals []float64
	for _, f := range s.Folders {
		for _, fig := range f.Samples[name] {
			cs.Samples = append(cs.Samples, fig)
			vals = append(vals, fig.Seconds)
			cs.Intervals += fig.Intervals
			mergeTallies(cs.Classes, fig.Classes)
			mergeTallies(cs.Where, fig.Where)
		}
	}
	cs.N = len(vals)
	if cs.N == 0 {
		return cs
	}
	sort.Float64s(vals)
	cs.MedianSeconds = roundMs(quantile(vals, 0.5))
	cs.P95Seconds = roundMs(quantile(vals, 0.95))
	cs.MaxSeconds = vals[len(vals)-1]
	var sum float64
	for _, v := range vals {
		sum += v
	}
	cs.MeanSeconds = roundMs(sum / float64(len(vals)))
	return cs
}

func mergeTallies(dst, src map[string]Tally) {
	for k, t := range src {
		d := dst[k]
		d.Intervals += t.Intervals
		d.Seconds = roundMs(d.Seconds + t.Seconds)
		dst[k] = d
	}
}

// quantile interpolates between closest ranks of sorted values (type 7 of
// Hyndman and Fan, numpy's default).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	h := q * float64(len(sorted)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}

// versus compares side b with side a on one backend-connection.
func versus(a, b ConnStats, name string, th Threshold, alpha float64) Versus {
	v := Versus{Role: b.Role, Name: name}
	v.DeltaMedianSeconds = roundMs(b.MedianSeconds - a.MedianSeconds)
	if a.MedianSeconds > 0 {
		pct := math.Round(v.DeltaMedianSeconds/a.MedianSeconds*1000) / 10
		v.DeltaPercent = &pct
	}
	switch {
	case th.beyond(a.MedianSeconds, b.MedianSeconds):
		v.BeyondThreshold = VerdictWorse
	case th.beyond(b.MedianSeconds, a.MedianSeconds):
		v.BeyondThreshold = VerdictBetter
	}
	if a.N == 0 || b.N == 0 {
		v.Verdict, v.Basis = VerdictNoDifference, BasisThresholdOnly
		missing := "A"
		if b.N == 0 {
			missing = b.Role
		}
		v.Reason = fmt.Sprintf("not compared: %s has no samples of this backend-connection", missing)
		v.Test = TestResult{Method: "mann-whitney-u", N1: a.N, N2: b.N, P: 1, Alpha: alpha, MinAttainableP: 1}
		return v
	}
	v.Test = RankTest(values(a), values(b), alpha)
	t := v.Test
	delta := fmt.Sprintf("median %s → %s (%s)", fmtSeconds(a.MedianSeconds), fmtSeconds(b.MedianSeconds), signedDelta(v))
	if !t.Testable {
		v.Basis = BasisThresholdOnly
		why := fmt.Sprintf("too few iterations for the rank test (n=%d+%d: the smallest two-sided p it can give is %s, not below %s), so the threshold alone decides", t.N1, t.N2, fmtP(t.MinAttainableP), fmtP(alpha))
		switch v.BeyondThreshold {
		case VerdictWorse:
			v.Verdict = VerdictWorse
			v.Reason = fmt.Sprintf("worse: %s is beyond the threshold; %s", delta, why)
		case VerdictBetter:
			v.Verdict = VerdictBetter
			v.Reason = fmt.Sprintf("better: %s is beyond the threshold; %s", delta, why)
		default:
			v.Verdict = VerdictNoDifference
			v.Reason = fmt.Sprintf("within the threshold: %s; %s", delta, why)
		}
		return v
	}
	v.Basis = BasisRankTest
	test := fmt.Sprintf("p=%s (U test, n=%d+%d), P(B>A)=%.2f", fmtP(t.P), t.N1, t.N2, t.ProbBGreater)
	bHigher := t.ProbBGreater > 0.5
	switch {
	case v.BeyondThreshold == VerdictWorse && t.Significant:
		v.Verdict = VerdictWorse
		v.Reason = fmt.Sprintf("worse: %s, beyond the threshold; significant, %s", delta, test)
	case v.BeyondThreshold == VerdictBetter && t.Significant:
		v.Verdict = VerdictBetter
		v.Reason = fmt.Sprintf("better: %s, beyond the threshold; significant, %s", delta, test)
	case v.BeyondThreshold != "":
		v.Verdict = VerdictNotSignificant
		v.Reason = fmt.Sprintf("not significant: %s is beyond the threshold but may be noise, %s", delta, test)
	case t.Significant && bHigher:
		v.Verdict = VerdictSlightlyWorse
		v.Reason = fmt.Sprintf("slightly worse: significant, %s, but %s is within the threshold", test, delta)
	case t.Significant:
		v.Verdict = VerdictSlightlyBetter
		v.Reason = fmt.Sprintf("slightly better: significant, %s, but %s is within the threshold", test, delta)
	default:
		v.Verdict = VerdictNoDifference
		v.Reason = fmt.Sprintf("no difference: %s, within the threshold; not significant, %s", delta, test)
	}
	return v
}

func signedDelta(v Versus) string {
	s := fmtSeconds(math.Abs(v.DeltaMedianSeconds))
	if v.DeltaMedianSeconds < 0 {
		s = "-" + s
	} else {
		s = "+" + s
	}
	switch {
	case v.DeltaPercent != nil:
		s += fmt.Sprintf(", %+.0f%%", *v.DeltaPercent)
	case v.DeltaMedianSeconds > 0:
		s += " from zero"
	}
	return s
}

func values(cs ConnStats) []float64 {
	vs := make([]float64, len(cs.Samples))
	for i, s := range cs.Samples {
		vs[i] = s.Seconds
	}
	return vs
}

// RankTest runs the two-sided Mann-Whitney U test of benchstat
// (golang.org/x/perf/benchmath: exact distribution, with ties, up to 25
// samples per side; normal approximation beyond).
func RankTest(a, b []float64, alpha float64) TestResult {
	t := TestResult{Method: "mann-whitney-u", N1: len(a), N2: len(b), Alpha: alpha}
	th := &benchmath.Thresholds{CompareAlpha: alpha}
	cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(a, th), benchmath.NewSample(b, th))
	t.P = cmp.P
	if math.IsNaN(t.P) || t.P > 1 {
		t.P = 1
	}
	t.MinAttainableP = minAttainableP(len(a), len(b))
	t.Testable = t.MinAttainableP < alpha
	t.Significant = t.Testable && t.P < alpha
	t.ProbBGreater = math.Round(ProbGreater(a, b)*1000) / 1000
	return t
}

// ProbGreater is the probability that a random draw of b exceeds one of a,
// ties counting half; 0.5 when either is empty.
func ProbGreater(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0.5
	}
	var n float64
	for _, x := range a {
		for _, y := range b {
			switch {
			case y > x:
				n++
			case y == x:
				n += 0.5
			}
		}
	}
	return n / float64(len(a)*len(b))
}

// minAttainableP is the smallest two-sided p-value of an exact U test with
// samples of n1 and n2 (complete separation): 2/C(n1+n2, n1), at most 1.
func minAttainableP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	// C(n1+n2, n1) as the product of (n2+i)/i: exact for small sizes,
	// +Inf (p = 0) long before it matters for large ones.
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return math.Min(2/c, 1)
}

func roundMs(s float64) float64 { return math.Round(s*1000) / 1000 }

// fmtSeconds renders seconds with millisecond precision, e.g. "4.312s".
func fmtSeconds(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) + "s" }

// fmtP renders a p-value with enough digits to compare it with alpha.
func fmtP(p float64) string {
	switch {
	case p >= 0.001:
		return strconv.FormatFloat(p, 'f', 3, 64)
	default:
		return strconv.FormatFloat(p, 'e', 1, 64)
	}
}
