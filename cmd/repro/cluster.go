package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/repro-tools/repro/results"
	"github.com/repro-tools/repro/scenarios"
)

// How a command finds its cluster.
//
// oc and kubectl resolve a cluster with client-go's clientcmd loading rules
// (k8s.io/client-go/tools/clientcmd, loader.go: ClientConfigLoadingRules
// and NewDefaultClientConfigLoadingRules): --kubeconfig, else $KUBECONFIG,
// else ~/.kube/config, with flags such as --server and --token merged over
// whatever was loaded (ConfigOverrides), and in-cluster as the fallback.
// That merge is why "--server X" alone sends the found file's user
// (token, client certificate, exec plugin, proxy-url) to X. repro probe,
// which changes nothing, keeps that resolution. repro run does not: it acts
// only on a cluster the user named, and with --server alone it builds the
// client from flags only, over an empty kubeconfig (clientcmd's
// DirectClientConfig), so nothing of a file the user did not name is sent.

// namedKubeconfig reports whether a kubeconfig (or an entry of one) was
// named: --kubeconfig, --context or KUBECONFIG.
func namedKubeconfig(o *rootOptions) bool {
	for _, f := range []*string{o.configFlags.KubeConfig, o.configFlags.Context} {
		if f != nil && *f != "" {
			return true
		}
	}
	return os.Getenv("KUBECONFIG") != ""
}

// serverFlag is --server as given, "" when not given.
func serverFlag(o *rootOptions) string {
	if o.configFlags.APIServer == nil {
		return ""
	}
	return *o.configFlags.APIServer
}

// str reads an optional flag pointer.
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// checkServerFlag checks --server's syntax and normalises it: a
// scheme-less host gets https:// (API servers speak TLS; client-go would
// pick plain http when no CA or certificate is given, and a TLS server
// answers that with a 400 that reads as "unknown reason"), and user info
// (user:password@) is dropped with a note: kube-apiserver has had no basic
// authentication since Kubernetes 1.19, and a password there would be
// printed and stored wherever the URL is.
func checkServerFlag(o *rootOptions) (note string, err error) {
	s := serverFlag(o)
	if s == "" {
		return "", nil
	}
	raw := s
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("--server %q is not a URL: give the API server as https://HOST:PORT", results.RedactURL(raw))
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return "", fmt.Errorf("--server %s: scheme %q is not https: give the API server as https://HOST:PORT", results.RedactURL(raw), u.Scheme)
	}
	if u.User != nil {
		u.User = nil
		note = "--server: the user:password in the URL is ignored (kube-apiserver has no basic authentication); pass --token or --client-certificate/--client-key"
	}
	*o.configFlags.APIServer = u.String()
	return note, nil
}

// flagCredentials lists the credential flags given.
func flagCredentials(o *rootOptions) []string {
	var fl []string
	f := o.configFlags
	if str(f.BearerToken) != "" {
		fl = append(fl, "--token")
	}
	if str(f.CertFile) != "" || str(f.KeyFile) != "" {
		fl = append(fl, "--client-certificate/--client-key")
	}
	if str(f.Username) != "" || str(f.Password) != "" {
		fl = append(fl, "--username/--password")
	}
	return fl
}

// flagsOnlyConfig builds the client of "--server alone" from the flags and
// nothing else: no kubeconfig is loaded, none merged, no in-cluster
// fallback, no KUBERNETES_MASTER default.
func flagsOnlyConfig(o *rootOptions) (*rest.Config, error) {
	f := o.configFlags
	ov := &clientcmd.ConfigOverrides{}
	ov.ClusterInfo.Server = str(f.APIServer)
	ov.ClusterInfo.CertificateAuthority = str(f.CAFile)
	ov.ClusterInfo.TLSServerName = str(f.TLSServerName)
	if f.Insecure != nil {
		ov.ClusterInfo.InsecureSkipTLSVerify = *f.Insecure
	}
	ov.AuthInfo.Token = str(f.BearerToken)
	ov.AuthInfo.ClientCertificate = str(f.CertFile)
	ov.AuthInfo.ClientKey = str(f.KeyFile)
	ov.AuthInfo.Username = str(f.Username)
	ov.AuthInfo.Password = str(f.Password)
	ov.AuthInfo.Impersonate = str(f.Impersonate)
	ov.AuthInfo.ImpersonateUID = str(f.ImpersonateUID)
	if f.ImpersonateGroup != nil {
		ov.AuthInfo.ImpersonateGroups = *f.ImpersonateGroup
	}
	ov.Timeout = str(f.Timeout)
	rc, err := clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), ov).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--server: %s", oneLine(err.Error()))
	}
	return rc, nil
}

// kubeconfigCredentials says which kubeconfig entry the loader used.
func kubeconfigCredentials(o *rootOptions) results.Credentials {
	c := results.Credentials{Source: "kubeconfig", Flags: flagCredentials(o)}
	raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return c
	}
	c.Context = raw.CurrentContext
	if s := str(o.configFlags.Context); s != "" {
		c.Context = s
	}
	if kc := raw.Contexts[c.Context]; kc != nil {
		c.User = kc.AuthInfo
		c.File = kc.LocationOfOrigin
	}
	if s := str(o.configFlags.AuthInfoName); s != "" {
		c.User = s
	}
	if ai := raw.AuthInfos[c.User]; ai != nil && ai.LocationOfOrigin != "" {
		c.File = ai.LocationOfOrigin
	}
	if c.File == "" {
		c.File = str(o.configFlags.KubeConfig)
	}
	if c.File == "" {
		c.File = os.Getenv("KUBECONFIG")
	}
	return c
}

// runTarget is the cluster repro run acts on: one the user named, never a
// kubeconfig found lying around. With --server and no kubeconfig named,
// credentials come from flags only.
func runTarget(o *rootOptions) (scenarios.Target, error) {
	if !namedKubeconfig(o) && serverFlag(o) != "" {
		rc, err := flagsOnlyConfig(o)
		if err != nil {
			return scenarios.Target{}, err
		}
		creds := results.Credentials{Source: "flags", Flags: flagCredentials(o), Insecure: rc.Insecure}
		return scenarios.Target{Config: rc, Live: true, Credentials: creds}, nil
	}
	rc, err := kubeconfigConfig(o, false)
	if err != nil {
		return scenarios.Target{}, err
	}
	creds := kubeconfigCredentials(o)
	creds.Insecure = rc.Insecure
	t := scenarios.Target{Config: rc, Live: true, Credentials: creds, Context: creds.Context}
	return t, nil
}

// probeTarget is the cluster repro probe polls, found the way oc finds it.
func probeTarget(o *rootOptions) (scenarios.Target, error) {
	rc, err := restConfig(o)
	if err != nil {
		return scenarios.Target{}, err
	}
	t := scenarios.Target{Config: rc, Live: true}
	if raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig(); err == nil && len(raw.Clusters) > 0 {
		t.Credentials = kubeconfigCredentials(o)
		if serverFlag(o) == "" {
			t.Context = t.Credentials.Context
		}
	} else if inCluster() && serverFlag(o) == "" {
		t.Credentials = results.Credentials{Source: "in-cluster"}
	} else {
		t.Credentials = results.Credentials{Source: "flags", Flags: flagCredentials(o)}
	}
	t.Credentials.Insecure = rc.Insecure
	return t, nil
}

// inCluster reports whether this process runs in a pod (client-go's
// rest.InClusterConfig looks at the same variables).
func inCluster() bool {
	return os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != ""
}

// restConfig loads the client configuration the way oc does (probe,
// attribute), and says so plainly when there is none (client-go would
// silently fall back to http://localhost:8080).
func restConfig(o *rootOptions) (*rest.Config, error) {
	return kubeconfigConfig(o, true)
}

// kubeconfigConfig loads the configuration through oc's loading rules;
// mayUseInCluster allows the in-cluster fallback when nothing is loaded.
func kubeconfigConfig(o *rootOptions, mayUseInCluster bool) (*rest.Config, error) {
	explicitServer := serverFlag(o) != ""
	if !(mayUseInCluster && inCluster()) && !explicitServer {
		raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("kubeconfig: %s: name an existing kubeconfig file (oc login writes ~/.kube/config)", oneLine(err.Error()))
			}
			return nil, fmt.Errorf("kubeconfig: %s", oneLine(err.Error()))
		}
		if len(raw.Clusters) == 0 {
			return nil, errors.New("no kubeconfig found: pass --kubeconfig or set KUBECONFIG (looked at $KUBECONFIG and ~/.kube/config)")
		}
		if c := str(o.configFlags.Context); c != "" && raw.Contexts[c] == nil {
			return nil, fmt.Errorf("--context %s: no such context in the kubeconfig; \"oc config get-contexts\" lists them", c)
		}
	}
	rc, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %s", oneLine(err.Error()))
	}
	rc.Host = results.RedactURL(rc.Host)
	return rc, nil
}

// oneLine folds a multi-line error message into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
