package attribute

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/repro-tools/repro/ci"
	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/results"
)

// CI runs: origin's sampler sends a unique Audit-ID with every request and
// its disruption intervals carry the first failed request's ID as the
// message annotation request-audit-id (openshift/origin
// pkg/monitor/backenddisruption; monitorapi.AnnotationRequestAuditID).
// gather-extra saves each control-plane node's audit logs, current and
// rotated, each gzipped, as audit_logs/SERVER/NODE-FILE.gz with a listing
// SERVER.audit_logs_listing of "NODE FILE" lines (openshift/release
// ci-operator/step-registry/gather/extra/gather-extra-commands.sh). The
// same reader and verdicts as a live cluster's apply.

// DefaultSamplerTimeout is origin's sampler request timeout for the runs the
// original report named (2024: 20 s overall; origin #29761 raised it to
// 34 s in 2025). The response-header timeout, after which a stalled request
// is given up, is 4/5 of it (pkg/monitor/backenddisruption
// disruption_backend_sampler.go timeoutForPartOfRequest).
const DefaultSamplerTimeout = 20 * time.Second

// CIOptions tune the attribution of a CI run.
type CIOptions struct {
	// SamplerTimeout is origin's sampler timeout in the run (default
	// DefaultSamplerTimeout): a request that timed out gave up 4/5 of it
	// after it was sent.
	SamplerTimeout time.Duration
	Options
}

// CIAttribution is the outcome for one CI run.
type CIAttribution struct {
	*Result
	// Failures counts the Error disruption intervals read; WithoutID those
	// without a request-audit-id (older origin, or a sampler outage).
	Failures, WithoutID int
	// Notes say what is missing (no audit IDs, no gathered logs).
	Notes []string
}

// AttributeCIRun reads a fetched CI run's timeline files and its gathered
// audit logs (runDir is the run's folder, target its ci-operator target)
// and gives every failed request with an audit ID its verdict.
func AttributeCIRun(ctx context.Context, runDir, target string, o CIOptions) (*CIAttribution, error) {
	junit := filepath.Join(runDir, "artifacts", target, "openshift-e2e-test", "artifacts", "junit")
	files, _ := filepath.Glob(filepath.Join(junit, "e2e-timelines_spyglass_*.json"))
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no timeline (e2e-timelines_spyglass_*.json)", junit)
	}
	var ivs []origin.Interval
	for _, f := range files {
		v, err := origin.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ivs = append(ivs, v...)
	}
	failed, withoutID := CIFailed(ivs, o.SamplerTimeout)
	out := &CIAttribution{Result: &Result{}, Failures: len(failed) + withoutID, WithoutID: withoutID}
	if out.Failures == 0 {
		out.Notes = append(out.Notes, "no Error disruption intervals: nothing to attribute")
		return out, nil
	}
	if withoutID > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d of %d failed intervals carry no request-audit-id (origin set none): they cannot be looked up", withoutID, out.Failures))
	}
	if len(failed) == 0 {
		return out, nil
	}
	logs := filepath.Join(runDir, "artifacts", target, "gather-extra", "artifacts", "audit_logs")
	src, err := NewGatheredLogs(logs)
	if err != nil {
		out.Notes = append(out.Notes, fmt.Sprintf("no gathered audit logs (%v): fetch them with --audit; every verdict is unknown", err))
		for i := range failed {
			out.Records = append(out.Records, Record{Backend: failed[i].Backend, Connection: string(failed[i].Connection), AuditID: failed[i].AuditID,
				Verdict: Unknown, Detail: "no gathered audit logs", Poller: failed[i].Name(), Start: failed[i].Start, Class: failed[i].ErrorClass})
		}
		return out, nil
	}
	res, err := Correlate(ctx, src, failed, o.Options)
	if err != nil {
		return nil, err
	}
	out.Result = res
	return out, nil
}

// CIFailed turns origin's Error disruption intervals into failed samples:
// one per interval that carries an audit ID (the request that opened it),
// sent at the interval's start. withoutID counts those without one.
func CIFailed(ivs []origin.Interval, samplerTimeout time.Duration) (failed []results.Sample, withoutID int) {
	if samplerTimeout <= 0 {
		samplerTimeout = DefaultSamplerTimeout
	}
	seen := map[string]bool{}
	for _, iv := range ivs {
		if iv.Level != origin.LevelError || !iv.IsDisruption() {
			continue
		}
		id := iv.Message.Annotations[origin.AnnotationRequestAuditID]
		if id == "" {
			withoutID++
			continue
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		name := iv.Locator.BackendDisruptionName()
		s := results.Sample{
			Backend:    ci.BackendOf(name),
			Connection: results.ConnectionType(iv.Locator.Keys[origin.KeyConnection]),
			Seq:        uint64(len(failed)),
			Start:      iv.From,
			AuditID:    id,
		}
		text := iv.Message.HumanMessage
		s.ErrorClass, s.StatusCode = classifyOrigin(text)
		s.Error = text
		switch s.ErrorClass {
		case results.ClassHeaderTimeout, results.ClassClientTimeout:
			// Given up at the sampler's per-phase timeout.
			s.Duration = samplerTimeout * 4 / 5
		default:
			// Answered or failed within the second origin samples at.
			s.Duration = time.Second
		}
		switch s.ErrorClass {
		case results.ClassConnectRefused, results.ClassConnectTimeout, results.ClassDNS, results.ClassTLS, results.ClassTLSHandshakeTimeout:
		default:
			// Written, as far as the error says: its absence from the
			// logs only counts once they cover the request timeout.
			s.Phases.WroteRequest = time.Millisecond
		}
		failed = append(failed, s)
	}
	return failed, withoutID
}

var statusRE = regexp.MustCompile(`error running request: (\d{3})`)

// classifyOrigin classifies origin's error text (Go's transport errors, or
// "error running request: CODE ..." for a non-success status).
func classifyOrigin(text string) (results.ErrorClass, int) {
	if m := statusRE.FindStringSubmatch(text); m != nil {
		code, _ := strconv.Atoi(m[1])
		switch {
		case code == 429:
			return results.ClassHTTP429, code
		case code >= 500:
			return results.ClassHTTP5xx, code
		}
		return results.ClassHTTPOther, code
	}
	t := strings.ToLower(text)
	switch {
	case strings.Contains(t, "timeout awaiting response headers"):
		return results.ClassHeaderTimeout, 0
	case strings.Contains(t, "client.timeout"):
		return results.ClassClientTimeout, 0
	case strings.Contains(t, "connection refused"):
		return results.ClassConnectRefused, 0
	case strings.Contains(t, "tls handshake timeout"):
		return results.ClassTLSHandshakeTimeout, 0
	case strings.Contains(t, "dial tcp") && strings.Contains(t, "i/o timeout"):
		return results.ClassConnectTimeout, 0
	case strings.Contains(t, "no such host") || strings.Contains(t, "lookup "):
		return results.ClassDNS, 0
	case strings.Contains(t, "connection reset"):
		return results.ClassReset, 0
	case strings.Contains(t, "eof"):
		return results.ClassEOF, 0
	}
	return results.ClassOther, 0
}

// GatheredLogs is the LogSource of a CI run's gathered audit logs: files
// audit_logs/SERVER/NODE-FILE.gz, each the gzipped copy of the node's
// /var/log/SERVER/FILE.
type GatheredLogs struct {
	dir string
	// files[node][server] maps the node's file name to the local path.
	files map[string]map[string]map[string]string
}

// NewGatheredLogs indexes a gathered audit_logs folder.
func NewGatheredLogs(dir string) (*GatheredLogs, error) {
	g := &GatheredLogs{dir: dir, files: map[string]map[string]map[string]string{}}
	for _, srv := range DefaultServers {
		ents, err := os.ReadDir(filepath.Join(dir, srv))
		if err != nil {
			continue
		}
		listed := readListing(filepath.Join(dir, srv+".audit_logs_listing"))
		for _, e := range ents {
			if e.IsDir() {
				continue
			}
			node, file, ok := splitGathered(e.Name(), listed)
			if !ok {
				continue
			}
			if g.files[node] == nil {
				g.files[node] = map[string]map[string]string{}
			}
			if g.files[node][srv] == nil {
				g.files[node][srv] = map[string]string{}
			}
			g.files[node][srv][file] = filepath.Join(dir, srv, e.Name())
		}
	}
	if len(g.files) == 0 {
		return nil, fmt.Errorf("%s holds no audit log of %s", dir, strings.Join(DefaultServers, ", "))
	}
	return g, nil
}

// readListing reads gather-extra's "NODE FILE" listing.
func readListing(path string) map[string][2]string {
	out := map[string][2]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		if len(parts) == 2 {
			out[parts[0]+"-"+parts[1]+".gz"] = [2]string{parts[0], parts[1]}
		}
	}
	return out
}

// splitGathered splits NODE-FILE.gz, by the listing when it names it, else
// at the last "-audit" (audit.log and its backups audit-TIME.log).
func splitGathered(name string, listed map[string][2]string) (node, file string, ok bool) {
	if nf, ok := listed[name]; ok {
		return nf[0], nf[1], true
	}
	base, ok := strings.CutSuffix(name, ".gz")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndex(base, "-audit")
	if i <= 0 {
		return "", "", false
	}
	return base[:i], base[i+1:], true
}

// Nodes lists the nodes with gathered logs.
func (g *GatheredLogs) Nodes(context.Context) ([]string, error) {
	out := make([]string, 0, len(g.files))
	for n := range g.files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// List lists a node's gathered files of a server.
func (g *GatheredLogs) List(_ context.Context, node, dir string) ([]string, error) {
	m := g.files[node][dir]
	if len(m) == 0 {
		return nil, ErrNoDir
	}
	out := make([]string, 0, len(m))
	for f := range m {
		out = append(out, f)
	}
	sort.Strings(out)
	return out, nil
}

// Open streams a gathered file, decompressed. Offsets are not supported
// (start 0, size unknown): the reader then streams the file from the start.
func (g *GatheredLogs) Open(_ context.Context, node, dir, name string, _ int64) (io.ReadCloser, int64, int64, error) {
	p, ok := g.files[node][dir][name]
	if !ok {
		return nil, 0, 0, fmt.Errorf("%s %s/%s: %w", node, dir, name, os.ErrNotExist)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, 0, 0, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, 0, 0, fmt.Errorf("%s: %v", p, err)
	}
	return &gzipFile{zr: zr, f: f}, 0, -1, nil
}

type gzipFile struct {
	zr *gzip.Reader
	f  *os.File
}

func (g *gzipFile) Read(b []byte) (int, error) {
	n, err := g.zr.Read(b)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		// A gzip cut short (the gather step timed out): what was read
		// counts.
		err = io.EOF
	}
	return n, err
}

func (g *gzipFile) Close() error { return errors.Join(g.zr.Close(), g.f.Close()) }
