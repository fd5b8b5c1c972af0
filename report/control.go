package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/repro-tools/repro/results"
)

// Control is what the measuring host's own control poller saw during a run:
// the one figure that says whether a reader may trust every gap of the run
// as the cluster's, or must discount those that fell in a stall of the host.
type Control struct {
	// Requests counts the control samples (local and external targets),
	// aborted ones (cut by the run's end) excluded.
	Requests int64
	// Failed counts the control requests that failed.
	Failed int64
	// Slowest is the slowest control request's duration.
	Slowest time.Duration
	// Stalls are the control poller's measuring-unreliable windows
	// (signals.jsonl, source results.ControlSource), by start.
	Stalls []results.Signal
}

// LoadControl reads a results folder's control samples and the control
// poller's stall windows from its signals. It returns nil and no error for a
// folder without control.jsonl (a run whose control poller did not start, an
// imported CI run, a folder older than the control poller).
func LoadControl(dir string) (*Control, error) {
	path := filepath.Join(dir, results.ControlFile)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	c := &Control{}
	_, err := results.ReadJSONL(path, func(line []byte) error {
		var s results.Sample
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		if s.ErrorClass == results.ClassAborted {
			return nil
		}
		c.Requests++
		if s.Failed() {
			c.Failed++
		}
		c.Slowest = max(c.Slowest, s.Duration)
		return nil
	})
	if err != nil {
		return nil, err
	}
	windows, err := LoadUnreliableWindows(dir)
	if err != nil {
		return c, err
	}
	for _, w := range windows {
		if w.Source == results.ControlSource {
			c.Stalls = append(c.Stalls, w)
		}
	}
	sort.Slice(c.Stalls, func(i, j int) bool { return c.Stalls[i].At.Before(c.Stalls[j].At) })
	return c, nil
}

// maxListedStalls bounds the stalls the verdict names one by one, so that it
// stays one line on a run whose host stalled all along.
const maxListedStalls = 4

// Verdict says in one line whether the measuring host stayed clean, and if
// not, when it stalled and for how long. threshold is the latency the run
// counted as a stall (run.json's controlStallThreshold), zero when unknown.
func (c *Control) Verdict(threshold time.Duration) string {
	if c == nil {
		return ""
	}
	var stall string
	if threshold > 0 {
		stall = fmt.Sprintf(", a stall being a failure or %s or slower", FormatMs(threshold))
	}
	if len(c.Stalls) == 0 {
		return fmt.Sprintf("clean: the control poller's %d requests to a target in repro's own process all answered, the slowest in %s%s; no gap of this run is a stall of the measuring host",
			c.Requests, FormatMs(c.Slowest), stall)
	}
	instances := map[string]bool{}
	for _, w := range c.Stalls {
		instances[w.Instance] = true
	}
	var total time.Duration
	var listed []string
	for i, w := range c.Stalls {
		d := w.To.Sub(w.At)
		if w.To.IsZero() {
			d = 0
		}
		total += d
		if i < maxListedStalls {
			at := fmt.Sprintf("%s for %s", w.At.Format("15:04:05.000"), FormatMs(d))
			if len(instances) > 1 {
				// The local and the external (--control) targets both
				// stalled: say which, as they point at different parts.
				at += " (" + w.Instance + ")"
			}
			listed = append(listed, at)
		}
	}
	if n := len(c.Stalls) - maxListedStalls; n > 0 {
		listed = append(listed, fmt.Sprintf("and %d more", n))
	}
	return fmt.Sprintf("STALLED %d time(s), %s in all: %s; of the control poller's %d requests %d failed, the slowest took %s%s; failures inside these windows are DISCOUNTED in Outcomes",
		len(c.Stalls), FormatMs(total), strings.Join(listed, ", "), c.Requests, c.Failed, FormatMs(c.Slowest), stall)
}

// FormatMs renders a duration in seconds with millisecond precision, as
// every duration of the summary is ("4.217s").
func FormatMs(d time.Duration) string {
	return strconv.FormatFloat(d.Round(time.Millisecond).Seconds(), 'f', 3, 64) + "s"
}
