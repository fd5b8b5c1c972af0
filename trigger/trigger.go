package trigger

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Patch returns the merge patch that forces a new revision: it sets
// spec.forceRedeploymentReason and nothing else.
func Patch(reason string) []byte {
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"forceRedeploymentReason": reason}})
	return b
}

// Reason returns the unique forceRedeploymentReason of iteration n of a run.
func Reason(runID string, n int) string {
	return fmt.Sprintf("repro-%s-%d", runID, n)
}

// Trigger patches kubeapiservers/cluster with reason and returns the
// resulting object's status. With dryRun the patch goes to the server as a
// server-side dry run: it is validated and authorised, and nothing changes.
func Trigger(ctx context.Context, c *Clients, reason string, dryRun bool) (Status, error) {
	opts := metav1.PatchOptions{FieldManager: "repro"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var st Status
	err := retryTransient(ctx, func(ctx context.Context) error {
		kas, err := c.Operator.OperatorV1().KubeAPIServers().Patch(ctx, OperatorName, types.MergePatchType, Patch(reason), opts)
		if err == nil {
			st = StatusOf(kas)
		}
		return err
	})
	switch {
	case err == nil:
		return st, nil
	case apierrors.IsForbidden(err):
		return st, fmt.Errorf("not allowed to patch kubeapiservers.operator.openshift.io/%s: use a cluster-admin kubeconfig (%v)", OperatorName, err)
	default:
		return st, fmt.Errorf("patching kubeapiservers.operator.openshift.io/%s: %w", OperatorName, err)
	}
}
