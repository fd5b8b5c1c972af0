package trigger

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// Permission is one thing a run does to or reads from the cluster, in the
// terms of a SelfSubjectAccessReview: a resource verb (Group, Resource,
// optionally Namespace and Name) or a GET of a non-resource URL.
type Permission struct {
	Verb     string
	Group    string
	Resource string
	// Subresource, e.g. "proxy" of nodes/proxy.
	Subresource    string
	Namespace      string
	Name           string
	NonResourceURL string
	// Why says what the run needs it for, in the error that lists it missing.
	Why string
}

// String renders the permission the way "oc auth can-i" takes it, e.g.
// "patch kubeapiservers.operator.openshift.io/cluster" or "get /version".
func (p Permission) String() string {
	if p.NonResourceURL != "" {
		return p.Verb + " " + p.NonResourceURL
	}
	r := p.Resource
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	if p.Group != "" {
		r += "." + p.Group
	}
	if p.Name != "" {
		r += "/" + p.Name
	}
	s := p.Verb + " " + r
	if p.Namespace != "" {
		s += " -n " + p.Namespace
	}
	return s
}

// RolloutPermissions is everything a rollout run does besides polling:
// preflight reads, the patch, and the watches that follow the rollout. It
// is the one table both the check before a run and "repro rbac" use; add a
// row here when the run starts to need something new.
var RolloutPermissions = []Permission{
	{Verb: "get", NonResourceURL: "/version", Why: "preflight: the server's Kubernetes version"},
	{Verb: "get", Group: "operator.openshift.io", Resource: "kubeapiservers", Name: OperatorName, Why: "preflight: the current revision"},
	{Verb: "patch", Group: "operator.openshift.io", Resource: "kubeapiservers", Name: OperatorName, Why: "the trigger: spec.forceRedeploymentReason"},
	{Verb: "list", Group: "operator.openshift.io", Resource: "kubeapiservers", Name: OperatorName, Why: "following the rollout's node statuses"},
	{Verb: "watch", Group: "operator.openshift.io", Resource: "kubeapiservers", Name: OperatorName, Why: "following the rollout's node statuses"},
	{Verb: "list", Resource: "pods", Namespace: Namespace, Why: "following the apiserver, guard and installer pods"},
	{Verb: "watch", Resource: "pods", Namespace: Namespace, Why: "following the apiserver, guard and installer pods"},
	{Verb: "list", Resource: "events", Namespace: Namespace, Why: "the apiservers' termination events"},
	{Verb: "watch", Resource: "events", Namespace: Namespace, Why: "the apiservers' termination events"},
	{Verb: "get", Group: "config.openshift.io", Resource: "clusterversions", Name: "version", Why: "labelling the run with the OpenShift version"},
	{Verb: "get", Group: "config.openshift.io", Resource: "infrastructures", Name: "cluster", Why: "labelling the run with the platform and topology"},
	{Verb: "get", Group: "config.openshift.io", Resource: "clusteroperators", Name: "kube-apiserver", Why: "preflight: the operator is settled"},
}

// AttributionPermissions is what "repro attribute" (and run --attribute)
// reads: the control-plane nodes, and their audit logs through the node logs
// API, /api/v1/nodes/NODE/proxy/logs/... (what "oc adm node-logs" needs).
var AttributionPermissions = []Permission{
	{Verb: "list", Resource: "nodes", Why: "attribution: the control-plane nodes whose audit logs to read"},
	{Verb: "get", Resource: "nodes", Subresource: "proxy", Why: "attribution: the audit logs, through the node logs API"},
}

// VantagePermissions is what resolving --vantage internal-lb and direct reads:
// the Infrastructure's internal API URL and the apiservers' endpoints.
var VantagePermissions = []Permission{
	{Verb: "get", Group: "config.openshift.io", Resource: "infrastructures", Name: "cluster", Why: "--vantage internal-lb: status.apiServerInternalURI"},
	{Verb: "get", Group: "discovery.k8s.io", Resource: "endpointslices", Namespace: "default", Why: "--vantage direct: the default/kubernetes EndpointSlice"},
	{Verb: "list", Group: "discovery.k8s.io", Resource: "endpointslices", Namespace: "default", Why: "--vantage direct: the default/kubernetes EndpointSlice"},
}

// MetricsPermissions is what scraping each apiserver's own /metrics during
// a run needs (metrics.Scraper, through the direct vantage's addresses).
var MetricsPermissions = []Permission{
	{Verb: "get", NonResourceURL: "/metrics", Why: "the apiservers' own metrics, scraped during the run"},
	{Verb: "list", Group: "discovery.k8s.io", Resource: "endpointslices", Namespace: "default", Why: "the apiservers' own addresses, to scrape each one's /metrics"},
}

// MonitoringPermissions is what reading the cluster's monitoring after a
// run needs: thanos-querier's route, and what the route's proxy checks of
// the token it is sent (get namespaces), both of which the
// cluster-monitoring-view ClusterRole grants. They are not checked before a
// run: without them the run goes on without etcd's and the nodes' metrics.
var MonitoringPermissions = []Permission{
	{Verb: "get", Group: "route.openshift.io", Resource: "routes", Namespace: "openshift-monitoring", Name: "thanos-querier", Why: "cluster monitoring: thanos-querier's address"},
	{Verb: "get", Resource: "namespaces", Why: "cluster monitoring: what thanos-querier's proxy checks of the token (cluster-monitoring-view)"},
}

// BackendPermission is what polling the API path (with its query) needs:
// get or list of the resource it names, or a GET of a non-resource URL.
func BackendPermission(path string) Permission {
	why := "polling " + path
	u, err := url.Parse(path)
	if err != nil {
		return Permission{Verb: "get", NonResourceURL: path, Why: why}
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	var group string
	var rest []string
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		rest = segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		group, rest = segs[1], segs[3:]
	default:
		return Permission{Verb: "get", NonResourceURL: u.Path, Why: why}
	}
	p := Permission{Group: group, Why: why}
	switch {
	case len(rest) >= 3 && rest[0] == "namespaces":
		p.Namespace, p.Resource = rest[1], rest[2]
		if len(rest) >= 4 {
			p.Name = rest[3]
		}
	case len(rest) == 2 && rest[0] == "namespaces":
		p.Resource, p.Name = "namespaces", rest[1]
	default:
		p.Resource = rest[0]
		if len(rest) >= 2 {
			p.Name = rest[1]
		}
	}
	p.Verb = "list"
	if p.Name != "" {
		p.Verb = "get"
	}
	return p
}

// review is the SelfSubjectAccessReview that asks for p.
func (p Permission) review() *authorizationv1.SelfSubjectAccessReview {
	r := &authorizationv1.SelfSubjectAccessReview{}
	if p.NonResourceURL != "" {
		r.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: p.NonResourceURL, Verb: p.Verb}
	} else {
		r.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Namespace: p.Namespace, Name: p.Name,
		}
	}
	return r
}

// MissingPermissions asks the server, one SelfSubjectAccessReview each,
// whether the kubeconfig's user may do every one of perms, and returns those
// it may not, in order. An error means the reviews themselves failed.
func MissingPermissions(ctx context.Context, kube kubernetes.Interface, perms []Permission) ([]Permission, error) {
	var missing []Permission
	for _, p := range perms {
		var res *authorizationv1.SelfSubjectAccessReview
		err := checkCall(ctx, func(ctx context.Context) error {
			var err error
			res, err = kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, p.review(), metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("checking permissions (%s): %w", p, err)
		}
		if !res.Status.Allowed || res.Status.Denied {
			missing = append(missing, p)
		}
	}
	return missing, nil
}

// MissingError is the one message that lists every missing permission, one
// per line, with what each is for.
func MissingError(missing []Permission) error {
	var b strings.Builder
	fmt.Fprintf(&b, "the kubeconfig's user lacks %d permission(s) the run needs; nothing was changed (\"repro rbac\" prints a ClusterRole that grants them):", len(missing))
	for _, p := range missing {
		fmt.Fprintf(&b, "\n  %s  (%s)", p, p.Why)
	}
	return fmt.Errorf("%s", b.String())
}

// ClusterRoleYAML renders a ClusterRole named name that grants perms, one
// rule per group, resource and name set, so the role is no wider than the
// check that uses the same permissions.
func ClusterRoleYAML(name string, perms []Permission) ([]byte, error) {
	// The apiserver validates an RBAC object's name as a path segment
	// (kubernetes pkg/apis/rbac/validation: ValidateRBACName).
	if name == "" {
		return nil, fmt.Errorf("the ClusterRole's name is empty: give one, such as repro")
	}
	if msgs := path.IsValidPathSegmentName(name); len(msgs) > 0 {
		return nil, fmt.Errorf("the ClusterRole's name %q is not valid: %s", name, strings.Join(msgs, "; "))
	}
	type rule struct {
		APIGroups       []string `json:"apiGroups,omitempty"`
		Resources       []string `json:"resources,omitempty"`
		ResourceNames   []string `json:"resourceNames,omitempty"`
		NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
		Verbs           []string `json:"verbs"`
	}
	type key struct{ group, resource, name, url string }
	verbs := map[key][]string{}
	var order []key
	for _, p := range perms {
		res := p.Resource
		if p.Subresource != "" {
			res += "/" + p.Subresource
		}
		k := key{p.Group, res, p.Name, p.NonResourceURL}
		if _, ok := verbs[k]; !ok {
			order = append(order, k)
		}
		if !contains(verbs[k], p.Verb) {
			verbs[k] = append(verbs[k], p.Verb)
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if (a.url == "") != (b.url == "") {
			return a.url == ""
		}
		if a.group != b.group {
			return a.group < b.group
		}
		if a.resource != b.resource {
			return a.resource < b.resource
		}
		return a.name < b.name
	})
	var rules []rule
	for _, k := range order {
		if k.url != "" {
			rules = append(rules, rule{NonResourceURLs: []string{k.url}, Verbs: verbs[k]})
			continue
		}
		r := rule{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: verbs[k]}
		if k.name != "" {
			r.ResourceNames = []string{k.name}
		}
		rules = append(rules, r)
	}
	role := map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1",
		"kind":       "ClusterRole",
		"metadata":   map[string]any{"name": name},
		"rules":      rules,
	}
	return yaml.Marshal(role)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
