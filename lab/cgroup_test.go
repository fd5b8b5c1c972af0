package lab

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCPUCgroupWritesQuotaAndRemoves(t *testing.T) {
	root := t.TempDir()
	c, err := newCPUCgroup(root, "repro-node1", 0.5)
	if err != nil {
		t.Fatal(err)
	}
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(root, "repro-node1", f))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("cpu.cfs_period_us"); got != "100000" {
		t.Errorf("period %q", got)
	}
	if got := read("cpu.cfs_quota_us"); got != "50000" {
		t.Errorf("quota %q, want 50000 for half a core", got)
	}
	if err := c.Add(1234); err != nil || read("cgroup.procs") != "1234" {
		t.Errorf("Add: %v", err)
	}
	if err := c.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "repro-node1")); !os.IsNotExist(err) {
		t.Errorf("cgroup left behind: %v", err)
	}
	if _, err := newCPUCgroup(root, "x", 0); err == nil {
		t.Error("a share of 0 cores accepted")
	}
}

func TestCPUCgroupOnTheKernelsMount(t *testing.T) {
	if _, err := os.Stat(filepath.Join(cgroupV1CPU, "cpu.cfs_quota_us")); err != nil || os.Geteuid() != 0 {
		t.Skip("no cgroup v1 cpu controller writable here")
	}
	c, err := newCPUCgroup(cgroupV1CPU, "repro-test-cgroup", 0.25)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(); err != nil {
		t.Fatal(err)
	}
}
