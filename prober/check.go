package prober

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sort"
	"time"

	"github.com/repro-tools/repro/results"
)

// BackendCheck is what one request to a backend, before the run, said.
type BackendCheck struct {
	Backend Backend
	Sample  results.Sample
	// Problem is one line saying why the backend cannot be polled usefully
	// (refused credentials, no permission, not served, unreachable); empty
	// when it answered.
	Problem string
}

// CheckBackends sends one request to every backend over a new connection,
// so that a backend that cannot answer is one clear line before the run,
// not a run full of auth or http-other disruption. 401, 403 and 404 answers and
// failures to connect are problems; other HTTP answers (429, 5xx) are
// transient and polled like any other.
func (p *Prober) CheckBackends(ctx context.Context) []BackendCheck {
	var out []BackendCheck
	for _, pl := range p.pollers {
		if pl.conn != results.NewConnections {
			continue
		}
		now := time.Now()
		s := p.probe(ctx, ctx, pl, 0, now, now.Round(0).UTC())
		c := BackendCheck{Backend: pl.backend, Sample: s}
		switch {
		case s.StatusCode == http.StatusUnauthorized:
			c.Problem = fmt.Sprintf("%s: 401 Unauthorized for %s: the server does not accept the kubeconfig's credentials (expired token? log in again)", pl.backend.Name, pl.backend.Path)
		case s.StatusCode == http.StatusForbidden:
			c.Problem = fmt.Sprintf("%s: 403 Forbidden for %s: the kubeconfig's user may not read it (\"repro rbac\" lists what polling needs)", pl.backend.Name, pl.backend.Path)
		case s.StatusCode == http.StatusNotFound:
			c.Problem = fmt.Sprintf("%s: 404 Not Found for %s: this cluster does not serve it (a plain Kubernetes cluster has no openshift-api or oauth-api)", pl.backend.Name, pl.backend.Path)
		case s.StatusCode == 0 && s.ErrorClass != results.ClassNone:
			c.Problem = fmt.Sprintf("%s: cannot reach %s: %s", pl.backend.Name, pl.url, s.Error)
		}
		out = append(out, c)
	}
	return out
}

// dateWindow is what one response says about the offset: the server
// stamped Date (whole seconds, truncated) at some instant between the
// request being written and the first response byte, so the offset lies in
// (date - firstByte, date + 1s - written).
type dateWindow struct{ lo, hi time.Duration }

// narrow intersects the windows. A Date header has one-second resolution,
// but samples spread over more than a second, each at a different phase of
// the server's second, cut the range down to about the spacing between
// them or the round trip, whichever is longer.
func narrow(ws []dateWindow) results.Clock {
	c := results.Clock{Samples: len(ws)}
	if len(ws) == 0 {
		return c
	}
	lo, hi := ws[0].lo, ws[0].hi
	for _, w := range ws[1:] {
		lo, hi = max(lo, w.lo), min(hi, w.hi)
	}
	if lo <= hi {
		c.Offset, c.Resolution, c.Consistent = (lo+hi)/2, (hi-lo)/2, true
		return c
	}
	mids := make([]time.Duration, len(ws))
	for i, w := range ws {
		mids[i] = (w.lo + w.hi) / 2
	}
	sort.Slice(mids, func(i, j int) bool { return mids[i] < mids[j] })
	c.Offset, c.Resolution = mids[len(mids)/2], 500*time.Millisecond
	return c
}

// MeasureClockOffset sends n requests to the first backend, spacing apart,
// over the first backend's new-connection poller (a fresh connection each,
// so every request may reach another server behind the load balancer, as
// the pollers' do), and narrows the offset from their Date headers. Spread
// n*spacing over a little more than a second for the finest result.
func (p *Prober) MeasureClockOffset(ctx context.Context, n int, spacing time.Duration) (results.Clock, error) {
	var pl *poller
	for _, cand := range p.pollers {
		if cand.conn == results.NewConnections {
			pl = cand
			break
		}
	}
	if pl == nil {
		pl = p.pollers[0]
	}
	var ws []dateWindow
	best := time.Duration(-1)
	var lastErr error
	for i := 0; i < n; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return narrow(ws), ctx.Err()
			case <-time.After(spacing):
			}
		}
		w, rtt, err := dateSample(ctx, pl.client, pl.url, p.cfg.userAgent)
		if err != nil {
			lastErr = err
			continue
		}
		ws = append(ws, w)
		if best < 0 || rtt < best {
			best = rtt
		}
	}
	c := narrow(ws)
	c.BestRTT = max(best, 0)
	c.Text = c.String()
	if len(ws) == 0 {
		return c, fmt.Errorf("no response with a Date header from %s: %v", pl.url, lastErr)
	}
	return c, nil
}

// dateSample sends one GET and returns the window its Date header allows.
func dateSample(ctx context.Context, client *http.Client, url, userAgent string) (dateWindow, time.Duration, error) {
	var written, first time.Time
	trace := &httptrace.ClientTrace{
		WroteRequest:         func(httptrace.WroteRequestInfo) { written = time.Now() },
		GotFirstResponseByte: func() { first = time.Now() },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, url, nil)
	if err != nil {
		return dateWindow{}, 0, err
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := client.Do(req)
	if err != nil {
		return dateWindow{}, 0, err
	}
	resp.Body.Close()
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil || written.IsZero() || first.IsZero() {
		return dateWindow{}, 0, fmt.Errorf("no usable Date header (%q)", resp.Header.Get("Date"))
	}
	return dateWindow{lo: date.Sub(first), hi: date.Add(time.Second).Sub(written)}, first.Sub(written), nil
}
