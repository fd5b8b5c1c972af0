package results

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An open line is replaced by its connection's close line: between two
// connections from one address and port, no connection was open, though the
// first one's open line alone would say it still was.
func TestLBConnectionsMergeOpenAndClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), LBConnectionsFile)
	err := os.WriteFile(path, []byte(`{"event":"open","id":1,"client":"127.0.0.1:5000","target":"master-0","action":"forward","opened":"2026-12-04T01:00:00Z"}
{"event":"open","id":3,"client":"127.0.0.1:6000","action":"reject","opened":"2026-12-04T01:00:01Z"}
{"event":"close","id":1,"client":"127.0.0.1:5000","target":"master-0","action":"forward","opened":"2026-12-04T01:00:00Z","closed":"2026-12-04T01:00:10Z"}
{"event":"open","id":2,"client":"127.0.0.1:5000","target":"master-2","action":"forward","opened":"2026-12-04T01:00:20Z"}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ReadLBConnections(path)
	if err != nil {
		t.Fatal(err)
	}
	at := func(sec int) (time.Time, time.Time) {
		s := time.Date(2026, 12, 4, 1, 0, sec, 0, time.UTC)
		return s, s.Add(5 * time.Millisecond)
	}
	for sec, want := range map[int]string{5: "master-0", 15: "", 25: "master-2"} {
		s, e := at(sec)
		if got := c.Target("127.0.0.1:5000", s, e); got != want {
			t.Errorf("at +%ds: %q, want %q", sec, got, want)
		}
	}
	// A new connection opens after its request was sent, before it ended.
	sent := time.Date(2026, 12, 4, 1, 0, 19, 998_000_000, time.UTC)
	if got := c.Target("127.0.0.1:5000", sent, sent.Add(3*time.Millisecond)); got != "master-2" {
		t.Errorf("a request whose connection opened while it ran: %q, want master-2", got)
	}
	// The kernel LB stamps a refused dial's flow after the dial returned
	// (conntrack's event comes later); the earliest flow stamped within
	// RecordLag is the dial's, not one that reused the port after it.
	refused := filepath.Join(t.TempDir(), LBConnectionsFile)
	err = os.WriteFile(refused, []byte(`{"event":"close","id":1,"client":"127.0.0.1:7000","target":"master-1","action":"forward","opened":"2026-12-04T01:00:00.000400Z","closed":"2026-12-04T01:00:00.000450Z","closedBy":"dial","error":"connection refused"}
{"event":"close","id":2,"client":"127.0.0.1:7000","target":"master-2","action":"forward","opened":"2026-12-04T01:00:00.600Z","closed":"2026-12-04T01:00:00.700Z","closedBy":"client"}
{"event":"close","id":3,"client":"127.0.0.1:7001","target":"master-2","action":"forward","opened":"2026-12-04T01:00:00.013Z","closed":"2026-12-04T01:00:00.018Z","closedBy":"client"}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := ReadLBConnections(refused)
	if err != nil {
		t.Fatal(err)
	}
	dial := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	if got := rc.Target("127.0.0.1:7000", dial, dial.Add(300*time.Microsecond)); got != "master-1" {
		t.Errorf("a refused dial stamped after it returned: %q, want master-1", got)
	}
	// A dial whose SYN the LB dropped has no record; a connection that
	// reused its port 13 ms later is not its (measured in a blackhole run).
	if got := rc.Target("127.0.0.1:7001", dial.Add(-2720*time.Millisecond), dial); got != "" {
		t.Errorf("a dial with no record of its own, its port reused after it: %q, want none", got)
	}
	if got := rc.Target("127.0.0.1:7000", dial.Add(-2*RecordLag), dial.Add(-2*RecordLag+time.Millisecond)); got != "" {
		t.Errorf("a request long before any flow from its address: %q, want none", got)
	}
	s, e := at(1)
	if got := c.Target("127.0.0.1:6000", s, e); got != "" {
		t.Errorf("a connection the LB refused: %q, want none", got)
	}
	if c, err := ReadLBConnections(filepath.Join(t.TempDir(), "none")); c != nil || err != nil {
		t.Errorf("without records: %v, %v; want nil, nil", c, err)
	}
}
