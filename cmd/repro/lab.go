package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/repro-tools/repro/lab/binaries"
)

func init() { subcommands = append(subcommands, newLabCmd) }

func newLabCmd(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Run the lab: real kube-apiservers on etcd behind an NLB-like load balancer",
	}
	cmd.AddCommand(newLabBuildCmd(o))
	return cmd
}

func newLabBuildCmd(o *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "build",
		Short: "Build and cache the lab's kube-apiserver and etcd now instead of on first use",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range binaries.All {
				start := time.Now()
				p, err := binaries.Ensure(cmd.Context(), s, binaries.Options{Progress: os.Stderr})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s: %s (%s)\n", s.Name, s.Version, p, time.Since(start).Round(time.Millisecond))
			}
			return nil
		},
	}
}
