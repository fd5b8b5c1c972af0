package trigger

import (
	"github.com/repro-tools/repro/results"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	configfake "github.com/openshift/client-go/config/clientset/versioned/fake"
	operatorfake "github.com/openshift/client-go/operator/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

var nodes = []string{"master-0", "master-1", "master-2"}

func kasAt(rev int32, current ...int32) *operatorv1.KubeAPIServer {
	kas := &operatorv1.KubeAPIServer{ObjectMeta: metav1.ObjectMeta{Name: OperatorName}}
	kas.Status.LatestAvailableRevision = rev
	for i, n := range nodes {
		c := rev
		if i < len(current) {
			c = current[i]
		}
		kas.Status.NodeStatuses = append(kas.Status.NodeStatuses, operatorv1.NodeStatus{NodeName: n, CurrentRevision: c})
	}
	return kas
}

func apiserverPod(node string, rev int32, ready bool, uid string) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: podPrefix + node, Namespace: Namespace, UID: types.UID(uid),
			Labels: map[string]string{"apiserver": "true", "revision": itoa(rev)},
		},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

func itoa(n int32) string { b, _ := json.Marshal(n); return string(b) }

func clusterOperator(avail, progressing, degraded configv1.ConditionStatus) *configv1.ClusterOperator {
	return &configv1.ClusterOperator{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver"},
		Status: configv1.ClusterOperatorStatus{Conditions: []configv1.ClusterOperatorStatusCondition{
			{Type: configv1.OperatorAvailable, Status: avail},
			{Type: configv1.OperatorProgressing, Status: progressing},
			{Type: configv1.OperatorDegraded, Status: degraded, Message: "NodeInstallerDegraded: 1 nodes are failing"},
		}},
	}
}

func openshiftConfig(co *configv1.ClusterOperator) *configfake.Clientset {
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}}
	cv.Status.Desired.Version = "4.17.3"
	cv.Status.History = []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "4.17.3"}}
	infra := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	infra.Status.ControlPlaneTopology = configv1.HighlyAvailableTopologyMode
	infra.Status.PlatformStatus = &configv1.PlatformStatus{Type: configv1.AWSPlatformType}
	return configfake.NewSimpleClientset(cv, infra, co)
}

func TestPreflight(t *testing.T) {
	settled := clusterOperator(configv1.ConditionTrue, configv1.ConditionFalse, configv1.ConditionFalse)
	degraded := clusterOperator(configv1.ConditionTrue, configv1.ConditionFalse, configv1.ConditionTrue)
	cases := []struct {
		name    string
		kas     *operatorv1.KubeAPIServer
		config  *configfake.Clientset
		force   bool
		wantErr string
		wantOCP bool
	}{
		{name: "settled lab", kas: kasAt(5)},
		{name: "settled openshift", kas: kasAt(5), config: openshiftConfig(settled), wantOCP: true},
		{name: "missing operator", wantErr: "kubeapiservers.operator.openshift.io/cluster not found"},
		{name: "already rolling out", kas: kasAt(6, 6, 5, 5), wantErr: "a rollout is under way (latest revision 6; master-0 on 6, master-1 on 5, master-2 on 5)"},
		{name: "already rolling out, forced", kas: kasAt(6, 6, 5, 5), force: true},
		{name: "operator degraded", kas: kasAt(5), config: openshiftConfig(degraded), wantErr: "clusteroperator kube-apiserver Degraded=True (NodeInstallerDegraded: 1 nodes are failing)", wantOCP: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.kas != nil {
				objs = append(objs, tc.kas)
			}
			c := &Clients{Kube: kubefake.NewSimpleClientset(), Operator: operatorfake.NewSimpleClientset(objs...)}
			if tc.config != nil {
				c.Config = tc.config
			} else {
				c.Config = configfake.NewSimpleClientset()
			}
			_, info, err := Preflight(context.Background(), c, tc.force)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
			}
			if info.OpenShift != tc.wantOCP {
				t.Fatalf("OpenShift = %v, want %v", info.OpenShift, tc.wantOCP)
			}
			if tc.wantOCP && (info.Version != "4.17.3" || info.Platform != "AWS") {
				t.Fatalf("cluster info %+v, want 4.17.3 on AWS", info)
			}
		})
	}
}

func TestTriggerChangesOnlyTheReason(t *testing.T) {
	kas := kasAt(5)
	kas.Spec.LogLevel = operatorv1.Debug
	op := operatorfake.NewSimpleClientset(kas)
	c := &Clients{Kube: kubefake.NewSimpleClientset(), Operator: op}
	if _, err := Trigger(context.Background(), c, Reason("run1", 1), false); err != nil {
		t.Fatal(err)
	}
	got, err := op.OperatorV1().KubeAPIServers().Get(context.Background(), OperatorName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.ForceRedeploymentReason != "repro-run1-1" || got.Spec.LogLevel != operatorv1.Debug {
		t.Fatalf("spec after trigger = %+v", got.Spec)
	}
	var patches []string
	for _, a := range op.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			patches = append(patches, string(p.GetPatch()))
		}
	}
	if len(patches) != 1 || patches[0] != `{"spec":{"forceRedeploymentReason":"repro-run1-1"}}` {
		t.Fatalf("patches sent = %q", patches)
	}
}

// rollout plays the part of the operator and kubelet on fake clients. With
// rec set, every change waits until Follow has reported it, as on a real
// cluster where the steps are seconds apart; the three watches do not order
// changes made within microseconds of each other.
type rollout struct {
	t   *testing.T
	c   *Clients
	ctx context.Context
	rec *recorder
}

// observed waits until the recorder holds n events.
func (r rollout) observed(n int) {
	if r.rec == nil {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r.rec.mu.Lock()
		got := len(r.rec.evs)
		r.rec.mu.Unlock()
		if got >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	r.t.Fatalf("Follow did not report event %d", n)
}

func (r rollout) count() int {
	if r.rec == nil {
		return 0
	}
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	return len(r.rec.evs)
}

func (r rollout) setStatus(mut func(*operatorv1.KubeAPIServer)) {
	defer r.observed(r.count() + 1)
	kas, err := r.c.Operator.OperatorV1().KubeAPIServers().Get(r.ctx, OperatorName, metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	mut(kas)
	if _, err := r.c.Operator.OperatorV1().KubeAPIServers().UpdateStatus(r.ctx, kas, metav1.UpdateOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

func (r rollout) pod(p *corev1.Pod) {
	defer r.observed(r.count() + 1)
	pods := r.c.Kube.CoreV1().Pods(Namespace)
	if _, err := pods.Update(r.ctx, p, metav1.UpdateOptions{}); err != nil {
		if _, err := pods.Create(r.ctx, p, metav1.CreateOptions{}); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r rollout) event(reason, node string, at time.Time) {
	defer r.observed(r.count() + 1)
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: node + "." + reason, Namespace: Namespace, UID: types.UID(node + reason)},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: Namespace, Name: podPrefix + node},
		Reason:         reason,
		EventTime:      metav1.NewMicroTime(at),
		Count:          1,
	}
	if _, err := r.c.Kube.CoreV1().Events(Namespace).Create(r.ctx, ev, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

// rollNode walks one node through a revision change the way OpenShift shows it.
func (r rollout) rollNode(i int, rev int32) {
	node := nodes[i]
	r.setStatus(func(k *operatorv1.KubeAPIServer) { k.Status.NodeStatuses[i].TargetRevision = rev })
	r.event("ShutdownInitiated", node, time.Now())
	r.pod(apiserverPod(node, rev-1, false, node+"-old"))
	r.event("TerminationGracefulTerminationFinished", node, time.Now())
	n := r.count()
	if err := r.c.Kube.CoreV1().Pods(Namespace).Delete(r.ctx, podPrefix+node, metav1.DeleteOptions{}); err != nil {
		r.t.Fatal(err)
	}
	r.observed(n + 1)
	r.pod(apiserverPod(node, rev, false, node+"-new"))
	r.pod(apiserverPod(node, rev, true, node+"-new"))
	r.setStatus(func(k *operatorv1.KubeAPIServer) {
		k.Status.NodeStatuses[i].CurrentRevision = rev
		k.Status.NodeStatuses[i].TargetRevision = 0
	})
}

func newFakeCluster(t *testing.T) *Clients {
	t.Helper()
	kube := kubefake.NewSimpleClientset()
	for _, n := range nodes {
		if _, err := kube.CoreV1().Pods(Namespace).Create(context.Background(), apiserverPod(n, 5, true, n+"-old"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &Clients{Kube: kube, Operator: operatorfake.NewSimpleClientset(kasAt(5))}
}

type recorder struct {
	mu  sync.Mutex
	evs []results.Event
}

func (r *recorder) add(e results.Event) { r.mu.Lock(); r.evs = append(r.evs, e); r.mu.Unlock() }

func (r *recorder) kinds(node string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.evs {
		if e.Node == node {
			k := string(e.Kind)
			if e.Reason != "" {
				k += ":" + e.Reason
			}
			out = append(out, k)
		}
	}
	return out
}

// waitSynced gives the informers time to list and watch before the fake
// cluster changes; fake watches do not replay changes made before them.
func waitSynced(t *testing.T, c *Clients, watches int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n := 0
		for _, acts := range [][]clienttesting.Action{c.Kube.(*kubefake.Clientset).Actions(), c.Operator.(*operatorfake.Clientset).Actions()} {
			for _, a := range acts {
				if a.GetVerb() == "watch" {
					n++
				}
			}
		}
		if n >= watches {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("informers did not start %d watches", watches)
}

func TestFollowRecordsARollout(t *testing.T) {
	c := newFakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := &recorder{}
	done := make(chan error, 1)
	var final Status
	go func() {
		var err error
		final, err = Follow(ctx, c, FollowOptions{FromRevision: 5, Since: time.Now(), Settle: 50 * time.Millisecond, Iteration: 1}, rec.add)
		done <- err
	}()
	waitSynced(t, c, 3)
	r := rollout{t: t, c: c, ctx: ctx, rec: rec}
	r.setStatus(func(k *operatorv1.KubeAPIServer) { k.Status.LatestAvailableRevision = 6 })
	for i := range nodes {
		r.rollNode(i, 6)
	}
	if err := <-done; err != nil {
		t.Fatalf("Follow: %v", err)
	}
	if !final.Converged() || final.LatestAvailableRevision != 6 {
		t.Fatalf("final status %s", final)
	}
	want := "node-target-set cluster-event:ShutdownInitiated pod-not-ready cluster-event:TerminationGracefulTerminationFinished pod-deleted pod-created pod-ready node-revision-current"
	for _, n := range nodes {
		if got := strings.Join(rec.kinds(n), " "); got != want {
			t.Errorf("%s events:\n got %s\nwant %s", n, got, want)
		}
	}
	if k := rec.kinds(""); len(k) != 2 || k[0] != "revision-created" || k[1] != "rollout-complete" {
		t.Errorf("cluster-wide events %v, want revision-created then rollout-complete", k)
	}
	for _, e := range rec.evs {
		if e.Iteration != 1 {
			t.Errorf("event %+v not stamped with iteration 1", e)
		}
	}
}

func TestFollowResumesAfterDroppedWatch(t *testing.T) {
	c := newFakeCluster(t)
	op := c.Operator.(*operatorfake.Clientset)
	var mu sync.Mutex
	var first *watch.FakeWatcher
	watches := 0
	op.PrependWatchReactor("kubeapiservers", func(a clienttesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		watches++
		if watches == 1 {
			first = watch.NewFake()
			return true, first, nil
		}
		return false, nil, nil // later watches go to the real fake tracker
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := &recorder{}
	done := make(chan error, 1)
	go func() {
		_, err := Follow(ctx, c, FollowOptions{FromRevision: 5, Since: time.Now(), Iteration: 1}, rec.add)
		done <- err
	}()
	waitSynced(t, c, 3)
	mu.Lock()
	first.Stop() // the apiserver serving the watch went away
	mu.Unlock()
	r := rollout{t: t, c: c, ctx: ctx}
	// Change the operator while the watch is down: the relist must catch it.
	r.setStatus(func(k *operatorv1.KubeAPIServer) { k.Status.LatestAvailableRevision = 6 })
	for i := range nodes {
		r.rollNode(i, 6)
	}
	if err := <-done; err != nil {
		t.Fatalf("Follow after a dropped watch: %v", err)
	}
	// The informer resumes with a new list and watch; the list alone may
	// already show the converged state, so either proves the resume.
	lists := 0
	for _, a := range op.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "kubeapiservers" {
			lists++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if watches < 2 && lists < 2 {
		t.Fatalf("the operator was listed %d and watched %d times, want a resumed list or watch after the drop", lists, watches)
	}
}

func TestFollowTimesOut(t *testing.T) {
	c := newFakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	st, err := Follow(ctx, c, FollowOptions{FromRevision: 5, Since: time.Now()}, nil)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if st.LatestAvailableRevision != 5 {
		t.Fatalf("status at timeout %s, want what was seen (revision 5)", st)
	}
}

func TestObserverClusterEvents(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := newObserver(start, 2)
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{UID: "u1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "kube-apiserver-master-1"},
		Reason:         "TerminationStoppedServing",
		EventTime:      metav1.NewMicroTime(start.Add(10234 * time.Millisecond)),
		Count:          1,
	}
	now := start.Add(11 * time.Second)
	nodeOf := map[string]string{"kube-apiserver-master-1": "master-1"}
	got := o.clusterEvent(now, ev, func(p string) string { return nodeOf[p] })
	if len(got) != 1 || got[0].Node != "master-1" || !got[0].Time.Equal(start.Add(10234*time.Millisecond)) || !got[0].Observed.Equal(now) || got[0].Iteration != 2 {
		t.Fatalf("event = %+v", got)
	}
	if again := o.clusterEvent(now, ev, nil); len(again) != 0 {
		t.Fatalf("the same occurrence reported twice: %+v", again)
	}
	ev.Count = 2
	if again := o.clusterEvent(now, ev, nil); len(again) != 1 {
		t.Fatalf("a repeated occurrence (count 2) was not reported")
	}
	old := ev.DeepCopy()
	old.UID, old.EventTime = "u2", metav1.NewMicroTime(start.Add(-time.Hour))
	if hist := o.clusterEvent(now, old, nil); len(hist) != 0 {
		t.Fatalf("an event from before the rollout was reported: %+v", hist)
	}
	coarse := ev.DeepCopy()
	coarse.UID, coarse.EventTime = "u3", metav1.MicroTime{}
	coarse.LastTimestamp = metav1.NewTime(start.Add(10 * time.Second))
	if got := o.clusterEvent(now, coarse, nil); len(got) != 1 || !got[0].Time.Equal(now) {
		t.Fatalf("a second-granular event should be placed at its observation time: %+v", got)
	}
}

// TestFollowNamesTheNodeOfGuardInstallerAndPrunerPods follows a rollout on
// objects shaped as a 4.17 cluster on AWS has them: the namespace holds,
// next to kube-apiserver-<node>, the guard pod kube-apiserver-guard-<node>
// (app=guard) and installer-<rev>-<node>, revision-pruner-<rev>-<node> pods
// (library-go's staticpod guard, installer and prune controllers). Their
// events belong to the pod's spec.nodeName: a trimmed name prefix would
// invent nodes such as "guard-ip-10-0-12-34.ec2.internal".
func TestFollowNamesTheNodeOfGuardInstallerAndPrunerPods(t *testing.T) {
	node := "ip-10-0-12-34.ec2.internal"
	kas := &operatorv1.KubeAPIServer{ObjectMeta: metav1.ObjectMeta{Name: OperatorName}}
	kas.Status.LatestAvailableRevision = 7
	kas.Status.NodeStatuses = []operatorv1.NodeStatus{{NodeName: node, CurrentRevision: 7}}
	pod := func(name, app string, extra map[string]string) *corev1.Pod {
		labels := map[string]string{"app": app}
		for k, v := range extra {
			labels[k] = v
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, UID: types.UID(name), Labels: labels},
			Spec: corev1.PodSpec{NodeName: node}}
	}
	kube := kubefake.NewSimpleClientset(
		pod("kube-apiserver-"+node, "openshift-kube-apiserver", map[string]string{"apiserver": "true", "revision": "7"}),
		pod("kube-apiserver-guard-"+node, "guard", nil),
		pod("installer-7-"+node, "installer", nil),
		pod("installer-8-retry-1-"+node, "installer", nil),
		pod("revision-pruner-7-"+node, "pruner", nil),
	)
	c := &Clients{Kube: kube, Operator: operatorfake.NewSimpleClientset(kas)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	done := make(chan error, 1)
	since := time.Now()
	go func() {
		_, err := Follow(ctx, c, FollowOptions{FromRevision: 7, Since: since, Iteration: 1}, rec.add)
		done <- err
	}()
	waitSynced(t, c, 3)
	events := []struct {
		pod, reason, component, host string
	}{
		// The kubelet reports the guard's failing readiness probe with its host.
		{"kube-apiserver-guard-" + node, "ProbeError", "kubelet", node},
		// The scheduler reports with no host at all.
		{"installer-8-retry-1-" + node, "Scheduled", "default-scheduler", ""},
		{"revision-pruner-7-" + node, "Scheduled", "default-scheduler", ""},
		{"installer-7-" + node, "Started", "kubelet", node},
	}
	for i, e := range events {
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", e.pod, i), Namespace: Namespace, UID: types.UID(fmt.Sprint(i))},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: Namespace, Name: e.pod},
			Reason:         e.reason,
			Source:         corev1.EventSource{Component: e.component, Host: e.host},
			LastTimestamp:  metav1.NewTime(since.Add(time.Second)),
			Count:          1,
		}
		if _, err := kube.CoreV1().Events(Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && len(rec.kinds(node)) < len(events) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.evs) != len(events) {
		t.Fatalf("got %d events, want %d: %+v", len(rec.evs), len(events), rec.evs)
	}
	for _, e := range rec.evs {
		if e.Node != node {
			t.Errorf("%s %s placed on node %q, want %q", e.Kind, e.Reason, e.Node, node)
		}
	}
}

// TestObserverMovesEventTimesOntoOurClock: with the cluster's clock 1.5 s
// ahead of ours, an Event stamped at 10.234 s on the cluster's clock
// happened at 8.734 s on ours, the clock the samples carry.
func TestObserverMovesEventTimesOntoOurClock(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := newObserver(start, 1)
	o.clockOffset = 1500 * time.Millisecond
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{UID: "u1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "kube-apiserver-master-0"},
		Source:         corev1.EventSource{Host: "master-0"},
		Reason:         "TerminationStoppedServing",
		EventTime:      metav1.NewMicroTime(start.Add(10234 * time.Millisecond)),
		Count:          1,
	}
	got := o.clusterEvent(start.Add(11*time.Second), ev, nil)
	if len(got) != 1 || !got[0].Time.Equal(start.Add(8734*time.Millisecond)) || got[0].Node != "master-0" {
		t.Fatalf("event %+v, want it at 8.734 s on master-0", got)
	}
}
