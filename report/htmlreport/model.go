package htmlreport

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/repro-tools/repro/results"
)

// Run is one results folder as the page needs it. Package report/write fills
// it from report's analysis (see write.Rebuild), so this package does not
// depend on report and write can call it.
type Run struct {
	// Label names the run on a comparison page (e.g. the folder name).
	Label string
	// Info is run.json, nil when absent.
	Info *results.Run
	// ForEachSample calls fn for every sample of samples.jsonl, in any
	// order. The sample is only valid during the call.
	ForEachSample func(fn func(*results.Sample)) error
	// Pollers are the summary table rows, in display order; they also give
	// the order of the sample lanes.
	Pollers []Poller
	// Intervals are the disruption intervals and sampler outages.
	Intervals []Interval
	// Stages, Iterations and Events are the rollout timeline.
	Stages     []Stage
	Iterations []Iteration
	Events     []results.Event
	// ServedBy names the apiserver (node) the lab load balancer sent the
	// connection from localAddr carrying a request from start to end to;
	// nil or "" when unknown.
	ServedBy func(localAddr string, start, end time.Time) string
	// Verdict says where a failed request went (attribution.jsonl: its
	// verdict, node and detail), "" when not attributed; nil without
	// attribution.
	Verdict func(auditID string) string
	// TruncatedLast says samples.jsonl ended in a cut-off line.
	TruncatedLast bool
	// Signals are the servers' own metrics (signals.jsonl), drawn under
	// the lanes; nil without.
	Signals []results.Signal
	// Sections are preformatted text sections shown below the gaps (the
	// diagnosis); only a single run's page shows them.
	Sections []Section
	// MeasuringHost is the control poller's one-line verdict on the
	// measuring host (report/write.MeasuringHost); "" when none ran.
	MeasuringHost string
}

// Section is a titled block of preformatted text.
type Section struct {
	Title, Text string
}

// Poller is one row of the summary table.
type Poller struct {
	Name, Backend, Connection string
	Samples, Failures         int64
	Skipped, Aborted          int64
	Disrupted, Longest        time.Duration
	Intervals                 int
	SamplerOutage             time.Duration
	Protocol                  string
	// Classes counts failed samples per error class.
	Classes map[string]int64
}

// Interval is one disruption interval (or sampler outage) of one poller.
type Interval struct {
	Name          string
	From, To      time.Time
	Class         string
	SamplerOutage bool
	Open          bool
	Samples       int
	Message       string
	AuditID       string
	// Where says where the interval sits in the rollout ("" without one).
	Where string
}

// Stage is a shaded stretch of the run (baseline, rollout, cool-down).
type Stage struct {
	Name      string
	Iteration int
	From, To  time.Time
}

// Iteration is one triggered rollout and its nodes' windows.
type Iteration struct {
	N                 int
	Trigger, Complete time.Time
	Revision          int32
	Nodes             []NodeWindow
}

// NodeWindow is when a node went through its rollout phases; zero times
// were not reached.
type NodeWindow struct {
	Node                         string
	Terminating, Starting, Ready time.Time
}

// Page is the data embedded in report.html: one run, or several aligned on
// their trigger for a comparison. Times are milliseconds from each run's
// zero (Run.T0).
type Page struct {
	Title   string    `json:"title"`
	Compare bool      `json:"compare"`
	Classes []string  `json:"classes"`
	Runs    []RunData `json:"runs"`
	// Sections are rendered as HTML, not embedded in the data.
	Sections []Section `json:"-"`
}

// RunData is what the page draws of one run.
type RunData struct {
	Label string `json:"label"`
	// T0 is the wall-clock time of x = 0, in Unix milliseconds: the first
	// sample's start on a run page, the first trigger on a comparison.
	T0 int64 `json:"t0"`
	// From and To bound the run in ms from T0.
	From  float64      `json:"from"`
	To    float64      `json:"to"`
	Info  []KV         `json:"info"`
	Rows  []SummaryRow `json:"rows"`
	Lanes []Lane       `json:"lanes"`
	Nodes []NodeLane   `json:"nodes"`
	// Servers names the apiservers samples were served by (lane column N).
	Servers []string `json:"servers"`
	Stages  []Band   `json:"stages"`
	Marks   []Mark   `json:"marks"`
	Errors  []string `json:"errors"`
	Notes   []string `json:"notes,omitempty"`
	// Metrics are the server-side lanes (metrics.go).
	Metrics []MetricLane `json:"metrics,omitempty"`
}

// KV is one line of the run's description.
type KV struct {
	K string `json:"k"`
	V string `json:"v"`
}

// SummaryRow is a poller's figures as shown.
type SummaryRow struct {
	Name        string  `json:"name"`
	Samples     int64   `json:"samples"`
	Failures    int64   `json:"failures"`
	DisruptedMs float64 `json:"disruptedMs"`
	Intervals   int     `json:"intervals"`
	LongestMs   float64 `json:"longestMs"`
	Skipped     int64   `json:"skipped"`
	Classes     string  `json:"classes"`
}

// Lane is one backend-connection: its samples in columns (index i is one
// sample, in sequence order) and its disruption bars.
type Lane struct {
	Name       string `json:"name"`
	Backend    string `json:"backend"`
	Connection string `json:"connection"`
	// T is each sample's start in ms from T0, Seq its tick index. Both are
	// delta-encoded in the page (see encode).
	T   []int64 `json:"t"`
	Seq []int64 `json:"seq"`
	// D is the duration, DNS, Conn, TLS and FB the offsets at which DNS,
	// connect, TLS and the first response byte completed, all in tenths of
	// a millisecond; 0 means the phase was not reached.
	D    []int32 `json:"d"`
	DNS  []int32 `json:"dns"`
	Conn []int32 `json:"conn"`
	TLS  []int32 `json:"tls"`
	FB   []int32 `json:"fb"`
	// C is the result: 0 success, else 1 + index into Page.Classes.
	C []int8 `json:"c"`
	// S is the HTTP status, 0 for 200 and -1 for none.
	S []int16 `json:"s"`
	// R is 1 when the request reused a connection.
	R []int8 `json:"r"`
	// N is 1 + the index into RunData.Servers of the apiserver that served
	// the sample, 0 when unknown.
	N []int16 `json:"n"`
	// Err maps sample index to an index into RunData.Errors (failures only).
	Err map[int]int `json:"err"`
	// Audit maps sample index to its Audit-ID. Every sample has one in small
	// runs; in large runs only failed and slow samples and those next to a
	// disruption keep theirs (the rest are in samples.jsonl by seq).
	Audit map[int]string `json:"audit"`
	// Verdict maps a failed sample's index to where it went (repro
	// attribute), absent without attribution.
	Verdict map[int]string `json:"verdict,omitempty"`
	// AllAudit says Audit holds every sample's ID.
	AllAudit bool `json:"allAudit"`
	// Bars are the poller's disruption intervals.
	Bars []Bar `json:"bars"`
	// Levels are downsampled views for wide zoom levels, finest first.
	Levels []Level `json:"levels"`
}

// Bar is a disruption interval drawn over a lane, labelled with its length.
type Bar struct {
	From    float64 `json:"from"`
	To      float64 `json:"to"`
	Ms      float64 `json:"ms"`
	Class   string  `json:"class"`
	Outage  bool    `json:"outage,omitempty"`
	Open    bool    `json:"open,omitempty"`
	Samples int     `json:"samples"`
	Message string  `json:"message,omitempty"`
	AuditID string  `json:"auditId,omitempty"`
	Where   string  `json:"where,omitempty"`
	// ServedBy counts the interval's failed samples per apiserver (lab).
	ServedBy string `json:"servedBy,omitempty"`
}

// Level is a downsampled view of a lane: the indexes of the samples drawn
// when one bucket of BucketMs is about a pixel wide. It always holds every
// failed sample, its neighbours and every sample inside or next to a bar.
type Level struct {
	BucketMs int64   `json:"bucketMs"`
	Idx      []int64 `json:"idx"`
}

// NodeLane is one node's rollout across all iterations.
type NodeLane struct {
	Node   string     `json:"node"`
	Spans  []NodeSpan `json:"spans"`
	Events []NodeMark `json:"events"`
}

// NodeSpan is one phase of a node: terminating (serving while shutting
// down), stopped (stopped serving, process exiting), starting (new pod not
// ready yet).
type NodeSpan struct {
	Phase     string  `json:"phase"`
	From      float64 `json:"from"`
	To        float64 `json:"to"`
	Iteration int     `json:"iteration"`
	Revision  int32   `json:"revision"`
}

// NodeMark is a timeline event of one node (termination events, pod
// events, revision reached).
type NodeMark struct {
	T       float64 `json:"t"`
	Label   string  `json:"label"`
	Message string  `json:"message,omitempty"`
	Kind    string  `json:"kind"`
}

// Band is a shaded stage.
type Band struct {
	Name string  `json:"name"`
	From float64 `json:"from"`
	To   float64 `json:"to"`
}

// Mark is a run-wide instant (trigger, rollout complete).
type Mark struct {
	T     float64 `json:"t"`
	Label string  `json:"label"`
}

// Tunables of the page data.
const (
	// fullAuditLimit is the sample count up to which every Audit-ID is kept.
	fullAuditLimit = 60000
	// slowMs is the duration from which a successful sample keeps its
	// Audit-ID in a large run.
	slowMs = 1000
	// neighbours is how many samples on either side of a failure keep their
	// detail in every downsampled level.
	neighbours = 1
	// levelMinSamples is the lane size from which downsampled levels are
	// built.
	levelMinSamples = 3000
	// levelMinBuckets stops coarsening once a level would have fewer
	// buckets than this.
	levelMinBuckets = 150
)

// stoppedServing is the event reason after which an apiserver no longer
// serves (its listener is closed).
const stoppedServing = "TerminationStoppedServing"

// msOf converts a time to ms from t0 (Unix ms) with µs precision.
func msOf(t time.Time, t0 int64) float64 {
	return math.Round(float64(t.UnixMicro()-t0*1000)) / 1000
}

func tenths(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	v := int32((d + 50*time.Microsecond) / (100 * time.Microsecond))
	if v == 0 {
		v = 1
	}
	return v
}

// BuildRun turns one results folder's content into the page's run data,
// with x = 0 at t0 (the zero time means the first sample's start).
func BuildRun(in *Run, classes []string, t0 time.Time) (*RunData, error) {
	classIdx := map[string]int8{}
	for i, c := range classes {
		classIdx[c] = int8(i + 1)
	}
	lanes := map[string]*Lane{}
	order := []string{}
	for _, p := range in.Pollers {
		lanes[p.Name] = &Lane{Name: p.Name, Backend: p.Backend, Connection: p.Connection, Err: map[int]int{}, Audit: map[int]string{}}
		order = append(order, p.Name)
	}
	// First pass: collect samples per lane (absolute µs, sorted afterwards).
	type raw struct {
		start                 int64 // unix µs
		seq                   int64
		d, dns, conn, tls, fb int32
		c                     int8
		s                     int16
		r                     int8
		n                     int16
		err                   int
		audit                 string
		verdict               string
	}
	rows := map[string][]raw{}
	errIdx := map[string]int{}
	var errors []string
	serverIdx := map[string]int16{}
	var servers []string
	var first int64 = math.MaxInt64
	var last int64
	if in.ForEachSample == nil {
		return nil, fmt.Errorf("no samples")
	}
	err := in.ForEachSample(func(s *results.Sample) {
		name := s.Name()
		if lanes[name] == nil {
			lanes[name] = &Lane{Name: name, Backend: s.Backend, Connection: string(s.Connection), Err: map[int]int{}, Audit: map[int]string{}}
			order = append(order, name)
		}
		r := raw{start: s.Start.UnixMicro(), seq: int64(s.Seq), d: tenths(s.Duration),
			dns: tenths(s.Phases.DNSDone), conn: tenths(s.Phases.ConnectDone), tls: tenths(s.Phases.TLSDone), fb: tenths(s.Phases.FirstByte),
			s: -1, err: -1, audit: s.AuditID}
		if r.d == 0 {
			r.d = 1
		}
		if s.StatusCode == 200 {
			r.s = 0
		} else if s.StatusCode != 0 {
			r.s = int16(s.StatusCode)
		}
		if s.Reused {
			r.r = 1
		}
		if s.ErrorClass != results.ClassNone {
			c, ok := classIdx[string(s.ErrorClass)]
			if !ok {
				c = classIdx[string(results.ClassOther)]
			}
			r.c = c
			msg := s.Error
			if msg == "" {
				msg = string(s.ErrorClass)
			}
			i, ok := errIdx[msg]
			if !ok {
				i = len(errors)
				errors = append(errors, msg)
				errIdx[msg] = i
			}
			r.err = i
			if in.Verdict != nil && s.AuditID != "" {
				r.verdict = in.Verdict(s.AuditID)
			}
		}
		if in.ServedBy != nil && s.LocalAddr != "" {
			if srv := in.ServedBy(s.LocalAddr, s.Start, s.End()); srv != "" {
				i, ok := serverIdx[srv]
				if !ok && len(servers) < 1000 {
					servers = append(servers, srv)
					i = int16(len(servers))
					serverIdx[srv] = i
				}
				r.n = i
			}
		}
		if r.start < first {
			first = r.start
		}
		if e := r.start + int64(s.Duration/time.Microsecond); e > last {
			last = e
		}
		rows[name] = append(rows[name], r)
	})
	if err != nil {
		return nil, err
	}
	total := 0
	for _, rs := range rows {
		total += len(rs)
	}
	if total == 0 {
		return nil, fmt.Errorf("no samples")
	}
	var zero int64
	if t0.IsZero() {
		zero = first / 1000
	} else {
		zero = t0.UnixMilli()
	}
	out := &RunData{Label: in.Label, T0: zero, Servers: servers, Errors: errors, Stages: []Band{}, Marks: []Mark{}, Rows: []SummaryRow{},
		From: float64(first)/1000 - float64(zero), To: float64(last)/1000 - float64(zero)}
	if out.Servers == nil {
		out.Servers = []string{}
	}
	if out.Errors == nil {
		out.Errors = []string{}
	}
	if in.TruncatedLast {
		out.Notes = append(out.Notes, "the last line of samples.jsonl was cut short and skipped")
	}
	out.Info = describe(in)
	out.Metrics = metricLanes(in.Signals, zero)

	barsOf := map[string][]Bar{}
	for _, iv := range in.Intervals {
		b := Bar{From: msOf(iv.From, zero), To: msOf(iv.To, zero), Class: iv.Class, Outage: iv.SamplerOutage,
			Open: iv.Open, Samples: iv.Samples, Message: iv.Message, AuditID: iv.AuditID, Where: iv.Where}
		b.Ms = math.Round(float64(iv.To.Sub(iv.From).Microseconds())) / 1000
		barsOf[iv.Name] = append(barsOf[iv.Name], b)
	}
	allAudit := total <= fullAuditLimit
	for _, name := range order {
		l := lanes[name]
		rs := rows[name]
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].seq != rs[j].seq {
				return rs[i].seq < rs[j].seq
			}
			return rs[i].start < rs[j].start
		})
		n := len(rs)
		l.T, l.Seq = make([]int64, n), make([]int64, n)
		l.D, l.DNS, l.Conn, l.TLS, l.FB = make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
		l.C, l.S, l.R, l.N = make([]int8, n), make([]int16, n), make([]int8, n), make([]int16, n)
		l.AllAudit = allAudit
		for i, r := range rs {
			l.T[i] = int64(math.Round(float64(r.start)/1000)) - zero
			l.Seq[i] = r.seq
			l.D[i], l.DNS[i], l.Conn[i], l.TLS[i], l.FB[i] = r.d, r.dns, r.conn, r.tls, r.fb
			l.C[i], l.S[i], l.R[i], l.N[i] = r.c, r.s, r.r, r.n
			if r.err >= 0 {
				l.Err[i] = r.err
			}
			if r.verdict != "" {
				if l.Verdict == nil {
					l.Verdict = map[int]string{}
				}
				l.Verdict[i] = r.verdict
			}
		}
		l.Bars = barsOf[name]
		if l.Bars == nil {
			l.Bars = []Bar{}
		}
		keep := notable(l)
		for i, r := range rs {
			if allAudit || keep[i] || r.d >= slowMs*10 {
				l.Audit[i] = r.audit
			}
		}
		// Which apiservers the failed samples of each bar went to.
		for bi := range l.Bars {
			b := &l.Bars[bi]
			counts := map[string]int{}
			lo := sort.Search(n, func(i int) bool { return float64(l.T[i]) >= math.Floor(b.From) })
			for i := lo; i < n && float64(l.T[i]) < b.To; i++ {
				if l.C[i] != 0 && l.N[i] > 0 {
					counts[servers[l.N[i]-1]]++
				}
			}
			var parts []string
			for s, c := range counts {
				parts = append(parts, fmt.Sprintf("%s (%d)", s, c))
			}
			sort.Strings(parts)
			b.ServedBy = strings.Join(parts, ", ")
		}
		l.Levels = Levels(l)
		out.Lanes = append(out.Lanes, *l)
	}

	for _, p := range in.Pollers {
		row := SummaryRow{Name: p.Name, Samples: p.Samples, Failures: p.Failures, Intervals: p.Intervals, Skipped: p.Skipped,
			DisruptedMs: durMs(p.Disrupted), LongestMs: durMs(p.Longest)}
		var cls []string
		for _, c := range classes {
			if n := p.Classes[c]; n > 0 {
				cls = append(cls, fmt.Sprintf("%s %d", c, n))
			}
		}
		row.Classes = strings.Join(cls, ", ")
		out.Rows = append(out.Rows, row)
	}

	for _, s := range in.Stages {
		to := s.To
		if to.IsZero() {
			to = time.UnixMicro(last)
		}
		name := s.Name
		if s.Iteration > 0 && s.Name != results.PhaseBaseline {
			name = fmt.Sprintf("%s %d", s.Name, s.Iteration)
		}
		out.Stages = append(out.Stages, Band{Name: name, From: msOf(s.From, zero), To: msOf(to, zero)})
	}
	for _, it := range in.Iterations {
		out.Marks = append(out.Marks, Mark{T: msOf(it.Trigger, zero), Label: fmt.Sprintf("trigger %d", it.N)})
		if !it.Complete.IsZero() {
			out.Marks = append(out.Marks, Mark{T: msOf(it.Complete, zero), Label: fmt.Sprintf("rollout %d complete (revision %d)", it.N, it.Revision)})
		}
	}
	out.Nodes = nodeLanes(in, zero)
	return out, nil
}

func durMs(d time.Duration) float64 { return math.Round(float64(d.Microseconds())) / 1000 }

// nodeLanes builds one lane per node: its phases in every iteration and the
// events recorded for it.
func nodeLanes(in *Run, zero int64) []NodeLane {
	idx := map[string]int{}
	var out []NodeLane
	lane := func(node string) *NodeLane {
		i, ok := idx[node]
		if !ok {
			i = len(out)
			idx[node] = i
			out = append(out, NodeLane{Node: node, Spans: []NodeSpan{}, Events: []NodeMark{}})
		}
		return &out[i]
	}
	for _, it := range in.Iterations {
		for _, w := range it.Nodes {
			l := lane(w.Node)
			// The stop of serving, when reported, splits terminating.
			var stopped time.Time
			end := firstNonZero(w.Starting, w.Ready)
			for _, e := range in.Events {
				if e.Node == w.Node && e.Kind == results.KindClusterEvent && e.Reason == stoppedServing &&
					!w.Terminating.IsZero() && !e.Time.Before(w.Terminating) && (end.IsZero() || !e.Time.After(end)) {
					stopped = e.Time
					break
				}
			}
			add := func(phase string, from, to time.Time) {
				if from.IsZero() {
					return
				}
				if to.IsZero() {
					to = from
				}
				l.Spans = append(l.Spans, NodeSpan{Phase: phase, From: msOf(from, zero), To: msOf(to, zero), Iteration: it.N, Revision: it.Revision})
			}
			if !stopped.IsZero() {
				add("terminating", w.Terminating, stopped)
				add("stopped", stopped, end)
			} else {
				add("terminating", w.Terminating, end)
			}
			add("starting", w.Starting, w.Ready)
			if !w.Ready.IsZero() {
				add("ready", w.Ready, w.Ready)
			}
		}
	}
	for _, e := range in.Events {
		if e.Node == "" || e.Kind == results.KindPhase {
			continue
		}
		if _, ok := idx[e.Node]; !ok && e.Kind != results.KindClusterEvent {
			continue
		}
		label := string(e.Kind)
		if e.Kind == results.KindClusterEvent && e.Reason != "" {
			label = e.Reason
		} else if e.Revision != 0 {
			label = fmt.Sprintf("%s (revision %d)", e.Kind, e.Revision)
		}
		l := lane(e.Node)
		l.Events = append(l.Events, NodeMark{T: msOf(e.Time, zero), Label: label, Message: e.Message, Kind: string(e.Kind)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	if out == nil {
		out = []NodeLane{}
	}
	return out
}

func firstNonZero(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// notable marks the samples whose detail is always kept: failures, their
// neighbours, and every sample inside or right next to a bar.
func notable(l *Lane) []bool {
	n := len(l.T)
	keep := make([]bool, n)
	for i := 0; i < n; i++ {
		if l.C[i] == 0 {
			continue
		}
		for j := max(0, i-neighbours); j <= min(n-1, i+neighbours); j++ {
			keep[j] = true
		}
	}
	for _, b := range l.Bars {
		lo := sort.Search(n, func(i int) bool { return float64(l.T[i]) >= math.Floor(b.From) })
		hi := sort.Search(n, func(i int) bool { return float64(l.T[i]) > math.Ceil(b.To) })
		for j := max(0, lo-neighbours); j <= min(n-1, hi+neighbours-1); j++ {
			keep[j] = true
		}
	}
	return keep
}

// Levels builds the downsampled views of a lane: for buckets of 1 s, 4 s,
// 16 s, ... it keeps per bucket the first sample and the fastest and
// slowest, plus every notable sample (failures, their neighbours, samples
// in or next to a disruption bar). Lanes under levelMinSamples samples
// need none.
func Levels(l *Lane) []Level {
	n := len(l.T)
	if n < levelMinSamples {
		return []Level{}
	}
	keep := notable(l)
	span := l.T[n-1] - l.T[0] + 1
	var out []Level
	for bucket := int64(1000); span/bucket >= levelMinBuckets; bucket *= 4 {
		if int64(n)/(span/bucket+1) < 3 {
			continue // no coarser than the samples themselves
		}
		var idx []int64
		b0 := int64(math.MinInt64)
		var firstI, minI, maxI int
		flush := func() {
			if b0 == math.MinInt64 {
				return
			}
			idx = append(idx, int64(firstI), int64(minI), int64(maxI))
		}
		for i := 0; i < n; i++ {
			b := floorDiv(l.T[i], bucket)
			if b != b0 {
				flush()
				b0, firstI, minI, maxI = b, i, i, i
			}
			if l.D[i] < l.D[minI] {
				minI = i
			}
			if l.D[i] > l.D[maxI] {
				maxI = i
			}
			if keep[i] {
				idx = append(idx, int64(i))
			}
		}
		flush()
		sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
		uniq := idx[:0]
		for i, v := range idx {
			if i == 0 || v != idx[i-1] {
				uniq = append(uniq, v)
			}
		}
		out = append(out, Level{BucketMs: bucket, Idx: uniq})
	}
	if out == nil {
		out = []Level{}
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}

// describe lists what ran, from run.json.
func describe(in *Run) []KV {
	r := in.Info
	if r == nil {
		return []KV{{"run.json", "absent"}}
	}
	kv := []KV{{"command", "repro " + r.Command}}
	if sc := r.Extra.Scenario; sc != "" {
		kv = append(kv, KV{"scenario", sc})
	}
	if r.Server != "" {
		kv = append(kv, KV{"server", r.Server})
	}
	end := ""
	if r.End != nil {
		end = " to " + r.End.UTC().Format("15:04:05.000") + " (" + r.End.Sub(r.Start).Round(time.Millisecond).String() + ")"
	}
	kv = append(kv, KV{"run", r.Start.UTC().Format("2006-01-02 15:04:05.000") + end + " UTC, " + r.Status})
	if r.Error != "" {
		kv = append(kv, KV{"error", r.Error})
	}
	if c := r.Extra.Cluster; c != nil {
		for _, f := range []KV{{"OpenShift version", c.Version}, {"Kubernetes version", c.ServerVersion}, {"platform", c.Platform},
			{"topology", c.ControlPlaneTopology}, {"load balancer", c.LoadBalancerType}} {
			if f.V != "" {
				kv = append(kv, f)
			}
		}
	}
	if ci := r.Extra.CI; ci != nil {
		kv = append(kv, KV{"CI run", ci.String()})
	}
	if r.Extra.Iterations > 0 {
		kv = append(kv, KV{"iterations", fmt.Sprint(r.Extra.Iterations)})
	}
	if l := r.LabLine(); l != "" {
		kv = append(kv, KV{"lab", l})
	}
	if set := r.Settings.Pairs(); len(set) > 0 {
		kv = append(kv, KV{"settings", strings.Join(set, " ")})
	}
	if in.MeasuringHost != "" {
		kv = append(kv, KV{"measuring host", in.MeasuringHost})
	}
	kv = append(kv, KV{"args", strings.Join(r.Args, " ")})
	kv = append(kv, KV{"tool", r.Tool.Name + " " + r.Tool.Version + " (" + r.Tool.GoVersion + ")"})
	return kv
}
