// Package results is the results folder: the contract between the commands
// that measure (probe, and later the scenarios) and the report that is
// derived from what they measured.
//
// A results folder holds:
//
//	run.json                what ran: tool version, redacted command line,
//	                        target server, start, end, status, extras
//	samples.jsonl           one results.Sample per line, streamed during the run
//	events.jsonl            (later) rollout timeline events, same streaming writer
//	intervals.json          derived: disruption intervals, sippy/origin schema
//	backend-disruption.json derived: origin's BackendDisruptionList
//	summary.txt             derived: per backend-connection figures
//	junit.xml               derived: one test case per backend-connection
//	placements.json         derived: where each disruption sits in the rollout
//	e2e-timelines_spyglass_<run id>.json
//	                        derived: origin's interval file, by origin's rules
//	backend-disruption_<run id>.json
//	                        derived: origin's BackendDisruptionList, by
//	                        origin's rules (see package origin)
//	attribution.jsonl       where each failed sample went, from the apiservers'
//	                        audit logs (repro attribute)
//
// Derived files are rebuilt offline from samples.jsonl by write.Rebuild
// (package report/write).
package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// File names inside a results folder.
const (
	RunFile               = "run.json"
	SamplesFile           = "samples.jsonl"
	EventsFile            = "events.jsonl"
	IntervalsFile         = "intervals.json"
	BackendDisruptionFile = "backend-disruption.json"
	SummaryFile           = "summary.txt"
	// JUnitFile is the junit report, one test case per backend-connection.
	JUnitFile = "junit.xml"
	// PlacementsFile is the machine-readable twin of summary.txt's "where
	// the gaps sit" section.
	PlacementsFile = "placements.json"
	// LogFile is the log a run keeps: every line at every level.
	LogFile = "repro.log"
	// AttributionFile holds one verdict per failed sample: where the
	// request went, from the apiservers' audit logs (repro attribute).
	AttributionFile = "attribution.jsonl"
)

// Run statuses recorded in run.json.
const (
	StatusRunning     = "running"
	StatusComplete    = "complete"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
)

// Folder is an existing results folder.
type Folder struct {
	dir string
	// signals is the folder's one signals.jsonl writer (SignalWriter).
	sigMu   sync.Mutex
	signals *JSONLWriter
}

// DefaultDir returns ./repro-results/<UTC timestamp>-<command>, the folder
// used when --out is not given.
func DefaultDir(command string, now time.Time) string {
	return filepath.Join("repro-results", now.UTC().Format("20060102T150405Z")+"-"+command)
}

// Create makes dir (and its parents) and checks that it is writable. The
// error is one line naming the folder. An existing folder that already holds
// samples is refused so an earlier run is never overwritten.
func Create(dir string) (*Folder, error) {
	if dir == "" {
		return nil, errors.New("results folder: empty path")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create results folder %s: %s", dir, rootCause(err))
	}
	if _, err := os.Stat(filepath.Join(dir, SamplesFile)); err == nil {
		return nil, fmt.Errorf("results folder %s already holds %s; choose another --out", dir, SamplesFile)
	}
	probe, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return nil, fmt.Errorf("results folder %s is not writable: %s", dir, rootCause(err))
	}
	name := probe.Name()
	probe.Close()
	os.Remove(name)
	return &Folder{dir: dir}, nil
}

// Open opens an existing results folder for reading or rebuilding.
func Open(dir string) (*Folder, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("results folder %s: %s", dir, rootCause(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("results folder %s is not a directory", dir)
	}
	return &Folder{dir: dir}, nil
}

// Dir returns the folder's path.
func (f *Folder) Dir() string { return f.dir }

// Path returns the path of a file inside the folder.
func (f *Folder) Path(name string) string { return filepath.Join(f.dir, name) }

// RemoveIfEmpty removes the folder if nothing was written to it, so a run
// that failed before measuring leaves no clutter. It reports whether it did.
func (f *Folder) RemoveIfEmpty() bool {
	entries, err := os.ReadDir(f.dir)
	if err != nil || len(entries) != 0 {
		return false
	}
	return os.Remove(f.dir) == nil
}

// WriteFile writes a whole file atomically (temporary file, then rename),
// so a reader never sees half of it.
func (f *Folder) WriteFile(name string, data []byte) error {
	tmp, err := os.CreateTemp(f.dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %s", f.Path(name), rootCause(err))
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %s", f.Path(name), rootCause(err))
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %s", f.Path(name), rootCause(err))
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), f.Path(name)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %s", f.Path(name), rootCause(err))
	}
	return nil
}

// Run is the content of run.json.
type Run struct {
	// Tool identifies the binary that measured.
	Tool Tool `json:"tool"`
	// Command is the subcommand, e.g. "probe".
	Command string `json:"command"`
	// Args is the full command line with secret values redacted.
	Args []string `json:"args"`
	// Server is the API server URL polled.
	Server string `json:"server,omitempty"`
	// Start and End bound the run; End is zero while it runs.
	Start time.Time  `json:"start"`
	End   *time.Time `json:"end,omitempty"`
	// Status is running, complete, interrupted or failed.
	Status string `json:"status"`
	// Error is why a failed run failed.
	Error string `json:"error,omitempty"`
	// Settings records the parameters that shape the samples (interval,
	// probe timeout, backends, protocol) and the scenario's timings.
	Settings Settings `json:"settings,omitzero"`
	// Auth is how the client authenticated (token, client-certificate,
	// exec:<command>, auth-provider:<name>, basic, none), never the secret.
	// A bearer token is checked through the oauth-apiserver on OpenShift,
	// so 401s during a rollout may be an authentication outage.
	Auth string `json:"auth,omitempty"`
	// Proxy is the proxy the pollers connect through (userinfo removed),
	// empty when they connect to the server directly. With a proxy, a "new
	// connection" is new from the client to the proxy only.
	Proxy string `json:"proxy,omitempty"`
	// Credentials says where the credentials came from, never the secret.
	Credentials *Credentials `json:"credentials,omitempty"`
	// Clock is the server's clock against ours, measured before the run.
	Clock *Clock `json:"clock,omitempty"`
	// Extra is what the run ran on (cluster or lab), its scenario, and
	// what each producer of evidence recorded.
	Extra Extra `json:"extra,omitzero"`
}

// Clock is the API server's clock minus ours, measured from the Date
// headers of several responses before the run.
type Clock struct {
	// Offset is the middle of the range every sample allows.
	Offset time.Duration `json:"offsetNs"`
	// Resolution is half that range's width: the true offset is within
	// Offset ± Resolution when Consistent.
	Resolution time.Duration `json:"resolutionNs"`
	// Samples is how many responses carried a Date header.
	Samples int `json:"samples"`
	// BestRTT is the shortest time from request written to first byte.
	BestRTT time.Duration `json:"bestRttNs"`
	// Consistent is false when the samples' ranges do not overlap: the
	// servers behind the URL disagree about the time, or one answered
	// late. Offset is then the median of the samples' midpoints and
	// Resolution half a second.
	Consistent bool `json:"consistent"`
	// Text is the same in words, e.g. "+1.234s ±12ms (25 samples)".
	Text string `json:"text"`
	// CorrectedEvents is true when the rollout's server-stamped event
	// times were moved onto our clock by Offset (done above 100 ms).
	CorrectedEvents bool `json:"correctedEvents,omitempty"`
}

// String says the offset and its resolution, e.g. "+1.234s ±12ms (25 samples)".
func (c Clock) String() string {
	sign := "+"
	if c.Offset < 0 {
		sign = ""
	}
	s := fmt.Sprintf("%s%v ±%v (%d samples", sign, c.Offset.Round(time.Millisecond), c.Resolution.Round(time.Millisecond), c.Samples)
	if !c.Consistent {
		s += ", inconsistent: the servers disagree"
	}
	return s + ")"
}

// Tool identifies the binary from its build information.
type Tool struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Revision  string `json:"revision,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
}

// CurrentTool reads the running binary's module version and VCS stamp.
func CurrentTool() Tool {
	t := Tool{Name: "repro", Version: "(devel)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return t
	}
	t.GoVersion = bi.GoVersion
	if bi.Main.Version != "" {
		t.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			t.Revision = s.Value
		case "vcs.modified":
			t.Modified = s.Value == "true"
		}
	}
	return t
}

// NewRun starts a run record for command with the given command line
// (os.Args), redacting secrets.
func NewRun(command string, args []string, start time.Time) *Run {
	return &Run{
		Tool:    CurrentTool(),
		Command: command,
		Args:    RedactArgs(args),
		Start:   start.UTC(),
		Status:  StatusRunning,
	}
}

// Finish sets the end time and final status.
func (r *Run) Finish(end time.Time, status string) {
	e := end.UTC()
	r.End = &e
	r.Status = status
}

// WriteRun writes run.json atomically.
func (f *Folder) WriteRun(r *Run) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return f.WriteFile(RunFile, append(b, '\n'))
}

// ReadRun reads run.json.
func (f *Folder) ReadRun() (*Run, error) {
	b, err := os.ReadFile(f.Path(RunFile))
	if err != nil {
		return nil, fmt.Errorf("read %s: %s", f.Path(RunFile), rootCause(err))
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		// A field of another type (an older or newer folder's) is left
		// zero and the rest is still read: the decoder goes on past it.
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return nil, fmt.Errorf("read %s: %v", f.Path(RunFile), err)
		}
	}
	return &r, nil
}

// Credentials says where a run's credentials came from and how the server
// was verified, never the secret itself.
type Credentials struct {
	// Source is "flags" (--token, --client-certificate/--client-key given
	// on the command line, nothing read from a kubeconfig), "kubeconfig",
	// "in-cluster", or "none".
	Source string `json:"source"`
	// Flags names the credential flags used, e.g. ["--token"].
	Flags []string `json:"flags,omitempty"`
	// File, Context and User name the kubeconfig entry used (Source
	// "kubeconfig").
	File    string `json:"file,omitempty"`
	Context string `json:"context,omitempty"`
	User    string `json:"user,omitempty"`
	// Insecure is true when the server's certificate is not verified
	// (--insecure-skip-tls-verify, or insecure-skip-tls-verify in the
	// kubeconfig).
	Insecure bool `json:"insecureSkipTLSVerify,omitempty"`
}

// String says it in one line for the preview, e.g. "flag --token" or
// "kubeconfig /home/u/kc, context admin, user admin".
func (c Credentials) String() string {
	var s string
	switch c.Source {
	case "flags":
		s = "flag " + strings.Join(c.Flags, ", ")
		if len(c.Flags) == 0 {
			s = "flags (none given)"
		}
	case "kubeconfig":
		s = "kubeconfig " + c.File
		if c.Context != "" {
			s += ", context " + c.Context
		}
		if c.User != "" {
			s += ", user " + c.User
		}
		if len(c.Flags) > 0 {
			s += " (overridden by flag " + strings.Join(c.Flags, ", ") + ")"
		}
	default:
		s = c.Source
	}
	if c.Insecure {
		s += "; TLS verification OFF"
	}
	return s
}

// RedactURL removes the user info (user:password@) from a URL, so a
// password typed into --server never reaches the terminal, a log or a
// results file. Text that does not parse as a URL with a host is returned
// as it is.
func RedactURL(raw string) string {
	if !strings.Contains(raw, "@") {
		return raw
	}
	if !strings.Contains(raw, "://") {
		// A scheme-less host (user:pass@host:port), as --server takes it.
		if u, err := url.Parse("//" + raw); err == nil && u.User != nil && u.Host != "" {
			u.User = nil
			return strings.TrimPrefix(u.String(), "//")
		}
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil || u.Host == "" {
		return raw
	}
	u.User = nil
	return u.String()
}

// secretFlags are flags whose values never reach run.json.
var secretFlags = map[string]bool{
	"--token": true, "--password": true, "--username": false,
	"--client-key": false, "--as-uid": false,
}

// RedactArgs returns a copy of a command line with the values of secret
// flags (--token, --password, in "--flag value" and "--flag=value" forms)
// replaced by REDACTED, and user info removed from every URL (RedactURL).
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if name, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") {
			out[i] = name + "=" + RedactURL(v)
		} else {
			out[i] = RedactURL(a)
		}
	}
	for i := 0; i < len(out); i++ {
		a := out[i]
		name, _, hasValue := strings.Cut(a, "=")
		if !secretFlags[name] {
			continue
		}
		if hasValue {
			out[i] = name + "=REDACTED"
		} else if i+1 < len(out) {
			out[i+1] = "REDACTED"
			i++
		}
	}
	return out
}

// rootCause renders a path error without repeating the path.
func rootCause(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// LabLine describes the lab a run measured, from the LabRecord repro run
// records: its profile, time scale, load balancer (kernel pass-through
// or Go proxy), the durations that decide whether a
// rollout loses requests, and the probe timeout. It is "" for a run on a
// cluster, so every reader of a results folder states the scale the same way.
func (r *Run) LabLine() string {
	l := r.Extra.Lab
	if l == nil {
		return ""
	}
	str := func(v string) string {
		if v == "" {
			return "?"
		}
		return v
	}
	num := func(n int) string {
		if n == 0 {
			return "?"
		}
		return strconv.Itoa(n)
	}
	profile := l.ProfileName()
	timing := str(l.Timing)
	if f := num(l.TimingFactor); f != "?" && f != "1" {
		timing += " (AWS durations / " + f + ")"
	} else if timing != "?" {
		timing += " (AWS durations as they are)"
	}
	probe := "?"
	if r.Settings.ProbeTimeout != 0 {
		probe = r.Settings.ProbeTimeout.String()
	}
	kube := ""
	if l.KubeVersion != "" {
		kube = "kube-apiserver " + l.KubeVersion + ", "
	}
	// Runs from before the kernel LB recorded none: theirs was the proxy.
	lb := "proxy"
	if l.LB != "" {
		lb = l.LB
	}
	return fmt.Sprintf(kube+"profile %s, timing %s, %s load balancer: shutdown delay %s, grace %s, LB health check every %s (timeout %s, %s/%s), probe timeout %s",
		profile, timing, lb, str(l.Knob("shutdown-delay")), str(l.Knob("grace-period")), str(l.Knob("lb-health-interval")),
		str(l.Knob("lb-health-timeout")), str(l.Knob("lb-healthy-threshold")), str(l.Knob("lb-unhealthy-threshold")), probe)
}
