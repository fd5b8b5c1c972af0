package ci

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ClientOptions configure Open.
type ClientOptions struct {
	// CacheRoot is the cache's folder; "" is DefaultCacheRoot.
	CacheRoot string
	// CacheMax bounds the cache's size (Cache.Max).
	CacheMax int64
	// MaxObject bounds one downloaded object (Client.MaxObject).
	MaxObject int64
	// Parallel bounds the objects downloaded at once.
	Parallel int
	// Offline reads the cache only; no storage client is opened.
	Offline bool
}

// Open returns a client on the cache o names, reading the buckets
// anonymously unless o.Offline. Call close when done with it.
func Open(ctx context.Context, o ClientOptions) (cl *Client, close func(), err error) {
	root := o.CacheRoot
	if root == "" {
		if root, err = DefaultCacheRoot(); err != nil {
			return nil, nil, fmt.Errorf("no cache folder (%v): give --cache-dir", err)
		}
	}
	cache := &Cache{Root: root, Max: o.CacheMax}
	close = func() {}
	if o.Offline {
		cl = NewClient(nil, cache, o.Parallel)
		cl.Offline = true
	} else {
		gcs, err := NewStorage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("opening Cloud Storage: %v", err)
		}
		cl = NewClient(gcs, cache, o.Parallel)
		close = func() { gcs.Close() }
	}
	cl.MaxObject = o.MaxObject
	return cl, close, nil
}

// EvictExcept keeps the cache within its bound without evicting runs (the
// ones just read); offline, it evicts nothing.
func (c *Client) EvictExcept(runs []*Run) (Eviction, error) {
	if c.Offline {
		return Eviction{}, nil
	}
	keep := map[string]bool{}
	for _, r := range runs {
		keep[r.Dir] = true
	}
	return c.Cache.Evict(keep)
}

// ParseDate reads a history window's bound: 2006-01-02, 2006-01-02T15:04
// or RFC 3339, in UTC.
func ParseDate(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("use 2006-01-02 or RFC 3339 (2006-01-02T15:04:05Z)")
}

// ParseSize reads a byte count with an optional unit (KB, MB, GB, TB as
// powers of 1000; KiB, MiB, GiB, TiB, or Ki, Mi, Gi, Ti as powers of 1024),
// for the cache's and an object's bounds.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q: give a size such as 20GiB or 500MB", s)
	}
	mult := map[string]float64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"k": 1 << 10, "ki": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mi": 1 << 20, "mib": 1 << 20,
		"g": 1 << 30, "gi": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "ti": 1 << 40, "tib": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%q: unknown unit %q; use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB", s, unit)
	}
	return int64(v * mult), nil
}
