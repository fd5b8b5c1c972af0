package scenarios

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/repro-tools/repro/results"
)

// SignalWriter appends results.Signal lines to a results folder's signals
// file. Several sources write there during and after a run (the load
// balancer's view, the control poller's stall windows, the servers'
// metrics), so it appends and never truncates; each line goes out in one
// write on an O_APPEND file, which other appenders cannot split.
type SignalWriter struct {
	mu  sync.Mutex
	f   *os.File
	n   int
	err error
}

// OpenSignals opens path for appending, creating it.
func OpenSignals(path string) (*SignalWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &SignalWriter{f: f}, nil
}

// Write appends s; after the first error it keeps and returns that error.
func (w *SignalWriter) Write(s results.Signal) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		if _, err := w.f.Write(append(b, '\n')); err != nil {
			w.err = err
		} else {
			w.n++
		}
	}
	return w.err
}

// Emit is Write for callers that keep no error (the first is kept).
func (w *SignalWriter) Emit(s results.Signal) { _ = w.Write(s) }

// Close closes the file and returns the first error.
func (w *SignalWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}

// maxSignalLine bounds one line read from another source's signals file.
const maxSignalLine = 1 << 20

// CopySignals appends every Signal line of src (the lab load balancer's
// health records) to the signals file at dst, and says how many.
func CopySignals(src, dst string) (int, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	w, err := OpenSignals(dst)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), maxSignalLine)
	n, line := 0, 0
	for sc.Scan() {
		line++
		var s results.Signal
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			// A line cut by a crash is skipped, not fatal: the rest is kept.
			continue
		}
		if err := w.Write(s); err != nil {
			w.Close()
			return n, err
		}
		n++
	}
	if err := sc.Err(); err != nil {
		w.Close()
		return n, fmt.Errorf("%s line %d: %w", src, line+1, err)
	}
	return n, w.Close()
}
