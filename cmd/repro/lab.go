package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/repro-tools/repro/lab"
	"github.com/repro-tools/repro/lab/aggregated"
	"github.com/repro-tools/repro/lab/binaries"
	"github.com/repro-tools/repro/lab/load"
	"github.com/repro-tools/repro/lab/netns"
)

func init() { subcommands = append(subcommands, newLabCmd) }

func newLabCmd(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Run the lab: real kube-apiservers on etcd behind an NLB-like load balancer",
		Long: `The lab is repro's local control plane: three real kube-apiserver processes
(master-0..2) on a real etcd, behind a load balancer that behaves like a cloud
NLB (pass-through TLS, /readyz health checks), with an installer controller that
rolls out kube-apiserver revisions the way OpenShift's operator does.
image.openshift.io and oauth.openshift.io are aggregated APIs as on OpenShift:
each node also runs an openshift-apiserver and an oauth-apiserver stand-in
(k8s.io/apiserver processes with their own etcd links) behind APIServices.

The load balancer (--lab-lb) is the kernel's (nftables DNAT in a network
namespace repro makes: the client's SYN reaches the apiserver, as through an
NLB) or a Go TCP proxy. repro run picks the kernel one where it can; lab up
keeps the proxy unless given --lab-lb kernel, since the namespace is not
reachable from the host without nsenter.

Force a rollout against it as on OpenShift:
  oc --kubeconfig FILE patch kubeapiserver cluster --type=merge \
    -p '{"spec":{"forceRedeploymentReason":"test-1"}}'`,
		// An unknown subcommand is an error, not the help with exit 0.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown lab command %q: use build, up, profiles or versions (repro lab --help)", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newLabBuildCmd(o), newLabUpCmd(o), newLabProfilesCmd(o), newLabVersionsCmd(o), newLabLoadCmd())
	return cmd
}

// newLabLoadCmd is the lab's load process (--lab-load), which the lab
// starts and stops itself; hidden, as no user runs it.
func newLabLoadCmd() *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use: "load", Hidden: true, Args: cobra.NoArgs,
		Short: "Run the lab's cluster load (started by the lab)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load.ReadConfig(config)
			if err != nil {
				return err
			}
			log, err := zap.NewProduction()
			if err != nil {
				return err
			}
			defer log.Sync()
			return load.Run(cmd.Context(), cfg, log)
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the load's configuration file, written by the lab")
	return cmd
}

func newLabBuildCmd(o *rootOptions) *cobra.Command {
	var versions []string
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build and cache the lab's kube-apiserver, etcd, Prometheus and aggregated API server now instead of on first use",
		Long: `Builds kube-apiserver ` + binaries.KubeAPIServer.Version + ` and etcd ` + binaries.Etcd.Version + ` from the Go
module proxy, and the lab's aggregated API server (openshift-apiserver's and
oauth-apiserver's stand-in, on k8s.io/apiserver ` + aggregated.Spec.Version + `), and ` + binaries.Prometheus.Release + `
(the lab's monitoring, for a run's server metrics), into the user cache
(about 6 minutes cold on 2 cores, once), so later lab starts take seconds.
--lab-kube-version builds other kube-apiserver releases too (repro lab
versions lists them). Needs a Go toolchain on PATH.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			specs := append(append([]binaries.Spec{}, binaries.All...), aggregated.Spec)
			for _, v := range versions {
				s, err := lab.KubeAPIServerSpec(v)
				if err != nil {
					return err
				}
				specs = append(specs, s)
			}
			for _, s := range specs {
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
	cmd.Flags().StringSliceVar(&versions, "lab-kube-version", nil, "also build these kube-apiserver releases (comma-separated, e.g. v1.29.6,v1.30.14)")
	return cmd
}

func newLabVersionsCmd(o *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "versions",
		Short: "List the kube-apiserver releases the lab can build, and which are built",
		Long: `Lists every kube-apiserver release --lab-kube-version takes, the OpenShift
release that ships it, and whether it is built and cached (the first run with a
release builds it, about 3-5 minutes on 2 cores). Any other build runs with
--kube-apiserver PATH.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%-10s %-16s %-8s %s\n", "VERSION", "SHIPPED IN", "DEFAULT", "BUILT")
			for _, s := range binaries.KubeAPIServers {
				p, ok, err := binaries.Path(s, binaries.Options{})
				if err != nil {
					return err
				}
				built := "no (built on first use, about " + s.ColdBuild.String() + ")"
				if ok {
					built = p
				}
				def := ""
				if s.Version == binaries.KubeAPIServer.Version {
					def = "yes"
				}
				fmt.Fprintf(w, "%-10s %-16s %-8s %s\n", s.Version, s.Release, def, built)
			}
			return nil
		},
	}
}

// labFlags binds lab.Options to flags; repro run reuses it for its lab.
// Each timing flag defaults to the time scale's value (the fast one shown
// in the help); a flag given on the command line is taken as it is.
type labFlags struct {
	opts    lab.Options
	lb      string
	timing  string
	profile string
	sets    []string
	cmd     *cobra.Command
}

// options resolves the time scale, the profile, explicit flags and
// --lab-set into the lab's options, validated by the lab (lab.Choices).
func (f *labFlags) options() (lab.Options, error) {
	c := lab.Choices{Timing: f.timing, Profile: f.profile, Sets: f.sets, LB: f.lb}
	if f.cmd != nil {
		c.Given = f.cmd.Flags().Changed
	}
	return c.Resolve(f.opts)
}

// enterNetns runs this repro again inside a network namespace of its own
// when the lab's load balancer may be the kernel one (o.LB auto or kernel)
// and this process is not yet in one. ran says the child ran in its place,
// code its exit code. Where no namespace can be made, auto says why in one
// line and goes on with the Go proxy; kernel fails.
func enterNetns(ctx context.Context, o *lab.Options, errOut io.Writer) (code int, ran bool, err error) {
	if netns.Inside() || o.LB == lab.LBProxy {
		return 0, false, nil
	}
	// Build what is not built yet out here, in the open: the namespace
	// has no network to reach the module proxy.
	bo := *o
	bo.BuildProgress = errOut
	if _, err := lab.Binaries(ctx, bo); err != nil {
		return 0, false, fmt.Errorf("lab did not start: %w", err)
	}
	code, err = netns.Run()
	if err == nil {
		return code, true, nil
	}
	if o.LB == lab.LBKernel {
		return 0, false, fmt.Errorf("--lab-lb kernel: %v; or use --lab-lb proxy", err)
	}
	fmt.Fprintf(errOut, "repro: kernel load balancer unavailable (%v): the lab uses the Go proxy\n", err)
	o.LB = lab.LBProxy
	return 0, false, nil
}

func (f *labFlags) bind(cmd *cobra.Command) {
	d := lab.DefaultOptions()
	f.opts = d
	f.cmd = cmd
	// Every timing comes from a flag defaulting to the lab's default, so a
	// zero on the command line means zero (e.g. --shutdown-delay 0s).
	f.opts.ExactTimings = true
	fl := cmd.Flags()
	fl.StringVar(&f.timing, "lab-timing", lab.TimingFast.Name, "the lab's time scale: fast (every AWS duration, the probe timeout too, divided by 10; about 2 minutes a run) or aws (as on AWS; about 8.5 minutes)")
	fl.StringVar(&f.opts.KubeAPIServer, "kube-apiserver", "", "kube-apiserver binary to run instead of the built "+binaries.KubeAPIServer.Version+" (a patched fork, a candidate fix)")
	fl.StringVar(&f.opts.KubeVersion, "lab-kube-version", "", "kube-apiserver release to build and run: "+lab.KubeVersionsHelp()+" (repro lab versions)")
	fl.StringVar(&f.opts.Etcd, "etcd", "", "etcd binary to run instead of the built "+binaries.Etcd.Version)
	fl.StringVar(&f.opts.Listen, "listen", d.Listen, "load balancer address; a fixed port must be free")
	fl.StringVar(&f.lb, "lab-lb", lab.LBAuto, "the lab's load balancer: kernel (pass-through like an NLB: nftables DNAT in a network namespace repro makes), proxy (a Go TCP proxy), or auto (kernel where a namespace can be made, else proxy)")
	fl.IntVar(&f.opts.Nodes, "nodes", d.Nodes, "number of control-plane nodes")
	fl.StringVar(&f.opts.Load, "lab-load", load.None, "cluster load the lab carries beside the pollers, in a process of its own (kubelets, kube-proxies, controllers listing, watching and writing through the load balancer as themselves): "+strings.Join(load.Names(), ", ")+" (docs/lab.md)")
	// The knobs that have a flag (the timings and the health-check
	// thresholds), from the knob table, defaulting to the fast scale.
	for _, k := range lab.Knobs() {
		if k.Flag == "" {
			continue
		}
		if p := k.Duration(&f.opts); p != nil {
			fl.DurationVar(p, k.Key, *p, k.Flag)
		} else if p := k.Int(&f.opts); p != nil {
			fl.IntVar(p, k.Key, *p, k.Flag)
		}
	}
	fl.DurationVar(&f.opts.StartTimeout, "start-timeout", d.StartTimeout, "limit for one apiserver to become ready")
	fl.StringVar(&f.opts.Dir, "dir", "", "keep the lab's files (PKI, etcd data, apiserver logs) here instead of a temporary dir removed at exit")
	fl.StringVar(&f.opts.ConnRecords, "lb-records", "", "stream the load balancer's connection records to this JSON-lines file")
	fl.StringVar(&f.profile, "lab-profile", "", "named fault profile (see \"repro lab profiles\"): "+strings.Join(lab.ProfileNames(), ", "))
	fl.StringArrayVar(&f.sets, "lab-set", nil, "set a lab knob, key=value, repeatable, over the profile and flags, taken as given (not scaled; keys: \"repro lab profiles\")")
}

func newLabProfilesCmd(o *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "profiles",
		Short: "List the lab's fault profiles and knobs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Profiles' durations are written as on AWS and divided by --lab-timing (fast: by %d); --lab-set values are taken as given.\n\n", lab.TimingFast.Factor)
			for _, p := range lab.Profiles() {
				fmt.Fprintf(out, "%s\n", p.Name)
				fmt.Fprintf(out, "  models:   %s\n", p.Models)
				fmt.Fprintf(out, "  source:   %s\n", p.Source)
				settings := "(defaults)"
				if len(p.Settings) > 0 {
					settings = strings.Join(p.Settings, " ")
				}
				fmt.Fprintf(out, "  settings: %s\n\n", settings)
			}
			fmt.Fprintln(out, "the NLB's attributes (default on AWS; the lab's knob; source):")
			for _, a := range lab.NLBAttributes() {
				knob := a.Knob
				if knob == "" {
					knob = "-"
				}
				fmt.Fprintf(out, "  %s = %s\n      knob %s; %s\n", a.Attribute, a.Default, knob, a.Source)
			}
			fmt.Fprintln(out, "  load balancer: --lab-lb kernel passes the client's connection through (nftables DNAT, as an NLB), proxy accepts it and dials the target; auto picks kernel where repro can make a network namespace")
			fmt.Fprintln(out)
			d := lab.Settings(lab.DefaultOptions())
			fmt.Fprintln(out, "knobs (--lab-set key=value; default on the fast scale in brackets):")
			for _, k := range lab.Knobs() {
				fmt.Fprintf(out, "  %-24s %s [%s]\n", k.Key, k.Doc, d[k.Key])
			}
			return nil
		},
	}
}

func newLabUpCmd(o *rootOptions) *cobra.Command {
	var f labFlags
	var kubeconfigOut string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the lab in the foreground; Ctrl-C stops it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := o.logger()
			opts, err := f.options()
			if err != nil {
				return err
			}
			// The kernel LB lives in a network namespace the host cannot
			// reach directly: lab up keeps the proxy unless asked.
			if opts.LB == lab.LBAuto && !netns.Inside() {
				opts.LB = lab.LBProxy
			}
			if code, ran, err := enterNetns(cmd.Context(), &opts, cmd.ErrOrStderr()); err != nil {
				return err
			} else if ran {
				return childExit(code)
			}
			opts.Logger = log.Named("lab")
			opts.BuildProgress = os.Stderr
			started := time.Now()
			l, err := lab.Start(cmd.Context(), opts)
			if err != nil {
				if errors.Is(err, binaries.ErrNoGoToolchain) {
					return err
				}
				return fmt.Errorf("lab did not start: %w", err)
			}
			defer l.Stop()
			if kubeconfigOut == "" {
				kubeconfigOut = filepath.Join(l.Dir(), "kubeconfig")
			}
			if err := l.WriteKubeconfig(kubeconfigOut); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "lab is up in %s\n", time.Since(started).Round(time.Millisecond))
			if opts.Profile != "" || len(f.sets) > 0 {
				fmt.Fprintf(out, "  profile:             %s %s\n", opts.Profile, strings.Join(f.sets, " "))
			}
			fmt.Fprintf(out, "  kube-apiserver:      %s\n", l.KubeVersion())
			fmt.Fprintf(out, "  API (load balancer): %s (%s)\n", l.URL(), l.LBKind())
			if netns.Inside() {
				fmt.Fprintf(out, "  network namespace:   the kernel load balancer is reachable only from inside it: %s -- oc --kubeconfig %s get --raw /readyz\n", netns.EnterCommand(), kubeconfigOut)
			}
			fmt.Fprintf(out, "  kubeconfig:          %s\n", kubeconfigOut)
			for _, n := range l.Nodes() {
				fmt.Fprintf(out, "  %s: %s (pid %d, revision %d)\n", n.Name(), n.URL(), n.PID(), n.Revision())
			}
			svcs, err := l.APIServices(cmd.Context())
			if err != nil {
				return fmt.Errorf("reading the APIServices: %w", err)
			}
			for _, s := range svcs {
				avail := "Available"
				if !s.Available {
					avail = "not Available: " + s.Reason
				}
				fmt.Fprintf(out, "  APIService %s: %s\n", s.Name, avail)
				for _, r := range l.Replicas() {
					if "v1."+r.Group() == s.Name {
						fmt.Fprintf(out, "    %s/apiserver-%s: %s (pid %d)\n", r.Namespace(), r.NodeName(), r.Addr(), r.PID())
					}
				}
			}
			fmt.Fprintf(out, "  files:               %s\n", l.Dir())
			fmt.Fprintf(out, "force a rollout:  KUBECONFIG=%s oc patch kubeapiserver cluster --type=merge -p '{\"spec\":{\"forceRedeploymentReason\":\"test-'$(date +%%s)'\"}}'\n", kubeconfigOut)
			fmt.Fprintln(out, "press Ctrl-C to stop")
			select {
			case <-cmd.Context().Done():
			case <-l.Done():
			}
			log.Info("stopping the lab")
			if err := l.Stop(); err != nil {
				return err
			}
			if f.opts.Dir == "" && kubeconfigOut == filepath.Join(l.Dir(), "kubeconfig") {
				log.Info("lab stopped; its temporary files are removed")
			}
			log.Info("lab stopped", zap.Duration("uptime", time.Since(started).Round(time.Second)))
			return nil
		},
	}
	f.bind(cmd)
	cmd.Flags().StringVar(&kubeconfigOut, "kubeconfig-out", "", "write the admin kubeconfig here (default: inside the lab's directory)")
	return cmd
}
