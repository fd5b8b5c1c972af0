package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/results"
	"github.com/repro-tools/repro/sweep"
)

func init() { subcommands = append(subcommands, newSweepCmd) }

const sweepUsage = `repro sweep --scenario apiserver-rollout (--lab-set key=v1,v2,... | --lab-kube-version v1,v2,...) [--iterations N] [--out DIR] [--floor 300ms] [repro run flags...]`

func newSweepCmd(_ *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "sweep --scenario NAME (--lab-set key=v1,v2,... | --lab-kube-version v1,v2,...) [--iterations N] [--out DIR] [run flags]",
		Short: "Run a lab scenario once per value of one knob and tabulate the disruption against it",
		Long: `Sweep runs "repro run" of this binary on the lab once per value of one knob
(--lab-set key=v1,v2,...) or per kube-apiserver release (--lab-kube-version
v1.29.6,v1.30.14: the Kubernetes of OpenShift 4.16 against 4.17's; see repro
lab versions), each in DIR/<key>=<value>, with every other flag
passed on as given (--lab-profile, --baseline, --cool-down, --lab-set k=v,
--lab-timing, ...). It then writes into DIR: sweep.txt (the disruption of every
backend-connection, median per iteration, against the value, each point
compared with the previous one by repro compare's rule, and where the gap
appears or disappears), sweep.json, sweep.svg and report.html. A point has a
gap when a backend-connection lost more than --floor (default 300ms, three
poll intervals: single requests a healthy rollout can lose); what it lost
below that is still shown.

Ctrl-C stops the running point (it keeps its partial results), runs no further
point, and analyses the complete ones.

Usage:
  ` + sweepUsage,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, help, err := parseSweepArgs(args)
			if help {
				return cmd.Help()
			}
			if err != nil {
				return err
			}
			if o.Binary, err = os.Executable(); err != nil {
				return fmt.Errorf("cannot find the repro binary to run: %v", err)
			}
			o.Log, o.Output = cmd.ErrOrStderr(), nil
			if o.Flag == "--lab-kube-version" {
				// Build every release first, in the open: a point's own
				// output is discarded, and a first build takes minutes.
				for _, v := range o.Values {
					if _, err := lab.EnsureKubeAPIServer(cmd.Context(), v, cmd.ErrOrStderr()); err != nil {
						return err
					}
				}
			}
			res, err := sweep.Run(cmd.Context(), o)
			if res != nil {
				if werr := sweep.WriteTable(cmd.OutOrStdout(), res); werr != nil && err == nil {
					err = werr
				}
				fmt.Fprintf(cmd.OutOrStdout(), "\nwritten to %s (%s, %s, %s, %s)\n", o.Out, sweep.TableFile, sweep.JSONFile, sweep.PlotFile, sweep.HTMLFile)
			}
			if err != nil {
				return err
			}
			if res.Interrupted {
				return withExitCode(exitInterrupted, errors.New("interrupted; the complete points are analysed above"))
			}
			return nil
		},
	}
}

// parseSweepArgs takes the sweep's own flags out of args and keeps the rest
// for repro run, in order.
func parseSweepArgs(args []string) (sweep.Options, bool, error) {
	var o sweep.Options
	var sets, versions []string
	value := func(i *int, name string) (string, error) {
		a := args[*i]
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, nil
		}
		if *i+1 >= len(args) {
			return "", fmt.Errorf("%s needs a value; usage: %s", name, sweepUsage)
		}
		*i++
		return args[*i], nil
	}
	is := func(a, name string) bool { return a == name || strings.HasPrefix(a, name+"=") }
	for i := 0; i < len(args); i++ {
		a := args[i]
		var err error
		var v string
		switch {
		case a == "-h" || a == "--help":
			return o, true, nil
		case is(a, "--scenario"):
			o.Scenario, err = value(&i, "--scenario")
		case is(a, "--out"):
			o.Out, err = value(&i, "--out")
		case is(a, "--iterations"):
			if v, err = value(&i, "--iterations"); err == nil {
				if o.Iterations, err = strconv.Atoi(v); err != nil || o.Iterations < 1 {
					err = fmt.Errorf("--iterations %q: want a whole number of at least 1", v)
				}
			}
		case is(a, "--lab-set"):
			if v, err = value(&i, "--lab-set"); err == nil {
				if strings.Contains(v, ",") {
					sets = append(sets, v)
				} else {
					o.Forward = append(o.Forward, "--lab-set", v)
				}
			}
		case is(a, "--lab-kube-version"):
			if v, err = value(&i, "--lab-kube-version"); err == nil {
				if strings.Contains(v, ",") {
					versions = append(versions, v)
				} else {
					o.Forward = append(o.Forward, "--lab-kube-version", v)
				}
			}
		case is(a, "--floor"):
			if v, err = value(&i, "--floor"); err == nil {
				if o.Floor, err = time.ParseDuration(v); err != nil || o.Floor <= 0 {
					err = fmt.Errorf("--floor %q: want a positive duration such as 300ms", v)
				}
			}
		case is(a, "--out-dir"), is(a, "--dry-run"):
			err = fmt.Errorf("%s is not supported by sweep", a)
		default:
			o.Forward = append(o.Forward, a)
		}
		if err != nil {
			return o, false, err
		}
	}
	if o.Scenario == "" {
		return o, false, fmt.Errorf("--scenario is required; usage: %s", sweepUsage)
	}
	if len(sets)+len(versions) != 1 {
		return o, false, fmt.Errorf("name exactly one thing to sweep, as --lab-set key=v1,v2,... or --lab-kube-version v1,v2,... (got %d); usage: %s", len(sets)+len(versions), sweepUsage)
	}
	if len(versions) == 1 {
		o.Key, o.Flag = "lab-kube-version", "--lab-kube-version"
		for _, v := range strings.Split(versions[0], ",") {
			if v == "" {
				return o, false, fmt.Errorf("--lab-kube-version %q: an empty value; want v1,v2,... (repro lab versions)", versions[0])
			}
			if _, err := lab.KubeAPIServerSpec(v); err != nil {
				return o, false, fmt.Errorf("--lab-kube-version %s: %w", versions[0], errors.Unwrap(err))
			}
			o.Values = append(o.Values, v)
		}
	} else {
		var err error
		if o.Key, o.Values, err = sweep.ParseSet(sets[0]); err != nil {
			return o, false, err
		}
		if !slices.Contains(lab.KnobKeys(), o.Key) {
			return o, false, fmt.Errorf("--lab-set %s: unknown lab knob %q; valid: %s", sets[0], o.Key, strings.Join(lab.KnobKeys(), ", "))
		}
	}
	if o.Out == "" {
		o.Out = results.DefaultDir("sweep", time.Now())
	}
	return o, false, nil
}
