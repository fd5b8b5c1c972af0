package proc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

func TestTerminateKillsAfterGraceAndReachesTheGroup(t *testing.T) {
	// A shell that ignores SIGTERM and has a child of its own: the kill
	// must reach the grandchild through the process group.
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `trap '' TERM; sleep 300 & echo $! > `+dir+`/kid; wait`)
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var kid int
	for i := 0; i < 100 && kid == 0; i++ {
		b, _ := os.ReadFile(dir + "/kid")
		kid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(20 * time.Millisecond)
	}
	if kid == 0 {
		t.Fatal("grandchild did not start")
	}
	began := time.Now()
	killed, err := p.Terminate(300 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !killed || time.Since(began) < 300*time.Millisecond {
		t.Fatalf("killed=%v after %s: SIGTERM should have been ignored until the grace ran out", killed, time.Since(began))
	}
	if !strings.Contains(p.ExitStatus(), "killed") {
		t.Errorf("exit status %q", p.ExitStatus())
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(kid) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d survived the group kill", kid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestGracefulExitIsNotKilled(t *testing.T) {
	p, err := Start(exec.Command("sleep", "300"))
	if err != nil {
		t.Fatal(err)
	}
	killed, err := p.Terminate(5 * time.Second)
	if err != nil || killed {
		t.Fatalf("killed=%v err=%v", killed, err)
	}
	if p.ExitedAt().IsZero() {
		t.Fatal("exit time not recorded")
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("signalling an exited process: %v", err)
	}
}

func TestChildrenGetParentDeathSignal(t *testing.T) {
	cmd := exec.Command("sleep", "300")
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if cmd.SysProcAttr.Pdeathsig != syscall.SIGKILL || !cmd.SysProcAttr.Setpgid {
		t.Fatalf("SysProcAttr %+v", cmd.SysProcAttr)
	}
	if pgid, _ := syscall.Getpgid(p.PID()); pgid != p.PID() {
		t.Fatalf("pgid %d, want own group %d", pgid, p.PID())
	}
}
