package trigger

import (
	"context"
	"errors"
	"fmt"
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

// CallTimeout bounds each single request the trigger makes (a GET, a
// PATCH, an access review) with a context of its own. It is per call, not
// the client's --request-timeout: that would also end the rollout
// follower's watches, which must run for the whole rollout. A request to a
// server that accepted the connection and never answers then fails instead
// of hanging the run.
var CallTimeout = 20 * time.Second

// ErrNoAnswer is wrapped by the error of a check whose request met its
// CallTimeout.
var ErrNoAnswer = errors.New("no answer")

// retryTransient runs fn until it succeeds, fails with a non-transient error,
// the backoff is exhausted or ctx ends. Each call of fn has its own
// CallTimeout; one that meets it is retried like any transient error (a
// request stuck in a restarting apiserver during a rollout).
func retryTransient(ctx context.Context, fn func(context.Context) error) error {
	return retry(ctx, true, fn)
}

// checkCall is retryTransient for the checks before a run: a call that meets
// its CallTimeout, or whose dial or TLS handshake timed out, is not retried, so a server that never answers is named
// within one CallTimeout rather than after ten.
func checkCall(ctx context.Context, fn func(context.Context) error) error {
	return retry(ctx, false, fn)
}

func retry(ctx context.Context, retryTimeouts bool, fn func(context.Context) error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, transientBackoff, func(ctx context.Context) (bool, error) {
		callCtx, cancel := context.WithTimeout(ctx, CallTimeout)
		last = fn(callCtx)
		timedOut := callCtx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		if last == nil {
			return true, nil
		}
		if timedOut {
			last = fmt.Errorf("%w within %v: %v", ErrNoAnswer, CallTimeout, last)
			if !retryTimeouts {
				return false, last
			}
			return false, nil
		}
		var ne net.Error
		if !retryTimeouts && errors.As(last, &ne) && ne.Timeout() {
			// A TLS handshake or dial that timed out: the server is not
			// answering, which a retry ten times over would only hide.
			return false, fmt.Errorf("%w: %v", ErrNoAnswer, last)
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
