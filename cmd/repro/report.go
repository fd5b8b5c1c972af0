package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/repro-tools/repro/report/write"
	"github.com/repro-tools/repro/results"
)

func init() { subcommands = append(subcommands, newReportCmd) }

func newReportCmd(o *rootOptions) *cobra.Command {
	var originOnly bool
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Rebuild intervals.json, backend-disruption.json and summary.txt from a results folder, offline",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if originOnly {
				paths, err := write.RebuildOrigin(dir)
				if err != nil {
					return err
				}
				for _, p := range paths {
					fmt.Fprintln(cmd.OutOrStdout(), p)
				}
				return nil
			}
			a, err := write.Rebuild(dir)
			if err != nil {
				return err
			}
			f, _ := results.Open(dir)
			summary, err := os.ReadFile(f.Path(results.SummaryFile))
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), string(summary))
			if a.TruncatedLast {
				o.logger().Warn("the last line of samples.jsonl was truncated (the run ended abruptly); it was skipped")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&originOnly, "origin", false, "rebuild only origin's files (e2e-timelines_spyglass_<run>.json, backend-disruption_<run>.json)")
	return cmd
}
