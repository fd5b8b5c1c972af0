// Command aggregated-apiserver is the lab's openshift-apiserver and
// oauth-apiserver stand-in: package server in the role --group names.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"

	"github.com/repro-tools/repro/lab/aggregated/server"
)

func main() {
	o := server.NewOptions()
	fs := pflag.NewFlagSet("aggregated-apiserver", pflag.ContinueOnError)
	o.AddFlags(fs)
	// klog's flags (-v and friends), as every k8s.io/apiserver program has.
	gfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gfs)
	fs.AddGoFlagSet(gfs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "aggregated-apiserver:", err)
		os.Exit(2)
	}
	defer klog.Flush()
	s, err := server.New(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "aggregated-apiserver:", err)
		os.Exit(1)
	}
	// SIGTERM starts graceful termination; a second signal exits at once.
	if err := s.Run(genericapiserver.SetupSignalContext()); err != nil {
		fmt.Fprintln(os.Stderr, "aggregated-apiserver:", err)
		os.Exit(1)
	}
}
