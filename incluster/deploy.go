package incluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Deployer creates and removes a run's objects with client-go's typed
// clients.
type Deployer struct {
	// Kube is the cluster's client.
	Kube kubernetes.Interface
	// Log gets one line per object created or deleted.
	Log *zap.Logger
	// NoNamespaceController is set where no controller manager runs (the
	// lab): nothing would empty a deleted namespace and remove its
	// "kubernetes" finalizer, so Delete deletes its pods itself, waits for
	// their kubelets to stop them, and finalizes the namespace as the
	// namespace controller would.
	NoNamespaceController bool
	// StopTimeout bounds the wait for a deleted pod's kubelet to stop it
	// (default 30 s); a pod still there after it is deleted with no grace,
	// and named in the log, as a pod whose node is gone would be.
	StopTimeout time.Duration
}

func (d Deployer) log() *zap.Logger {
	if d.Log == nil {
		return zap.NewNop()
	}
	return d.Log
}

// Create creates objs in order. With dryRun every create is a server-side
// dry run (the apiserver admits and validates each, RBAC included, and
// persists nothing); the names it would create are returned either way. A
// dry run cannot create the namespace, so the namespaced objects' dry runs
// fail NotFound unless the namespace exists: a dry run stops at the first
// object whose namespace is repro's own and lists the rest unchecked.
func (d Deployer) Create(ctx context.Context, objs Objects, dryRun bool) ([]string, error) {
	opts := metav1.CreateOptions{FieldManager: "repro"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	names := objs.List()
	k := d.Kube
	ns := objs.Namespace.Name
	steps := []func() error{
		func() error { _, err := k.CoreV1().Namespaces().Create(ctx, objs.Namespace, opts); return err },
		func() error {
			_, err := k.CoreV1().ServiceAccounts(ns).Create(ctx, objs.ServiceAccount, opts)
			return err
		},
		func() error { _, err := k.RbacV1().ClusterRoles().Create(ctx, objs.ClusterRole, opts); return err },
		func() error {
			_, err := k.RbacV1().ClusterRoleBindings().Create(ctx, objs.ClusterRoleBinding, opts)
			return err
		},
		func() error {
			_, err := k.RbacV1().Roles(objs.DefaultRole.Namespace).Create(ctx, objs.DefaultRole, opts)
			return err
		},
		func() error {
			_, err := k.RbacV1().RoleBindings(objs.DefaultRoleBinding.Namespace).Create(ctx, objs.DefaultRoleBinding, opts)
			return err
		},
	}
	for _, c := range objs.ConfigMaps {
		steps = append(steps, func() error { _, err := k.CoreV1().ConfigMaps(c.Namespace).Create(ctx, c, opts); return err })
	}
	for _, p := range objs.Pods {
		steps = append(steps, func() error { _, err := k.CoreV1().Pods(p.Namespace).Create(ctx, p, opts); return err })
	}
	for i, step := range steps {
		err := step()
		if dryRun && err != nil && apierrors.IsNotFound(err) && strings.Contains(names[i], "/"+ns+"/") {
			d.log().Info("dry run: the rest live in the namespace a dry run does not create; listed, not checked", zap.Strings("unchecked", names[i:]))
			return names, nil
		}
		if err != nil {
			return names[:i], fmt.Errorf("creating %s: %w", names[i], err)
		}
		d.log().Debug("in-cluster object", zap.String("object", names[i]), zap.Bool("dryRun", dryRun))
	}
	return names, nil
}

// Leftovers lists what earlier runs left behind (found by LabelManaged):
// namespaces, and the cluster-scoped and default-namespace RBAC objects a
// namespace's deletion does not take with it. A run other than except's
// (its own, "" for none) counts.
func (d Deployer) Leftovers(ctx context.Context, except string) ([]string, error) {
	sel := metav1.ListOptions{LabelSelector: LabelManaged + "=true"}
	if except != "" {
		sel.LabelSelector += "," + LabelRun + "!=" + dnsLabel(except)
	}
	var out []string
	nss, err := d.Kube.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("listing in-cluster namespaces: %w", err)
	}
	for _, n := range nss.Items {
		out = append(out, "Namespace/"+n.Name)
	}
	crs, err := d.Kube.RbacV1().ClusterRoles().List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("listing in-cluster ClusterRoles: %w", err)
	}
	for _, c := range crs.Items {
		out = append(out, "ClusterRole/"+c.Name)
	}
	crbs, err := d.Kube.RbacV1().ClusterRoleBindings().List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("listing in-cluster ClusterRoleBindings: %w", err)
	}
	for _, c := range crbs.Items {
		out = append(out, "ClusterRoleBinding/"+c.Name)
	}
	rs, err := d.Kube.RbacV1().Roles("default").List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("listing in-cluster Roles in default: %w", err)
	}
	for _, r := range rs.Items {
		out = append(out, "Role/default/"+r.Name)
	}
	rbs, err := d.Kube.RbacV1().RoleBindings("default").List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("listing in-cluster RoleBindings in default: %w", err)
	}
	for _, r := range rbs.Items {
		out = append(out, "RoleBinding/default/"+r.Name)
	}
	return out, nil
}

// Delete removes named objects (as List and Leftovers name them): the
// namespace takes its pods, ServiceAccount and ConfigMaps with it; the rest
// are deleted one by one. Already gone is not an error. With wait, it
// returns once every namespace is gone (its pods stopped), or ctx ends.
func (d Deployer) Delete(ctx context.Context, names []string, wait bool) error {
	var errs []error
	var namespaces []string
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	for _, n := range names {
		parts := strings.Split(n, "/")
		var err error
		switch {
		case parts[0] == "Namespace" && len(parts) == 2:
			namespaces = append(namespaces, parts[1])
			if d.NoNamespaceController {
				if err := d.stopPods(ctx, parts[1], wait); err != nil {
					errs = append(errs, err)
				}
			}
			err = d.Kube.CoreV1().Namespaces().Delete(ctx, parts[1], opts)
			if err == nil && d.NoNamespaceController {
				err = d.finalize(ctx, parts[1])
			}
		case parts[0] == "ClusterRole" && len(parts) == 2:
			err = d.Kube.RbacV1().ClusterRoles().Delete(ctx, parts[1], opts)
		case parts[0] == "ClusterRoleBinding" && len(parts) == 2:
			err = d.Kube.RbacV1().ClusterRoleBindings().Delete(ctx, parts[1], opts)
		case parts[0] == "Role" && len(parts) == 3 && parts[1] == "default":
			err = d.Kube.RbacV1().Roles(parts[1]).Delete(ctx, parts[2], opts)
		case parts[0] == "RoleBinding" && len(parts) == 3 && parts[1] == "default":
			err = d.Kube.RbacV1().RoleBindings(parts[1]).Delete(ctx, parts[2], opts)
		default:
			// Objects inside a namespace go with it.
			continue
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", n, err))
			continue
		}
		d.log().Debug("deleted in-cluster object", zap.String("object", n))
	}
	if wait {
		for _, ns := range namespaces {
			if err := d.waitGone(ctx, ns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// stopPods deletes a namespace's pods and, with wait, waits until their
// kubelets have stopped them and removed the objects.
func (d Deployer) stopPods(ctx context.Context, ns string, wait bool) error {
	pods := d.Kube.CoreV1().Pods(ns)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the pods of %s: %w", ns, err)
	}
	timeout := d.StopTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for wait {
		l, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var names []string
			for _, p := range l.Items {
				names = append(names, p.Name)
			}
			d.log().Warn("pods not stopped by their kubelets in time: deleting them without grace", zap.String("namespace", ns), zap.Strings("pods", names), zap.Duration("waited", timeout))
			err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("force-deleting the pods of %s: %w", ns, err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d pods of %s still stopping: %w", len(l.Items), ns, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil
}

// finalize removes the namespace's "kubernetes" finalizer, the namespace
// controller's last step once the namespace is empty; what is left in it
// (ConfigMaps, the ServiceAccount) is deleted from etcd with it.
func (d Deployer) finalize(ctx context.Context, ns string) error {
	n, err := d.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, kind := range []func() error{
		func() error {
			return d.Kube.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		},
		func() error {
			return d.Kube.CoreV1().ServiceAccounts(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		},
	} {
		if err := kind(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("emptying namespace %s: %w", ns, err)
		}
	}
	n.Spec.Finalizers = nil
	_, err = d.Kube.CoreV1().Namespaces().Finalize(ctx, n, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (d Deployer) waitGone(ctx context.Context, ns string) error {
	for {
		_, err := d.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s still terminating: %w", ns, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
