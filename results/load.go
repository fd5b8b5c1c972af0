package results

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
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
	// Kind is list, relist, watch-open, watch-cut (ended by the server or
	// the connection), watch-stop (ended by the client) or write.
	Kind string `json:"kind"`
	// Client names the client kind (node, controller, operator).
	Client string `json:"client"`
	// Resource is the resource listed, watched or written.
	Resource string `json:"resource,omitempty"`
	// Identity is the user the client authenticated as
	// (system:node:worker-0, system:serviceaccount:kube-system:...).
	Identity string `json:"identity,omitempty"`
	// Watch names one reflector's watch, the same on its watch-open and
	// the watch-cut or watch-stop that ends it.
	Watch string `json:"watch,omitempty"`
	// Local is the client's local address of the connection the request
	// went over, what the load balancer's connection records are keyed by.
	Local string `json:"local,omitempty"`
	// Target is the apiserver the connection reached, "" when unknown
	// (filled in from the load balancer's records after the run).
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
	// Clients and Watches are how many clients and reflectors the load ran.
	Clients int `json:"clients,omitempty"`
	Watches int `json:"watches,omitempty"`
	// Objects is how many objects the load created before it started.
	Objects int `json:"objects,omitempty"`
	// APIServers are the load's outcomes per apiserver its requests reached.
	APIServers []LoadAPIServer `json:"apiservers,omitempty"`
	// Terminations are the watches each apiserver held around each node's
	// termination.
	Terminations []LoadTermination `json:"terminations,omitempty"`
	// Unattributed counts events whose connection the load balancer's
	// records did not name a target for.
	Unattributed int `json:"unattributed,omitempty"`
}

// LoadAPIServer is the load's outcomes on one apiserver over the run.
type LoadAPIServer struct {
	Name string `json:"name"`
	// Lists counts the reflectors' first lists, Relists the later ones
	// (after a cut watch or an expired resource version).
	Lists   int `json:"lists"`
	Relists int `json:"relists"`
	// RelistP50MS and RelistMaxMS are the re-lists' latencies.
	RelistP50MS float64 `json:"relistP50Ms,omitempty"`
	RelistMaxMS float64 `json:"relistMaxMs,omitempty"`
	// WatchOpens counts watches opened; WatchCuts those the server or the
	// connection ended.
	WatchOpens int `json:"watchOpens"`
	WatchCuts  int `json:"watchCuts"`
	// Writes and WriteErrors count the writers' requests; the latencies
	// are the successful ones'.
	Writes      int     `json:"writes"`
	WriteErrors int     `json:"writeErrors"`
	WriteP50MS  float64 `json:"writeP50Ms,omitempty"`
	WriteMaxMS  float64 `json:"writeMaxMs,omitempty"`
	// ListErrors counts failed lists and re-lists.
	ListErrors int `json:"listErrors,omitempty"`
}

// LoadTermination is the watches each apiserver held just before a node's
// kube-apiserver was told to terminate, and once its successor was ready
// (or, without one, at the run's end).
type LoadTermination struct {
	Node   string    `json:"node"`
	Before time.Time `json:"before"`
	After  time.Time `json:"after"`
	// WatchesBefore and WatchesAfter are open watches by apiserver.
	WatchesBefore map[string]int `json:"watchesBefore"`
	WatchesAfter  map[string]int `json:"watchesAfter"`
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

// Lines are the summary's lines for the load: one for the load itself,
// then one per apiserver with the watches it held before and after each
// node's termination, its re-lists and its writers' outcomes.
func (r *LoadRecord) Lines() []string {
	if r == nil {
		return nil
	}
	head := fmt.Sprintf("load: %s", r.Name)
	if r.ScaleDown > 1 {
		head += fmt.Sprintf(" (its sources' sizes divided by %d)", r.ScaleDown)
	}
	head += fmt.Sprintf(": %d clients, %d watches, %d objects; the load process used %.1f CPU s", r.Clients, r.Watches, r.Objects, r.CPUSeconds)
	if r.Cores > 0 {
		head += fmt.Sprintf(", machine load average %.1f on %d cores", r.LoadAvg1, r.Cores)
	}
	out := []string{head}
	for _, a := range r.APIServers {
		var terms []string
		for _, t := range r.Terminations {
			terms = append(terms, fmt.Sprintf("%s %d->%d", t.Node, t.WatchesBefore[a.Name], t.WatchesAfter[a.Name]))
		}
		l := fmt.Sprintf("load on %s:", a.Name)
		if len(terms) > 0 {
			l += " watches before->after each node's termination " + strings.Join(terms, ", ") + ";"
		}
		l += fmt.Sprintf(" re-lists %d", a.Relists)
		if a.Relists > 0 {
			l += fmt.Sprintf(" (p50 %.0f ms, max %.0f ms)", a.RelistP50MS, a.RelistMaxMS)
		}
		l += fmt.Sprintf(", watch cuts %d, writes %d (%d failed", a.WatchCuts, a.Writes, a.WriteErrors)
		if a.Writes > a.WriteErrors {
			l += fmt.Sprintf(", p50 %.0f ms, max %.0f ms", a.WriteP50MS, a.WriteMaxMS)
		}
		l += ")"
		if a.ListErrors > 0 {
			l += fmt.Sprintf(", failed lists %d", a.ListErrors)
		}
		out = append(out, l)
	}
	if r.Unattributed > 0 {
		out = append(out, fmt.Sprintf("load: %d of its events' connections had no load balancer record naming an apiserver", r.Unattributed))
	}
	return out
}
