package trigger

import (
	"context"
	"errors"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
)

// transientBackoff spreads retries over about 20 s: long enough to ride out
// one apiserver restarting behind a load balancer, short enough to surface a
// real outage quickly.
var transientBackoff = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 1.6, Jitter: 0.2, Steps: 10, Cap: 5 * time.Second}

// isTransient reports errors worth retrying: the apiserver answering that it
// is busy or restarting, or a connection cut under us. During a rollout these
// are expected, not failures.
func isTransient(err error) bool {
	if err == nil || apierrors.IsNotFound(err) {
		// A 404 without a Status body is an "unexpected server response"
		// too; it is an answer, not a restart.
		return false
	}
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err) {
		return true
	}
	if utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// retryTransient runs fn until it succeeds, fails with a non-transient error,
// the backoff is exhausted or ctx ends.
func retryTransient(ctx context.Context, fn func(context.Context) error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, transientBackoff, func(ctx context.Context) (bool, error) {
		last = fn(ctx)
		if last == nil {
			return true, nil
		}
		if isTransient(last) {
			return false, nil
		}
		return false, last
	})
	if err != nil && last != nil && (wait.Interrupted(err) || errors.Is(err, context.Canceled)) {
		return last
	}
	return err
}
