package htmlreport_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/report/htmlreport"
	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
)

const chromiumBin = "/usr/bin/chromium"

// needBrowser returns Debian's chromium, or skips (fails with
// REPRO_REQUIRE_BROWSER=1) when it is not installed.
func needBrowser(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumBin); err != nil {
		if os.Getenv("REPRO_REQUIRE_BROWSER") == "1" {
			t.Fatalf("%s is missing and REPRO_REQUIRE_BROWSER=1 (apt-get install -y chromium)", chromiumBin)
		}
		t.Skipf("%s is not installed (apt-get install -y chromium); set REPRO_REQUIRE_BROWSER=1 to make this a failure", chromiumBin)
	}
	return chromiumBin
}

// artifacts is where screenshots are kept: $REPRO_ARTIFACTS or the test's
// temporary folder.
func artifacts(t *testing.T) string {
	if d := os.Getenv("REPRO_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// chromium runs headless Chromium on a file with the flags that work
// offline in a container, and returns its stdout and wall time.
func chromium(t *testing.T, bin, file, hash string, extra ...string) (string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1500,1250", "--virtual-time-budget=30000"}
	args = append(args, extra...)
	args = append(args, "file://"+file+hash)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, tail(errb.String(), 2000))
	}
	return out.String(), took
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

var drawnRE = regexp.MustCompile(`<div id="drawn"[^>]*>`)
var attrRE = regexp.MustCompile(`data-([a-z-]+)="([^"]*)"`)

// drawn is what the page's script says it drew, from the attributes of
// #drawn in the dumped DOM.
func drawn(t *testing.T, dom string) map[string]string {
	t.Helper()
	tag := drawnRE.FindString(dom)
	if tag == "" {
		t.Fatalf("no #drawn element in the DOM (%d bytes)", len(dom))
	}
	m := map[string]string{}
	for _, a := range attrRE.FindAllStringSubmatch(tag, -1) {
		m[a[1]] = html.UnescapeString(a[2])
	}
	if m["error"] != "" {
		t.Fatalf("the page failed: %s", m["error"])
	}
	if m["ready"] != "1" {
		t.Fatalf("the page did not finish drawing: %s", tag)
	}
	return m
}

// checkDrawn compares what the browser drew with the page data: one lane
// per backend-connection, every bar with its length, one lane per node.
func checkDrawn(t *testing.T, p *htmlreport.Page, d map[string]string) {
	t.Helper()
	var lanes, bars, nodes []string
	for _, r := range p.Runs {
		prefix := ""
		if p.Compare {
			prefix = r.Label + "/"
		}
		for _, l := range r.Lanes {
			lanes = append(lanes, prefix+l.Name)
			for _, b := range l.Bars {
				label := fmt.Sprintf("%.0f ms", math.Round(b.Ms))
				if b.Outage {
					label = "DNS outage " + label
				}
				bars = append(bars, prefix+l.Name+"="+label)
			}
		}
		for _, n := range r.Nodes {
			var ph []string
			for _, s := range n.Spans {
				ph = append(ph, s.Phase)
			}
			nodes = append(nodes, n.Node+":"+strings.Join(ph, ","))
		}
	}
	if got, want := d["lane-names"], strings.Join(lanes, "|"); got != want {
		t.Errorf("lanes drawn:\n %s\nwant\n %s", got, want)
	}
	if got, want := d["bar-labels"], strings.Join(bars, "|"); got != want {
		t.Errorf("bars drawn:\n %s\nwant\n %s", got, want)
	}
	if got, want := d["node-names"], strings.Join(nodes, "|"); got != want {
		t.Errorf("node lanes drawn:\n %s\nwant\n %s", got, want)
	}
	if d["latency-plots"] == "0" {
		t.Error("no latency plot drawn")
	}
}

func readPage(t *testing.T, file string) *htmlreport.Page {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return pageOf(t, b)
}

// TestBrowserSynthetic opens report.html of a synthetic rollout in headless
// Chromium: lanes, bars with their lengths and node lanes are drawn, and a
// view linked by #t= zooms to a gap with its label.
func TestBrowserSynthetic(t *testing.T) {
	bin := needBrowser(t)
	dir := t.TempDir()
	synthetic(t, dir, 3*time.Minute, standardGaps(3*time.Minute))
	if _, err := write.Rebuild(dir); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, htmlreport.FileName)
	p := readPage(t, file)
	dom, took := chromium(t, bin, file, "", "--dump-dom")
	d := drawn(t, dom)
	checkDrawn(t, p, d)
	if d["bars"] != "3" || d["bars-labelled"] != "3" || d["node-lanes"] != "3" || d["lanes"] != "6" {
		t.Errorf("drawn %v", d)
	}
	t.Logf("synthetic 3 min: drawn in %s ms in the page, chromium %v", d["load-ms"], took.Round(time.Millisecond))
	art := artifacts(t)
	shot := filepath.Join(art, "synthetic-report.png")
	chromium(t, bin, file, "", "--screenshot="+shot)
	// Zoomed to 1.5 s around the kube-api gap: single samples.
	b := p.Runs[0].Lanes[0].Bars[0]
	hash := fmt.Sprintf("#t=%d,%d", int(b.From)-300, int(b.To)+300)
	dz := drawn(t, mustDOM(t, bin, file, hash))
	if !strings.Contains(dz["bar-labels"], "kube-api-new-connections="+fmt.Sprintf("%.0f ms", math.Round(b.Ms))) || dz["lanes"] != "6" {
		t.Errorf("zoomed view drew %v", dz)
	}
	chromium(t, bin, file, hash, "--screenshot="+filepath.Join(art, "synthetic-report-zoomed.png"))
	// The details of one failed sample, as hovering shows them.
	l := p.Runs[0].Lanes[0]
	i := 0
	for l.C[i] == 0 {
		i++
	}
	shash := fmt.Sprintf("#sample=%s:%d", l.Name, l.Seq[i])
	tip := drawn(t, mustDOM(t, bin, file, shash))["tip"]
	for _, want := range []string{l.Name, "connect-refused", "served by", "master-0", "audit ID", "DNS", "connect", "TLS", "first byte", "error", "api/v1/namespaces/default"} {
		if !strings.Contains(tip, want) {
			t.Errorf("sample details lack %q: %s", want, tip)
		}
	}
	chromium(t, bin, file, shash, "--screenshot="+filepath.Join(art, "synthetic-sample-details.png"))
	t.Logf("screenshots in %s", art)
}

func mustDOM(t *testing.T, bin, file, hash string) string {
	dom, _ := chromium(t, bin, file, hash, "--dump-dom")
	return dom
}

// TestBrowserCompare opens a comparison page of two runs.
func TestBrowserCompare(t *testing.T) {
	bin := needBrowser(t)
	base := t.TempDir()
	d1, d2 := filepath.Join(base, "run-4.16"), filepath.Join(base, "run-4.17")
	synthetic(t, d1, 2*time.Minute, nil)
	synthetic(t, d2, 3*time.Minute, standardGaps(3*time.Minute))
	file := filepath.Join(base, "compare.html")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := write.WriteCompareHTML(f, []string{d1, d2}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	p := readPage(t, file)
	d := drawn(t, mustDOM(t, bin, file, ""))
	checkDrawn(t, p, d)
	if d["lanes"] != "12" || d["bars"] != "3" || d["node-lanes"] != "6" {
		t.Errorf("drawn %v", d)
	}
	chromium(t, bin, file, "", "--screenshot="+filepath.Join(artifacts(t), "compare.png"))
}

// TestBrowserLabRun opens the report of a real lab run: the lab's
// apiservers rolled with a near-zero shutdown delay behind a load balancer
// checking every 4 s, which loses requests. REPRO_LAB_RESULTS=DIR reuses
// an existing results folder instead of running the lab (~2 min).
func TestBrowserLabRun(t *testing.T) {
	bin := needBrowser(t)
	dir := os.Getenv("REPRO_LAB_RESULTS")
	if dir == "" {
		if testing.Short() {
			t.Skip("-short: no lab run")
		}
		home, _ := os.UserHomeDir()
		cached, _ := filepath.Glob(filepath.Join(home, ".cache", "repro", "bin", "kube-apiserver-*"))
		if len(cached) == 0 {
			t.Skip("the lab's binaries are not built (repro lab build); TestBrowserSynthetic covers the page")
		}
		dir = filepath.Join(t.TempDir(), "lab-run")
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		exe := filepath.Join(t.TempDir(), "repro")
		build := exec.Command("go", "build", "-o", exe, "./cmd/repro")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		// --lab: never the developer's own cluster, whatever kubeconfig is
		// around. The short-shutdown-delay profile gives real, short gaps
		// on new connections in a short rollout.
		run := exec.CommandContext(ctx, exe, "run", "--scenario", "apiserver-rollout", "--lab",
			"--lab-profile", "short-shutdown-delay", "--baseline", "3s", "--cool-down", "3s", "--min-ready-time", "2s", "--out", dir)
		run.Dir = t.TempDir()
		start := time.Now()
		out, err := run.CombinedOutput()
		if err != nil {
			t.Fatalf("repro run: %v\n%s", err, tail(string(out), 4000))
		}
		t.Logf("lab run took %v", time.Since(start).Round(time.Second))
	}
	if _, err := write.Rebuild(dir); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, htmlreport.FileName)
	p := readPage(t, file)
	d := drawn(t, mustDOM(t, bin, file, ""))
	checkDrawn(t, p, d)
	nBars := 0
	for _, l := range p.Runs[0].Lanes {
		nBars += len(l.Bars)
	}
	if len(p.Runs[0].Lanes) != 2*len(prober.DefaultBackendNames) || len(p.Runs[0].Nodes) != 3 || len(p.Runs[0].Servers) == 0 {
		t.Errorf("lab run: %d lanes, %d nodes, servers %v", len(p.Runs[0].Lanes), len(p.Runs[0].Nodes), p.Runs[0].Servers)
	}
	t.Logf("lab run: %d samples drawn in %s ms, %d disruption bars (%s labelled at full width)", sumSamples(p), d["load-ms"], nBars, d["bars-labelled"])
	art := artifacts(t)
	chromium(t, bin, file, "", "--screenshot="+filepath.Join(art, "lab-report.png"))
	if nBars > 0 {
		var first htmlreport.Bar
		first.From = math.Inf(1)
		for _, l := range p.Runs[0].Lanes {
			for _, b := range l.Bars {
				if b.From < first.From {
					first = b
				}
			}
		}
		hash := fmt.Sprintf("#t=%d,%d", int(first.From)-2000, int(first.To)+2000)
		chromium(t, bin, file, hash, "--screenshot="+filepath.Join(art, "lab-report-first-gap.png"))
	}
	t.Logf("screenshots in %s", art)
}

// loadTimes is what the page logs once drawn.
type loadTimes struct {
	DecodeMs, LoadMs, SinceNavigationMs, Points int
	DrawMs, RedrawMs                            float64
}

// measureLoad opens file in headless Chromium in real time (no virtual
// time budget, which stops the page's clocks) and reads the timings the
// page logs to the console when it has drawn.
func measureLoad(t *testing.T, bin, file, hash string) loadTimes {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--window-size=1500,1250", "--enable-logging=stderr", "--v=0", "file://"+file+hash)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		key := "repro-report: drawn "
		if strings.HasSuffix(hash, "&bench") {
			key = "repro-report: redraw "
		}
		i := strings.Index(line, key)
		if i < 0 {
			continue
		}
		js := line[i+len(key):]
		if j := strings.LastIndex(js, "}"); j >= 0 {
			js = js[:j+1]
		}
		var m loadTimes
		if err := json.Unmarshal([]byte(js), &m); err != nil {
			t.Fatalf("page log %q: %v", line, err)
		}
		return m
	}
	t.Fatal("chromium exited or timed out before the page logged that it had drawn")
	return loadTimes{}
}

func sumSamples(p *htmlreport.Page) int {
	n := 0
	for _, r := range p.Runs {
		for _, l := range r.Lanes {
			n += len(l.T)
		}
	}
	return n
}

// TestBrowserHourRun measures the page of a one-hour run at the default
// rate (6 pollers x 10/s = 216,000 samples): its size, the time to build
// it, and the time the browser takes to decode and draw it.
func TestBrowserHourRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no one-hour run")
	}
	dir := t.TempDir()
	synthetic(t, dir, time.Hour, standardGaps(time.Hour))
	start := time.Now()
	if _, err := write.Rebuild(dir); err != nil {
		t.Fatal(err)
	}
	rebuild := time.Since(start)
	file := filepath.Join(dir, htmlreport.FileName)
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	sst, _ := os.Stat(filepath.Join(dir, "samples.jsonl"))
	p := readPage(t, file)
	if n := sumSamples(p); n != 216000 {
		t.Fatalf("%d samples in the page, want 216000", n)
	}
	t.Logf("one-hour run: report.html %.2f MB (samples.jsonl %.1f MB); write.Rebuild with the page %v",
		float64(st.Size())/1e6, float64(sst.Size())/1e6, rebuild.Round(time.Millisecond))
	if st.Size() > 12<<20 {
		t.Errorf("report.html is %d bytes", st.Size())
	}
	bin := needBrowser(t)
	dom, took := chromium(t, bin, file, "", "--dump-dom")
	d := drawn(t, dom)
	checkDrawn(t, p, d)
	t.Logf("one-hour run: %s marks drawn at full width; chromium --dump-dom %v", d["points"], took.Round(time.Millisecond))
	m := measureLoad(t, bin, file, "")
	t.Logf("one-hour run in chromium, real time: drawn %d ms after navigation start (inflate+parse %d ms, script total %d ms; one full-width draw of %d marks %.1f ms)",
		m.SinceNavigationMs, m.DecodeMs, m.LoadMs, m.Points, m.DrawMs)
	for _, span := range []int{3600000, 600000, 60000, 5000} {
		mid := (p.Runs[0].From + p.Runs[0].To) / 3
		z := measureLoad(t, bin, file, fmt.Sprintf("#t=%d,%d&bench", int(mid), int(mid)+span))
		t.Logf("  a %d s view: redrawn in %.1f ms", span/1000, z.RedrawMs)
		if z.RedrawMs > 500 {
			t.Errorf("a %d s view took %.1f ms to redraw", span/1000, z.RedrawMs)
		}
	}
	if m.SinceNavigationMs > 10000 {
		t.Errorf("the page took %d ms to draw", m.SinceNavigationMs)
	}
	chromium(t, bin, file, "", "--screenshot="+filepath.Join(artifacts(t), "hour-report.png"))
}

// TestBrowserProbeFolder opens the page of a folder with samples only (a
// probe against a cluster: no rollout, no load balancer records, no
// run.json): lanes and bars, no node lanes, nothing broken.
func TestBrowserProbeFolder(t *testing.T) {
	bin := needBrowser(t)
	dir := t.TempDir()
	synthetic(t, dir, 2*time.Minute, standardGaps(2*time.Minute))
	for _, f := range []string{"events.jsonl", "lb-connections.jsonl", "run.json"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := write.Rebuild(dir); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, htmlreport.FileName)
	p := readPage(t, file)
	if r := p.Runs[0]; len(r.Nodes) != 0 || len(r.Stages) != 0 || len(r.Servers) != 0 {
		t.Errorf("probe folder: nodes %v stages %v servers %v", r.Nodes, r.Stages, r.Servers)
	}
	d := drawn(t, mustDOM(t, bin, file, ""))
	checkDrawn(t, p, d)
	if d["lanes"] != "6" || d["bars"] != "3" || d["node-lanes"] != "0" {
		t.Errorf("drawn %v", d)
	}
}

// TestBrowserMetricLanes draws a run's signals.jsonl under its lanes: one
// lane per kind, one line per apiserver.
func TestBrowserMetricLanes(t *testing.T) {
	bin := needBrowser(t)
	dir := t.TempDir()
	start := synthetic(t, dir, 2*time.Minute, nil)
	f, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.SignalWriter()
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 120; s++ {
		for _, n := range []string{"master-0", "master-1", "master-2"} {
			v := 0.02
			if n == "master-1" && s > 60 && s < 70 {
				v = 4
			}
			at := start.Add(time.Duration(s) * time.Second)
			if err := w.Write(results.Signal{Kind: results.SignalEtcdRequestLatency, Source: "scrape", Instance: n, At: at, Value: v}); err != nil {
				t.Fatal(err)
			}
			if err := w.Write(results.Signal{Kind: results.SignalAPIServerLatency, Source: "scrape", Instance: n, At: at, Value: v, Labels: map[string]string{"verb": "GET"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.CloseSignals(); err != nil {
		t.Fatal(err)
	}
	if _, err := write.Rebuild(dir); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, htmlreport.FileName)
	d := drawn(t, mustDOM(t, bin, file, ""))
	lanes := strings.Split(d["metric-lanes"], "|")
	if len(lanes) != 2 || !strings.Contains(lanes[0], ":3:360") || !strings.Contains(lanes[1], ":3:360") {
		t.Errorf("metric lanes drawn %q, want apiserver and etcd latency, 3 series of 120 points each", d["metric-lanes"])
	}
	chromium(t, bin, file, "", "--screenshot="+filepath.Join(artifacts(t), "synthetic-metrics.png"))
}

// TestBrowserClusterRun opens the page of a cluster run (testdata's
// run.json of a 4.17 AWS cluster over synthetic samples) and checks that its
// run panel says what was measured: OpenShift and Kubernetes versions,
// platform, topology, and the measuring host's verdict.
func TestBrowserClusterRun(t *testing.T) {
	bin := needBrowser(t)
	dir := t.TempDir()
	start := synthetic(t, dir, 2*time.Minute, standardGaps(2*time.Minute))
	b, err := os.ReadFile(filepath.Join("testdata", "cluster-run", results.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.RunFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := results.CreateJSONL(filepath.Join(dir, results.ControlFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1200 {
		s := results.Sample{Backend: "repro-control", Connection: results.ReusedConnections, Seq: uint64(i),
			Start: start.Add(time.Duration(i) * 100 * time.Millisecond), Duration: 2 * time.Millisecond}
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := write.Rebuild(dir); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, htmlreport.FileName)
	dom := mustDOM(t, bin, file, "")
	drawn(t, dom)
	for _, kv := range [][2]string{
		{"OpenShift version", "4.17.3"}, {"Kubernetes version", "v1.30.5"}, {"platform", "AWS"},
		{"topology", "HighlyAvailable"}, {"iterations", "1"},
		{"measuring host", "clean: the control poller&#39;s 1200 requests"},
	} {
		want := "<dt>" + kv[0] + "</dt><dd>" + kv[1]
		if !strings.Contains(dom, want) && !strings.Contains(dom, strings.ReplaceAll(want, "&#39;", "'")) {
			t.Errorf("the run panel lacks %q", want)
		}
	}
	chromium(t, bin, file, "", "--screenshot="+filepath.Join(artifacts(t), "cluster-run-report.png"))
}
