package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/repro-tools/repro/metrics"
	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/trigger"
)

func init() { subcommands = append(subcommands, newRBACCmd) }

func newRBACCmd(o *rootOptions) *cobra.Command {
	var backends []string
	name := "repro"
	cmd := &cobra.Command{
		Use:   "rbac",
		Short: "Print the ClusterRole a user needs for repro run",
		Long: `Print the ClusterRole that grants exactly what "repro run --scenario
apiserver-rollout" checks before it changes anything: the preflight reads, the
patch of kubeapiservers/cluster, the watches that follow the rollout, and a
GET of every backend polled; and what --attribute and "repro attribute" read
(nodes, and nodes/proxy for the audit logs) and what --vantage resolves
(infrastructures/cluster, EndpointSlices in default), the apiservers'
/metrics scraped during a run, and thanos-querier's route read after it
(with the cluster-monitoring-view role). It is generated from the same table as the
check, so the two cannot drift. Bind it with
  oc create clusterrolebinding repro --clusterrole=repro --user=<user>`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bs, err := prober.LookupBackends(backends)
			if err != nil {
				return fmt.Errorf("--backends: %w", err)
			}
			perms := append([]trigger.Permission(nil), trigger.RolloutPermissions...)
			perms = append(perms, trigger.AttributionPermissions...)
			perms = append(perms, trigger.VantagePermissions...)
			perms = append(perms, trigger.MetricsPermissions...)
			perms = append(perms, trigger.MonitoringPermissions...)
			for _, b := range bs {
				perms = append(perms, trigger.BackendPermission(b.Path))
			}
			y, err := trigger.ClusterRoleYAML(name, perms)
			if err != nil {
				return fmt.Errorf("--name: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "# What repro run needs, for backends %s.\n", strings.Join(backends, ", "))
			fmt.Fprintf(cmd.OutOrStdout(), "# pods and events are read in %s only; a ClusterRole grants them everywhere.\n", trigger.Namespace)
			fmt.Fprintf(cmd.OutOrStdout(), "# The cluster's monitoring (etcd and node CPU after a run) also needs the %s ClusterRole\n", metrics.MonitoringRole)
			fmt.Fprintf(cmd.OutOrStdout(), "# and a kubeconfig with a bearer token (oc login): thanos-querier's route takes no client certificate.\n#   oc adm policy add-cluster-role-to-user %s <user>\n", metrics.MonitoringRole)
			_, err = cmd.OutOrStdout().Write(y)
			return err
		},
	}
	cmd.Flags().StringSliceVar(&backends, "backends", prober.DefaultBackendNames, "backends the run will poll: "+strings.Join(prober.BackendNames(), ", "))
	cmd.Flags().StringVar(&name, "name", name, "the ClusterRole's name")
	return cmd
}
