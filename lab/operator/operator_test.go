package operator

import (
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
)

func cond(s *operatorv1.KubeAPIServerStatus, typ string) operatorv1.OperatorCondition {
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return operatorv1.OperatorCondition{}
}

func TestConditionsFollowNodeRevisions(t *testing.T) {
	nodes := []string{"master-0", "master-1", "master-2"}
	s := &operatorv1.KubeAPIServerStatus{}
	InitialStatus(s, nodes, 1)
	if c := cond(s, "NodeInstallerProgressing"); c.Status != operatorv1.ConditionFalse || c.Message != "3 nodes are at revision 1" {
		t.Fatalf("settled: %+v", c)
	}
	s.LatestAvailableRevision = 2
	nodeStatus(s, "master-0").CurrentRevision = 2
	setConditions(s, nodes)
	c := cond(s, "NodeInstallerProgressing")
	if c.Status != operatorv1.ConditionTrue || c.Reason != "NodeInstaller" || c.Message != "2 nodes are at revision 1; 1 node is at revision 2" {
		t.Fatalf("rolling: %+v", c)
	}
	if a := cond(s, "StaticPodsAvailable"); a.Status != operatorv1.ConditionTrue || a.Message != "3 nodes are active; 2 nodes are at revision 1; 1 node is at revision 2" {
		t.Fatalf("available: %+v", a)
	}
	before := c.LastTransitionTime
	setConditions(s, nodes)
	if cond(s, "NodeInstallerProgressing").LastTransitionTime != before {
		t.Fatal("transition time moved without a transition")
	}
}

func TestNextNodeRollsInOrderToLatest(t *testing.T) {
	c := &Controller{o: Options{Nodes: []string{"master-0", "master-1", "master-2"}}}
	obj := &operatorv1.KubeAPIServer{}
	InitialStatus(&obj.Status, c.o.Nodes, 1)
	obj.Status.LatestAvailableRevision = 2
	for _, want := range []string{"master-0", "master-1", "master-2", ""} {
		n, from := c.nextNode(obj, 2)
		if n != want {
			t.Fatalf("next node %q, want %q", n, want)
		}
		if n == "" {
			break
		}
		if from != 1 {
			t.Fatalf("%s from revision %d, want 1", n, from)
		}
		nodeStatus(&obj.Status, n).CurrentRevision = 2
	}
}
