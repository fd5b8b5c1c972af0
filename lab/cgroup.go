package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// cgroupV1CPU is where the cgroup v1 cpu controller is mounted on the lab's
// machines (issue 28: they mount cgroup v1 and the lab runs as root).
const cgroupV1CPU = "/sys/fs/cgroup/cpu"

// cpuPeriodUS is the CFS period the share is enforced over: the kernel's
// default of 100 ms (Documentation/scheduler/sched-bwc.rst), so a share of
// 0.5 cores is a 50 ms quota each 100 ms.
const cpuPeriodUS = 100000

// cpuCgroup holds processes to a share of the machine's CPU with the cgroup
// v1 cpu controller's CFS bandwidth (cpu.cfs_quota_us / cpu.cfs_period_us),
// as a master's CPU limits its kube-apiserver; Remove deletes it at stop.
type cpuCgroup struct {
	dir string
}

// newCPUCgroup creates the cgroup name under root (cgroupV1CPU outside
// tests) with a quota of cores CPUs per period.
func newCPUCgroup(root, name string, cores float64) (*cpuCgroup, error) {
	if cores <= 0 {
		return nil, fmt.Errorf("cpu share %v: want > 0 cores", cores)
	}
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cpu cgroup: %w", err)
	}
	c := &cpuCgroup{dir: dir}
	quota := int64(cores * cpuPeriodUS)
	// The period first: the kernel checks the quota against it.
	if err := c.write("cpu.cfs_period_us", cpuPeriodUS); err != nil {
		c.Remove()
		return nil, err
	}
	if err := c.write("cpu.cfs_quota_us", quota); err != nil {
		c.Remove()
		return nil, err
	}
	return c, nil
}

// Add moves pid (and, as cgroup v1 does, its later children) into the cgroup.
func (c *cpuCgroup) Add(pid int) error {
	return c.write("cgroup.procs", int64(pid))
}

// Remove deletes the cgroup; its processes must have exited (the kernel
// refuses rmdir of a cgroup with members), which holds after a node's stop.
func (c *cpuCgroup) Remove() error {
	if c == nil {
		return nil
	}
	err := os.Remove(c.dir)
	if err == nil || os.IsNotExist(err) {
		return nil
	}
	if c.isReal() {
		return fmt.Errorf("cpu cgroup: %w", err)
	}
	// A plain directory (tests) holds the control files written to it.
	return os.RemoveAll(c.dir)
}

// isReal is whether dir is under the kernel's mount, where RemoveAll must
// not be tried.
func (c *cpuCgroup) isReal() bool {
	rel, err := filepath.Rel(cgroupV1CPU, c.dir)
	return err == nil && rel != ".." && len(rel) > 0 && rel[0] != '.'
}

func (c *cpuCgroup) write(file string, v int64) error {
	p := filepath.Join(c.dir, file)
	if err := os.WriteFile(p, []byte(strconv.FormatInt(v, 10)), 0o644); err != nil {
		return fmt.Errorf("cpu cgroup: %w", err)
	}
	return nil
}
