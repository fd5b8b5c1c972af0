package lab

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// eventSink posts the apiservers' termination Events. OpenShift's
// kube-apiserver records them itself; an upstream apiserver only logs the
// steps, so the lab reads the log and posts each step as the Event OpenShift
// would, stamped with the time the line was read. Posting goes through the
// load balancer while the apiserver that emitted the step may be going
// away, so each Event is retried until it is stored or the lab stops.
type eventSink struct {
	l      *Lab
	ch     chan *corev1.Event
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
}

// ObservedAtAnnotation carries the exact time (RFC 3339, nanoseconds) the lab
// observed the step, alongside the microsecond eventTime.
const ObservedAtAnnotation = "repro.lab/observed-at"

func newEventSink(l *Lab) *eventSink {
	s := &eventSink{l: l, ch: make(chan *corev1.Event, 1024)}
	s.wg.Add(1)
	go s.run()
	return s
}

func (s *eventSink) termination(node string, rev int32, ev LifecycleEvent) {
	pod := "kube-apiserver-" + node
	mt := metav1.NewMicroTime(ev.At)
	t := metav1.NewTime(ev.At)
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// The name scheme of client-go's recorder: object name and a
			// hex nanosecond timestamp.
			Name:        fmt.Sprintf("%s.%x", pod, ev.At.UnixNano()),
			Namespace:   Namespace,
			Annotations: map[string]string{ObservedAtAnnotation: ev.At.UTC().Format(time.RFC3339Nano), "repro.lab/revision": strconv.Itoa(int(rev))},
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", Namespace: Namespace, Name: pod, APIVersion: "v1",
		},
		Reason:              ev.Reason,
		Message:             ev.Message,
		Type:                corev1.EventTypeNormal,
		Source:              corev1.EventSource{Component: "apiserver", Host: node},
		FirstTimestamp:      t,
		LastTimestamp:       t,
		EventTime:           mt,
		Count:               1,
		Action:              ev.Signal,
		ReportingController: "kube-apiserver",
		ReportingInstance:   "kube-apiserver-" + node,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	select {
	case s.ch <- e:
	default:
		s.l.log.Warn("event queue full, dropping event", zap.String("reason", e.Reason))
	}
}

func (s *eventSink) run() {
	defer s.wg.Done()
	for e := range s.ch {
		s.post(e)
	}
}

func (s *eventSink) post(e *corev1.Event) {
	backoff := 50 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(s.l.ctx, 5*time.Second)
		_, err := s.l.client.CoreV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
		cancel()
		if err == nil || apierrors.IsAlreadyExists(err) {
			return
		}
		if s.l.ctx.Err() != nil {
			return
		}
		s.l.log.Debug("posting event failed, retrying", zap.String("reason", e.Reason), zap.Error(err))
		select {
		case <-s.l.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

func (s *eventSink) close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
	s.mu.Unlock()
	s.wg.Wait()
}
