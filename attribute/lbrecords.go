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
	byClient := map[string][]lbConn{}
	_, err := results.ReadJSONL(path, func(line []byte) error {
		var c lbConn
		if err := json.Unmarshal(line, &c); err != nil {
			return err
		}
		if c.Client != "" && c.Target != "" {
			byClient[c.Client] = append(byClient[c.Client], c)
		}
		return nil
	})
	if err != nil {
		return nil, err
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
