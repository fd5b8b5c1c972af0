package results

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

func TestLoadRecordRoundTrip(t *testing.T) {
	r := NewRun("run", nil, time.Now())
	if r.Extra.Load != nil {
		t.Fatal("a run without a load has a LoadRecord")
	}
	r.Extra.Load = &LoadRecord{Name: "cluster", ScaleDown: 20, CPUSeconds: 1.5, LoadAvg1: 2.25, Cores: 2}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Run
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	l := back.Extra.Load
	if l == nil || l.Name != "cluster" || l.ScaleDown != 20 || l.CPUSeconds != 1.5 || l.LoadAvg1 != 2.25 {
		t.Errorf("read back %+v", l)
	}
}

func TestParseStatCPU(t *testing.T) {
	// A command with a space and a parenthesis, as proc(5) allows.
	line := "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 1 0 0"
	got, err := parseStatCPU(line)
	if err != nil || got != 3 {
		t.Errorf("parseStatCPU = %v, %v; want 3 s", got, err)
	}
	if _, err := parseStatCPU("garbage"); err == nil {
		t.Error("no error for a line without a command")
	}
}

func TestProcCPUSecondsSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := ProcCPUSeconds(os.Getpid()); err != nil {
		t.Error(err)
	}
	if _, err := LoadAvg1(); err != nil {
		t.Error(err)
	}
}
