package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// rootOptions holds the flags the commands share: kubeconfig flags the way
// oc and kubectl take them (bound only on the commands that talk to a
// cluster, bindClusterFlags), and logging.
type rootOptions struct {
	configFlags *genericclioptions.ConfigFlags
	logLevel    string
	log         *zap.Logger
	sink        *logSink
	cores       logCores
}

// subcommands collects the constructors of repro's commands; each command's
// file registers its own in init so the commands stay independent of each other.
var subcommands []func(*rootOptions) *cobra.Command

func newRootCmd() *cobra.Command {
	o := &rootOptions{configFlags: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:           "repro",
		Short:         "Reproduce and bisect API disruption during a kube-apiserver revision rollout",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.setupLogging(o.logLevel); err != nil {
				return err
			}
			return o.checkClusterFlags(cmd)
		},
	}
	cmd.PersistentFlags().StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	for _, sub := range subcommands {
		cmd.AddCommand(sub(o))
	}
	return cmd
}

// bindClusterFlags adds the kubeconfig flags (--kubeconfig, --context,
// --server, --token, ...) to a command that talks to a cluster. The offline
// commands (report, compare, diagnose, import) read folders only, so their
// help does not offer flags they would ignore.
func (o *rootOptions) bindClusterFlags(cmd *cobra.Command) {
	o.configFlags.AddFlags(cmd.Flags())
}

// logger returns the command's logger; before flags are parsed it is a no-op.
func (o *rootOptions) logger() *zap.Logger {
	if o.log == nil {
		return zap.NewNop()
	}
	return o.log
}

// checkClusterFlags rejects a cluster flag given empty (--kubeconfig "" is
// a script's unset variable, not a choice of the default) and checks
// --server's syntax, before anything is read or sent.
func (o *rootOptions) checkClusterFlags(cmd *cobra.Command) error {
	for _, f := range []struct{ name, what string }{
		{"kubeconfig", "the path of a kubeconfig file"}, {"context", "a context of the kubeconfig"},
		{"server", "the API server as https://HOST:PORT"}, {"token", "a bearer token"},
		{"certificate-authority", "the CA file"}, {"client-certificate", "the client certificate file"},
		{"client-key", "the client key file"}, {"user", "a user of the kubeconfig"}, {"cluster", "a cluster of the kubeconfig"},
	} {
		fl := cmd.Flags().Lookup(f.name)
		if fl != nil && fl.Changed && strings.TrimSpace(fl.Value.String()) == "" {
			return fmt.Errorf("--%s is empty: give %s, or leave the flag out", f.name, f.what)
		}
	}
	for _, f := range []struct {
		name string
		path *string
	}{{"kubeconfig", o.configFlags.KubeConfig}, {"certificate-authority", o.configFlags.CAFile},
		{"client-certificate", o.configFlags.CertFile}, {"client-key", o.configFlags.KeyFile}} {
		if f.path == nil || *f.path == "" {
			continue
		}
		if st, err := os.Stat(*f.path); err != nil {
			return fmt.Errorf("--%s %s: %v: name an existing file", f.name, *f.path, errors.Unwrap(err))
		} else if !st.Mode().IsRegular() {
			// A FIFO or a device would block or never end.
			return fmt.Errorf("--%s %s is not a regular file: name the file itself", f.name, *f.path)
		}
	}
	note, err := checkServerFlag(o)
	if err != nil {
		return err
	}
	if note != "" {
		o.logger().Warn(note)
	}
	return nil
}
