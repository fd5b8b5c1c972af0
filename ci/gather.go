package ci

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// Request says which runs to bring into the cache.
type Request struct {
	// Refs are runs named by URL: fetched whole, never triaged.
	Refs []Ref
	// Job, with Bucket (default test-platform-results), Since, Until and
	// Limit, adds a job's history, triaged: only runs at or over Threshold
	// on an apiserver backend, and one clean run per job, get their
	// timelines fetched.
	Job, Bucket  string
	Since, Until time.Time
	Limit        int
	Threshold    time.Duration
	// Sippy takes the history's per-run disruption from Sippy at SippyURL
	// instead of each run's backend-disruption files.
	Sippy    bool
	SippyURL string
	HTTP     *http.Client
	// Audit also fetches the gathered audit logs of the runs fetched
	// whole.
	Audit bool
}

// Result is what a gather brought.
type Result struct {
	// Runs are the folders whose timelines were fetched (or read from the
	// cache), in build order, the named runs first.
	Runs []*Run
	// Clean marks the clean A/B runs among Runs (by folder).
	Clean map[string]bool
	// Failures holds one line per run or file that could not be fetched;
	// any makes the result partial.
	Failures []string
	// History is set for a --job request; Scanned, Selected, Skipped and
	// NoData count its triage.
	History                            *History
	Scanned, Selected, Skipped, NoData int
	// Triage holds one line per triaged run: its worst apiserver backend
	// and what triage did with it.
	Triage []string
}

// Partial reports whether anything asked for could not be fetched.
func (r *Result) Partial() bool { return len(r.Failures) > 0 }

// Gather fetches the runs a request names into the cache. Only a request
// that cannot be started at all (a job that cannot be listed) is an error.
func (c *Client) Gather(ctx context.Context, req Request) (*Result, error) {
	res := &Result{Clean: map[string]bool{}}
	full := Want{Disruption: true, Timelines: true, Audit: req.Audit}
	named := c.fetchAll(ctx, req.Refs, full, res)
	res.Runs = append(res.Runs, named...)
	if req.Job == "" {
		return res, nil
	}
	bucket := req.Bucket
	if bucket == "" {
		bucket = BucketTestPlatformResult
	}
	if b, ok := bucketAliases[bucket]; ok {
		bucket = b
	}
	h, err := c.History(ctx, bucket, req.Job, req.Since, req.Until, req.Limit)
	if err != nil {
		return res, err
	}
	res.History = h
	refs := make([]Ref, 0, len(h.Builds))
	for _, b := range h.Builds {
		ref, err := JobRef(bucket, req.Job, b)
		if err != nil {
			return res, err
		}
		refs = append(refs, ref)
	}
	// Triage: the small files first.
	meta := c.fetchAll(ctx, refs, Want{Disruption: !req.Sippy}, res)
	byBuild := map[string]*Run{}
	for _, r := range meta {
		byBuild[r.Build] = r
	}
	var sippy map[string]map[string]time.Duration
	if req.Sippy {
		base := req.SippyURL
		if base == "" {
			base = DefaultSippyURL
		}
		sippy, err = SippyDisruption(ctx, req.HTTP, base, h.Builds)
		if err != nil {
			res.Failures = append(res.Failures, err.Error())
		}
	}
	cands := make([]Candidate, len(refs))
	for i, ref := range refs {
		cands[i] = Candidate{Ref: ref}
		r := byBuild[ref.Build]
		if r != nil {
			cands[i].Start = r.Started
		}
		switch {
		case req.Sippy:
			if per, ok := sippy[ref.Build]; ok {
				cands[i].Score(per)
			}
		case r != nil:
			per, ok, err := ReadDisruption(r.Dir)
			if err != nil {
				res.Failures = append(res.Failures, fmt.Sprintf("%s: %v", r.Name(), err))
			} else if ok {
				cands[i].Score(per)
			}
		}
	}
	th := req.Threshold
	if th <= 0 {
		th = DefaultThreshold
	}
	t := Select(cands, th)
	res.Scanned = len(cands)
	res.Selected, res.Skipped, res.NoData = len(t.Selected), len(t.Skipped), len(t.NoData)
	verdict := map[int]string{}
	for _, i := range t.Selected {
		verdict[i] = "selected"
	}
	for _, i := range t.Clean {
		verdict[i] = "clean A/B"
	}
	for _, i := range t.Skipped {
		verdict[i] = "skipped"
	}
	for _, i := range t.NoData {
		verdict[i] = "no disruption figures"
	}
	for i, cd := range cands {
		worst := "0s on every apiserver backend"
		if cd.WorstTime > 0 {
			worst = fmt.Sprintf("%s %s", cd.Worst, cd.WorstTime)
		}
		if !cd.Known {
			worst = "-"
		}
		start := "-"
		if !cd.Start.IsZero() {
			start = cd.Start.Format(time.RFC3339)
		}
		res.Triage = append(res.Triage, fmt.Sprintf("%s  %s  %s  %s", cd.Ref.Build, start, worst, verdict[i]))
	}
	var want []Ref
	clean := map[string]bool{}
	for _, i := range append(append([]int(nil), t.Selected...), t.Clean...) {
		want = append(want, refs[i])
	}
	for _, i := range t.Clean {
		clean[refs[i].Build] = true
	}
	sort.Slice(want, func(i, j int) bool { return buildLess(want[i].Build, want[j].Build) })
	for _, r := range c.fetchAll(ctx, want, full, res) {
		if clean[r.Build] {
			res.Clean[r.Dir] = true
		}
		res.Runs = append(res.Runs, r)
	}
	return res, nil
}

func buildLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// fetchAll fetches runs in parallel; every failure becomes a line of res.
// It returns the runs that could be read, in the order given.
func (c *Client) fetchAll(ctx context.Context, refs []Ref, w Want, res *Result) []*Run {
	out := make([]*Run, len(refs))
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(cap(c.sem))
	for i, ref := range refs {
		g.Go(func() error {
			r, err := c.Fetch(ctx, ref, w)
			mu.Lock()
			defer mu.Unlock()
			name := ref.Job + "/" + ref.Build
			switch {
			case err != nil && r == nil:
				res.Failures = append(res.Failures, fmt.Sprintf("%s: %v", name, err))
			case err != nil:
				res.Failures = append(res.Failures, fmt.Sprintf("%s: %v", name, err))
			default:
				for _, m := range r.Missing {
					res.Failures = append(res.Failures, fmt.Sprintf("%s: %s", name, m))
				}
				out[i] = r
			}
			return nil
		})
	}
	_ = g.Wait()
	var kept []*Run
	for _, r := range out {
		if r != nil {
			kept = append(kept, r)
		}
	}
	return kept
}

// ErrBadWindow is returned for a history window that ends before it
// starts.
var ErrBadWindow = errors.New("--until is before --since")
