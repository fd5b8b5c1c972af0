package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/repro-tools/repro/ci"
	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
)

// Inputs are what one import reads: local files and folders as given (a CI
// run folder as prow uploads it, an interval file, a folder of either),
// and CI run folders fetched into the cache.
type Inputs struct {
	Paths []string
	Runs  []*ci.Run
}

// ImportOptions configure Import.
type ImportOptions struct {
	// Out, if set, is the results folder written (one per run under it for
	// several runs); Pattern keeps only that pattern's disruption there.
	Out, Pattern string
	// JSON prints the placements as JSON instead of tables.
	JSON bool
	// HTML, if set, is the file the CI runs' offline page is written to.
	HTML string
	// CI configures the analysis of CI run folders (AnalyzeCIRuns).
	CI CIOptions
	// Command is the command line recorded in each folder written.
	Command []string
	// Stdout receives the tables (or JSON); Log one "wrote PATH" line per
	// file or folder written.
	Stdout, Log io.Writer
	// Failed is told of each input that could not be read or written, one
	// line; nil drops them (the counts still say how many).
	Failed func(msg string)
}

func (o *ImportOptions) failed(msg string) {
	if o.Failed != nil {
		o.Failed(msg)
	}
}

// Import analyses the inputs: the CI run folders (fetched, or local folders
// holding prowjob.json) in one AnalyzeCIRuns, the other files and folders
// as interval files. It returns how many runs were imported and how many
// files or runs failed (each told to o.Failed).
func Import(ctx context.Context, in Inputs, o ImportOptions) (imported, bad int, err error) {
	var ciDirs, plain []string
	for _, p := range in.Paths {
		if IsCIRunFolder(p) {
			ciDirs = append(ciDirs, p)
		} else {
			plain = append(plain, p)
		}
	}
	for _, r := range in.Runs {
		for _, f := range r.Files {
			if strings.Contains(f, "/e2e-timelines_spyglass_") {
				ciDirs = append(ciDirs, r.Dir)
				break
			}
		}
	}
	if len(ciDirs) > 0 {
		n, b, err := importCIRuns(ctx, &o, ciDirs)
		imported, bad = imported+n, bad+b
		if err != nil {
			return imported, bad, err
		}
	} else if o.HTML != "" {
		return 0, 0, errors.New("--html shows CI runs: give prow URLs, gs:// URIs, --job, or CI run folders (holding prowjob.json)")
	}
	if len(plain) > 0 {
		n, b, err := importIntervalFiles(&o, plain, len(ciDirs) > 0)
		imported, bad = imported+n, bad+b
		if err != nil {
			return imported, bad, err
		}
	}
	return imported, bad, nil
}

// IsCIRunFolder reports whether a path is a CI run's folder as prow
// uploads it (prowjob.json at its top).
func IsCIRunFolder(p string) bool {
	st, err := os.Stat(filepath.Join(p, "prowjob.json"))
	return err == nil && !st.IsDir()
}

// importCIRuns analyses the CI run folders and writes their tables, page
// and folders.
func importCIRuns(ctx context.Context, o *ImportOptions, dirs []string) (imported, bad int, err error) {
	var runs []*CIRun
	for _, d := range dirs {
		r, err := OpenCIRun(d)
		if err != nil {
			o.failed(err.Error())
			bad++
			continue
		}
		runs = append(runs, r)
	}
	rep, err := AnalyzeCIRuns(ctx, runs, o.CI)
	if err != nil {
		return 0, bad, err
	}
	for _, rr := range rep.Runs {
		if rr == nil {
			continue
		}
		for _, e := range rr.Errors {
			o.failed(fmt.Sprintf("%s: %s", rr.Run.Name(), e))
			bad++
		}
	}
	if o.JSON {
		err = WriteCIJSON(o.Stdout, rep)
	} else {
		err = WriteCIText(o.Stdout, rep)
	}
	if err != nil {
		return 0, bad, err
	}
	if o.HTML != "" {
		var b bytes.Buffer
		if err := WriteCIHTML(&b, rep); err != nil {
			return 0, bad, err
		}
		if err := os.WriteFile(o.HTML, b.Bytes(), 0o644); err != nil {
			return 0, bad, fmt.Errorf("--html: %v", err)
		}
		fmt.Fprintf(o.Log, "wrote %s\n", o.HTML)
	}
	good := len(rep.Runs) - rep.Unreadable
	if o.Out == "" {
		return good, bad, nil
	}
	for _, rr := range rep.Runs {
		if rr == nil || len(rr.Run.Run.Files) == 0 {
			continue
		}
		dir := o.Out
		if len(rep.Runs) > 1 {
			dir = filepath.Join(o.Out, strings.NewReplacer("/", "_", " ", "_").Replace(rr.Run.Name()))
		}
		if err := WriteCIFolder(dir, rr, OutOptions{Pattern: o.Pattern, Command: o.Command}); err != nil {
			o.failed(fmt.Sprintf("%s: %v", dir, err))
			bad++
			continue
		}
		if _, err := write.Rebuild(dir); err != nil {
			o.failed(fmt.Sprintf("%s: %v", dir, err))
			bad++
			continue
		}
		fmt.Fprintf(o.Log, "wrote %s\n", dir)
	}
	return good, bad, nil
}

// importIntervalFiles reads interval files and folders of them that are
// not CI run folders; sub puts their folders beside the CI runs' under Out.
func importIntervalFiles(o *ImportOptions, paths []string, sub bool) (imported, bad int, err error) {
	runs, err := Find(paths)
	if err != nil {
		return 0, 0, err
	}
	var loaded []Run
	var ps []Placement
	for i := range runs {
		for _, e := range runs[i].Load() {
			o.failed(e.Error())
			bad++
		}
		if len(runs[i].Files) == 0 {
			continue
		}
		loaded = append(loaded, runs[i])
		ps = append(ps, Place(runs[i])...)
	}
	if o.JSON {
		err = WriteJSON(o.Stdout, ps)
	} else {
		err = WriteText(o.Stdout, loaded, ps)
	}
	if err != nil {
		return len(loaded), bad, err
	}
	if o.Out != "" {
		out := o.Out
		if sub {
			// CI runs were written under Out too: these go beside them.
			out = filepath.Join(o.Out, "files")
		}
		for _, r := range loaded {
			if err := writeImported(o, out, r, ps, len(loaded) > 1); err != nil {
				o.failed(err.Error())
				bad++
			}
		}
	}
	return len(loaded), bad, nil
}

// writeImported writes one run's folder under out, rebuilds repro's files
// in it and adds the import's own section to summary.txt.
func writeImported(o *ImportOptions, out string, r Run, all []Placement, many bool) error {
	dir := FolderName(out, r, many)
	var mine []Placement
	for _, p := range all {
		if p.Run == r.Name {
			mine = append(mine, p)
		}
	}
	if err := WriteFolder(dir, r, mine, OutOptions{Pattern: o.Pattern, Command: o.Command}); err != nil {
		return err
	}
	if _, err := write.Rebuild(dir); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	f, err := results.Open(dir)
	if err != nil {
		return err
	}
	summary, err := os.ReadFile(f.Path(results.SummaryFile))
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.Write(summary)
	b.WriteString("\nImported from origin's interval files (whole seconds; samples synthesized one per second):\n")
	if err := WriteText(&b, []Run{r}, mine); err != nil {
		return err
	}
	if err := f.WriteFile(results.SummaryFile, b.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "wrote %s\n", dir)
	return nil
}

// ParseCompareBy turns --compare-by (job, date=2006-01-02 or
// version=A,B) into the two sets AnalyzeCIRuns compares; jobs are the
// --job names (two for "job"). "" compares nothing.
func ParseCompareBy(compareBy string, jobs []string) (a, b *CISet, err error) {
	by, val, _ := strings.Cut(compareBy, "=")
	switch by {
	case "":
		return nil, nil, nil
	case "job":
		if len(jobs) != 2 {
			return nil, nil, errors.New("--compare-by job compares two jobs: give --job twice")
		}
		x, y := JobSet(jobs[0]), JobSet(jobs[1])
		return &x, &y, nil
	case "date":
		t, err := ci.ParseDate(val)
		if err != nil {
			return nil, nil, fmt.Errorf("--compare-by date=%s: %v", val, err)
		}
		x, y := DateSets(t)
		return &x, &y, nil
	case "version":
		v1, v2, ok := strings.Cut(val, ",")
		if !ok || v1 == "" || v2 == "" {
			return nil, nil, errors.New("--compare-by version=A,B: give two versions, e.g. version=4.16,4.17")
		}
		x, y := VersionSet(v1), VersionSet(v2)
		return &x, &y, nil
	}
	return nil, nil, fmt.Errorf("--compare-by %q: use job, date=2006-01-02 or version=4.16,4.17", compareBy)
}
