package ci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/storage"
)

// History is a job's runs in a window.
type History struct {
	// Builds are the build IDs chosen, oldest first.
	Builds []string
	// Listed is how many builds the job has; Probed how many started.json
	// files were read to narrow them by time.
	Listed, Probed int
}

// sortBuilds orders build IDs numerically (shorter is smaller).
func sortBuilds(ids []string) {
	sort.Slice(ids, func(i, j int) bool {
		if len(ids[i]) != len(ids[j]) {
			return len(ids[i]) < len(ids[j])
		}
		return ids[i] < ids[j]
	})
}

// Builds lists a job's build IDs (the folders under logs/JOB/), sorted.
func (c *Client) Builds(ctx context.Context, bucket, job string) ([]string, error) {
	if c.Offline {
		ents, err := os.ReadDir(filepath.Join(c.Cache.Root, bucket, "logs", job))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("job %s: %w", job, ErrNotCached)
			}
			return nil, err
		}
		var ids []string
		for _, e := range ents {
			if e.IsDir() && isBuildID(e.Name()) {
				if _, err := os.Stat(filepath.Join(c.Cache.Root, bucket, "logs", job, e.Name(), RunFile)); err == nil {
					ids = append(ids, e.Name())
				}
			}
		}
		sortBuilds(ids)
		return ids, nil
	}
	var ids []string
	prefix := "logs/" + job + "/"
	err := c.pages(ctx, c.gcs.Bucket(bucket), &storage.Query{Prefix: prefix, Delimiter: "/"}, func(a *storage.ObjectAttrs) {
		if a.Prefix == "" {
			return
		}
		id := strings.TrimSuffix(strings.TrimPrefix(a.Prefix, prefix), "/")
		if isBuildID(id) {
			ids = append(ids, id)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listing gs://%s/%s: %w", bucket, prefix, err)
	}
	sortBuilds(ids)
	return ids, nil
}

// StartedAt reads a run's started.json time (the cached copy when there is
// one).
func (c *Client) StartedAt(ctx context.Context, ref Ref) (time.Time, error) {
	if r, err := ReadRun(c.Cache.Dir(ref)); err == nil && !r.Started.IsZero() {
		return r.Started, nil
	}
	if c.Offline {
		return time.Time{}, ErrNotCached
	}
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout())
	defer cancel()
	c.sem <- struct{}{}
	defer func() { <-c.sem }()
	b, err := readSmall(ctx, c.gcs.Bucket(ref.Bucket), ref.Object("started.json"))
	if err != nil {
		return time.Time{}, err
	}
	var s startedJSON
	if err := json.Unmarshal(b, &s); err != nil || s.Timestamp == 0 {
		return time.Time{}, errors.New("started.json has no timestamp")
	}
	return time.Unix(s.Timestamp, 0).UTC(), nil
}

// maxProbeSkips bounds how many neighbours a probe tries when a run has no
// readable started.json (a run that never started, a deleted one).
const maxProbeSkips = 8

// History lists a job's runs that started in [since, until) (until zero:
// no end), at most limit of them (0: all), the newest kept. Build IDs grow
// with time, so the window's ends are found by bisection over the sorted
// IDs, reading started.json only at the probe points, never the whole
// history's.
func (c *Client) History(ctx context.Context, bucket, job string, since, until time.Time, limit int) (*History, error) {
	ids, err := c.Builds(ctx, bucket, job)
	if err != nil {
		return nil, err
	}
	h := &History{Listed: len(ids)}
	if len(ids) == 0 {
		return h, nil
	}
	cache := map[int]time.Time{}
	// at returns the start of the run at i or, when it cannot be read,
	// of the nearest readable one after it (j is its index).
	at := func(i int) (t time.Time, j int, err error) {
		for j = i; j < len(ids) && j < i+maxProbeSkips; j++ {
			if t, ok := cache[j]; ok {
				return t, j, nil
			}
			ref, err := JobRef(bucket, job, ids[j])
			if err != nil {
				return time.Time{}, j, err
			}
			h.Probed++
			t, err := c.StartedAt(ctx, ref)
			if err == nil {
				cache[j] = t
				return t, j, nil
			}
			if ctx.Err() != nil {
				return time.Time{}, j, ctx.Err()
			}
		}
		return time.Time{}, j, errNoStart
	}
	// first returns the first index whose run started at or after t.
	first := func(t time.Time) (int, error) {
		lo, hi := 0, len(ids)
		for lo < hi {
			mid := lo + (hi-lo)/2
			st, j, err := at(mid)
			if errors.Is(err, errNoStart) {
				// Nothing readable from mid on within reach:
				// treat the stretch as after t.
				hi = mid
				continue
			}
			if err != nil {
				return 0, err
			}
			if st.Before(t) {
				lo = j + 1
			} else {
				hi = mid
			}
		}
		return lo, nil
	}
	lo, err := first(since)
	if err != nil {
		return nil, err
	}
	hi := len(ids)
	if !until.IsZero() {
		if hi, err = first(until); err != nil {
			return nil, err
		}
	}
	if hi < lo {
		hi = lo
	}
	sel := ids[lo:hi]
	if limit > 0 && len(sel) > limit {
		sel = sel[len(sel)-limit:]
	}
	h.Builds = append([]string(nil), sel...)
	return h, nil
}

var errNoStart = errors.New("no readable started.json")
