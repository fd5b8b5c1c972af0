package lab

import (
	"os"
	"testing"

	"github.com/repro-tools/repro/lab/netns"
)

// TestMain runs the lab's tests inside a network namespace of their own
// where one can be made (as root in CI), so the lab they start uses the
// kernel load balancer; elsewhere they run on the Go proxy.
func TestMain(m *testing.M) {
	netns.ReexecTests()
	os.Exit(m.Run())
}
