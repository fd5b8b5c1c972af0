// Package diagnose compares a results folder's figures with the predicted
// fingerprints of a catalogue of mechanisms (every lab profile's, and the
// field hypotheses worth testing) and says, per mechanism, whether the folder
// is consistent with it, inconsistent, or cannot test it for want of some
// evidence (cache-* pollers, a rollout timeline, the apiservers requests went
// to, attribution), then ranks them.
//
// Verdicts come only from the folder's figures: a mechanism is inconsistent
// when one of its checks fails, not testable when a check it needs lacks its
// evidence, consistent otherwise. Consistent mechanisms rank first, then by
// how many checks held, then by how strongly.
package diagnose

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/repro-tools/repro/report/write"
)

// Verdicts of one mechanism against one folder.
const (
	Consistent   = "consistent"
	Inconsistent = "inconsistent"
	NotTestable  = "not testable"
)

// Schema names the version of Diagnose's JSON.
const Schema = "repro.diagnose/v1"

// Assessment is one mechanism against one folder.
type Assessment struct {
	// Rank is 1 for the best; mechanisms the figures cannot order share
	// one.
	Rank    int    `json:"rank"`
	Name    string `json:"name"`
	Verdict string `json:"verdict"`
	// Missing names the evidence a required check lacked (not testable).
	Missing []string `json:"missing,omitempty"`
	// For and Against are the checks that held and failed, with the
	// folder's figures; Untested those without their evidence.
	For      []string `json:"for"`
	Against  []string `json:"against"`
	Untested []string `json:"untested"`
	Summary  string   `json:"summary"`
	Timing   string   `json:"timing"`
	Source   string   `json:"source"`
	// RuledOutBy is what would rule it out.
	RuledOutBy string  `json:"ruledOutBy"`
	Score      float64 `json:"score"`
	missingAll []string
	passed     int
	failed     int
	baseline   bool
}

// Result is the diagnosis of one folder.
type Result struct {
	Schema string `json:"schema"`
	Dir    string `json:"dir"`
	// Headline says in one sentence what there is to explain.
	Headline string   `json:"headline"`
	Figures  *Figures `json:"figures"`
	// Mechanisms are ranked, best first.
	Mechanisms []Assessment `json:"mechanisms"`
	// Indistinct lists the mechanisms nothing in the folder contradicts
	// when more than one remains, and Separating the evidence that would
	// tell them apart.
	Indistinct []string `json:"indistinct,omitempty"`
	Separating []string `json:"separating,omitempty"`
}

// First returns the best-ranked mechanism's name.
func (r *Result) First() string {
	if len(r.Mechanisms) == 0 {
		return ""
	}
	return r.Mechanisms[0].Name
}

// RankedFirst lists the mechanisms sharing rank 1.
func (r *Result) RankedFirst() []string {
	var out []string
	for _, a := range r.Mechanisms {
		if a.Rank == 1 {
			out = append(out, a.Name)
		}
	}
	return out
}

// Diagnose measures the folder dir and assesses every mechanism.
func Diagnose(dir string) (*Result, error) {
	fig, err := Measure(dir)
	if err != nil {
		return nil, err
	}
	r := Assess(fig)
	r.Dir = dir
	return r, nil
}

// Assess compares figures with every mechanism of the catalogue. It is a
// pure function.
func Assess(fig *Figures) *Result {
	r := &Result{Schema: Schema, Figures: fig}
	if fig.Failures == 0 {
		r.Headline = fmt.Sprintf("no disruption to explain: %d samples, none failed", fig.Samples)
	} else {
		r.Headline = fmt.Sprintf("%d failed of %d samples (%s)", fig.Failures, fig.Samples, fig.classList())
		r.Headline += outcomesLine(fig)
	}
	for _, m := range catalogue {
		a := Assessment{Name: m.Name, Summary: m.Summary, Timing: m.Timing, Source: m.Source, RuledOutBy: m.RuledOutBy,
			For: []string{}, Against: []string{}, Untested: []string{}}
		explains := len(m.Fingerprint) != 1 || m.Fingerprint[0].Name != "failed samples"
		if explains && fig.Failures == 0 {
			a.Against = append(a.Against, "no failed samples: nothing for it to explain")
			a.failed++
		}
		for _, c := range m.Fingerprint {
			o := c.eval(fig)
			label := c.Name + ": "
			switch {
			case o.missing != "":
				a.Untested = append(a.Untested, label+c.Predicts+" ("+o.missing+")")
				a.missingAll = addUnique(a.missingAll, o.missing)
				if c.Required {
					a.Missing = addUnique(a.Missing, o.missing)
				}
			case fig.Failures == 0 && explains:
				// Shares of zero failures say nothing either way.
			case o.ok:
				a.For = append(a.For, label+o.evidence)
				a.passed++
				a.Score += o.share
			default:
				a.Against = append(a.Against, label+o.evidence+"; predicts "+c.Predicts)
				a.failed++
			}
		}
		switch {
		case a.failed > 0:
			a.Verdict = Inconsistent
		case len(a.Missing) > 0:
			a.Verdict = NotTestable
		default:
			a.Verdict = Consistent
		}
		// A baseline that holds goes first, but only over single
		// failures: a run of consecutive ones on a poller is a gap,
		// however short, for the other mechanisms to explain.
		a.baseline = m.Baseline && a.Verdict == Consistent && fig.LongestRun <= 1
		r.Mechanisms = append(r.Mechanisms, a)
	}
	order := map[string]int{Consistent: 0, NotTestable: 1, Inconsistent: 2}
	sort.SliceStable(r.Mechanisms, func(i, j int) bool {
		a, b := r.Mechanisms[i], r.Mechanisms[j]
		if order[a.Verdict] != order[b.Verdict] {
			return order[a.Verdict] < order[b.Verdict]
		}
		if a.baseline != b.baseline {
			return a.baseline
		}
		if a.failed != b.failed {
			return a.failed < b.failed
		}
		if a.passed != b.passed {
			return a.passed > b.passed
		}
		return a.Score > b.Score
	})
	// Mechanisms alike in verdict and in checks held and failed share a
	// rank: the shares that order them within it are no evidence that one
	// explains the folder better.
	for i := range r.Mechanisms {
		a := &r.Mechanisms[i]
		a.Rank = i + 1
		if i > 0 {
			if b := r.Mechanisms[i-1]; b.Verdict == a.Verdict && b.failed == a.failed && b.passed == a.passed && b.baseline == a.baseline {
				a.Rank = b.Rank
			}
		}
	}
	// A baseline that holds leaves no gap to tell mechanisms apart by.
	if fig.Failures > 0 && !r.Mechanisms[0].baseline {
		for _, a := range r.Mechanisms {
			if a.Verdict == Inconsistent {
				continue
			}
			r.Indistinct = append(r.Indistinct, a.Name)
			for _, m := range a.missingAll {
				r.Separating = addUnique(r.Separating, m)
			}
		}
		if len(r.Indistinct) < 2 {
			r.Indistinct, r.Separating = nil, nil
		}
		sort.Strings(r.Separating)
	}
	return r
}

func addUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// WriteJSON writes the result as indented JSON.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the result for a terminal and summary.txt: the ranking
// in a table, then the evidence of every mechanism that is not ruled out
// (and the first ruled-out ones' reasons in one line each).
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Diagnosis: %s\n", r.Headline)
	if len(r.Mechanisms) > 0 {
		first := r.Mechanisms[0]
		switch first.Verdict {
		case Consistent:
			if tied := r.RankedFirst(); len(tied) > 1 {
				fmt.Fprintf(&b, "  best fit, tied (the figures do not order them): %s\n", strings.Join(tied, ", "))
			} else {
				fmt.Fprintf(&b, "  best fit: %s (consistent with every figure it was tested on)\n", first.Name)
			}
		case NotTestable:
			fmt.Fprintf(&b, "  nothing fits for sure; nearest untested: %s (%s)\n", first.Name, strings.Join(first.Missing, "; "))
		default:
			fmt.Fprintf(&b, "  no mechanism in the catalogue fits every figure; nearest: %s (%d check(s) against: %s)\n", first.Name, len(first.Against), first.Against[0])
		}
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  RANK\tMECHANISM\tVERDICT\tFOR\tAGAINST\tUNTESTED")
	for _, a := range r.Mechanisms {
		v := a.Verdict
		if len(a.Missing) > 0 && a.Verdict == NotTestable {
			v += " (" + strings.Join(a.Missing, "; ") + ")"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%d\t%d\n", a.Rank, a.Name, v, len(a.For), len(a.Against), len(a.Untested))
	}
	tw.Flush()
	for _, a := range r.Mechanisms {
		if a.Verdict == Inconsistent {
			continue
		}
		fmt.Fprintf(&b, "\n  %d. %s: %s\n", a.Rank, a.Name, a.Verdict)
		for _, s := range a.For {
			fmt.Fprintf(&b, "     for:      %s\n", s)
		}
		for _, s := range a.Untested {
			fmt.Fprintf(&b, "     untested: %s\n", s)
		}
		fmt.Fprintf(&b, "     timing:   %s\n     ruled out by: %s\n     source:   %s\n", a.Timing, a.RuledOutBy, a.Source)
	}
	b.WriteString("\n  Ruled out:\n")
	// Mechanisms ruled out by the same figure share its line (with no
	// failed sample, every one but healthy), in rank order.
	var reasons []string
	names := map[string][]string{}
	for _, a := range r.Mechanisms {
		if a.Verdict != Inconsistent {
			continue
		}
		if names[a.Against[0]] == nil {
			reasons = append(reasons, a.Against[0])
		}
		names[a.Against[0]] = append(names[a.Against[0]], a.Name)
	}
	for _, why := range reasons {
		fmt.Fprintf(&b, "    %s: %s\n", strings.Join(names[why], ", "), why)
	}
	if len(reasons) == 0 {
		b.WriteString("    none\n")
	}
	if m := r.Figures.serverMetricsLine(); m != "" {
		fmt.Fprintf(&b, "\n  Server metrics: %s\n", m)
	}
	if l := LoadLine(r.Figures.Load); l != "" {
		fmt.Fprintf(&b, "\n  Load: %s\n", l)
	}
	if len(r.Indistinct) > 0 {
		fmt.Fprintf(&b, "\n  Cannot tell apart: %s\n  Evidence that would tell them apart, missing here: %s\n", strings.Join(r.Indistinct, ", "), strings.Join(r.Separating, "; "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Register the diagnosis as the last section of every summary.txt that
// write.Rebuild writes in a binary that links this package.
func init() {
	write.AddSummarySection("Diagnosis", func(dir string, w io.Writer) error {
		r, err := Diagnose(dir)
		if err != nil {
			return err
		}
		return WriteText(w, r)
	})
}
