package lab

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/repro-tools/repro/lab/netns"
)

// TestMain runs the lab's tests inside a network namespace of their own
// where one can be made (as root in CI), so the lab they start uses the
// kernel load balancer; elsewhere they run on the Go proxy. The lab's
// binaries are built first, out here: the namespace has no network.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == supervisedChildArg {
		supervisedChild(os.Args[2:])
		return
	}
	if !netns.Inside() {
		o := DefaultOptions()
		o.BuildProgress = os.Stderr
		if _, err := Binaries(context.Background(), o); err != nil {
			fmt.Fprintln(os.Stderr, "building the lab's binaries:", err)
			os.Exit(1)
		}
	}
	netns.ReexecTests()
	os.Exit(m.Run())
}
