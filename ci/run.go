package ci

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/repro-tools/repro/results"
)

// RunFile is the record of what was fetched of a run, in the run's folder.
const RunFile = results.CIRunManifestFile

// Stages of a fetch: what a run folder may hold.
const (
	// StageMeta is prowjob.json, started.json and finished.json.
	StageMeta = "meta"
	// StageDisruption is the backend-disruption_*.json summaries.
	StageDisruption = "disruption"
	// StageTimelines is the e2e-timelines_spyglass_*.json interval files.
	StageTimelines = "timelines"
	// StageAudit is the gathered audit logs.
	StageAudit = "audit"
)

// Run is one CI run's folder: what results.CIRunManifestFile holds, and
// where the folder is.
type Run struct {
	results.CIRunManifest
	// Dir is the run's folder (not stored).
	Dir string `json:"-"`
}

// Ref returns the run's reference.
func (r *Run) Ref() Ref {
	return Ref{Bucket: r.Bucket, Named: r.NamedBucket, Prefix: r.Prefix, Job: r.Job, Build: r.Build, Repo: r.Repo, PR: r.PR}
}

// Has reports whether a stage was fetched.
func (r *Run) Has(stage string) bool {
	for _, s := range r.Stages {
		if s == stage {
			return true
		}
	}
	return false
}

func (r *Run) addStage(stage string) {
	if !r.Has(stage) {
		r.Stages = append(r.Stages, stage)
	}
}

func (r *Run) addFile(rel string, n int64) {
	for _, f := range r.Files {
		if f == rel {
			return
		}
	}
	r.Files = append(r.Files, rel)
	r.Bytes += n
}

// Name is how lines name the run: JOB/BUILD.
func (r *Run) Name() string { return r.Job + "/" + r.Build }

// ReadRun reads a run folder's record.
func ReadRun(dir string) (*Run, error) {
	b, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		return nil, err
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %v (delete the folder to fetch the run again)", filepath.Join(dir, RunFile), err)
	}
	r.Dir = dir
	return &r, nil
}

// write stores the record atomically, last, so that a folder whose record
// says complete holds every file it names.
func (r *Run) write() error {
	if r.Missing == nil {
		r.Missing = []string{}
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(r.Dir, RunFile), b)
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
