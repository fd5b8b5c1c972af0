package attribute

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/repro-tools/repro/results"
)

// Verdicts, one per failed sample.
const (
	Answered            = "answered"
	ReceivedNotAnswered = "received-not-answered"
	NotReceived         = "not-received"
	Unknown             = "unknown"
)

// Verdicts lists them in the order reports show them.
var Verdicts = []string{Answered, ReceivedNotAnswered, NotReceived, Unknown}

// Servers whose audit logs are read: /var/log/<server>/audit.log on every
// control-plane node. kube-apiserver receives every request; for the
// aggregated APIs (image.openshift.io, oauth.openshift.io) it proxies to
// openshift-apiserver or oauth-apiserver, which log the same Audit-ID.
const (
	KubeAPIServer      = "kube-apiserver"
	OpenShiftAPIServer = "openshift-apiserver"
	OAuthAPIServer     = "oauth-apiserver"
)

// DefaultServers are the servers read by default.
var DefaultServers = []string{KubeAPIServer, OpenShiftAPIServer, OAuthAPIServer}

// DefaultRequestTimeout is kube-apiserver's --request-timeout default
// (k8s.io/apiserver pkg/server/options/server_run_options.go): a stalled
// non-long-running request is timed out, and so logged, within it.
const DefaultRequestTimeout = 60 * time.Second

// Hop is one server's audit record of a request.
type Hop struct {
	// Server is kube-apiserver, openshift-apiserver or oauth-apiserver.
	Server string `json:"server"`
	Node   string `json:"node"`
	// Stage is the last stage logged; Code its response code (0 if none).
	Stage string `json:"stage"`
	Code  int    `json:"code,omitempty"`
	// Received is the server's requestReceivedTimestamp, Logged the stage
	// timestamp.
	Received time.Time `json:"received"`
	Logged   time.Time `json:"logged"`
}

// Record is one line of attribution.jsonl: the verdict on one failed sample.
type Record struct {
	Backend    string `json:"backend"`
	Connection string `json:"connection"`
	Seq        uint64 `json:"seq"`
	AuditID    string `json:"audit_id"`
	Verdict    string `json:"verdict"`
	// Node is the node whose kube-apiserver logged the request (for
	// answered samples without an audit record, the node that answered,
	// when known); empty when nobody did.
	Node string `json:"node,omitempty"`
	// Stage is the last audit stage logged for it.
	Stage  string `json:"stage,omitempty"`
	Detail string `json:"detail"`
	// Poller is the sample's poller name (vantage included); Start its
	// send time; Class its error class.
	Poller string             `json:"poller"`
	Start  time.Time          `json:"start"`
	Class  results.ErrorClass `json:"error_class"`
	Code   int                `json:"code,omitempty"`
	// ServerLatencyMs is what the answering server saw, received to logged.
	ServerLatencyMs float64 `json:"server_latency_ms,omitempty"`
	// Hops are the audit records of every server that logged it, the
	// kube-apiserver first.
	Hops []Hop `json:"hops,omitempty"`
}

// Log is what was read of one server's audit log on one node.
type Log struct {
	Server string
	Node   string
	// Files read, oldest first.
	Files []string
	// Absent: the node has no such log directory (the server does not run
	// there).
	Absent bool
	// Err is why the log could not be read (or read completely).
	Err error
	// ReadAt is when its last file was opened: the server had logged
	// everything that completed before then.
	ReadAt time.Time
	ScanStats
}

func (l *Log) name() string { return l.Server + " on " + l.Node }

// Options tune a correlation.
type Options struct {
	// Servers default to DefaultServers.
	Servers []string
	// From and To bound the run (default: the failed samples' span).
	From, To time.Time
	// RequestTimeout is how long after the client gave up a stalled request
	// may still be logged (default DefaultRequestTimeout). Only when the
	// logs reach that far past a written request is its absence
	// not-received.
	RequestTimeout time.Duration
	// Parallel bounds the logs read at once (default 3).
	Parallel int
	// Progress, when set, is called as each log streams, from several
	// goroutines at once.
	Progress func(Progress)
	// AnsweredBy names the node that answered a sample when no audit log has
	// it (the X-OpenShift-Disruption host, or the lab load balancer's
	// records); nil: the sample's ServedBy.
	AnsweredBy func(*results.Sample) string
}

// Progress reports one log file's streaming.
type Progress struct {
	// Source is "NODE SERVER/FILE".
	Source string
	// Read bytes of Total (-1 when unknown).
	Read, Total int64
	Done        bool
}

// Result is the outcome of a correlation.
type Result struct {
	Records []Record
	Logs    []Log
}

type hit struct {
	server, node string
	ev           Event
}

// Correlate reads the audit logs of every control-plane node from src and
// gives each failed sample its verdict. Samples that did not fail are
// ignored. A log that cannot be read makes the verdicts that depend on it
// unknown, not the whole correlation fail; an error is returned only when
// the nodes cannot be listed.
func Correlate(ctx context.Context, src LogSource, failed []results.Sample, o Options) (*Result, error) {
	if len(o.Servers) == 0 {
		o.Servers = DefaultServers
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.Parallel <= 0 {
		o.Parallel = 3
	}
	var keep []results.Sample
	want := map[string]struct{}{}
	for _, s := range failed {
		if !s.Failed() {
			continue
		}
		keep = append(keep, s)
		if s.AuditID != "" {
			want[s.AuditID] = struct{}{}
		}
		if o.From.IsZero() || s.Start.Before(o.From) {
			o.From = s.Start
		}
		if s.End().After(o.To) {
			o.To = s.End()
		}
	}
	res := &Result{}
	if len(keep) == 0 {
		return res, nil
	}
	nodes, err := src.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, errors.New("no control-plane nodes found (labels node-role.kubernetes.io/master or control-plane)")
	}
	// Read from a minute before the run (clocks, requests in flight) to
	// the request timeout after it.
	from := o.From.Add(-time.Minute)
	until := o.To.Add(o.RequestTimeout + time.Minute)

	hits := map[string][]hit{}
	var mu sync.Mutex
	logs := make([]Log, 0, len(nodes)*len(o.Servers))
	for _, srv := range o.Servers {
		for _, n := range nodes {
			logs = append(logs, Log{Server: srv, Node: n})
		}
	}
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i := range logs {
		l := &logs[i]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			readLog(ctx, src, l, want, from, until, o.Progress, func(ev Event) {
				mu.Lock()
				hits[ev.AuditID] = append(hits[ev.AuditID], hit{l.Server, l.Node, ev})
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Logs = logs
	answeredBy := o.AnsweredBy
	if answeredBy == nil {
		answeredBy = func(s *results.Sample) string { return s.ServedBy }
	}
	for i := range keep {
		res.Records = append(res.Records, verdict(&keep[i], hits[keep[i].AuditID], logs, o.RequestTimeout, answeredBy))
	}
	sort.SliceStable(res.Records, func(i, j int) bool { return res.Records[i].Start.Before(res.Records[j].Start) })
	return res, nil
}

// seekThreshold is the file size from which the start of the window is
// looked up with range requests instead of streaming from the start.
const seekThreshold = 8 << 20

// readLog streams one server's audit log on one node into l.
func readLog(ctx context.Context, src LogSource, l *Log, want map[string]struct{}, from, until time.Time, progress func(Progress), fn func(Event)) {
	names, err := src.List(ctx, l.Node, l.Server)
	if errors.Is(err, ErrNoDir) {
		l.Absent = true
		return
	}
	if err != nil {
		l.Err = err
		return
	}
	files := SelectFiles(names, from, until)
	if len(files) == 0 {
		l.Absent = true
		return
	}
	for i, f := range files {
		l.Files = append(l.Files, f.Name)
		var offset int64
		if i == 0 && !f.Gzip {
			offset = seek(ctx, src, l.Node, l.Server, f.Name, from)
		}
		l.ReadAt = time.Now()
		st, err := readFile(ctx, src, l.Node, l.Server, f, offset, want, until, progress, fn)
		l.merge(st)
		if err != nil {
			l.Err = fmt.Errorf("%s: %w", f.Name, err)
			return
		}
		if st.Stopped {
			return
		}
	}
}

func (l *Log) merge(st ScanStats) {
	l.Bytes += st.Bytes
	l.Lines += st.Lines
	l.Matched += st.Matched
	l.Cut += st.Cut
	l.Oversized += st.Oversized
	if !st.First.IsZero() && (l.First.IsZero() || st.First.Before(l.First)) {
		l.First = st.First
	}
	if st.Last.After(l.Last) {
		l.Last = st.Last
	}
	l.Stopped = st.Stopped
}

func readFile(ctx context.Context, src LogSource, node, server string, f LogFile, offset int64, want map[string]struct{}, until time.Time, progress func(Progress), fn func(Event)) (ScanStats, error) {
	rc, start, size, err := src.Open(ctx, node, server, f.Name, offset)
	if err != nil {
		return ScanStats{}, err
	}
	defer rc.Close()
	var r io.Reader = rc
	name := node + " " + server + "/" + f.Name
	if progress != nil {
		total := size
		if total >= 0 {
			total -= start
		}
		r = &progressReader{r: rc, p: Progress{Source: name, Total: total}, fn: progress}
		defer func() {
			pr := r.(*progressReader)
			pr.p.Done = true
			progress(pr.p)
		}()
	}
	if f.Gzip {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return ScanStats{}, err
		}
		defer zr.Close()
		st, err := Scan(zr, want, until, false, fn)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// A backup still being compressed ends early: what was
			// read counts, the rest is cut.
			st.Cut++
			err = nil
		}
		return st, err
	}
	return Scan(r, want, until, start > 0, fn)
}

type progressReader struct {
	r       io.Reader
	p       Progress
	fn      func(Progress)
	pending int64
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.p.Read += int64(n)
	p.pending += int64(n)
	if p.pending >= 1<<20 {
		p.pending = 0
		p.fn(p.p)
	}
	return n, err
}

// seek finds an offset in a large file from which every event at or after
// from follows, by bisection on the stage timestamps of the first whole
// line after an offset. Any failure returns 0: read it all.
func seek(ctx context.Context, src LogSource, node, server, name string, from time.Time) int64 {
	rc, _, size, err := src.Open(ctx, node, server, name, 0)
	if err != nil {
		return 0
	}
	rc.Close()
	if size < seekThreshold {
		return 0
	}
	probe := func(off int64) (time.Time, bool) {
		rc, start, _, err := src.Open(ctx, node, server, name, off)
		if err != nil || start != off {
			if rc != nil {
				rc.Close()
			}
			return time.Time{}, false
		}
		defer rc.Close()
		buf := make([]byte, 256<<10)
		n, _ := io.ReadFull(rc, buf)
		buf = buf[:n]
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return time.Time{}, false
		}
		buf = buf[i+1:]
		for len(buf) > 0 {
			j := bytes.IndexByte(buf, '\n')
			if j < 0 {
				return time.Time{}, false
			}
			if ts, ok := stageTimestamp(buf[:j]); ok {
				return ts, true
			}
			buf = buf[j+1:]
		}
		return time.Time{}, false
	}
	// Lines are logged in stage-time order give or take in-flight
	// requests; the minute of margin taken by the caller covers those.
	lo, hi := int64(0), size
	for hi-lo > 1<<20 {
		mid := lo + (hi-lo)/2
		ts, ok := probe(mid)
		if !ok {
			return lo
		}
		if ts.Before(from) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// answerMargin is how long before the client gave up a response must be
// logged to count as answered. A client that gives up closes its
// connection, which cancels the request's context; a handler stalled on
// storage then returns (500) at once and is logged at the give-up itself,
// within milliseconds either side (measured on the lab's etcd-stall), and
// clocks of client and server may differ by as much.
const answerMargin = 100 * time.Millisecond

// verdict judges one failed sample from the events logged with its Audit-ID.
func verdict(s *results.Sample, hs []hit, logs []Log, timeout time.Duration, answeredBy func(*results.Sample) string) Record {
	r := Record{
		Backend: s.Backend, Connection: string(s.Connection), Seq: s.Seq, AuditID: s.AuditID,
		Poller: s.Name(), Start: s.Start, Class: s.ErrorClass, Code: s.StatusCode,
	}
	giveUp := s.End()
	// One hop per server and node: the latest stage logged there.
	byHop := map[[2]string]*Hop{}
	var order [][2]string
	for _, h := range hs {
		k := [2]string{h.server, h.node}
		hp := byHop[k]
		if hp == nil {
			hp = &Hop{Server: h.server, Node: h.node}
			byHop[k] = hp
			order = append(order, k)
		}
		if hp.Logged.IsZero() || h.ev.StageTimestamp.After(hp.Logged) || h.ev.completes() {
			hp.Stage, hp.Code, hp.Logged = h.ev.Stage, h.ev.Code(), h.ev.StageTimestamp
			if !h.ev.RequestReceivedTimestamp.IsZero() {
				hp.Received = h.ev.RequestReceivedTimestamp
			}
		}
	}
	for _, k := range order {
		r.Hops = append(r.Hops, *byHop[k])
	}
	sort.SliceStable(r.Hops, func(i, j int) bool {
		return (r.Hops[i].Server == KubeAPIServer) && (r.Hops[j].Server != KubeAPIServer)
	})
	hopText := ""
	if len(r.Hops) > 1 {
		var parts []string
		for _, h := range r.Hops {
			parts = append(parts, fmt.Sprintf("%s %s %s", h.Server, h.Node, describeHop(h)))
		}
		hopText = "; hops: " + strings.Join(parts, " -> ")
	}
	if len(r.Hops) > 0 {
		h := r.Hops[0]
		r.Node, r.Stage = h.Node, h.Stage
		done := h.Stage == StageResponseComplete || h.Stage == StagePanic
		if done && !h.Received.IsZero() {
			r.ServerLatencyMs = results.Millis(h.Logged.Sub(h.Received))
		}
		switch {
		case done && (s.StatusCode > 0 || h.Logged.Before(giveUp.Add(-answerMargin))):
			// An answer the client got is answered whatever the
			// clocks say.
			r.Verdict = Answered
			r.Code = h.Code
			r.Detail = fmt.Sprintf("%s %s logged %s %d, %s after receiving it", h.Server, h.Node, h.Stage, h.Code, ms(h.Logged.Sub(h.Received)))
			if s.StatusCode == 0 {
				r.Detail += fmt.Sprintf(", %s before the client gave up: the answer was lost on the way back", ms(giveUp.Sub(h.Logged)))
			}
		case done && h.Logged.After(giveUp):
			r.Verdict = ReceivedNotAnswered
			r.Detail = fmt.Sprintf("%s %s received it %s after it was sent and logged %s %d only %s after the client gave up (server saw %s)",
				h.Server, h.Node, ms(h.Received.Sub(s.Start)), h.Stage, h.Code, ms(h.Logged.Sub(giveUp)), ms(h.Logged.Sub(h.Received)))
		case done:
			r.Verdict = ReceivedNotAnswered
			r.Detail = fmt.Sprintf("%s %s received it %s after it was sent and logged %s %d %s before the client gave up, within %s of it: the handler ended because the client went away (server saw %s)",
				h.Server, h.Node, ms(h.Received.Sub(s.Start)), h.Stage, h.Code, ms(giveUp.Sub(h.Logged)), answerMargin, ms(h.Logged.Sub(h.Received)))
		default:
			r.Verdict = ReceivedNotAnswered
			r.Detail = fmt.Sprintf("%s %s logged only %s, no response", h.Server, h.Node, h.Stage)
		}
		r.Detail += hopText
		return r
	}
	if s.StatusCode > 0 {
		r.Verdict = Answered
		r.Node = answeredBy(s)
		by := "the node is not known"
		if r.Node != "" {
			by = "answered by " + r.Node
		}
		// kube-apiserver answers 429 while shutting down
		// (shutdown-send-retry-after) and 503 before its mux is ready in
		// filters outside the audit filter (k8s.io/apiserver
		// pkg/server/config.go DefaultBuildHandlerChain): never logged.
		r.Detail = fmt.Sprintf("answered %d by the client's account, in no audit log (kube-apiserver's shutdown 429s and not-ready 503s come from filters outside auditing); %s", s.StatusCode, by)
		return r
	}
	written := s.Phases.WroteRequest > 0
	need := giveUp
	if written {
		need = giveUp.Add(timeout)
	}
	var gaps []string
	covered := 0
	for i := range logs {
		l := &logs[i]
		if l.Server != KubeAPIServer {
			continue
		}
		switch {
		case l.Err != nil:
			gaps = append(gaps, fmt.Sprintf("%s unreadable (%v)", l.name(), l.Err))
		case l.Absent:
			gaps = append(gaps, fmt.Sprintf("%s: no audit log", l.name()))
		case l.First.After(s.Start):
			gaps = append(gaps, fmt.Sprintf("%s starts at %s, after the request was sent", l.name(), l.First.UTC().Format("15:04:05.000")))
		case l.Last.Before(need) && (l.ReadAt.Before(need) || l.Last.Before(giveUp)):
			// Covered either way when the log runs past need, or
			// when it was still written after the give-up and read
			// only after need (a quiet server logs nothing new).
			why := "before the client gave up"
			if written && !l.Last.Before(giveUp) {
				why = fmt.Sprintf("%s after the client gave up, within the %s a stalled request may take to be logged (RequestReceived is not logged)", ms(l.Last.Sub(giveUp)), timeout)
			}
			gaps = append(gaps, fmt.Sprintf("%s ends %s", l.name(), why))
		default:
			covered++
		}
	}
	// Where the connection was sent, when known (the lab's load
	// balancer): the node that should have received it.
	sentTo := ""
	if n := answeredBy(s); n != "" {
		sentTo = "; its connection was sent to " + n
	}
	if len(gaps) > 0 {
		r.Verdict = Unknown
		r.Detail = "in no audit log read; " + strings.Join(gaps, "; ") + sentTo
		return r
	}
	r.Verdict = NotReceived
	if written {
		r.Detail = fmt.Sprintf("written, in none of the %d kube-apiserver audit logs, which cover the %s request timeout after the client gave up", covered, timeout)
	} else {
		r.Detail = fmt.Sprintf("never written (%s), in none of the %d kube-apiserver audit logs", s.ErrorClass, covered)
	}
	r.Detail += sentTo
	return r
}

func describeHop(h Hop) string {
	if h.Code > 0 {
		return fmt.Sprintf("%s %d", h.Stage, h.Code)
	}
	return h.Stage
}

func ms(d time.Duration) string {
	if d < 0 {
		return "-" + ms(-d)
	}
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// ReadFailed reads the failed samples of a samples.jsonl.
func ReadFailed(path string) ([]results.Sample, error) {
	var out []results.Sample
	_, err := results.ReadJSONL(path, func(line []byte) error {
		var s results.Sample
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		if s.Failed() {
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

// WriteRecords writes attribution.jsonl (one Record per line) to path.
func WriteRecords(path string, recs []Record) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return err
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadRecords reads an attribution.jsonl.
func ReadRecords(path string) ([]Record, error) {
	var out []Record
	_, err := results.ReadJSONL(path, func(line []byte) error {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}
