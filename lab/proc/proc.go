// Package proc starts the lab's child processes so that none outlives repro.
//
// Every child gets its own process group (so Kill reaches anything it forks)
// and a parent-death signal of SIGKILL (so even a SIGKILLed repro takes its
// children along). Linux delivers the parent-death signal when the OS thread
// that forked the child exits, not the process: a goroutine's thread can exit
// or be reused at any time, so all children are forked from one goroutine
// locked to its thread for the life of the process.
package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan startReq
)

// spawner forks every child from a thread that never exits while repro runs.
func spawner() {
	runtime.LockOSThread()
	// Never unlocked and never returns: if this goroutine ended while locked,
	// its thread would exit and Linux would SIGKILL every child it forked.
	for r := range spawnCh {
		r.done <- r.cmd.Start()
	}
}

// Process is a running child.
type Process struct {
	cmd      *exec.Cmd
	exited   chan struct{}
	mu       sync.Mutex
	state    *os.ProcessState
	waitErr  error
	exitedAt time.Time
}

// Start starts cmd in its own process group with SIGKILL as its parent-death
// signal and begins waiting for it.
func Start(cmd *exec.Cmd) (*Process, error) {
	spawnOnce.Do(func() {
		spawnCh = make(chan startReq)
		go spawner()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	spawnCh <- startReq{cmd: cmd, done: done}
	if err := <-done; err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.state, p.waitErr, p.exitedAt = cmd.ProcessState, err, time.Now()
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

// PID is the child's process id (also its process group id).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the child has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitedAt is when the lab saw the child exit (zero while it runs).
func (p *Process) ExitedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitedAt
}

// ExitStatus describes how the child ended, e.g. "exit status 0" or "signal: killed".
func (p *Process) ExitStatus() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return "running"
	}
	return p.state.String()
}

// Signal sends sig to the child's whole process group.
func (p *Process) Signal(sig syscall.Signal) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	err := syscall.Kill(-p.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Terminate sends SIGTERM and waits up to grace for the exit, then SIGKILLs
// the group, as the kubelet does at the end of terminationGracePeriodSeconds.
// It reports whether the kill was needed.
func (p *Process) Terminate(grace time.Duration) (killed bool, err error) {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return false, fmt.Errorf("SIGTERM pid %d: %w", p.PID(), err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		return false, nil
	case <-t.C:
	}
	return true, p.Kill()
}

// Kill SIGKILLs the child's process group and waits until it is reaped.
func (p *Process) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("pid %d did not exit 10s after SIGKILL", p.PID())
	}
}

// Tail returns the last n lines of a log file, for error messages about a
// child that would not start.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, _ := f.Stat()
	const max = 16 << 10
	off := int64(0)
	if st != nil && st.Size() > max {
		off = st.Size() - max
	}
	_, _ = f.Seek(off, io.SeekStart)
	b, _ := io.ReadAll(f)
	lines := splitLines(string(b))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := ""
	for _, l := range lines {
		out += "    " + l + "\n"
	}
	return out
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
