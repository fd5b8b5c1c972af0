package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// LBConnectionsFile holds a lab run's load balancer connection records, one
// JSON object per line (lab/lb ConnRecord), written when a connection opens
// and again when it closes.
const LBConnectionsFile = "lb-connections.jsonl"

// LBConnection is the part of a load balancer record that names where a
// client's connection went.
type LBConnection struct {
	ID     uint64    `json:"id"`
	Client string    `json:"client"`
	Target string    `json:"target"`
	Opened time.Time `json:"opened"`
	// Closed is zero for a connection still open when the run ended.
	Closed time.Time `json:"closed"`
	// ClosedBy is LBClosedByDial for a flow whose handshake never
	// completed: a failed dial's.
	ClosedBy string `json:"closedBy,omitempty"`
}

// LBClosedByDial is the ClosedBy of a connection that was never
// established: the target refused it, or never answered.
const LBClosedByDial = "dial"

// LBConnections indexes a run's forwarded connections by client address (as
// the load balancer saw it: on the lab, the prober's local address), each
// connection once, in the order they opened.
type LBConnections map[string][]LBConnection

// ReadLBConnections reads a load balancer records file. A connection's close
// line replaces its open line, so a closed connection is never taken for an
// open one; records the LB refused or blackholed (no target) are left out.
// A missing file (a run on a cluster) gives nil, nil.
func ReadLBConnections(path string) (LBConnections, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	byID := map[uint64]LBConnection{}
	var order []uint64
	_, err := ReadJSONL(path, func(line []byte) error {
		var c LBConnection
		if err := json.Unmarshal(line, &c); err != nil {
			return err
		}
		if c.Client == "" || c.Target == "" {
			return nil
		}
		if _, ok := byID[c.ID]; !ok {
			order = append(order, c.ID)
		}
		byID[c.ID] = c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	m := LBConnections{}
	for _, id := range order {
		c := byID[id]
		m[c.Client] = append(m[c.Client], c)
	}
	return m, nil
}

// RecordLag is how much later than its own packets the lab load
// balancer may stamp a connection's record: the kernel LB stamps a flow
// when conntrack's event reaches it, which for a refused SYN is after the
// client's dial has already returned.
const RecordLag = time.Second

// Target names the node that the connection from client carrying a request
// sent at start and finished at end was forwarded to, "" when none is
// known. A reused connection opened before the request; a new one opens
// while it runs; either was still open when the request was sent. Of two
// connections from the same address and port that fit (a port reused
// within the request), the later one is taken. Only when none had opened
// by end does a record stamped within RecordLag after it count, and only a
// failed dial's (ClosedBy LBClosedByDial), the earliest: the refused dial
// itself, stamped after it returned. A connection that merely reused the
// port after a dial the LB has no record of (its SYN dropped before
// conntrack kept it) is not that request's.
func (c LBConnections) Target(client string, start, end time.Time) string {
	best, late := "", ""
	var lateAt time.Time
	for _, r := range c[client] {
		switch {
		case !r.Closed.IsZero() && r.Closed.Before(start):
		case !r.Opened.After(end):
			best = r.Target
		case r.ClosedBy == LBClosedByDial && r.Opened.Sub(end) <= RecordLag && (late == "" || r.Opened.Before(lateAt)):
			late, lateAt = r.Target, r.Opened
		}
	}
	if best == "" {
		return late
	}
	return best
}
