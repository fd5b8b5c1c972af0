// Package vantage resolves where the API is polled from into the prober's
// targets, the way origin's newer disruption backends reach the API
// (openshift/origin pkg/monitortests/kubeapiserver/disruptioninclusterapiserver
// and disruptionlegacyapiservers; load balancer types external-lb,
// internal-lb, service-network, and one apiserver per node):
//
//	external-lb      the kubeconfig's server, the cluster's external load
//	                 balancer (the default)
//	internal-lb      the Infrastructure's status.apiServerInternalURI
//	                 (config.openshift.io/v1 infrastructures/cluster)
//	direct           every control-plane apiserver by its own address, from
//	                 the default/kubernetes EndpointSlices, the certificate
//	                 verified against the cluster's API host name
//	service-network  https://kubernetes.default.svc, from inside the cluster
//
// Each vantage's pollers are named with origin's newer form, the load
// balancer type in the name (results.SamplerName), so they never merge into
// the external load balancer's history. "external-lb fails while direct to
// the same node answers" is the load balancer.
package vantage

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"

	configclient "github.com/openshift/client-go/config/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
)

// The vantage points.
const (
	ExternalLB     = results.VantageExternalLB
	InternalLB     = "internal-lb"
	Direct         = "direct"
	ServiceNetwork = "service-network"
)

// Names lists the vantage points in the order they are polled.
var Names = []string{ExternalLB, InternalLB, Direct, ServiceNetwork}

// ServiceNetworkURL is the in-cluster service of the API.
const ServiceNetworkURL = "https://kubernetes.default.svc:443"

// Parse checks vantage names and drops repeats, keeping Names' order; none
// means external-lb.
func Parse(vs []string) ([]string, error) {
	want := map[string]bool{}
	for _, v := range vs {
		v = strings.TrimSpace(v)
		ok := false
		for _, n := range Names {
			if v == n {
				ok = true
			}
		}
		if !ok {
			return nil, fmt.Errorf("--vantage %q: want one of %s", v, strings.Join(Names, ", "))
		}
		want[v] = true
	}
	if len(want) == 0 {
		return []string{ExternalLB}, nil
	}
	var out []string
	for _, n := range Names {
		if want[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// Clients are what resolving reads through.
type Clients struct {
	Kube   kubernetes.Interface
	Config configclient.Interface
}

// NewClients builds the clients for cfg.
func NewClients(cfg *rest.Config) (Clients, error) {
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	c, err := configclient.NewForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Kube: k, Config: c}, nil
}

// Resolve turns vantage names into prober targets for the cluster whose
// API server URL is server (the kubeconfig's). Any vantage that cannot be
// resolved is an error of one line saying why and what to do.
func Resolve(ctx context.Context, c Clients, server string, names []string) ([]prober.Target, error) {
	var out []prober.Target
	for _, n := range names {
		switch n {
		case ExternalLB:
			out = append(out, prober.Target{})
		case InternalLB:
			t, err := internalLB(ctx, c)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		case Direct:
			ts, err := direct(ctx, c, server)
			if err != nil {
				return nil, err
			}
			out = append(out, ts...)
		case ServiceNetwork:
			if os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
				return nil, fmt.Errorf("--vantage service-network reaches %s, which resolves only inside the cluster: run repro in a pod (hostNetwork, as origin's in-cluster pollers) or drop it", ServiceNetworkURL)
			}
			out = append(out, prober.Target{Vantage: ServiceNetwork, URL: ServiceNetworkURL})
		default:
			return nil, fmt.Errorf("unknown vantage %q", n)
		}
	}
	return out, nil
}

func internalLB(ctx context.Context, c Clients) (prober.Target, error) {
	infra, err := c.Config.ConfigV1().Infrastructures().Get(ctx, "cluster", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return prober.Target{}, fmt.Errorf("--vantage internal-lb: the cluster has no infrastructures.config.openshift.io/cluster (not OpenShift, or the lab, which has no internal load balancer)")
	}
	if err != nil {
		return prober.Target{}, fmt.Errorf("--vantage internal-lb: reading infrastructures/cluster: %w", err)
	}
	uri := infra.Status.APIServerInternalURL
	if uri == "" {
		return prober.Target{}, fmt.Errorf("--vantage internal-lb: infrastructures/cluster has no status.apiServerInternalURI")
	}
	return prober.Target{Vantage: InternalLB, URL: uri}, nil
}

// direct reads the apiservers' endpoints from the EndpointSlices of the
// default/kubernetes Service (kube-apiserver's endpoint reconciler writes
// them, one address per apiserver) and names each by its node: the
// endpoint's nodeName, else the node with that InternalIP, else the address.
func direct(ctx context.Context, c Clients, server string) ([]prober.Target, error) {
	u, err := url.Parse(server)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("--vantage direct: the server URL %q has no host name to verify the apiservers' certificates against", server)
	}
	host := u.Hostname()
	slices, err := c.Kube.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		return nil, fmt.Errorf("--vantage direct: listing the default/kubernetes EndpointSlices: %w", err)
	}
	byIP := map[string]string{}
	if nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					byIP[a.Address] = n.Name
				}
			}
		}
	}
	var out []prober.Target
	seen := map[string]bool{}
	for _, s := range slices.Items {
		port := int32(0)
		for _, p := range s.Ports {
			if p.Port != nil && (p.Name == nil || *p.Name == "https" || port == 0) {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		// Endpoints not ready are polled too: a node mid-rollout is
		// what direct polling is for.
		for _, ep := range s.Endpoints {
			for _, addr := range ep.Addresses {
				name := ""
				if ep.NodeName != nil {
					name = *ep.NodeName
				}
				if name == "" {
					name = byIP[addr]
				}
				if name == "" {
					name = addr
				}
				url := "https://" + net.JoinHostPort(addr, strconv.Itoa(int(port)))
				if seen[url] {
					continue
				}
				seen[url] = true
				out = append(out, prober.Target{Vantage: Direct, Node: name, URL: url, ServerName: host})
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--vantage direct: the default/kubernetes EndpointSlices list no apiserver address")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, nil
}
