package results

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// LoadFile is the results file the lab's load generator (issue 28) streams
// its outcomes to, one LoadEvent a line.
const LoadFile = "load.jsonl"

// LoadEvent is one line of load.jsonl: one outcome of one client of the
// load, so that per apiserver figures (watches held, re-lists caused by a
// cut) can be computed after the run without the load process.
type LoadEvent struct {
	// Time is when the outcome happened, RFC 3339 with nanoseconds.
	Time string `json:"time"`
	// Kind is list, watch-open, watch-cut, relist or write.
	Kind string `json:"kind"`
	// Client names the client kind (node, controller, operator).
	Client string `json:"client"`
	// Resource is the resource listed, watched or written.
	Resource string `json:"resource,omitempty"`
	// Target is the apiserver the connection reached, "" when unknown.
	Target string `json:"target,omitempty"`
	// LatencyMS is the request's duration in milliseconds (lists, writes).
	LatencyMS float64 `json:"latencyMs,omitempty"`
	// Error is the request's error; "" when it succeeded.
	Error string `json:"error,omitempty"`
}

// LoadRecord is what run.json says of the load a lab run carried: which
// load, its scale, and how much of the machine the load itself took, so a
// reader can tell a stall of the machine from one of the cluster.
type LoadRecord struct {
	// Name is the --lab-load the run used.
	Name string `json:"name"`
	// ScaleDown is the declared factor the cited sizes were divided by.
	ScaleDown int `json:"scaleDown,omitempty"`
	// PID is the load process's pid.
	PID int `json:"pid,omitempty"`
	// CPUSeconds is the load process's user+system CPU at its end.
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
	// LoadAvg1 is the machine's 1-minute load average at the run's end.
	LoadAvg1 float64 `json:"loadAvg1,omitempty"`
	// Cores is the machine's online CPU count, to read LoadAvg1 against.
	Cores int `json:"cores,omitempty"`
}

// ProcCPUSeconds reads a process's user+system CPU from /proc/<pid>/stat
// (proc(5): fields 14 utime and 15 stime, in clock ticks; USER_HZ is 100 on
// Linux for every architecture Go's linux ports run on).
func ProcCPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU takes the fields after the command's closing parenthesis,
// since the command itself may hold spaces and parentheses.
func parseStatCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command in /proc stat line")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat line")
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad utime/stime in /proc stat line")
	}
	return (ut + st) / 100, nil
}

// LoadAvg1 reads the machine's 1-minute load average from /proc/loadavg.
func LoadAvg1() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 0, fmt.Errorf("empty /proc/loadavg")
	}
	return strconv.ParseFloat(f[0], 64)
}
