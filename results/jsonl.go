package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// FlushInterval is how often a JSONLWriter flushes buffered lines to the
// file at the latest, so a crash loses at most about a second of data.
const FlushInterval = time.Second

// JSONAppender is implemented by values that encode themselves without
// reflection; the writer prefers it to encoding/json.
type JSONAppender interface {
	AppendJSON([]byte) []byte
}

// JSONLWriter streams JSON values to a file, one per line. It is safe for
// concurrent use. Lines are buffered and flushed at least every
// FlushInterval and on Close.
type JSONLWriter struct {
	mu      sync.Mutex
	f       *os.File
	bw      *bufio.Writer
	scratch []byte
	lines   int64
	err     error
	stop    chan struct{}
	done    chan struct{}
}

// CreateJSONL creates (or truncates) path and starts the periodic flusher.
func CreateJSONL(path string) (*JSONLWriter, error) {
	return openJSONL(path, os.O_TRUNC)
}

// AppendJSONL opens path for appending (creating it) and starts the
// periodic flusher: a file that more than one step of a run adds to.
func AppendJSONL(path string) (*JSONLWriter, error) {
	return openJSONL(path, os.O_APPEND)
}

func openJSONL(path string, mode int) (*JSONLWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|mode, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s: %s", path, rootCause(err))
	}
	w := &JSONLWriter{
		f:    f,
		bw:   bufio.NewWriterSize(f, 256<<10),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go w.flusher()
	return w, nil
}

func (w *JSONLWriter) flusher() {
	defer close(w.done)
	t := time.NewTicker(FlushInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			if w.err == nil && w.bw.Buffered() > 0 {
				w.err = w.bw.Flush()
			}
			w.mu.Unlock()
		}
	}
}

// Write appends v as one line. Values implementing JSONAppender are
// encoded with it, others with encoding/json.
func (w *JSONLWriter) Write(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if a, ok := v.(JSONAppender); ok {
		w.scratch = a.AppendJSON(w.scratch[:0])
	} else {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		w.scratch = append(w.scratch[:0], b...)
	}
	w.scratch = append(w.scratch, '\n')
	if _, err := w.bw.Write(w.scratch); err != nil {
		w.err = err
		return err
	}
	w.lines++
	return nil
}

// Lines returns how many lines were written.
func (w *JSONLWriter) Lines() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lines
}

// Flush writes buffered lines to the file now.
func (w *JSONLWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	return w.err
}

// Close flushes, syncs and closes the file.
func (w *JSONLWriter) Close() error {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.err
	if err == nil {
		err = w.bw.Flush()
	}
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.err = errors.New("writer closed")
	return err
}

// MaxLineBytes bounds one line of a JSONL file a reader accepts. A sample
// line is well under a kilobyte and an event or attribution line a few;
// a longer line is not a record this tool wrote, and reading it whole
// would let one line take any amount of memory.
const MaxLineBytes = 1 << 20

// ReadStats says what a tolerant read found.
type ReadStats struct {
	// Lines is the number of lines handed to the callback successfully.
	Lines int64
	// TruncatedLast is true when the last line was cut short (no newline
	// and not decodable), as after a crash mid-write; it was skipped.
	TruncatedLast bool
	// Bytes is the size of the data read.
	Bytes int64
	// Dropped counts lines read but not kept, past a reader's bound.
	Dropped int64
}

// OpenRegular opens path for reading, refusing anything but a regular file
// (a FIFO would block the open or the read forever, a device such as
// /dev/zero never ends, a directory is not data) with one line naming the
// file and what it is. The mode is checked before the open, which is what
// blocks on a FIFO, and again on the opened file.
func OpenRegular(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %s", path, rootCause(err))
	}
	if err := regular(path, st); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %s", path, rootCause(err))
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, fmt.Errorf("read %s: %s", path, rootCause(err))
	}
	if err := regular(path, st); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func regular(path string, st os.FileInfo) error {
	m := st.Mode()
	if m.IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch {
	case m.IsDir():
		what = "a directory"
	case m&os.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&os.ModeCharDevice != 0:
		what = "a character device"
	case m&os.ModeDevice != 0:
		what = "a device"
	case m&os.ModeSocket != 0:
		what = "a socket"
	}
	return fmt.Errorf("read %s: it is %s, not a regular file; give the path of a file", path, what)
}

// ReadJSONL calls fn for every line of path, in file order. Empty lines are
// skipped but counted, so the line numbers in errors are the file's. A last
// line without newline that fn rejects is the mark of a crash mid-write: it
// is counted in TruncatedLast, not an error. Any other line fn rejects is an
// error naming the file and line number. A line longer than MaxLineBytes is
// an error naming the file and line; it is never held whole in memory.
// path must be a regular file (see OpenRegular). The slice passed to fn is
// only valid during the call.
func ReadJSONL(path string, fn func(line []byte) error) (ReadStats, error) {
	return ReadJSONLNumbered(path, func(_ int64, line []byte) error { return fn(line) })
}

// ReadJSONLNumbered is ReadJSONL handing fn each line's number in the file
// (counting from 1, empty lines included) with the line.
func ReadJSONLNumbered(path string, fn func(lineNo int64, line []byte) error) (ReadStats, error) {
	var st ReadStats
	f, err := OpenRegular(path)
	if err != nil {
		return st, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var lineNo int64
	var long []byte
	for {
		line, err := r.ReadSlice('\n')
		lineNo++
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = r.ReadSlice('\n')
				if len(long)+len(line) > MaxLineBytes {
					return st, fmt.Errorf("%s line %d: longer than %d MiB, not a line this tool writes; is it the right file?", path, lineNo, MaxLineBytes>>20)
				}
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return st, fmt.Errorf("read %s: %v", path, err)
		}
		st.Bytes += int64(len(line))
		terminated := len(line) > 0 && line[len(line)-1] == '\n'
		if len(bytes.TrimSpace(line)) > 0 {
			if ferr := fn(lineNo, bytes.TrimRight(line, "\r\n")); ferr != nil {
				if !terminated && err == io.EOF {
					st.TruncatedLast = true
					return st, nil
				}
				return st, fmt.Errorf("%s line %d: %v", path, lineNo, ferr)
			}
			st.Lines++
		}
		if err == io.EOF {
			return st, nil
		}
	}
}
