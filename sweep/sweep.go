// Package sweep runs one scenario once per value of one lab knob, each a
// real `repro run` of the same binary in its own results folder
// (DIR/<key>=<value>), then tabulates the disruption of every
// backend-connection against the value, compares each point with its
// neighbour (compare.Compare) and says where the gap appears or disappears.
// It is how a candidate configuration fix is validated: a deregistration
// delay, a shutdown delay, a health-check interval.
//
// Each point is a process of its own rather than a call into scenarios:
// a lab run re-executes itself into a network namespace of its own
// (lab/netns; a process enters a new one only at clone), and the kernel
// load balancer's nftables table and conntrack event mask belong to that
// namespace, so a point's state cannot leak into the next; and a point
// that crashes or is killed leaves the sweep, its table and the other
// points' folders intact.
package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/repro-tools/repro/report/compare"
	"github.com/repro-tools/repro/report/htmlreport"
	"github.com/repro-tools/repro/results"
)

// Files a sweep writes into its folder.
const (
	TableFile = "sweep.txt"
	JSONFile  = "sweep.json"
	PlotFile  = "sweep.svg"
	// HTMLFile is the sweep's page, named as every folder's page is.
	HTMLFile = htmlreport.FileName
)

// Options describe a sweep.
type Options struct {
	// Binary is the repro executable each point runs.
	Binary string
	// Out is the sweep's folder; each point is Out/<Key>=<value>.
	Out string
	// Scenario is passed to repro run --scenario.
	Scenario string
	// Key and Values are the swept lab knob and its values, in order.
	Key    string
	Values []string
	// Flag, when set, is the repro run flag that takes each value as it is
	// (--lab-kube-version v1.29.6), for what is a flag of its own rather
	// than a lab knob (--lab-set Key=value, the default).
	Flag string
	// Iterations is passed as --iterations when above 0.
	Iterations int
	// Forward are the other flags of repro run, passed as given.
	Forward []string
	// Env is the points' environment (nil: this process's).
	Env []string
	// Log receives one line per point started and finished; Output the
	// points' own output (nil: discarded).
	Log, Output io.Writer
	// StopGrace bounds how long an interrupted point may take to write its
	// partial results after its SIGINT (0: two minutes).
	StopGrace time.Duration
	// Floor is the disruption per backend-connection (median per
	// iteration) at or below which a point counts as without a gap (0:
	// DefaultFloor).
	Floor time.Duration
}

// DefaultFloor is three of the prober's 100 ms poll intervals: a healthy
// lab rollout can lose single requests (a 429 at a listener's close, a
// reset of a connection the load balancer opened to a node in the instant
// before its unhealthy verdict, as AWS's connection termination does), one
// sample each, and a sweep looking for where a gap stops must not read
// those as the gap.
const DefaultFloor = 300 * time.Millisecond

// Point is one value of the sweep.
type Point struct {
	Value string `json:"value"`
	Dir   string `json:"dir"`
	// Status is complete, interrupted or failed (repro run's exit code
	// and error text in ExitCode and Error).
	Status   string `json:"status"`
	ExitCode int    `json:"exitCode"`
	Error    string `json:"error,omitempty"`
	// Seconds holds the median disruption per iteration of every
	// backend-connection; Total is their sum.
	Seconds map[string]float64 `json:"seconds,omitempty"`
	Total   float64            `json:"totalSeconds"`
	// Versus is the compare verdict against the previous complete point
	// ("worse", "better", "no-difference"), with its summary.
	Versus        string `json:"versusPrevious,omitempty"`
	VersusSummary string `json:"versusPreviousSummary,omitempty"`
	figures       *compare.FolderFigures
}

// Result is a whole sweep.
type Result struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
	Points []Point  `json:"points"`
	// Pollers are the backend-connections in display order.
	Pollers []string `json:"backendConnections"`
	// Findings say where the gap appears or disappears, in words.
	Findings    []string `json:"findings"`
	Interrupted bool     `json:"interrupted"`
	// FloorSeconds is Options.Floor: a point whose every backend-connection
	// lost no more than this has no gap.
	FloorSeconds float64 `json:"floorSeconds"`
}

// gapped reports whether some backend-connection of p lost more than the
// floor.
func (p *Point) gapped(floor float64) bool {
	for _, v := range p.Seconds {
		if v > floor {
			return true
		}
	}
	return false
}

// ParseSet splits "key=v1,v2,..." into the key and its values.
func ParseSet(s string) (string, []string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return "", nil, fmt.Errorf("--lab-set %q: want key=v1,v2,... (the knob and the values to sweep)", s)
	}
	var vals []string
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x == "" {
			return "", nil, fmt.Errorf("--lab-set %q: an empty value; want key=v1,v2,...", s)
		}
		vals = append(vals, x)
	}
	return k, vals, nil
}

// PointDir is the folder of one value.
func PointDir(out, key, value string) string {
	return filepath.Join(out, key+"="+strings.ReplaceAll(value, string(filepath.Separator), "_"))
}

// Run runs every point in order, then analyses them. Cancelling ctx sends
// the running point SIGINT (it stops and keeps its partial results), starts
// no further point and analyses the complete ones.
func Run(ctx context.Context, o Options) (*Result, error) {
	if len(o.Values) == 0 {
		return nil, errors.New("sweep: no values")
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create sweep folder %s: %v", o.Out, err)
	}
	if o.Floor <= 0 {
		o.Floor = DefaultFloor
	}
	res := &Result{Key: o.Key, Values: o.Values, FloorSeconds: o.Floor.Seconds()}
	var firstErr error
	for i, v := range o.Values {
		p := Point{Value: v, Dir: PointDir(o.Out, o.Key, v)}
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		logf(o.Log, "sweep: point %d/%d %s=%s -> %s", i+1, len(o.Values), o.Key, v, p.Dir)
		started := time.Now()
		code, err := runPoint(ctx, o, p)
		p.ExitCode = code
		switch {
		case ctx.Err() != nil:
			p.Status = results.StatusInterrupted
			res.Interrupted = true
		case err != nil && code != 3: // 3: disruption over --max-disruption, a measured point
			p.Status, p.Error = results.StatusFailed, err.Error()
		default:
			p.Status = results.StatusComplete
		}
		logf(o.Log, "sweep: point %s=%s %s (exit %d) in %s", o.Key, v, p.Status, code, time.Since(started).Round(time.Second))
		res.Points = append(res.Points, p)
		if res.Interrupted {
			break
		}
		// A first point that fails says the flags are wrong: the others
		// would fail alike.
		if i == 0 && p.Status == results.StatusFailed {
			firstErr = fmt.Errorf("the first point failed (%s); fix the flags and run the sweep again", p.Error)
			break
		}
	}
	if err := analyse(res); err != nil {
		return res, err
	}
	if err := write(o.Out, res); err != nil {
		return res, err
	}
	return res, firstErr
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// runPoint runs `repro run` for one value and returns its exit code.
func runPoint(ctx context.Context, o Options, p Point) (int, error) {
	args := []string{"run", "--scenario", o.Scenario, "--out", p.Dir, "--lab", "--lab-set", o.Key + "=" + p.Value}
	if o.Flag != "" {
		args = []string{"run", "--scenario", o.Scenario, "--out", p.Dir, "--lab", o.Flag, p.Value}
	}
	if o.Iterations > 0 {
		args = append(args, "--iterations", fmt.Sprint(o.Iterations))
	}
	args = append(args, o.Forward...)
	cmd := exec.Command(o.Binary, args...)
	cmd.Env = o.Env
	cmd.Stdout, cmd.Stderr = o.Output, o.Output
	// Its own process group: a terminal's Ctrl-C reaches only the sweep,
	// which passes one SIGINT on (a second would make repro run exit at
	// once, without its partial results).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("starting %s: %v", o.Binary, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Signal(os.Interrupt)
		grace := o.StopGrace
		if grace == 0 {
			grace = 2 * time.Minute
		}
		select {
		case err = <-done:
		case <-time.After(grace):
			_ = cmd.Process.Kill()
			err = <-done
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), fmt.Errorf("repro run exited %d (see %s)", ee.ExitCode(), filepath.Join(p.Dir, "repro.log"))
	}
	if err != nil {
		return 1, err
	}
	return 0, nil
}

// analyse reads every complete point's figures, the neighbours' verdicts
// and the findings.
func analyse(res *Result) error {
	seen := map[string]bool{}
	var prev *Point
	for i := range res.Points {
		p := &res.Points[i]
		if p.Status != results.StatusComplete {
			continue
		}
		ff, err := compare.LoadFolderFigures(p.Dir)
		if err != nil {
			p.Status, p.Error = results.StatusFailed, err.Error()
			continue
		}
		p.figures = &ff
		p.Seconds = map[string]float64{}
		for _, name := range ff.Pollers {
			if !seen[name] {
				seen[name] = true
				res.Pollers = append(res.Pollers, name)
			}
			var xs []float64
			for _, s := range ff.Samples[name] {
				xs = append(xs, s.Seconds)
			}
			p.Seconds[name] = median(xs)
			p.Total += p.Seconds[name]
		}
		p.Total = round3(p.Total)
		if prev != nil {
			// repro compare's rule, its default threshold included: with
			// none, a 0.4 s wobble between two iterations read as "worse".
			c, err := compare.Compare([]compare.Side{
				{Name: res.Key + "=" + prev.Value, Folders: []compare.FolderFigures{*prev.figures}},
				{Name: res.Key + "=" + p.Value, Folders: []compare.FolderFigures{ff}},
			}, compare.CompareOptions{Threshold: compare.DefaultThreshold})
			if err == nil && len(c.Verdicts) > 0 {
				p.Versus, p.VersusSummary = c.Verdicts[0].Verdict, c.Verdicts[0].Summary
			}
		}
		prev = p
	}
	sort.SliceStable(res.Pollers, func(i, j int) bool {
		return results.BackendRank(backendOf(res.Pollers[i])) < results.BackendRank(backendOf(res.Pollers[j]))
	})
	res.Findings = findings(res)
	return nil
}

// backendOf is the backend a poller name starts with.
func backendOf(poller string) string {
	best := ""
	for _, b := range results.BackendOrder {
		if strings.HasPrefix(poller, b+"-") && len(b) > len(best) {
			best = b
		}
	}
	return best
}

// findings say where the gap stops or starts along the sweep:
// "shutdown-delay >= 3s: no disruption" when it is gone from some value on.
// A point has a gap when a backend-connection lost more than the floor;
// below it the finding says what was lost, so nothing is hidden.
func findings(res *Result) []string {
	var done []*Point
	for i := range res.Points {
		if res.Points[i].Status == results.StatusComplete && res.Points[i].Seconds != nil {
			done = append(done, &res.Points[i])
		}
	}
	if len(done) == 0 {
		return []string{"no complete point to analyse"}
	}
	floor := res.FloorSeconds
	none := func(p *Point) string {
		if p.Total == 0 {
			return "none"
		}
		return fmt.Sprintf("%.3f s in all, none over %.3f s on a backend-connection", p.Total, floor)
	}
	var out []string
	for i := 1; i < len(done); i++ {
		a, b := done[i-1], done[i]
		switch {
		case a.gapped(floor) && !b.gapped(floor):
			out = append(out, fmt.Sprintf("the gap disappears between %s=%s (%.3f s) and %s=%s (%s)", res.Key, a.Value, a.Total, res.Key, b.Value, none(b)))
		case !a.gapped(floor) && b.gapped(floor):
			out = append(out, fmt.Sprintf("the gap appears between %s=%s (%s) and %s=%s (%.3f s)", res.Key, a.Value, none(a), res.Key, b.Value, b.Total))
		}
	}
	// The tail without a gap, if the sweep ends in one after some.
	tail := len(done)
	for tail > 0 && !done[tail-1].gapped(floor) {
		tail--
	}
	word := func(ps []*Point) string {
		for _, p := range ps {
			if p.Total > 0 {
				return fmt.Sprintf("no gap (at most %.3f s on a backend-connection, single requests)", floor)
			}
		}
		return "no disruption"
	}
	switch {
	case tail == 0:
		out = append(out, fmt.Sprintf("%s at any %s in the sweep", word(done), res.Key))
	case tail < len(done):
		out = append(out, fmt.Sprintf("%s >= %s: %s", res.Key, done[tail].Value, word(done[tail:])))
	default:
		out = append(out, fmt.Sprintf("a gap at every %s in the sweep, up to %s=%s (%.3f s)", res.Key, res.Key, done[len(done)-1].Value, done[len(done)-1].Total))
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return round3(s[n/2])
	}
	return round3((s[n/2-1] + s[n/2]) / 2)
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// write puts the table, JSON, plot and page into the sweep's folder.
func write(dir string, res *Result) error {
	var table strings.Builder
	if err := WriteTable(&table, res); err != nil {
		return err
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	var svg strings.Builder
	WriteSVG(&svg, res)
	page := "<!doctype html><meta charset=utf-8><title>repro sweep " + htmlEscape(res.Key) + "</title>" +
		"<style>body{font-family:sans-serif;margin:2em}pre{font-size:13px}</style><h1>repro sweep: " + htmlEscape(res.Key) + "</h1>" +
		svg.String() + "<pre>" + htmlEscape(table.String()) + "</pre>\n"
	for name, data := range map[string][]byte{TableFile: []byte(table.String()), JSONFile: append(js, '\n'), PlotFile: []byte(svg.String()), HTMLFile: []byte(page)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("write %s: %v", filepath.Join(dir, name), err)
		}
	}
	return nil
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
