package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/repro-tools/repro/importer"
	"github.com/repro-tools/repro/report"
	"github.com/repro-tools/repro/results"
)

func init() { subcommands = append(subcommands, newImportCmd) }

type importOptions struct {
	out     string
	json    bool
	pattern string
}

func newImportCmd(_ *rootOptions) *cobra.Command {
	io := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import FILE|DIR...",
		Short: "Read an origin CI run's interval files, place each disruption and name its pattern, offline",
		Long: `Read the interval files origin's CI runs leave behind
(e2e-timelines_spyglass_*.json; a folder is searched for them by name as
sippy does) and place every Disruption interval against the run's
kube-apiserver graceful shutdowns (APIServerGracefulShutdown), node updates
(NodeState) and kube-apiserver events. Each gets a pattern:

  apiserver-rollout  started in, 5 s before, or up to 60 s after a
                     kube-apiserver's shutdown window (not its node's update)
  node-update        started during a node's update phase (drain, OS update,
                     reboot)
  other              neither; the nearest events are named

An upgrade job's two files are its upgrade and conformance phases. A folder
whose interval files sit under different children is a folder of runs.
All three serializations origin has written are read; times are whole
seconds.

--json prints every Disruption interval with its backend, connection, from,
to, pattern, node, phase and error text. --out DIR writes a results folder
(one per run under DIR for several runs) that the rest of repro reads:
intervals, placements, summary.txt and report.html, with samples
synthesized at origin's one-per-second resolution; --pattern keeps only one
pattern's disruption there, so "repro compare" compares that pattern.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("import needs interval files or folders holding them (e2e-timelines_spyglass_*.json)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch io.pattern {
			case "", importer.PatternRollout, importer.PatternNodeUpdate, importer.PatternOther:
			default:
				return fmt.Errorf("--pattern %q: use %s, %s or %s", io.pattern, importer.PatternRollout, importer.PatternNodeUpdate, importer.PatternOther)
			}
			if io.pattern != "" && io.out == "" {
				return errors.New("--pattern shapes the folder --out writes; give --out DIR too")
			}
			runs, err := importer.Find(args)
			if err != nil {
				return err
			}
			var bad int
			var loaded []importer.Run
			var ps []importer.Placement
			for i := range runs {
				for _, e := range runs[i].Load() {
					fmt.Fprintln(cmd.ErrOrStderr(), e)
					bad++
				}
				if len(runs[i].Files) == 0 {
					continue
				}
				loaded = append(loaded, runs[i])
				ps = append(ps, importer.Place(runs[i])...)
			}
			stdout := cmd.OutOrStdout()
			if io.json {
				err = importer.WriteJSON(stdout, ps)
			} else {
				err = importer.WriteText(stdout, loaded, ps)
			}
			if err != nil {
				return err
			}
			if io.out != "" {
				for _, r := range loaded {
					if err := writeImported(cmd, io, r, ps, len(loaded) > 1); err != nil {
						fmt.Fprintln(cmd.ErrOrStderr(), err)
						bad++
					}
				}
			}
			if bad > 0 {
				return fmt.Errorf("%d interval file(s) or run(s) could not be imported (see above); the rest were", bad)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&io.out, "out", "", "write a results folder (one per run under it for several runs)")
	cmd.Flags().BoolVar(&io.json, "json", false, "print the placements as JSON")
	cmd.Flags().StringVar(&io.pattern, "pattern", "", "with --out: keep only this pattern's disruption (apiserver-rollout, node-update, other)")
	return cmd
}

// writeImported writes one run's folder, rebuilds repro's files in it and
// adds the import's own section to summary.txt.
func writeImported(cmd *cobra.Command, io *importOptions, r importer.Run, all []importer.Placement, many bool) error {
	dir := importer.FolderName(io.out, r, many)
	var mine []importer.Placement
	for _, p := range all {
		if p.Run == r.Name {
			mine = append(mine, p)
		}
	}
	if err := importer.WriteFolder(dir, r, mine, importer.OutOptions{Pattern: io.pattern, Command: os.Args}); err != nil {
		return err
	}
	if _, err := report.Rebuild(dir); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	f, err := results.Open(dir)
	if err != nil {
		return err
	}
	summary, err := os.ReadFile(f.Path(results.SummaryFile))
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.Write(summary)
	b.WriteString("\nImported from origin's interval files (whole seconds; samples synthesized one per second):\n")
	if err := importer.WriteText(&b, []importer.Run{r}, mine); err != nil {
		return err
	}
	if err := f.WriteFile(results.SummaryFile, b.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", dir)
	return nil
}
