package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/repro-tools/repro/importer"
	"github.com/repro-tools/repro/results"
)

// fixture is importer's checked-in upgrade run (two interval files).
const fixture = "../../importer/testdata/1900000000000000001"

func TestImportCLI(t *testing.T) {
	code, out, err := runRepro(t, "import", "--json", fixture)
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	var ps []importer.Placement
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	patterns := map[string]int{}
	for _, p := range ps {
		patterns[p.Pattern]++
	}
	if patterns[importer.PatternRollout] != 1 || patterns[importer.PatternNodeUpdate] != 1 || patterns[importer.PatternOther] != 2 {
		t.Errorf("patterns = %v", patterns)
	}

	outDir := filepath.Join(t.TempDir(), "imported")
	code, out, err = runRepro(t, "import", fixture, "--out", outDir)
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	for _, name := range []string{results.SamplesFile, results.EventsFile, results.IntervalsFile, results.SummaryFile, "report.html", "placements.json", importer.PlacementsFile} {
		if _, err := os.Stat(filepath.Join(outDir, name)); err != nil {
			t.Errorf("--out folder lacks %s", name)
		}
	}
	summary, _ := os.ReadFile(filepath.Join(outDir, results.SummaryFile))
	if !strings.Contains(string(summary), "Imported from origin's interval files") || !strings.Contains(string(summary), "iteration 1, master-1") {
		t.Errorf("summary:\n%s", summary)
	}
	// the folder is repro's own: report rebuilds it
	if code, out, err := runRepro(t, "report", "--origin", outDir); code != 0 || !strings.Contains(out, "e2e-timelines_spyglass_") {
		t.Errorf("report --origin: exit %d %v\n%s", code, err, out)
	}
}

func TestImportCLIBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "e2e-timelines_spyglass_1.json")
	os.WriteFile(bad, []byte("{\"items\": [\n {\"level\": \"Error\", \"from\": 3}]}"), 0o644)
	code, out, err := runRepro(t, "import", bad)
	if code != 1 || err == nil || !strings.Contains(err.Error(), bad+": line 2, column") {
		t.Errorf("malformed: exit %d %v\n%s", code, err, out)
	}
	if code, _, err := runRepro(t, "import", filepath.Join(dir, "missing")); code != 1 || !strings.Contains(err.Error(), "no such file or folder") {
		t.Errorf("missing: exit %d %v", code, err)
	}
	if code, _, err := runRepro(t, "import", "--pattern", "rollout", dir); code != 1 || !strings.Contains(err.Error(), "use apiserver-rollout") {
		t.Errorf("bad pattern: exit %d %v", code, err)
	}
}
