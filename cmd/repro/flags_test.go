package main

import "testing"

// TestClusterFlagsOnlyWhereACommandTalksToACluster: the kubeconfig flags
// appear on the commands that reach a cluster and not on those that read
// folders only, whose help would otherwise offer flags they ignore.
func TestClusterFlagsOnlyWhereACommandTalksToACluster(t *testing.T) {
	root := newRootCmd()
	for name, want := range map[string]bool{
		"run": true, "probe": true, "attribute": true,
		"report": false, "compare": false, "diagnose": false, "import": false, "rbac": false, "sweep": false,
	} {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd.Name() != name {
			t.Fatalf("no command %s: %v", name, err)
		}
		for _, flag := range []string{"kubeconfig", "context", "server", "token", "as"} {
			got := cmd.Flags().Lookup(flag) != nil || cmd.InheritedFlags().Lookup(flag) != nil
			if got != want {
				t.Errorf("repro %s offers --%s: %v, want %v", name, flag, got, want)
			}
		}
		if cmd.InheritedFlags().Lookup("log-level") == nil {
			t.Errorf("repro %s lost --log-level", name)
		}
	}
}
