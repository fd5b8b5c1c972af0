package trigger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/repro-tools/repro/results"
)

// ClusterInfo labels a run with what it ran against; it is the record
// run.json keeps, so writer and readers share one type.
type ClusterInfo = results.ClusterRecord

// ErrRollingOut is returned by Preflight when a rollout is already under way
// or the operator is not settled; --force goes on regardless.
var ErrRollingOut = errors.New("kube-apiserver is not settled")

// Preflight checks that the cluster is reachable, that kubeapiservers/cluster
// exists and that no rollout is under way (on OpenShift also that the
// kube-apiserver ClusterOperator is Available, not Progressing, not Degraded).
// With force an unsettled cluster is no error; the returned Status still
// shows it.
func Preflight(ctx context.Context, c *Clients, force bool) (Status, ClusterInfo, error) {
	var info ClusterInfo
	var st Status
	if err := serverVersion(ctx, c, &info); err != nil {
		return st, info, err
	}
	kas, err := getKubeAPIServer(ctx, c)
	if err != nil {
		return st, info, err
	}
	st = StatusOf(kas)
	if err := clusterInfo(ctx, c, &info); err != nil {
		return st, info, err
	}
	var problems []string
	if !st.Converged() {
		problems = append(problems, "a rollout is under way ("+st.String()+")")
	}
	if info.OpenShift {
		p, err := clusterOperatorProblems(ctx, c)
		if err != nil {
			return st, info, err
		}
		problems = append(problems, p...)
	}
	if len(problems) > 0 && !force {
		return st, info, fmt.Errorf("%w: %s; wait for it to settle or pass --force", ErrRollingOut, joinProblems(problems))
	}
	return st, info, nil
}

func joinProblems(p []string) string {
	s := p[0]
	for _, x := range p[1:] {
		s += "; " + x
	}
	return s
}

// getKubeAPIServer reads kubeapiservers/cluster and turns the errors a user
// can act on into one clear line.
func getKubeAPIServer(ctx context.Context, c *Clients) (*operatorv1.KubeAPIServer, error) {
	var kas *operatorv1.KubeAPIServer
	err := checkCall(ctx, func(ctx context.Context) error {
		var err error
		kas, err = c.Operator.OperatorV1().KubeAPIServers().Get(ctx, OperatorName, metav1.GetOptions{})
		return err
	})
	switch {
	case err == nil:
		return kas, nil
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("kubeapiservers.operator.openshift.io/%s not found: this cluster has no kube-apiserver operator; point --kubeconfig at an OpenShift cluster or omit it to use the lab", OperatorName)
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return nil, fmt.Errorf("not allowed to read kubeapiservers.operator.openshift.io/%s: use a cluster-admin kubeconfig (%v)", OperatorName, err)
	default:
		return nil, fmt.Errorf("reading kubeapiservers.operator.openshift.io/%s: %w", OperatorName, err)
	}
}

// clusterInfo fills in OpenShift's version and platform when config.openshift.io
// is served; its absence means "not OpenShift", not an error.
func clusterInfo(ctx context.Context, c *Clients, info *ClusterInfo) error {
	if c.Config == nil {
		return nil
	}
	var cv *configv1.ClusterVersion
	err := checkCall(ctx, func(ctx context.Context) error {
		var err error
		cv, err = c.Config.ConfigV1().ClusterVersions().Get(ctx, "version", metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading clusterversions/version: %w", err)
	}
	info.OpenShift = true
	info.Version = cv.Status.Desired.Version
	for _, h := range cv.Status.History {
		if h.State == configv1.CompletedUpdate {
			info.Version = h.Version
			break
		}
	}
	var infra *configv1.Infrastructure
	err = checkCall(ctx, func(ctx context.Context) error {
		var err error
		infra, err = c.Config.ConfigV1().Infrastructures().Get(ctx, "cluster", metav1.GetOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading infrastructures/cluster: %w", err)
	}
	if err == nil {
		info.ControlPlaneTopology = string(infra.Status.ControlPlaneTopology)
		if infra.Status.PlatformStatus != nil {
			info.Platform = string(infra.Status.PlatformStatus.Type)
		}
	}
	return nil
}

// clusterOperatorProblems lists why the kube-apiserver ClusterOperator is not
// settled (Available=True, Progressing=False, Degraded=False).
func clusterOperatorProblems(ctx context.Context, c *Clients) ([]string, error) {
	var co *configv1.ClusterOperator
	err := checkCall(ctx, func(ctx context.Context) error {
		var err error
		co, err = c.Config.ConfigV1().ClusterOperators().Get(ctx, "kube-apiserver", metav1.GetOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading clusteroperators/kube-apiserver: %w", err)
	}
	want := map[configv1.ClusterStatusConditionType]configv1.ConditionStatus{
		configv1.OperatorAvailable:   configv1.ConditionTrue,
		configv1.OperatorProgressing: configv1.ConditionFalse,
		configv1.OperatorDegraded:    configv1.ConditionFalse,
	}
	var problems []string
	for _, t := range []configv1.ClusterStatusConditionType{configv1.OperatorAvailable, configv1.OperatorProgressing, configv1.OperatorDegraded} {
		got := configv1.ConditionUnknown
		msg := ""
		for _, cond := range co.Status.Conditions {
			if cond.Type == t {
				got, msg = cond.Status, cond.Message
			}
		}
		if got != want[t] {
			p := fmt.Sprintf("clusteroperator kube-apiserver %s=%s", t, got)
			if msg != "" {
				p += " (" + msg + ")"
			}
			problems = append(problems, p)
		}
	}
	return problems, nil
}

// Describe reads what a run is against, the server's version and, on
// OpenShift, its version, platform and topology, without requiring the
// kube-apiserver operator: a run without a rollout changes nothing and may
// poll any cluster.
func Describe(ctx context.Context, c *Clients) (ClusterInfo, error) {
	var info ClusterInfo
	if err := serverVersion(ctx, c, &info); err != nil {
		return info, err
	}
	if err := clusterInfo(ctx, c, &info); err != nil && !apierrors.IsForbidden(err) {
		return info, err
	}
	return info, nil
}

// serverVersion reads /version with the caller's context and a deadline of
// its own (discovery's ServerVersion takes no context, so a server that
// accepts and never answers would hold it, and Ctrl-C, forever), and says
// in one line what to do when the server cannot be reached.
func serverVersion(ctx context.Context, c *Clients, info *ClusterInfo) error {
	var host string
	rc := c.Kube.Discovery().RESTClient()
	fake := rc == nil || reflect.ValueOf(rc).IsNil()
	if !fake {
		if u := rc.Get().AbsPath("/version").URL(); u != nil {
			host = u.Scheme + "://" + u.Host
		}
	}
	plainHTTP := strings.HasPrefix(host, "http://")
	call := func(ctx context.Context) error {
		var v *version.Info
		var err error
		if fake {
			// Fake clientsets have no REST client and no network.
			v, err = c.Kube.Discovery().ServerVersion()
		} else {
			var raw []byte
			if raw, err = rc.Get().AbsPath("/version").Do(ctx).Raw(); err == nil {
				v = &version.Info{}
				if err = json.Unmarshal(raw, v); err != nil {
					err = fmt.Errorf("/version did not answer a Kubernetes version: %v", err)
				}
			}
		}
		if err == nil {
			info.ServerVersion = v.GitVersion
		}
		if plainHTTP && err != nil {
			// A TLS server answers plain HTTP with a 400 that reads as a
			// server error: say so at once instead of retrying it.
			return backoffStop{err}
		}
		return err
	}
	err := checkCall(ctx, call)
	var stop backoffStop
	if errors.As(err, &stop) {
		err = stop.err
	}
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case plainHTTP:
		return fmt.Errorf("cannot reach the cluster's API at %s over plain HTTP: %v (API servers speak TLS: use --server https://...)", host, err)
	case errors.Is(err, ErrNoAnswer):
		return fmt.Errorf("the cluster's API accepted the connection and did not answer: %v (check that the server is up and is an API server)", err)
	}
	return fmt.Errorf("cannot reach the cluster's API: %v (check the kubeconfig and that the server is up)", err)
}

// backoffStop carries an error that must not be retried.
type backoffStop struct{ err error }

func (b backoffStop) Error() string { return b.err.Error() }
