package scenarios

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
)

// Control backends: their names describe as results.KindControl, so no
// reader counts their failures as apiserver disruption.
const (
	// ControlBackend is the local control target, a TLS server inside the
	// repro process.
	ControlBackend = "repro-control"
	// ExternalControlBackend is --control's target outside the cluster.
	ExternalControlBackend = "repro-control-external"
)

// DefaultStallThreshold is the control latency at which the local target
// says the measuring host stalled. A declared guess: a loopback TLS request
// on an idle host takes a few milliseconds, so a quarter of a second means
// the process or the host did not run (GC, CPU starvation, steal), long
// enough to distort a sample's timing by a visible amount; below that the
// host's jitter is not what a disruption of seconds is made of.
const DefaultStallThreshold = 250 * time.Millisecond

// control polls the local target (and --control's) beside the backends,
// over new and reused connections, with the backends' timeout and
// controlInterval.
type control struct {
	srv      *http.Server
	ln       net.Listener
	local    *prober.Prober
	external *prober.Prober
	log      *zap.Logger
}

// controlInterval is the control pollers' interval: the backends', but no
// finer than prober.DefaultInterval. Below it the local control's requests
// (and the handshakes its in-process server answers) cost the prober as much
// CPU as a third of the backends' at --interval 10ms (docs/prober-cost.md),
// while a run's stall windows still get the sampling a default run has.
func controlInterval(backends time.Duration) time.Duration {
	return max(backends, prober.DefaultInterval)
}

// newControl starts the local target and builds the control pollers.
// externalURL ("" for none) is polled without credentials; externalCA,
// when set, replaces the system roots for it (tests).
func newControl(p Polling, externalURL string, externalCA []byte, log *zap.Logger) (*control, error) {
	if log == nil {
		log = zap.NewNop()
	}
	cert, caPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, fmt.Errorf("control target: %w", err)
	}
	c := &control{ln: ln, log: log,
		srv: &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"Status","status":"Success"}`))
		})}}
	go func() { _ = c.srv.Serve(ln) }()
	opts := func(b prober.Backend) []prober.Option {
		return []prober.Option{prober.WithBackends(b), prober.WithInterval(controlInterval(p.Interval)), prober.WithProbeTimeout(p.ProbeTimeout),
			prober.WithHTTP2(p.HTTP2), prober.WithLogger(log)}
	}
	local := &rest.Config{Host: "https://" + ln.Addr().String(), TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
	if c.local, err = prober.New(local, opts(prober.Backend{Name: ControlBackend, Path: "/control"})...); err != nil {
		c.close()
		return nil, err
	}
	if externalURL != "" {
		base, path, err := ParseControlURL(externalURL)
		if err != nil {
			c.close()
			return nil, err
		}
		rc := &rest.Config{Host: base, TLSClientConfig: rest.TLSClientConfig{CAData: externalCA}}
		if c.external, err = prober.New(rc, opts(prober.Backend{Name: ExternalControlBackend, Path: path})...); err != nil {
			c.close()
			return nil, fmt.Errorf("--control: %w", err)
		}
	}
	return c, nil
}

// ParseControlURL checks --control's URL and splits it into the base URL
// and the path (with query) polled.
func ParseControlURL(raw string) (base, path string, err error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", "", fmt.Errorf("--control %q: want http(s)://host[:port]/path, without credentials", raw)
	}
	path = u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return u.Scheme + "://" + u.Host, path, nil
}

// selfSigned makes the local target's certificate for 127.0.0.1, valid for
// a day, and its PEM for the control pollers' trust.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "repro-control"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:        true, BasicConstraintsValid: true,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func (c *control) close() {
	if c.local != nil {
		c.local.Close()
	}
	if c.external != nil {
		c.external.Close()
	}
	_ = c.srv.Close()
}

// run polls until ctx ends, writes every control sample to path and returns
// the measuring-unreliable windows: one per stall of the local target (a
// failure or a request slower than threshold) and one per failure of the
// external target. The wait returns once the pollers stopped.
func (c *control) run(ctx context.Context, path string, threshold time.Duration) (wait func() ([]results.Signal, error)) {
	w, err := results.CreateJSONL(path)
	if err != nil {
		return func() ([]results.Signal, error) { c.close(); return nil, err }
	}
	var mu sync.Mutex
	var local, external []results.Sample
	var writeErr error
	var wg sync.WaitGroup
	drain := func(pr *prober.Prober, into *[]results.Sample) {
		defer wg.Done()
		for s := range pr.Run(ctx) {
			mu.Lock()
			if writeErr == nil {
				writeErr = w.Write(&s)
			}
			// Only what can make a window is kept in memory.
			if s.Failed() || s.Duration >= threshold {
				*into = append(*into, s)
			}
			mu.Unlock()
		}
	}
	wg.Add(1)
	go drain(c.local, &local)
	if c.external != nil {
		wg.Add(1)
		go drain(c.external, &external)
	}
	return func() ([]results.Signal, error) {
		wg.Wait()
		c.close()
		if err := w.Close(); err != nil && writeErr == nil {
			writeErr = err
		}
		sigs := StallWindows(local, threshold, ControlBackend)
		sigs = append(sigs, StallWindows(external, -1, ExternalControlBackend)...)
		return sigs, writeErr
	}
}

// StallWindows turns control samples into measuring-unreliable windows: a
// sample that failed, or (threshold >= 0) took threshold or longer, covers
// its own span; overlapping spans merge into one window. Failures of the
// backends inside a window say as much about the measuring side as about
// the cluster, and readers discount them.
func StallWindows(samples []results.Sample, threshold time.Duration, instance string) []results.Signal {
	type span struct {
		from, to time.Time
		failed   int
		slow     int
		worst    time.Duration
		class    results.ErrorClass
	}
	var spans []span
	for _, s := range samples {
		if s.ErrorClass == results.ClassAborted {
			continue // cut by the run's end: says nothing of the host
		}
		failed := s.Failed()
		if !failed && (threshold < 0 || s.Duration < threshold) {
			continue
		}
		sp := span{from: s.Start, to: s.End(), worst: s.Duration}
		if failed {
			sp.failed, sp.class = 1, s.ErrorClass
		} else {
			sp.slow = 1
		}
		spans = append(spans, sp)
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from.Before(spans[j].from) })
	var merged []span
	for _, sp := range spans {
		if n := len(merged); n > 0 && !sp.from.After(merged[n-1].to) {
			m := &merged[n-1]
			if sp.to.After(m.to) {
				m.to = sp.to
			}
			m.failed += sp.failed
			m.slow += sp.slow
			m.worst = max(m.worst, sp.worst)
			if m.class == "" {
				m.class = sp.class
			}
			continue
		}
		merged = append(merged, sp)
	}
	out := make([]results.Signal, 0, len(merged))
	for _, m := range merged {
		msg := fmt.Sprintf("%s: %d failed, %d slower than %v; slowest %v", instance, m.failed, m.slow, threshold, m.worst.Round(time.Millisecond))
		if threshold < 0 {
			msg = fmt.Sprintf("%s: %d failed (%s); slowest %v", instance, m.failed, m.class, m.worst.Round(time.Millisecond))
		}
		labels := map[string]string{"backend": instance}
		if m.class != "" {
			labels["error_class"] = string(m.class)
		}
		out = append(out, results.Signal{Kind: results.SignalMeasuringUnreliable, Source: results.ControlSource, Instance: instance,
			Labels: labels, At: m.from.UTC(), To: m.to.UTC(), Value: m.to.Sub(m.from).Seconds(), Message: msg})
	}
	return out
}
