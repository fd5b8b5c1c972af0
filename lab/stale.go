package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"
)

// ownerFile marks a temporary lab directory with the pid and start time of
// the process that owns it. A SIGKILLed repro cannot remove its directory
// (its children die with it through the parent-death signal, its files do
// not), so each Start removes directories whose owner is gone.
const ownerFile = "owner"

func processIdentity(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// Field 22 of stat (index 19 after the command) is the start time in
	// clock ticks: a reused pid has a different one.
	if len(f) < 20 {
		return ""
	}
	return fmt.Sprintf("%d %s", pid, f[19])
}

func writeOwner(dir string) error {
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(processIdentity(os.Getpid())+"\n"), 0o600)
}

func removeStaleLabDirs(log *zap.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "repro-lab-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // not ours to judge, or still being created
		}
		id := strings.TrimSpace(string(b))
		var pid int
		if _, err := fmt.Sscanf(id, "%d", &pid); err != nil || pid <= 0 {
			continue
		}
		if processIdentity(pid) == id {
			continue // its owner still runs
		}
		if err := os.RemoveAll(d); err == nil {
			log.Info("removed the directory of a lab whose repro was killed", zap.String("dir", d))
		}
	}
}
