package main

import (
	"github.com/spf13/cobra"

	"github.com/repro-tools/repro/diagnose"
)

func init() { subcommands = append(subcommands, newDiagnoseCmd) }

func newDiagnoseCmd(_ *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diagnose DIR",
		Short: "Compare a results folder with the catalogue of disruption mechanisms: consistent, inconsistent or not testable, ranked",
		Long: `Diagnose reads a results folder (lab or live, any repro version) and holds its
figures (which backends and connection types failed, error classes, where in the
rollout, which apiservers the failed requests went to, attribution verdicts)
against the predicted fingerprint of every mechanism in the catalogue: each lab
profile's, and the field hypotheses. A mechanism whose prediction a figure
contradicts is inconsistent; one whose needed evidence the folder lacks is not
testable, naming what is missing. Nothing is sent anywhere.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := diagnose.Diagnose(args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return diagnose.WriteJSON(cmd.OutOrStdout(), r)
			}
			return diagnose.WriteText(cmd.OutOrStdout(), r)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "write the diagnosis as JSON (schema "+diagnose.Schema+")")
	return cmd
}
