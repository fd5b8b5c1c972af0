// Command repro reproduces and bisects API disruption during a kube-apiserver
// revision rollout. See the README for the commands it offers.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/repro-tools/repro/internal/debugprof"
	"github.com/repro-tools/repro/lab/netns"
)

// exitCoder is implemented by errors that carry their own process exit code
// (3 for disruption over the limit, 130 for an interrupted run).
type exitCoder interface {
	ExitCode() int
}

// codedError pairs an error with the exit code it should end the process with.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }
func (e *codedError) ExitCode() int { return e.code }

// withExitCode wraps err so that main exits with code.
func withExitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: code, err: err}
}

// exitInterrupted is the conventional exit code of a process ended by SIGINT.
const exitInterrupted = 130

// childExit ends the process with the code of the repro that ran in its
// place (in a network namespace), saying nothing more: the child spoke.
type childExit int

func (e childExit) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func main() {
	if netns.Inside() {
		// Re-run by netns.Run: make the namespace's network usable first.
		if err := netns.Setup(); err != nil {
			fmt.Fprintln(os.Stderr, "repro:", err)
			os.Exit(1)
		}
	}
	ctx, stop := interruptContext()
	defer stop()
	stopProfiles := debugprof.Start()
	err := newRootCmd().ExecuteContext(ctx)
	stopProfiles()
	if err == nil {
		return
	}
	var ce childExit
	if errors.As(err, &ce) {
		os.Exit(int(ce))
	}
	code := 1
	var ec exitCoder
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	} else if ctx.Err() != nil {
		code = exitInterrupted
	}
	fmt.Fprintln(os.Stderr, "repro:", err)
	os.Exit(code)
}

// interruptContext returns a context cancelled by the first SIGINT or SIGTERM,
// so commands stop cleanly and keep what they measured; a second signal exits
// at once.
func interruptContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		// Cancelling ctx stops whatever the command waits on: every call
		// to a server takes ctx (trigger.CallTimeout bounds each one), so
		// the clean stop starts now, not when a call returns.
		fmt.Fprintln(os.Stderr, "\nrepro: interrupted, stopping cleanly and keeping what was measured (press Ctrl-C again to exit at once)")
		cancel()
		<-sigs
		fmt.Fprintln(os.Stderr, "repro: second interrupt, exiting now")
		os.Exit(exitInterrupted)
	}()
	return ctx, func() { signal.Stop(sigs); cancel() }
}
