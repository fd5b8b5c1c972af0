package netns

import (
	"net"
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	ReexecTests()
	os.Exit(m.Run())
}

// TestInside checks the namespace the test binary was re-run in: lo is up,
// it carries HostAddr, and it is not the host's network (only lo exists).
func TestInside(t *testing.T) {
	if !Inside() {
		t.Skipf("no network namespace here: %v", Check())
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
		if i.Name == "lo" && i.Flags&net.FlagUp == 0 {
			t.Error("lo is down")
		}
	}
	if strings.Join(names, ",") != "lo" {
		t.Errorf("interfaces %v, want only lo (a namespace of its own)", names)
	}
	if !hasAddr(HostAddr) {
		t.Errorf("lo lacks %s", HostAddr)
	}
	for _, host := range []string{"127.0.0.1", HostAddr.String()} {
		ln, err := net.Listen("tcp", host+":0")
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Errorf("dial %s: %v", ln.Addr(), err)
		} else {
			c.Close()
		}
		ln.Close()
	}
	// Idempotent: the child may be set up again by a nested TestMain.
	if err := Setup(); err != nil {
		t.Error(err)
	}
}
