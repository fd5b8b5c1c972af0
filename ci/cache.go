package ci

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// DefaultCacheMax is the cache's default size bound.
const DefaultCacheMax int64 = 20 << 30

// Cache is the local folder CI runs are fetched into: one folder per run at
// ROOT/BUCKET/PREFIX.
type Cache struct {
	Root string
	// Max bounds its size in bytes; 0 means no bound.
	Max int64
}

// DefaultCacheRoot is ~/.cache/repro/ci (os.UserCacheDir: $XDG_CACHE_HOME
// when set).
func DefaultCacheRoot() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "repro", "ci"), nil
}

// Dir is the folder of a run.
func (c *Cache) Dir(r Ref) string {
	return filepath.Join(c.Root, r.Bucket, filepath.FromSlash(r.Prefix))
}

// Runs lists the run folders in the cache (those holding a RunFile).
func (c *Cache) Runs() ([]*Run, error) {
	var out []*Run
	err := filepath.WalkDir(c.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || d.Name() != RunFile {
			return nil
		}
		r, err := ReadRun(filepath.Dir(p))
		if err == nil {
			out = append(out, r)
		}
		return filepath.SkipDir
	})
	return out, err
}

// Eviction is what Evict removed.
type Eviction struct {
	Runs  []string
	Bytes int64
	// Size is the cache's size after eviction.
	Size int64
}

// Evict removes the runs fetched longest ago until the cache is within its
// bound. Runs in keep (folders) are never removed: a fetch never evicts what
// it is about to read.
func (c *Cache) Evict(keep map[string]bool) (Eviction, error) {
	var ev Eviction
	runs, err := c.Runs()
	if err != nil {
		return ev, err
	}
	sizes := make(map[string]int64, len(runs))
	for _, r := range runs {
		n := dirSize(r.Dir)
		sizes[r.Dir] = n
		ev.Size += n
	}
	if c.Max <= 0 || ev.Size <= c.Max {
		return ev, nil
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].FetchedAt.Before(runs[j].FetchedAt) })
	for _, r := range runs {
		if ev.Size <= c.Max {
			break
		}
		if keep[r.Dir] {
			continue
		}
		// The record goes first, so a folder half removed never reads
		// as a run.
		if err := os.Remove(filepath.Join(r.Dir, RunFile)); err != nil {
			return ev, err
		}
		if err := os.RemoveAll(r.Dir); err != nil {
			return ev, err
		}
		ev.Runs = append(ev.Runs, r.Name())
		ev.Bytes += sizes[r.Dir]
		ev.Size -= sizes[r.Dir]
	}
	return ev, nil
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n
}
