// Package importer reads the interval files an origin CI job run leaves
// behind, places each disruption against the run's kube-apiserver
// shutdown windows, node updates and events, names its pattern, and writes
// a results folder the rest of repro reads as its own. It works offline on
// downloaded artifacts.
package importer

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/repro-tools/repro/origin"
)

// Phases of an upgrade job's interval files: origin writes one file for the
// upgrade, then one for the conformance tests that follow.
const (
	PhaseUpgrade     = "upgrade"
	PhaseConformance = "conformance"
)

// File is one interval file of a run.
type File struct {
	Path string
	// Phase is "upgrade" or "conformance" for a run of two files, "" for a
	// run of one.
	Phase     string
	Intervals []origin.Interval
}

// Run is one CI job run: its interval files in the order origin wrote them.
type Run struct {
	Name  string
	Dir   string
	Files []File
}

// isTimelines and isEvents match the names sippy globs for
// (openshift/sippy pkg/dataloader/prowloader/gcs/gcs_jobrun.go:
// "**e2e-timelines*.json" and "**e2e-events*.json").
func isTimelines(name string) bool {
	return strings.HasPrefix(name, "e2e-timelines") && strings.HasSuffix(name, ".json")
}

func isEvents(name string) bool {
	return strings.HasPrefix(name, "e2e-events") && strings.HasSuffix(name, ".json")
}

// pick keeps, of one folder's interval files, the ones sippy's intervals
// page loads: e2e-timelines_spyglass_* when there are any (origin writes
// the same intervals in other e2e-timelines files too), else the other
// e2e-timelines files, else e2e-events.
func pick(names []string) []string {
	var spy, tl, ev []string
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "e2e-timelines_spyglass_") && strings.HasSuffix(n, ".json"):
			spy = append(spy, n)
		case isTimelines(n):
			tl = append(tl, n)
		case isEvents(n):
			ev = append(ev, n)
		}
	}
	for _, l := range [][]string{spy, tl, ev} {
		if len(l) > 0 {
			sort.Strings(l)
			return l
		}
	}
	return nil
}

// Find locates the runs named by the arguments. A file is a run of its
// own. A folder is searched recursively; when its interval files all sit
// under one child (a job run's artifacts tree) or directly in it, it is one
// run, otherwise every child holding interval files is one run (a folder
// of downloaded runs). Files are not read yet.
func Find(args []string) ([]Run, error) {
	var runs []Run
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil {
			return nil, fmt.Errorf("%s: no such file or folder; give interval files (e2e-timelines_spyglass_*.json) or folders holding them", arg)
		}
		if !st.IsDir() {
			runs = append(runs, Run{Name: strings.TrimSuffix(filepath.Base(arg), ".json"), Dir: filepath.Dir(arg), Files: []File{{Path: arg}}})
			continue
		}
		byDir := map[string][]string{}
		err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (isTimelines(d.Name()) || isEvents(d.Name())) {
				byDir[filepath.Dir(p)] = append(byDir[filepath.Dir(p)], d.Name())
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %v", arg, err)
		}
		var files []string
		for dir, names := range byDir {
			for _, n := range pick(names) {
				files = append(files, filepath.Join(dir, n))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no interval files (e2e-timelines*.json or e2e-events*.json) in it", arg)
		}
		sort.Strings(files)
		groups := map[string][]string{}
		for _, f := range files {
			rel, _ := filepath.Rel(arg, f)
			first, _, nested := strings.Cut(filepath.ToSlash(rel), "/")
			if !nested {
				first = ""
			}
			groups[first] = append(groups[first], f)
		}
		if len(groups) == 1 || groups[""] != nil {
			runs = append(runs, newRun(filepath.Base(filepath.Clean(arg)), arg, files))
			continue
		}
		keys := make([]string, 0, len(groups))
		for k := range groups {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			runs = append(runs, newRun(k, filepath.Join(arg, k), groups[k]))
		}
	}
	return runs, nil
}

// newRun orders a run's files by name (origin's suffix is the time it
// wrote them) and names their phases.
func newRun(name, dir string, files []string) Run {
	sort.Slice(files, func(i, j int) bool { return filepath.Base(files[i]) < filepath.Base(files[j]) })
	r := Run{Name: name, Dir: dir}
	for i, f := range files {
		phase := ""
		if len(files) > 1 {
			switch {
			case i == len(files)-1:
				phase = PhaseConformance
			case i == 0:
				phase = PhaseUpgrade
			default:
				phase = fmt.Sprintf("%s-%d", PhaseUpgrade, i+1)
			}
		}
		r.Files = append(r.Files, File{Path: f, Phase: phase})
	}
	return r
}

// Load reads every file of the run. A malformed file is an error of one
// line naming the file and the position; the other files are still read.
func (r *Run) Load() []error {
	var errs []error
	kept := r.Files[:0]
	for _, f := range r.Files {
		ivs, err := origin.ReadFile(f.Path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f.Intervals = ivs
		kept = append(kept, f)
	}
	r.Files = kept
	return errs
}
