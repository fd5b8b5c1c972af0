package main

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"

	"github.com/repro-tools/repro/results"
)

// logFileName is the log a run keeps in its results folder: every line at
// every level, the lab's process chatter and client-go's included.
const logFileName = results.LogFile

// logSink is where log lines go: the console (stderr, or the progress
// container while bars show, so lines print above them and the bars stay
// at the bottom) and, once a results folder exists, its repro.log.
type logSink struct {
	mu      sync.Mutex
	stderr  io.Writer
	console io.Writer
	file    *os.File
}

func newLogSink(stderr io.Writer) *logSink { return &logSink{stderr: stderr, console: stderr} }

// setConsole sends console lines to w; nil restores stderr.
func (s *logSink) setConsole(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w == nil {
		w = s.stderr
	}
	s.console = w
}

func (s *logSink) writeConsole(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.console.Write(b)
	if err != nil && s.console != s.stderr {
		// The bars stopped under us: print plainly instead of losing the line.
		return s.stderr.Write(b)
	}
	return n, err
}

func (s *logSink) writeFile(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == nil {
		return len(b), nil
	}
	return s.file.Write(b)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// consoleWriter writes to the current console.
func (s *logSink) consoleWriter() io.Writer { return writerFunc(s.writeConsole) }

// logCores builds the loggers of a command from one sink: the root logger
// (console at level, file at every level), a quiet one for chatter
// (console only from warnings), and one for client-go's klog (console
// only at debug).
type logCores struct {
	sink  *logSink
	level zapcore.Level
}

func (c logCores) encoder() zapcore.Encoder {
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
	return zapcore.NewConsoleEncoder(enc)
}

func (c logCores) console(min zapcore.Level) zapcore.Core {
	return zapcore.NewCore(c.encoder(), zapcore.Lock(zapcore.AddSync(c.sink.consoleWriter())), max(min, c.level))
}

func (c logCores) file() zapcore.Core {
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	return zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(writerFunc(c.sink.writeFile)), zapcore.DebugLevel)
}

func (c logCores) root() *zap.Logger { return zap.New(zapcore.NewTee(c.console(c.level), c.file())) }

func (c logCores) quiet() *zap.Logger {
	return zap.New(zapcore.NewTee(c.console(zapcore.WarnLevel), c.file()))
}

// klogLogger takes client-go's output: informers retry dropped watches by
// themselves, and during a rollout they drop on every apiserver restart, so
// their lines belong in repro.log, on the screen only with --log-level debug.
func (c logCores) klogLogger() *zap.Logger {
	if c.level == zapcore.DebugLevel {
		return c.root().Named("client-go")
	}
	return zap.New(c.file()).Named("client-go")
}

// setupLogging builds the command's loggers on stderr and sends klog
// through zap.
func (o *rootOptions) setupLogging(level string) error {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	o.sink = newLogSink(os.Stderr)
	o.cores = logCores{sink: o.sink, level: lvl}
	o.log = o.cores.root()
	klog.SetLogger(zapr.NewLogger(o.cores.klogLogger()))
	return nil
}

// quietLogger is for process chatter (the lab's): repro.log gets all of
// it, the screen only warnings and errors.
func (o *rootOptions) quietLogger() *zap.Logger {
	if o.sink == nil {
		return zap.NewNop()
	}
	return o.cores.quiet()
}

// logToFile starts copying every log line into path; the returned function
// stops and closes it (it may be called more than once).
func (o *rootOptions) logToFile(path string) (func(), error) {
	if o.sink == nil {
		return func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file %s: %v", path, err)
	}
	o.sink.mu.Lock()
	o.sink.file = f
	o.sink.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			o.sink.mu.Lock()
			o.sink.file = nil
			o.sink.mu.Unlock()
			f.Close()
		})
	}, nil
}
