package trigger

import (
	"github.com/repro-tools/repro/results"

	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	operatorinformers "github.com/openshift/client-go/operator/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// ErrTimeout is returned by Follow when the rollout did not converge in time.
var ErrTimeout = errors.New("rollout did not finish in time")

// FollowOptions say which rollout to follow and when it counts as done.
type FollowOptions struct {
	// FromRevision is latestAvailableRevision before the trigger: the rollout
	// is done only once a later revision runs everywhere.
	FromRevision int32
	// Since is when the rollout was triggered; namespace Events older than
	// that are history, not part of this rollout.
	Since time.Time
	// Settle is how long the converged state must hold before Follow returns,
	// so a node that flaps back is not missed.
	Settle time.Duration
	// Iteration is stamped on every event.
	Iteration int
	// ClockOffset is the cluster's clock minus ours, when it is large
	// enough to correct: Events' own times are moved onto our clock by it,
	// so they line up with the samples.
	ClockOffset time.Duration
}

// Follow watches kubeapiservers/cluster, the kube-apiserver pods and the
// Events of openshift-kube-apiserver, passes every observation to sink as a
// timeline event, and returns once every node runs a revision newer than
// opts.FromRevision, every apiserver pod is ready on it, and that has held for
// opts.Settle. Informers resume dropped watches by themselves, so a
// restarting apiserver under the watch loses nothing. The caller bounds the
// wait with ctx's deadline; on expiry Follow returns ErrTimeout with the
// state it saw. sink is called from one goroutine at a time.
func Follow(ctx context.Context, c *Clients, opts FollowOptions, sink func(results.Event)) (Status, error) {
	f := &follower{
		opts:    opts,
		obs:     newObserver(opts.Since, opts.Iteration),
		sink:    sink,
		pods:    map[string]*corev1.Pod{},
		nodeOf:  map[string]string{},
		changed: make(chan struct{}, 1),
		now:     time.Now,
	}
	stop := make(chan struct{})

	opFactory := operatorinformers.NewSharedInformerFactoryWithOptions(c.Operator, 0,
		operatorinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", OperatorName).String()
		}))
	// Every pod of the namespace, not only the apiservers: the guard,
	// installer and pruner pods' events name their pod, and only the pod's
	// spec.nodeName says which node they are about.
	podFactory := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace(Namespace))
	eventFactory := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace(Namespace))

	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{opFactory.Operator().V1().KubeAPIServers().Informer(), cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(obj any, _ bool) { f.onOperator(nil, obj) },
			UpdateFunc: func(old, obj any) { f.onOperator(old, obj) },
		}},
		{podFactory.Core().V1().Pods().Informer(), cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(obj any, initial bool) { f.onPod(nil, obj, initial) },
			UpdateFunc: func(old, obj any) { f.onPod(old, obj, false) },
			DeleteFunc: func(obj any) { f.onPodDeleted(obj) },
		}},
		{eventFactory.Core().V1().Events().Informer(), cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(obj any, _ bool) { f.onEvent(obj) },
			UpdateFunc: func(_, obj any) { f.onEvent(obj) },
		}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return Status{}, fmt.Errorf("watching the rollout: %w", err)
		}
	}
	f.obs.clockOffset = opts.ClockOffset
	opFactory.Start(stop)
	podFactory.Start(stop)
	// Events name their pod; knowing the pods first lets the earliest of
	// them be placed on the right node.
	podFactory.WaitForCacheSync(ctx.Done())
	eventFactory.Start(stop)
	defer func() {
		// Shutdown waits for the informers, which stop only once stop is closed.
		close(stop)
		opFactory.Shutdown()
		podFactory.Shutdown()
		eventFactory.Shutdown()
	}()

	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	var convergedAt time.Time
	for {
		select {
		case <-ctx.Done():
			st := f.status()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return st, fmt.Errorf("%w: %s", ErrTimeout, st)
			}
			return st, ctx.Err()
		case <-f.changed:
		case <-settle.C:
		}
		done, st := f.converged()
		switch {
		case !done:
			convergedAt = time.Time{}
		case convergedAt.IsZero():
			convergedAt = f.now()
			settle.Reset(opts.Settle)
			if opts.Settle > 0 {
				continue
			}
			fallthrough
		case f.now().Sub(convergedAt) >= opts.Settle:
			e := f.obs.event(convergedAt, results.KindConverged)
			e.Revision = st.LatestAvailableRevision
			e.Message = "every node on revision " + fmt.Sprint(st.LatestAvailableRevision)
			f.mu.Lock()
			f.emit([]results.Event{e})
			f.mu.Unlock()
			return st, nil
		}
	}
}

// follower holds what Follow has seen; informer handlers update it under mu.
type follower struct {
	opts    FollowOptions
	obs     *observer
	sink    func(results.Event)
	now     func() time.Time
	changed chan struct{}

	mu     sync.Mutex
	kas    *operatorv1.KubeAPIServer
	pods   map[string]*corev1.Pod // apiserver pods by node
	nodeOf map[string]string      // every pod's node by pod name
}

func (f *follower) emit(evs []results.Event) {
	for _, e := range evs {
		if f.sink != nil {
			f.sink(e)
		}
	}
}

func (f *follower) poke() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *follower) onOperator(oldObj, obj any) {
	kas, ok := obj.(*operatorv1.KubeAPIServer)
	if !ok || kas.Name != OperatorName {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := f.kas
	if prev == nil {
		prev, _ = oldObj.(*operatorv1.KubeAPIServer)
	}
	if prev != nil {
		f.emit(f.obs.operator(f.now(), prev, kas))
	}
	f.kas = kas
	f.poke()
}

func (f *follower) onPod(oldObj, obj any, initial bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	node := podNode(pod)
	if node != "" {
		f.nodeOf[pod.Name] = node
	}
	if !isAPIServerPod(pod) || node == "" {
		return
	}
	old := f.pods[node]
	if old == nil {
		old, _ = oldObj.(*corev1.Pod)
	}
	if !initial {
		if old != nil && old.UID != pod.UID {
			// A new pod for the node without a delete seen in between: the
			// delete happened while the watch was down.
			f.emit(f.obs.pod(f.now(), old, nil))
			old = nil
		}
		f.emit(f.obs.pod(f.now(), old, pod))
	}
	f.pods[node] = pod
	f.poke()
}

func (f *follower) onPodDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// nodeOf keeps the deleted pod's node: its events may still arrive.
	node := podNode(pod)
	if !isAPIServerPod(pod) || node == "" {
		return
	}
	if cur := f.pods[node]; cur != nil && cur.UID != pod.UID {
		return // a newer pod of the node is already known
	}
	delete(f.pods, node)
	f.emit(f.obs.pod(f.now(), pod, nil))
	f.poke()
}

func (f *follower) onEvent(obj any) {
	ev, ok := obj.(*corev1.Event)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.emit(f.obs.clusterEvent(f.now(), ev, func(pod string) string { return f.nodeOf[pod] }))
}

func (f *follower) status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.kas == nil {
		return Status{}
	}
	return StatusOf(f.kas)
}

// converged reports whether the rollout Follow waits for is complete: the
// operator reports a revision past FromRevision on every node and each node's
// apiserver pod, where one is seen, is ready on that revision.
func (f *follower) converged() (bool, Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.kas == nil {
		return false, Status{}
	}
	st := StatusOf(f.kas)
	if st.LatestAvailableRevision <= f.opts.FromRevision || !st.Converged() {
		return false, st
	}
	for _, n := range st.Nodes {
		if p, ok := f.pods[n.Name]; ok && (!podReady(p) || podRevision(p) != st.LatestAvailableRevision) {
			return false, st
		}
	}
	return true, st
}
