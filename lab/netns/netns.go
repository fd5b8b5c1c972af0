// Package netns runs the current program again inside a new network
// namespace, so that the lab's kernel load balancer (nftables rules,
// conntrack) acts on a network of its own and never on the host's.
//
// As root the child gets a plain network namespace (CLONE_NEWNET); otherwise
// a user namespace too (CLONE_NEWUSER|CLONE_NEWNET) with the caller's uid and
// gid mapped to 0, where the system allows unprivileged user namespaces. The
// child brings lo up, gives it one extra, non-loopback address (HostAddr) for
// what refuses loopback (the apiservers' node proxy), and carries on with the
// same argv. The parent keeps the terminal for the child, forwards SIGINT
// and SIGTERM, and exits with the child's code.
package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// envChild marks a process that Run started inside its namespace.
const envChild = "REPRO_NETNS"

// envOff keeps ReexecTests from making a namespace.
const envOff = "REPRO_NETNS_OFF"

// OutsideEnv returns environ for a process that must run where its parent
// puts it: not marked as Run's child (which Setup would give HostAddr) and
// not re-run by ReexecTests into a namespace of its own.
func OutsideEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, envChild+"=") && !strings.HasPrefix(kv, envOff+"=") {
			out = append(out, kv)
		}
	}
	return append(out, envOff+"=1")
}

// HostAddr is the address the child adds to lo (a /32 of RFC 1918 space no
// host route reaches): a global unicast address inside the namespace.
var HostAddr = net.IPv4(10, 200, 0, 1)

// Inside reports whether this process runs inside a namespace Run made.
func Inside() bool { return os.Getenv(envChild) == "1" }

// Check says whether Run can make a namespace here: nil, or one line saying
// why not.
func Check() error {
	if os.Geteuid() == 0 {
		return nil
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return errors.New("unprivileged user namespaces are off (kernel.unprivileged_userns_clone=0): run as root or set it to 1")
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return errors.New("user namespaces are off (user.max_user_namespaces=0): run as root or raise it")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(b)) == "1" {
		return errors.New("AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1): run as root")
	}
	return nil
}

// Run starts this program again with the same arguments inside a new
// network namespace and waits for it, forwarding SIGINT and SIGTERM. It
// returns the child's exit code; an error means no child ran (the namespace
// could not be made), so the caller may go on without one. Run takes over
// SIGINT and SIGTERM from any other handler of this process.
func Run() (int, error) {
	if Inside() {
		return 0, errors.New("already inside repro's network namespace")
	}
	if err := Check(); err != nil {
		return 0, err
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("finding this program to run it in a network namespace: %w", err)
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), envChild+"=1")
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGTERM}
	if os.Geteuid() != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	// A terminal's Ctrl-C goes to its foreground process group: make that
	// the child's alone, so it is told once (a second interrupt means
	// "exit at once" to repro) and the parent only relays what is sent to it.
	if term.IsTerminal(int(os.Stdin.Fd())) {
		attr.Foreground = true
		attr.Ctty = int(os.Stdin.Fd())
	}
	cmd.SysProcAttr = attr
	// The child handles interrupts (a first one stops it cleanly); this
	// process only relays them, so any handler of its own goes.
	signal.Reset(os.Interrupt, syscall.SIGTERM)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// The parent leaves the foreground; writing to or setting the terminal
	// from the background must not stop it.
	signal.Ignore(syscall.SIGTTOU, syscall.SIGTTIN)
	// Pdeathsig follows the thread that forked the child, not the process:
	// keep that thread until the child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("cannot make a network namespace: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case err := <-done:
			if attr.Foreground {
				// Take the terminal back for the shell's sake before exiting.
				_ = unix.IoctlSetPointerInt(attr.Ctty, unix.TIOCSPGRP, unix.Getpgrp())
			}
			return exitCode(err), nil
		}
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 1
}

// Setup prepares the namespace's network in the child: lo up, and HostAddr
// on it. It is idempotent.
func Setup() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("network namespace: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("network namespace: reading lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("network namespace: bringing lo up: %w", err)
	}
	if hasAddr(HostAddr) {
		return nil
	}
	// An alias label on lo carries the extra address (SIOCSIFADDR on
	// "lo:N" adds one rather than replacing 127.0.0.1).
	alias, err := unix.NewIfreq("lo:repro")
	if err != nil {
		return err
	}
	if err := alias.SetInet4Addr(HostAddr.To4()); err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFADDR, alias); err != nil {
		return fmt.Errorf("network namespace: adding %s to lo: %w", HostAddr, err)
	}
	mask, _ := unix.NewIfreq("lo:repro")
	_ = mask.SetInet4Addr(net.IPv4(255, 255, 255, 255).To4())
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFNETMASK, mask); err != nil {
		return fmt.Errorf("network namespace: setting %s/32 on lo: %w", HostAddr, err)
	}
	return nil
}

func hasAddr(ip net.IP) bool {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// ReexecTests is for test binaries whose tests want the kernel load balancer:
// outside a namespace, where one can be made, it runs the test binary again
// inside one and exits with its code; inside, it sets the namespace up.
// Otherwise (no namespace possible) it returns and the tests run here,
// those needing the kernel LB skipping on !Inside().
func ReexecTests() {
	if Inside() {
		if err := Setup(); err != nil {
			fmt.Fprintln(os.Stderr, "netns:", err)
			os.Exit(1)
		}
		return
	}
	if os.Getenv(envOff) == "1" || Check() != nil {
		return
	}
	code, err := Run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "netns: tests run without a network namespace:", err)
		return
	}
	os.Exit(code)
}

// EnterCommand is how another process joins this one's network namespace:
// nsenter with the user namespace too when Run made one (not root).
func EnterCommand() string {
	cmd := fmt.Sprintf("nsenter -t %d -n", os.Getpid())
	if b, err := os.ReadFile("/proc/self/uid_map"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 2 && f[1] != "0" {
			cmd = fmt.Sprintf("nsenter -t %d -U -n --preserve-credentials", os.Getpid())
		}
	}
	return cmd
}
