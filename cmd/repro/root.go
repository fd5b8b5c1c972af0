package main

import (
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// rootOptions holds the flags every command shares: kubeconfig flags the way
// oc and kubectl take them, and logging.
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
			return o.setupLogging(o.logLevel)
		},
	}
	o.configFlags.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	for _, sub := range subcommands {
		cmd.AddCommand(sub(o))
	}
	return cmd
}

// logger returns the command's logger; before flags are parsed it is a no-op.
func (o *rootOptions) logger() *zap.Logger {
	if o.log == nil {
		return zap.NewNop()
	}
	return o.log
}
