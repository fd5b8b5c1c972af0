package results_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

func TestCreateUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := results.Create(filepath.Join(file, "out"))
	if err == nil {
		t.Fatal("created a folder under a regular file")
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "plain-file/out") {
		t.Errorf("want one line naming the folder, got %q", msg)
	}
}

func TestCreateRefusesExistingSamples(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, results.SamplesFile), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := results.Create(dir); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("overwrote an earlier run: %v", err)
	}
}

func TestRunRoundTrip(t *testing.T) {
	f, err := results.Create(filepath.Join(t.TempDir(), "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	r := results.NewRun("probe", []string{"repro", "probe", "--token", "s3cr3t", "--password=hunter2", "--duration", "1m"}, start)
	r.Server = "https://api.example:6443"
	r.Extra.Scenario = "baseline"
	r.Finish(start.Add(time.Minute), results.StatusInterrupted)
	if err := f.WriteRun(r); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(f.Path(results.RunFile))
	if strings.Contains(string(raw), "s3cr3t") || strings.Contains(string(raw), "hunter2") {
		t.Fatalf("secret in run.json:\n%s", raw)
	}
	back, err := f.ReadRun()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"repro", "probe", "--token", "REDACTED", "--password=REDACTED", "--duration", "1m"}
	if !reflect.DeepEqual(back.Args, want) || back.Status != "interrupted" || back.Extra.Scenario != "baseline" || !back.End.Equal(start.Add(time.Minute)) {
		t.Errorf("round trip: %+v", back)
	}
	if back.Tool.Name != "repro" || back.Tool.GoVersion == "" {
		t.Errorf("tool info missing: %+v", back.Tool)
	}
}

type rec struct {
	N int    `json:"n"`
	S string `json:"s"`
}

func TestJSONLFlushesWithinASecond(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	w, err := results.CreateJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(rec{1, "a"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(results.FlushInterval + 500*time.Millisecond)
	for {
		b, _ := os.ReadFile(path)
		if string(b) == "{\"n\":1,\"s\":\"a\"}\n" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("line not on disk after %v: %q", results.FlushInterval, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestReadJSONLTruncatedLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	w, err := results.CreateJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := w.Write(rec{i, strings.Repeat("x", 10)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash mid-write leaves half a line without newline.
	fh, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString(`{"n":3,"s":"xx`)
	fh.Close()

	var got []rec
	st, err := results.ReadJSONL(path, func(line []byte) error {
		var r rec
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		got = append(got, r)
		return nil
	})
	if err != nil {
		t.Fatalf("truncated last line failed the read: %v", err)
	}
	if !st.TruncatedLast || st.Lines != 3 || len(got) != 3 || got[2].N != 2 {
		t.Errorf("stats %+v, got %v", st, got)
	}
}

func TestReadJSONLCorruptMiddleLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	os.WriteFile(path, []byte("{\"n\":1}\nnot json\n{\"n\":2}\n"), 0o644)
	_, err := results.ReadJSONL(path, func(line []byte) error {
		var r rec
		return json.Unmarshal(line, &r)
	})
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("want an error naming line 2, got %v", err)
	}
}

func TestDefaultDir(t *testing.T) {
	got := results.DefaultDir("probe", time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)))
	if got != filepath.Join("repro-results", "20250102T020405Z-probe") {
		t.Errorf("got %s", got)
	}
}

// TestLabLineNamesTheLoadBalancer: the summary's lab line says which load
// balancer ran; a run recorded before there was a choice ran the proxy.
func TestLabLineNamesTheLoadBalancer(t *testing.T) {
	for _, c := range []struct {
		lab  *results.LabRecord
		want string
	}{
		{&results.LabRecord{LB: "kernel", Timing: "fast", TimingFactor: 10}, "kernel load balancer"},
		{&results.LabRecord{Timing: "fast", TimingFactor: 10}, "proxy load balancer"},
	} {
		r := &results.Run{Extra: results.Extra{Lab: c.lab}}
		if got := r.LabLine(); !strings.Contains(got, c.want) {
			t.Errorf("LabLine() = %q, want it to name the %s", got, c.want)
		}
	}
}

// TestRecordsReadAnOldFolder: a run.json written while the lab and cluster
// settings were free-form maps (before the kernel LB and the kube-apiserver
// version were recorded) still reads into the typed records.
func TestRecordsReadAnOldFolder(t *testing.T) {
	f, err := results.Open(filepath.Join("testdata", "old-lab-run"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.ReadRun()
	if err != nil {
		t.Fatal(err)
	}
	l := r.Extra.Lab
	if l == nil {
		t.Fatal("Extra.Lab = nil for a lab run")
	}
	if l.Profile != "healthy" || l.Nodes != 3 || l.Knob("shutdown-delay") != "12.9s" || l.Knob("lb-unhealthy-threshold") != "2" || l.TimingFactor != 10 || l.LB != "" || !reflect.DeepEqual(l.Sets, []string{"lb-health-interval=1s"}) {
		t.Errorf("Lab() = %+v", l)
	}
	if iv, ok := l.KnobDuration("lb-health-interval"); !ok || iv != time.Second {
		t.Errorf("KnobDuration(lb-health-interval) = %v, %v", iv, ok)
	}
	if n, ok := l.KnobInt("lb-unhealthy-threshold"); !ok || n != 2 {
		t.Errorf("KnobInt(lb-unhealthy-threshold) = %v, %v", n, ok)
	}
	if r.Settings.ProbeTimeout.D() != 3400*time.Millisecond {
		t.Errorf("Settings.ProbeTimeout = %v, want 3.4s", r.Settings.ProbeTimeout)
	}
	if c := r.Extra.Cluster; c == nil || c.ServerVersion != "v1.34.4" || c.OpenShift {
		t.Errorf("Cluster() = %+v", c)
	}
	want := "profile healthy, timing fast (AWS durations / 10), proxy load balancer: shutdown delay 12.9s, grace 19.4s, LB health check every 1s (timeout 1s, 2/2), probe timeout 3.4s"
	if got := r.LabLine(); got != want {
		t.Errorf("LabLine() =\n%s\nwant\n%s", got, want)
	}
}

// TestRecordsRoundTrip: a lab record set in this process reads back the
// same, before and after run.json is written, with the keys earlier folders
// used.
func TestRecordsRoundTrip(t *testing.T) {
	f, err := results.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := results.NewRun("run", nil, time.Now())
	in := &results.LabRecord{Profile: "etcd-stall", Sets: []string{}, Nodes: 3, LB: "kernel", Knobs: map[string]string{"lb-health-interval": "1s"}, TimingFactor: 10}
	r.Extra.Lab = in
	r.Extra.Cluster = &results.ClusterRecord{ServerVersion: "v1.34.4"}
	r.Settings.ProbeTimeout = results.Duration(3400 * time.Millisecond)
	if err := f.WriteRun(r); err != nil {
		t.Fatal(err)
	}
	back, err := f.ReadRun()
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Extra.Lab; !reflect.DeepEqual(got, in) {
		t.Errorf("read back: Extra.Lab = %+v, want %+v", got, in)
	}
	raw, _ := os.ReadFile(f.Path(results.RunFile))
	// The keys earlier folders used, and durations as Go's text.
	for _, key := range []string{`"knobs"`, `"lb-health-interval": "1s"`, `"probeTimeout": "3.4s"`, `"serverVersion": "v1.34.4"`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("run.json lacks %s:\n%s", key, raw)
		}
	}
	if c := back.Extra.Cluster; c == nil || c.ServerVersion != "v1.34.4" {
		t.Errorf("read back: Extra.Cluster = %+v", c)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://alice:PASS@127.0.0.1:6443/x":  "https://127.0.0.1:6443/x",
		"alice:PASS@127.0.0.1:6443":            "127.0.0.1:6443",
		"https://127.0.0.1:6443":               "https://127.0.0.1:6443",
		"--server=https://a:b@h:1":             "--server=https://a:b@h:1", // RedactURL takes one URL
		"user@example.com is not a URL to cut": "user@example.com is not a URL to cut",
	} {
		if got := results.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	got := results.RedactArgs([]string{"repro", "--server=https://a:PASS@h:1", "--server", "a:PASS@h:1", "--token", "T"})
	if strings.Contains(strings.Join(got, " "), "PASS") || got[5] != "REDACTED" {
		t.Errorf("RedactArgs kept a secret: %q", got)
	}
}
