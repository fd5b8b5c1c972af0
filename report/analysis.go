package report

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/results"
)

// PollerSummary holds the figures of one poller (backend-connection).
type PollerSummary struct {
	Name       string
	Backend    string
	Connection results.ConnectionType
	// Samples counts every sample; Failures the failed ones (aborted
	// excluded); Aborted those still unanswered when an interrupted run
	// stopped (see AbortedSince).
	Samples, Failures, Aborted int64
	// AbortedSince is the start of the oldest request unanswered at stop
	// and AbortedLongest the longest any of them had waited.
	AbortedSince   time.Time
	AbortedLongest time.Duration
	// Duplicates counts sample lines dropped because a sample of the same
	// poller and seq had been read already.
	Duplicates int64
	// Skipped counts ticks with no sample: gaps in the sequence numbers
	// between the first and last sample (in-flight bound or stalls).
	Skipped int64
	// Disrupted sums the poller's disruption intervals; SamplerOutage its
	// DNS intervals, which are not disruption.
	Disrupted     time.Duration
	SamplerOutage time.Duration
	// Intervals counts disruption intervals (outages excluded); Longest is
	// the longest of them.
	Intervals int
	Longest   time.Duration
	// Classes counts failed samples per error class.
	Classes map[results.ErrorClass]int64
	// Unauthorized counts 401 and 403 answers: expired or insufficient
	// credentials, which make every sample fail without any disruption.
	Unauthorized int64
	// Protocol is the HTTP protocol most answers came over ("HTTP/1.1",
	// "HTTP/2.0"), empty without any answer.
	Protocol string
	// First and Last are the starts of the first and last samples.
	First, Last time.Time
	// HTTP2, Vantage and Target are the poller's configuration as its
	// samples record it; they make its name (results.SamplerName).
	HTTP2           bool
	Vantage, Target string
}

// Analysis is everything derived from a set of samples.
type Analysis struct {
	// Pollers in display order (backend order of results.BackendOrder,
	// then new before reused).
	Pollers []PollerSummary
	// Intervals of every poller, sorted by start.
	Intervals []Interval
	// Origin holds every poller's intervals by origin's rules (see
	// OriginIntervals), unsorted.
	Origin []origin.Interval
	// Samples is the number of samples analysed.
	Samples int64
	// TruncatedLast says the last line of samples.jsonl was cut short and
	// skipped.
	TruncatedLast bool
	// Duplicates counts sample lines dropped as repeats (same poller and
	// seq) of one already read.
	Duplicates int64
	// Unsampled counts the pollers in Pollers that have no sample (see
	// AddUnsampledPollers).
	Unsampled int
	// From and To bound the samples (first start, last end).
	From, To time.Time
	// Attribution is the folder's attribution.jsonl, nil without one.
	Attribution *Attribution
	// Outcomes grade every failure and replay client-go's retries over
	// them (outcomes.go); a second view beside DISRUPTED.
	Outcomes *Outcomes
	// Control is the measuring host's control poller's view (control.go);
	// nil for a folder without control.jsonl.
	Control *Control
	// ControlError says why the control samples could not be read; ""
	// when they were (or there are none).
	ControlError string
}

// accumulator collects points per poller.
type accumulator struct {
	pollers map[string]*pollerData
	details []detail
}

type pollerData struct {
	name, backend string
	conn          results.ConnectionType
	points        []point
	summary       PollerSummary
	protos        map[string]int64
}

func newAccumulator() *accumulator { return &accumulator{pollers: map[string]*pollerData{}} }

// poller returns the data of the poller named by the sample's backend,
// connection, protocol and vantage (origin's newer names keep HTTP/2 and
// other vantage points apart from the legacy HTTP/1 external-LB ones).
func (a *accumulator) poller(s *results.Sample) *pollerData {
	name := s.Name()
	pd := a.pollers[name]
	if pd == nil {
		pd = &pollerData{name: name, backend: s.Backend, conn: s.Connection, protos: map[string]int64{},
			summary: PollerSummary{Name: name, Backend: s.Backend, Connection: s.Connection, Classes: map[results.ErrorClass]int64{},
				HTTP2: s.HTTP2, Vantage: s.Vantage, Target: s.Target}}
		a.pollers[name] = pd
	}
	return pd
}

func (a *accumulator) add(s *results.Sample) {
	pd := a.poller(s)
	start := s.Start.UnixNano()
	p := point{seq: s.Seq, start: start, end: start + int64(s.Duration), class: indexOfClass(s.ErrorClass), detail: -1}
	st := &pd.summary
	st.Samples++
	if s.Protocol != "" {
		pd.protos[s.Protocol]++
	}
	if s.ErrorClass == results.ClassAborted {
		st.Aborted++
		noteAborted(st, s.Start, s.Duration)
	} else if s.ErrorClass != results.ClassNone {
		st.Failures++
		st.Classes[s.ErrorClass]++
		if s.StatusCode == 401 || s.StatusCode == 403 {
			st.Unauthorized++
		}
		p.detail = int32(len(a.details))
		a.details = append(a.details, detail{message: s.Error, auditID: s.AuditID, status: s.StatusCode, retryAfter: s.RetryAfter})
	}
	pd.points = append(pd.points, p)
}

// merge folds b into a (used by the parallel loader).
func (a *accumulator) merge(b *accumulator) {
	offset := int32(len(a.details))
	a.details = append(a.details, b.details...)
	for _, bp := range b.pollers {
		bs := &bp.summary
		pd := a.poller(&results.Sample{Backend: bp.backend, Connection: bp.conn, HTTP2: bs.HTTP2, Vantage: bs.Vantage, Target: bs.Target})
		for _, p := range bp.points {
			if p.detail >= 0 {
				p.detail += offset
			}
			pd.points = append(pd.points, p)
		}
		st := &pd.summary
		st.Samples += bs.Samples
		st.Failures += bs.Failures
		st.Aborted += bs.Aborted
		if bs.Aborted > 0 {
			noteAborted(st, bs.AbortedSince, bs.AbortedLongest)
		}
		st.Unauthorized += bs.Unauthorized
		for c, n := range bs.Classes {
			st.Classes[c] += n
		}
		for p, n := range bp.protos {
			pd.protos[p] += n
		}
	}
}

// noteAborted folds one request unanswered at stop (or a summary of
// several) into st's oldest start and longest wait.
func noteAborted(st *PollerSummary, start time.Time, waited time.Duration) {
	if st.AbortedSince.IsZero() || start.Before(st.AbortedSince) {
		st.AbortedSince = start
	}
	if waited > st.AbortedLongest {
		st.AbortedLongest = waited
	}
}

// dedupe drops points whose seq repeats an earlier one's (pts sorted by
// seq) and takes them out of st's counts: a line written twice is one
// request.
func dedupe(st *PollerSummary, pts []point, details []detail) []point {
	kept := pts[:0]
	for i := range pts {
		p := pts[i]
		if len(kept) > 0 && kept[len(kept)-1].seq == p.seq {
			st.Duplicates++
			st.Samples--
			switch {
			case p.class == abortedIdx:
				st.Aborted--
			case p.class != 0:
				st.Failures--
				if c := classByIndex[p.class]; st.Classes[c] > 0 {
					st.Classes[c]--
					if st.Classes[c] == 0 {
						delete(st.Classes, c)
					}
				}
				if p.detail >= 0 {
					if code := details[p.detail].status; code == 401 || code == 403 {
						st.Unauthorized--
					}
				}
			}
			continue
		}
		kept = append(kept, p)
	}
	return kept
}

func (a *accumulator) finish() *Analysis {
	out := &Analysis{}
	var from, to int64
	for _, pd := range a.pollers {
		sort.SliceStable(pd.points, func(i, j int) bool { return pd.points[i].seq < pd.points[j].seq })
		st := pd.summary
		pd.points = dedupe(&st, pd.points, a.details)
		out.Duplicates += st.Duplicates
		if n := len(pd.points); n > 0 {
			first, last := pd.points[0], pd.points[n-1]
			st.First, st.Last = time.Unix(0, first.start).UTC(), time.Unix(0, last.start).UTC()
			if span := int64(last.seq-first.seq) + 1; span > int64(n) {
				st.Skipped = span - int64(n)
			}
			for _, p := range pd.points {
				if from == 0 || p.start < from {
					from = p.start
				}
				if p.end > to {
					to = p.end
				}
			}
		}
		var best int64
		for proto, n := range pd.protos {
			if n > best || (n == best && proto < st.Protocol) {
				st.Protocol, best = proto, n
			}
		}
		out.Origin = append(out.Origin, originIntervals(&st, pd.points, a.details)...)
		ivs := intervalsOf(pd.name, pd.backend, pd.conn, pd.points, a.details)
		for i := range ivs {
			ivs[i].HTTP2, ivs[i].Vantage, ivs[i].Target = st.HTTP2, st.Vantage, st.Target
		}
		for i := range ivs {
			d := ivs[i].Duration()
			if ivs[i].SamplerOutage {
				st.SamplerOutage += d
				continue
			}
			st.Disrupted += d
			st.Intervals++
			if d > st.Longest {
				st.Longest = d
			}
		}
		out.Intervals = append(out.Intervals, ivs...)
		out.Pollers = append(out.Pollers, st)
		out.Samples += st.Samples
	}
	if from != 0 {
		out.From, out.To = time.Unix(0, from).UTC(), time.Unix(0, to).UTC()
	}
	sortIntervals(out.Intervals)
	sort.Slice(out.Pollers, func(i, j int) bool { return pollerLess(out.Pollers[i], out.Pollers[j]) })
	out.Outcomes = gradeOutcomes(a, out.Pollers)
	return out
}

func backendRank(name string) int { return results.BackendRank(name) }

func pollerLess(a, b PollerSummary) bool {
	ra, rb := backendRank(a.Backend), backendRank(b.Backend)
	if ra != rb {
		return ra < rb
	}
	if a.Backend != b.Backend {
		return a.Backend < b.Backend
	}
	// The legacy name (external load balancer, HTTP/1.1) first, then each
	// other vantage and protocol, new before reused within each.
	la, lb := a.Name == results.PollerName(a.Backend, a.Connection), b.Name == results.PollerName(b.Backend, b.Connection)
	if la != lb {
		return la
	}
	if sa, sb := seriesOf(a), seriesOf(b); sa != sb {
		return sa < sb
	}
	return a.Connection < b.Connection // "new" < "reused"
}

// seriesOf is a poller's name without its connection type.
func seriesOf(p PollerSummary) string {
	return strings.TrimSuffix(p.Name, "-"+string(p.Connection)+"-connections")
}

// Analyze derives intervals and per-poller figures from samples given in
// any order. It is a pure function.
func Analyze(samples []results.Sample) *Analysis {
	acc := newAccumulator()
	for i := range samples {
		acc.add(&samples[i])
	}
	return acc.finish()
}

// ErrNoSamples is wrapped by LoadSamples' error when the file holds no
// sample at all.
var ErrNoSamples = errors.New("no samples")

// batchBytes bounds the bytes of lines one decoding batch holds, so that
// memory does not grow with the length of the lines (up to
// results.MaxLineBytes each) times the lines in a batch.
const batchBytes = 4 << 20

// lineError is a decoding error and the line it happened on; of several,
// the first line's is reported.
type lineError struct {
	line int64
	err  error
}

func (e *lineError) earlier(line int64, err error) *lineError {
	if err == nil || (e != nil && e.line <= line) {
		return e
	}
	return &lineError{line, err}
}

// LoadSamples reads samples.jsonl at path and analyses it. Lines are decoded
// on all cores; only what the interval rule needs is kept per sample (about
// 40 bytes), plus the text of failed samples (bounded per sample by the
// decoder). A truncated last line is skipped and reported in
// Analysis.TruncatedLast. Of several bad lines, the first is reported.
// A sample whose poller and seq were already seen is counted once
// (Analysis.Duplicates).
func LoadSamples(path string) (*Analysis, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no samples: %s does not exist", path)
	}
	workers := runtime.GOMAXPROCS(0)
	type batch struct {
		buf   []byte
		lines [][2]int
		nos   []int64 // line number in the file of each line
	}
	const batchLines = 4096
	batches := make(chan *batch, workers*2)
	type result struct {
		acc *accumulator
		err *lineError
	}
	resultsCh := make(chan result, workers)
	pool := sync.Pool{New: func() any { return &batch{} }}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc := newAccumulator()
			var firstErr *lineError
			var s results.Sample
			for b := range batches {
				if firstErr == nil {
					for i, l := range b.lines {
						if err := s.UnmarshalJSON(b.buf[l[0]:l[1]]); err != nil {
							firstErr = firstErr.earlier(b.nos[i], fmt.Errorf("%s line %d: %v", path, b.nos[i], err))
							break
						}
						acc.add(&s)
					}
				}
				b.buf, b.lines, b.nos = b.buf[:0], b.lines[:0], b.nos[:0]
				if cap(b.buf) > 2*batchBytes {
					b.buf = nil // a batch that held a very long line does not keep its buffer
				}
				pool.Put(b)
			}
			resultsCh <- result{acc, firstErr}
		}()
	}
	cur := pool.Get().(*batch)
	var pending []byte // the last line seen, decoded on the reader side only if it is the final one
	var pendingNo int64
	flush := func() {
		if len(cur.lines) > 0 {
			batches <- cur
			cur = pool.Get().(*batch)
		}
	}
	addLine := func(line []byte, no int64) {
		start := len(cur.buf)
		cur.buf = append(cur.buf, line...)
		cur.lines = append(cur.lines, [2]int{start, len(cur.buf)})
		cur.nos = append(cur.nos, no)
		if len(cur.lines) >= batchLines || len(cur.buf) >= batchBytes {
			flush()
		}
	}
	havePending := false
	st, err := results.ReadJSONLNumbered(path, func(no int64, line []byte) error {
		if havePending {
			addLine(pending, pendingNo)
		}
		pending = append(pending[:0], line...)
		pendingNo = no
		havePending = true
		return nil
	})
	var bad *lineError
	if err != nil {
		// A read error (a line too long, an unreadable file) comes with
		// its own line; it is the first problem unless a batch failed
		// earlier, which the merge below finds.
		bad = &lineError{line: math.MaxInt64, err: err}
	}
	// The last line is decoded here so a cut-off one can be told apart from
	// corruption in the middle.
	var truncated bool
	var last *accumulator
	if err == nil && havePending {
		var s results.Sample
		if derr := s.UnmarshalJSON(pending); derr != nil {
			if st.Bytes > 0 && !endsWithNewline(path) {
				truncated = true
			} else {
				bad = bad.earlier(pendingNo, fmt.Errorf("%s line %d: %v", path, pendingNo, derr))
			}
		} else {
			last = newAccumulator()
			last.add(&s)
		}
	}
	flush()
	close(batches)
	wg.Wait()
	close(resultsCh)
	total := newAccumulator()
	for r := range resultsCh {
		if r.err != nil {
			bad = bad.earlier(r.err.line, r.err.err)
		}
		total.merge(r.acc)
	}
	if bad != nil {
		return nil, bad.err
	}
	if last != nil {
		total.merge(last)
	}
	a := total.finish()
	a.TruncatedLast = truncated || st.TruncatedLast
	// attribution.jsonl sits next to samples.jsonl (repro attribute).
	if a.Attribution, err = LoadAttribution(filepath.Join(filepath.Dir(path), results.AttributionFile)); err != nil {
		return nil, err
	}
	// A signals file that cannot be read costs only the discount.
	windows, werr := LoadUnreliableWindows(filepath.Dir(path))
	a.Outcomes.Discount(windows)
	if werr != nil && a.Outcomes != nil {
		a.Outcomes.WindowsError = werr.Error()
	}
	// Nor does an unreadable control file cost more than its verdict.
	if a.Control, err = LoadControl(filepath.Dir(path)); err != nil {
		a.ControlError = err.Error()
	}
	if a.Samples == 0 {
		what := "is empty"
		if st.Bytes > 0 {
			what = "holds no sample"
		}
		if a.TruncatedLast {
			what = "holds only a cut-off line"
		}
		return a, fmt.Errorf("%w: %s %s", ErrNoSamples, path, what)
	}
	return a, nil
}

func endsWithNewline(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return false
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, st.Size()-1); err != nil {
		return false
	}
	return b[0] == '\n'
}

// AddUnsampledPollers gives every poller run.json names a row, with zero
// samples when none of its requests was recorded (a run shorter than one
// interval ends before the later pollers' first ticks, which are spread
// over the first interval). Pollers come from the "pollers" setting, or,
// for runs recorded before it, from "backends" on the default target.
func (a *Analysis) AddUnsampledPollers(run *results.Run) {
	if run == nil {
		return
	}
	backends := run.Settings.Backends
	http2 := run.Settings.HTTP2
	have := map[string]bool{}
	defaultTarget := true
	for _, p := range a.Pollers {
		have[p.Name] = true
		if p.Vantage != "" || p.Target != "" {
			defaultTarget = false
		}
	}
	type want struct {
		name, backend string
		conn          results.ConnectionType
	}
	var wants []want
	if names := run.Settings.Pollers; len(names) > 0 {
		for _, n := range names {
			w := want{name: n}
			for _, b := range backends {
				for _, ct := range results.ConnectionTypes {
					if strings.HasPrefix(n, b+"-") && strings.HasSuffix(n, "-"+string(ct)+"-connections") && len(b) > len(w.backend) {
						w.backend, w.conn = b, ct
					}
				}
			}
			wants = append(wants, w)
		}
	} else if defaultTarget {
		for _, b := range backends {
			for _, ct := range results.ConnectionTypes {
				wants = append(wants, want{results.SamplerName(b, http2, "", "", ct), b, ct})
			}
		}
	}
	added := false
	for _, w := range wants {
		if have[w.name] {
			continue
		}
		have[w.name] = true
		a.Pollers = append(a.Pollers, PollerSummary{Name: w.name, Backend: w.backend, Connection: w.conn,
			HTTP2: http2, Classes: map[results.ErrorClass]int64{}})
		a.Unsampled++
		added = true
	}
	if added {
		sort.SliceStable(a.Pollers, func(i, j int) bool { return pollerLess(a.Pollers[i], a.Pollers[j]) })
	}
}

// OverLimit lists the pollers whose total disruption exceeds limit (a limit
// of zero or less disables the check).
func OverLimit(a *Analysis, limit time.Duration) []PollerSummary {
	if limit <= 0 {
		return nil
	}
	var over []PollerSummary
	for _, p := range a.Pollers {
		if p.Disrupted > limit {
			over = append(over, p)
		}
	}
	return over
}
