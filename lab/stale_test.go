package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
)

func TestRemoveStaleLabDirsKeepsLiveOwners(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	live, _ := os.MkdirTemp("", "repro-lab-")
	if err := writeOwner(live); err != nil {
		t.Fatal(err)
	}
	// A process that has exited stands for a SIGKILLed repro.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead, _ := os.MkdirTemp("", "repro-lab-")
	os.WriteFile(filepath.Join(dead, ownerFile), []byte(fmt.Sprintf("%d 1\n", cmd.Process.Pid)), 0o600)
	unowned, _ := os.MkdirTemp("", "repro-lab-")

	removeStaleLabDirs(zap.NewNop())
	for dir, want := range map[string]bool{live: true, dead: false, unowned: true} {
		_, err := os.Stat(dir)
		if got := err == nil; got != want {
			t.Errorf("%s exists=%v, want %v", dir, got, want)
		}
	}
}
