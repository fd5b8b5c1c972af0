package attribute

import (
	"github.com/repro-tools/repro/results"
)

// LBAnsweredBy reads a lab run's load balancer records and returns an
// Options.AnsweredBy naming the node a sample's connection was sent to
// (falling back to the sample's X-OpenShift-Disruption host). A folder
// without records (a live cluster) gives nil, nil.
func LBAnsweredBy(path string) (func(*results.Sample) string, error) {
	conns, err := results.ReadLBConnections(path)
	if err != nil || conns == nil {
		return nil, err
	}
	return func(s *results.Sample) string {
		if s.ServedBy != "" {
			return s.ServedBy
		}
		return conns.Target(s.LocalAddr, s.Start, s.End())
	}, nil
}
