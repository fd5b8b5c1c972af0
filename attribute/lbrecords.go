package attribute

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/repro-tools/repro/results"
)

// lbConn is the part of a lab load balancer record (lab/lb ConnRecord, one
// JSON object per line of lb-connections.jsonl) that names a sample's node.
type lbConn struct {
	ID     uint64    `json:"id"`
	Client string    `json:"client"`
	Target string    `json:"target"`
	Opened time.Time `json:"opened"`
	Closed time.Time `json:"closed"`
}

// LBAnsweredBy reads a lab run's load balancer records and returns an
// Options.AnsweredBy naming the node a sample's connection was sent to
// (falling back to the sample's X-OpenShift-Disruption host). A folder
// without records (a live cluster) gives nil, nil.
func LBAnsweredBy(path string) (func(*results.Sample) string, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	// A connection is written when it opens and again when it closes: the
	// later line of an id replaces the earlier.
	byID := map[uint64]lbConn{}
	var order []uint64
	_, err := results.ReadJSONL(path, func(line []byte) error {
		var c lbConn
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
		return nil, err
	}
	byClient := map[string][]lbConn{}
	for _, id := range order {
		c := byID[id]
		byClient[c.Client] = append(byClient[c.Client], c)
	}
	return func(s *results.Sample) string {
		if s.ServedBy != "" {
			return s.ServedBy
		}
		best := ""
		for _, c := range byClient[s.LocalAddr] {
			// A reused connection was opened before the sample; a
			// closed one must have closed after it was sent.
			if c.Opened.After(s.End()) || (!c.Closed.IsZero() && c.Closed.Before(s.Start)) {
				continue
			}
			best = c.Target
		}
		return best
	}, nil
}
