package trigger

import (
	"fmt"
	"sort"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
)

// NodeState is one control-plane node's revision state as the operator reports it.
type NodeState struct {
	Name               string `json:"name"`
	CurrentRevision    int32  `json:"currentRevision"`
	TargetRevision     int32  `json:"targetRevision,omitempty"`
	LastFailedRevision int32  `json:"lastFailedRevision,omitempty"`
}

// Status is a snapshot of kubeapiservers/cluster as far as a rollout is concerned.
type Status struct {
	LatestAvailableRevision int32       `json:"latestAvailableRevision"`
	ForceRedeploymentReason string      `json:"forceRedeploymentReason,omitempty"`
	Nodes                   []NodeState `json:"nodes"`
	// Progressing is the operator's NodeInstallerProgressing condition, when it reports one.
	Progressing bool `json:"progressing,omitempty"`
}

// StatusOf extracts the rollout state of a KubeAPIServer object, nodes sorted by name.
func StatusOf(kas *operatorv1.KubeAPIServer) Status {
	s := Status{
		LatestAvailableRevision: kas.Status.LatestAvailableRevision,
		ForceRedeploymentReason: kas.Spec.ForceRedeploymentReason,
	}
	for _, n := range kas.Status.NodeStatuses {
		s.Nodes = append(s.Nodes, NodeState{
			Name:               n.NodeName,
			CurrentRevision:    n.CurrentRevision,
			TargetRevision:     n.TargetRevision,
			LastFailedRevision: n.LastFailedRevision,
		})
	}
	sort.Slice(s.Nodes, func(i, j int) bool { return s.Nodes[i].Name < s.Nodes[j].Name })
	for _, c := range kas.Status.Conditions {
		if c.Type == "NodeInstallerProgressing" && c.Status == operatorv1.ConditionTrue {
			s.Progressing = true
		}
	}
	return s
}

// Converged reports whether every node runs the latest available revision and
// no node has a pending target: the state a rollout ends in.
func (s Status) Converged() bool {
	if len(s.Nodes) == 0 || s.Progressing {
		return false
	}
	for _, n := range s.Nodes {
		if n.CurrentRevision != s.LatestAvailableRevision {
			return false
		}
		if n.TargetRevision != 0 && n.TargetRevision != s.LatestAvailableRevision {
			return false
		}
	}
	return true
}

// String describes the state in one line, e.g.
// "latest revision 8; master-0 on 8, master-1 on 7 (target 8), master-2 on 7".
func (s Status) String() string {
	parts := make([]string, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		p := fmt.Sprintf("%s on %d", n.Name, n.CurrentRevision)
		if n.TargetRevision != 0 && n.TargetRevision != n.CurrentRevision {
			p += fmt.Sprintf(" (target %d)", n.TargetRevision)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		parts = append(parts, "no node statuses yet")
	}
	return fmt.Sprintf("latest revision %d; %s", s.LatestAvailableRevision, strings.Join(parts, ", "))
}
