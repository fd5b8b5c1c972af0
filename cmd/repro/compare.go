package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/repro-tools/repro/report/compare"
	"github.com/repro-tools/repro/report/write"
)

func init() { subcommands = append(subcommands, newCompareCmd) }

// exitWorse is compare's exit code when a B side is worse than A beyond the
// threshold (the same code run uses for disruption over its limit).
const exitWorse = 3

type compareOptions struct {
	threshold string
	alpha     float64
	json      bool
	html      string
}

func newCompareCmd(_ *rootOptions) *cobra.Command {
	co := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare DIR DIR [DIR...]",
		Short: "Compare the disruption of results folders: is B worse or better than A?",
		Long: `Compare results folders side by side per backend-connection. The first
argument is A, the reference; every other argument is compared with it.

An argument is one results folder when it holds samples.jsonl; any other
folder is a parent whose results folders directly inside it (one level, in
name order) form one side together, e.g. "repro compare runs-4.16/ runs-4.17/".

Each iteration of a "repro run" (its rollout and cool-down) is one sample of
disruption per backend-connection; a folder without a rollout (probe,
baseline) is one sample of its whole-run total; baseline disruption is shown
in the notes, not compared. Per side: samples, median, P95 and max
disruption per sample, interval count, error classes and where in the
rollout the gaps started (terminating, starting, ready, cool-down).

B is worse when its median exceeds A's by more than --threshold (both parts)
on any backend-connection and a two-sided Mann-Whitney U test gives
p < --alpha; with too few samples for the test to ever reach that (e.g.
3 against 3), the threshold alone decides and the verdict says so.

--json writes the comparison as JSON instead of the table (schema
repro.compare/v1: stable field names). --html FILE also writes a
self-contained page with every folder's timeline aligned on its trigger.

Exit codes: 0 no side worse, 3 some side worse than A beyond the threshold,
1 bad input (missing folder, folder without samples, fewer than two sides).`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 2 {
				return fmt.Errorf("compare needs at least two results folders (A, then B...), got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runCompare(cmd, co, args) },
	}
	f := cmd.Flags()
	f.StringVar(&co.threshold, "threshold", compare.DefaultThreshold.String(), "practical threshold on the median per-iteration disruption: B is worse only when more than both parts above A, e.g. 1s,20% (one part alone: no constraint from the other)")
	f.Float64Var(&co.alpha, "alpha", compare.DefaultAlpha, "significance level of the rank test")
	f.BoolVar(&co.json, "json", false, "write the comparison as JSON (schema "+compare.CompareSchema+") instead of a table")
	f.StringVar(&co.html, "html", "", "also write a self-contained HTML page comparing every results folder (timelines aligned on the trigger) to FILE")
	return cmd
}

func runCompare(cmd *cobra.Command, co *compareOptions, args []string) error {
	th, err := compare.ParseThreshold(co.threshold)
	if err != nil {
		return fmt.Errorf("--threshold: %v", err)
	}
	if co.alpha <= 0 || co.alpha >= 1 {
		return fmt.Errorf("--alpha %v: must be between 0 and 1, e.g. 0.05", co.alpha)
	}
	sides := make([]compare.Side, 0, len(args))
	for _, arg := range args {
		s, err := compare.LoadSide(arg)
		if err != nil {
			return err
		}
		sides = append(sides, s)
	}
	c, err := compare.Compare(sides, compare.CompareOptions{Threshold: th, Alpha: co.alpha})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if co.json {
		err = compare.WriteCompareJSON(out, c)
	} else {
		err = compare.WriteCompare(out, c)
	}
	if err != nil {
		return err
	}
	if co.html != "" {
		if err := writeCompareHTML(co.html, sides); err != nil {
			return err
		}
	}
	if c.Worse {
		var worse []string
		for _, v := range c.Verdicts {
			if v.Worse {
				worse = append(worse, v.Role+" ("+v.Name+")")
			}
		}
		return withExitCode(exitWorse, fmt.Errorf("worse than A (%s) beyond the threshold %s: %s", args[0], th, strings.Join(worse, ", ")))
	}
	return nil
}

// writeCompareHTML writes the comparison page of every results folder of
// every side, in argument order, to path.
func writeCompareHTML(path string, sides []compare.Side) error {
	var dirs []string
	for _, s := range sides {
		for _, f := range s.Folders {
			dirs = append(dirs, f.Dir)
		}
	}
	var buf bytes.Buffer
	if err := write.WriteCompareHTML(&buf, dirs); err != nil {
		return fmt.Errorf("--html: %v", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--html: %v", err)
	}
	return nil
}
