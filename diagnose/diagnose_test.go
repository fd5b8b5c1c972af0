package diagnose

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/internal/testkit"
	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/report/htmlreport"
	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
)

func assessment(t *testing.T, r *Result, name string) Assessment {
	t.Helper()
	for _, a := range r.Mechanisms {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no assessment of %s", name)
	return Assessment{}
}

func logResult(t *testing.T, r *Result) {
	t.Helper()
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
}

// Real lab folders (testdata/README.md): each is diagnosed with its own
// profile's mechanism first.
func TestDiagnoseLabFolders(t *testing.T) {
	for _, tc := range []struct {
		dir, first string
		// tied are mechanisms the folder's figures cannot order against
		// first (none since the LB's resets tell when it judged a node
		// unhealthy: without them late routing and a TCP health check
		// look alike, see TestWithoutLBVerdictsLateRoutingAndTCPCheckTie).
		tied []string
	}{
		{dir: "healthy", first: "healthy"},
		{dir: "short-shutdown-delay", first: "short-shutdown-delay"},
		{dir: "etcd-stall-attributed", first: "etcd-stall"},
		{dir: "etcd-stall", first: "etcd-stall"},
		{dir: "late-deregistration", first: "late-deregistration"},
		{dir: "early-healthy", first: "early-healthy"},
		{dir: "blackhole", first: "blackhole"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			r, err := Diagnose(filepath.Join("testdata", tc.dir))
			if err != nil {
				t.Fatal(err)
			}
			logResult(t, r)
			if !slices.Contains(r.RankedFirst(), tc.first) || r.Mechanisms[0].Verdict != Consistent {
				t.Fatalf("first %v (%s), want %s among them, consistent", r.RankedFirst(), r.Mechanisms[0].Verdict, tc.first)
			}
			// Every other lab profile's mechanism is ruled out by some
			// figure, but for the pairs these folders cannot order.
			for _, a := range r.Mechanisms {
				m, _ := Lookup(a.Name)
				if !m.Profile || a.Name == tc.first || slices.Contains(tc.tied, a.Name) {
					continue
				}
				if a.Verdict != Inconsistent {
					t.Errorf("%s: %s, want inconsistent (for %v)", a.Name, a.Verdict, a.For)
				}
			}
			if got := r.RankedFirst(); len(got) != 1+len(tc.tied) {
				t.Errorf("rank 1: %v, want %s and %v", got, tc.first, tc.tied)
			}
		})
	}
}

// Without the LB's resets (an older lab, or a live cluster) late routing
// and a TCP health check send the same requests to the same nodes at the
// same offsets: they share rank 1 and diagnose says what would separate them.
func TestWithoutLBVerdictsLateRoutingAndTCPCheckTie(t *testing.T) {
	for _, name := range []string{"late-deregistration", "early-healthy"} {
		dir := copyFolder(t, filepath.Join("testdata", name))
		b, err := os.ReadFile(filepath.Join(dir, "lb-connections.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.Contains(l, `"closedBy":"reset"`) {
				kept = append(kept, l)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "lb-connections.jsonl"), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Diagnose(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.RankedFirst(); !slices.Equal(got, []string{"late-deregistration", "early-healthy"}) && !slices.Equal(got, []string{"early-healthy", "late-deregistration"}) {
			logResult(t, r)
			t.Fatalf("%s without resets: rank 1 %v, want the two tied", name, got)
		}
		if !slices.Contains(r.Separating, MissingLBVerdicts) {
			t.Errorf("%s: separating %v, want %q", name, r.Separating, MissingLBVerdicts)
		}
	}
}

func TestHealthyHasNothingToExplain(t *testing.T) {
	r, err := Diagnose(filepath.Join("testdata", "healthy"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Headline, "no disruption to explain") {
		t.Fatalf("headline %q", r.Headline)
	}
	for _, a := range r.Mechanisms[1:] {
		if a.Verdict != Inconsistent || !slices.Contains(a.Against, "no failed samples: nothing for it to explain") {
			t.Errorf("%s: %s %v", a.Name, a.Verdict, a.Against)
		}
	}
	if len(r.Indistinct) != 0 {
		t.Errorf("indistinct %v with nothing to explain", r.Indistinct)
	}
	// The text rules them out on one line, not one line each.
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	ruled := b.String()[strings.Index(b.String(), "Ruled out:"):]
	if n := strings.Count(ruled, "nothing for it to explain"); n != 1 || !strings.Contains(ruled, r.Mechanisms[1].Name+", ") {
		t.Errorf("ruled out %d times over, want once for all:\n%s", n, ruled)
	}
}

// With attribution, the storage hypotheses' verdict check is tested and
// holds: requests were received and not answered.
func TestAttributionIsRead(t *testing.T) {
	r, err := Diagnose(filepath.Join("testdata", "etcd-stall-attributed"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Figures.HasAttribution || r.Figures.Verdicts[VerdictReceivedNotAnswered] == 0 {
		t.Fatalf("attribution figures %+v", r.Figures.Verdicts)
	}
	a := assessment(t, r, "storage-stall-readyz-misses")
	if a.Verdict != Consistent || !slices.ContainsFunc(a.For, func(s string) bool { return strings.HasPrefix(s, "attribution: ") }) {
		t.Fatalf("storage-stall-readyz-misses %s, for %v", a.Verdict, a.For)
	}
	// On the short shutdown delay, the refused requests never reached an
	// apiserver: attribution's not-received supports the mechanism.
	r2, err := Diagnose(filepath.Join("testdata", "short-shutdown-delay"))
	if err != nil {
		t.Fatal(err)
	}
	if a := assessment(t, r2, "short-shutdown-delay"); !slices.ContainsFunc(a.For, func(s string) bool { return strings.HasPrefix(s, "attribution: ") }) {
		t.Fatalf("short-shutdown-delay: attribution not among the evidence for: %v", a.For)
	}
	// Without the file, the same folder cannot test it.
	dir := copyFolder(t, filepath.Join("testdata", "etcd-stall-attributed"))
	if err := os.Remove(filepath.Join(dir, results.AttributionFile)); err != nil {
		t.Fatal(err)
	}
	r, err = Diagnose(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a := assessment(t, r, "storage-stall-readyz-misses"); a.Verdict != NotTestable || !slices.Equal(a.Missing, []string{MissingAttribution}) {
		t.Fatalf("without attribution: %s missing %v", a.Verdict, a.Missing)
	}
}

func TestMalformedAttribution(t *testing.T) {
	dir := copyFolder(t, filepath.Join("testdata", "short-shutdown-delay"))
	if err := os.WriteFile(filepath.Join(dir, results.AttributionFile), []byte("{\"verdict\":\"answered\"}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Diagnose(dir)
	if err == nil || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err %v, want one line naming line 2", err)
	}
}

func copyFolder(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// synthFolder writes a folder as a live run without lab records or
// attribution would: samples only (through results' writer), one run.json.
// fail says which samples fail and how.
func synthFolder(t *testing.T, backends []string, fail func(backend string, conn results.ConnectionType, seq uint64) (results.ErrorClass, int)) string {
	t.Helper()
	dir := t.TempDir()
	f, err := results.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	var ss []results.Sample
	for _, b := range backends {
		for _, c := range results.ConnectionTypes {
			for seq := uint64(0); seq < 300; seq++ {
				s := results.Sample{Backend: b, Connection: c, Seq: seq, Start: base.Add(time.Duration(seq) * 100 * time.Millisecond), Duration: 5 * time.Millisecond, StatusCode: 200}
				if class, code := fail(b, c, seq); class != results.ClassNone {
					s.ErrorClass, s.StatusCode, s.Error = class, code, "synthetic "+string(class)
					if class == results.ClassHeaderTimeout {
						s.Duration = 2720 * time.Millisecond
					}
				}
				ss = append(ss, s)
			}
		}
	}
	testkit.WriteJSONL(t, f.Path(results.SamplesFile), ss)
	run := results.NewRun("run", []string{"repro", "run"}, base)
	run.Finish(base.Add(time.Minute), results.StatusComplete)
	if err := f.WriteRun(run); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A live-shaped folder: header timeouts on quorum reads of new connections,
// none on cache-*; no lab records, no attribution, no timeline. Several
// storage-side mechanisms remain and diagnose names what would separate them.
func TestLiveFolderWithoutAttribution(t *testing.T) {
	dir := synthFolder(t, results.BackendOrder, func(b string, c results.ConnectionType, seq uint64) (results.ErrorClass, int) {
		if c == results.NewConnections && !strings.HasPrefix(b, "cache-") && seq >= 100 && seq < 110 {
			return results.ClassHeaderTimeout, 0
		}
		return results.ClassNone, 200
	})
	r, err := Diagnose(dir)
	if err != nil {
		t.Fatal(err)
	}
	logResult(t, r)
	for _, want := range []string{"etcd-stall", "storage-stall-readyz-misses"} {
		if !slices.Contains(r.Indistinct, want) {
			t.Errorf("indistinct %v, want %s among them", r.Indistinct, want)
		}
	}
	// a stall of what every apiserver shares would have failed the cache-*
	// and reused pollers too (issue 23: all variants of every backend)
	if a := assessment(t, r, "shared-stall"); a.Verdict != Inconsistent {
		t.Errorf("shared-stall %s while cache-* and reused pollers answered", a.Verdict)
	}
	for _, want := range []string{MissingAttribution, MissingServedBy, MissingTimeline} {
		if !slices.Contains(r.Separating, want) {
			t.Errorf("separating evidence %v, want %q", r.Separating, want)
		}
	}
	if a := assessment(t, r, "short-shutdown-delay"); a.Verdict != Inconsistent {
		t.Errorf("short-shutdown-delay %s on header timeouts", a.Verdict)
	}
}

// An older folder (no cache-* pollers): the mechanisms that need the cache
// comparison are not testable, and say so.
func TestOlderFolderWithoutCachePollers(t *testing.T) {
	dir := synthFolder(t, []string{"kube-api", "openshift-api", "oauth-api"}, func(b string, c results.ConnectionType, seq uint64) (results.ErrorClass, int) {
		if c == results.NewConnections && seq >= 100 && seq < 110 {
			return results.ClassHeaderTimeout, 0
		}
		return results.ClassNone, 200
	})
	r, err := Diagnose(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"etcd-stall", "storage-stall-readyz-misses"} {
		a := assessment(t, r, name)
		if a.Verdict != NotTestable || !slices.Contains(a.Missing, MissingCache) {
			t.Errorf("%s: %s missing %v, want not testable for %q", name, a.Verdict, a.Missing, MissingCache)
		}
	}
}

// 503s on the aggregated backends only: the aggregator, whatever the lab.
func TestAggregatedOnly(t *testing.T) {
	dir := synthFolder(t, results.BackendOrder, func(b string, c results.ConnectionType, seq uint64) (results.ErrorClass, int) {
		if strings.HasSuffix(b, "openshift-api") && seq >= 50 && seq < 80 {
			return results.ClassHTTP5xx, 503
		}
		return results.ClassNone, 200
	})
	r, err := Diagnose(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.First() != "aggregator" || r.Mechanisms[0].Verdict != Consistent {
		logResult(t, r)
		t.Fatalf("first %s %s, want aggregator consistent", r.First(), r.Mechanisms[0].Verdict)
	}
	if a := assessment(t, r, "etcd-stall"); a.Verdict != Inconsistent {
		t.Errorf("etcd-stall %s on 503s", a.Verdict)
	}
}

// Every mechanism cites a source, says what rules it out and predicts
// something testable.
func TestCatalogue(t *testing.T) {
	for _, name := range lab.ProfileNames() {
		if m, ok := Lookup(name); !ok || !m.Profile {
			t.Errorf("lab profile %s has no catalogue entry marked as a profile", name)
		}
	}
	seen := map[string]bool{}
	for _, m := range Catalogue() {
		if m.Profile && !slices.Contains(lab.ProfileNames(), m.Name) {
			t.Errorf("%s is marked as a lab profile, which the lab does not have", m.Name)
		}
		if seen[m.Name] {
			t.Errorf("duplicate %s", m.Name)
		}
		seen[m.Name] = true
		if m.Source == "" || m.RuledOutBy == "" || m.Timing == "" || len(m.Fingerprint) == 0 || strings.Contains(m.Source, "DESIGN") {
			t.Errorf("%s: incomplete entry", m.Name)
		}
	}
}

// write.Rebuild ends summary.txt with the diagnosis and shows it in
// report.html, in any binary that links this package.
func TestRebuildCarriesTheDiagnosis(t *testing.T) {
	dir := copyFolder(t, filepath.Join("testdata", "short-shutdown-delay"))
	if _, err := write.Rebuild(dir); err != nil {
		t.Fatal(err)
	}
	r, err := Diagnose(dir)
	if err != nil {
		t.Fatal(err)
	}
	summary, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	if err := WriteText(&want, r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(summary), want.String()) {
		t.Fatalf("summary.txt does not end with the diagnosis:\n%s", summary)
	}
	page, err := os.ReadFile(filepath.Join(dir, htmlreport.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "<h2>Diagnosis</h2><pre>Diagnosis: "+r.Headline) {
		t.Fatal("report.html has no diagnosis section")
	}
}

// One 503 on an aggregated poller, as a freshly started apiserver can
// answer once in a healthy rollout (seen in a lab sweep on CI): the
// aggregator's checks hold on it (1 of 1 failures aggregated and
// answered), but one request is no gap. healthy ranks first on its own
// and nothing is called indistinct; with a gap's worth of the same 503s
// (TestAggregatedOnly) the aggregator is first.
func TestSingleFailureIsHealthyFirst(t *testing.T) {
	dir := synthFolder(t, results.BackendOrder, func(b string, c results.ConnectionType, seq uint64) (results.ErrorClass, int) {
		if b == "cache-oauth-api" && c == results.NewConnections && seq == 60 {
			return results.ClassHTTP5xx, 503
		}
		return results.ClassNone, 200
	})
	r, err := Diagnose(dir)
	if err != nil {
		t.Fatal(err)
	}
	if first := r.RankedFirst(); !slices.Equal(first, []string{"healthy"}) || r.Mechanisms[0].Verdict != Consistent {
		logResult(t, r)
		t.Fatalf("ranked first %v (%s), want healthy alone, consistent", first, r.Mechanisms[0].Verdict)
	}
	if a := assessment(t, r, "aggregator"); a.Verdict != Consistent || a.Rank == 1 {
		t.Errorf("aggregator %s at rank %d, want consistent below healthy", a.Verdict, a.Rank)
	}
	if len(r.Indistinct) != 0 {
		t.Errorf("indistinct %v, want none: there is no gap to explain", r.Indistinct)
	}
}

// Three 503s in a row on one poller are within healthy's count but are a
// 0.3 s gap, not single losses: healthy gets no precedence there, and the
// mechanism with more evidence ranks above it, as before.
func TestConsecutiveFailuresAreAGap(t *testing.T) {
	dir := synthFolder(t, results.BackendOrder, func(b string, c results.ConnectionType, seq uint64) (results.ErrorClass, int) {
		if b == "cache-oauth-api" && c == results.NewConnections && seq >= 60 && seq < 63 {
			return results.ClassHTTP5xx, 503
		}
		return results.ClassNone, 200
	})
	r, err := Diagnose(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Figures.LongestRun != 3 {
		t.Errorf("longest run %d, want 3", r.Figures.LongestRun)
	}
	if a := assessment(t, r, "healthy"); a.Verdict != Consistent || a.Rank == 1 {
		logResult(t, r)
		t.Errorf("healthy %s at rank %d, want consistent below the aggregator", a.Verdict, a.Rank)
	}
	if r.First() != "aggregator" {
		t.Errorf("first %s, want aggregator", r.First())
	}
}

// Intervals of one poller that follow each other (the class changed) are
// one run; a gap in the sequence ends it.
func TestLongestRunJoinsIntervalsThatFollowOn(t *testing.T) {
	ivs := []report.Interval{
		{Name: "a", FirstSeq: 10, LastSeq: 11, Samples: 2},
		{Name: "a", FirstSeq: 12, LastSeq: 12, Samples: 1},
		{Name: "a", FirstSeq: 20, LastSeq: 20, Samples: 1},
		{Name: "b", FirstSeq: 12, LastSeq: 13, Samples: 2},
		{Name: "b", FirstSeq: 14, LastSeq: 17, Samples: 4, SamplerOutage: true},
	}
	if got := longestRun(ivs); got != 3 {
		t.Errorf("longest run %d, want 3 (a's 10-12; b's DNS outage is no disruption)", got)
	}
}

// The loaded mechanism's load check reads the load's own record: re-lists on
// the survivors and failed writes make it hold, and its evidence cites them.
func TestRelistStormCitesTheLoad(t *testing.T) {
	c := relistStorm()
	if o := c.eval(&Figures{}); o.missing != MissingLoad {
		t.Errorf("no load: %+v", o)
	}
	ld := &results.LoadRecord{Name: "cl2-load", ScaleDown: 10, Clients: 22, Watches: 68, Objects: 317, CPUSeconds: 2.5, LoadAvg1: 3.2, Cores: 2,
		APIServers: []results.LoadAPIServer{{Name: "master-0", Relists: 34, RelistMaxMS: 1600, Writes: 120, WriteErrors: 4, WriteMaxMS: 4800}, {Name: "master-1", Relists: 70, Writes: 100}}}
	o := c.eval(&Figures{Load: ld})
	if !o.ok || !strings.Contains(o.evidence, "master-0 34 re-lists (slowest 1600 ms), 4 of 120 writes failed") || !strings.Contains(o.evidence, "load process CPU 2.5 s") {
		t.Errorf("storm: %+v", o)
	}
	ld.APIServers[0].WriteErrors = 0
	if o := c.eval(&Figures{Load: ld}); o.ok {
		t.Errorf("re-lists without a failed write hold: %+v", o)
	}
}
