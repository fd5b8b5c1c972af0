package attribute

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"
)

// Audit stages (k8s.io/apiserver pkg/apis/audit/v1 types.go).
const (
	StageRequestReceived  = "RequestReceived"
	StageResponseStarted  = "ResponseStarted"
	StageResponseComplete = "ResponseComplete"
	StagePanic            = "Panic"
)

// Event is the part of an audit.k8s.io/v1 Event that attribution reads
// (kubernetes staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go).
type Event struct {
	AuditID        string `json:"auditID"`
	Stage          string `json:"stage"`
	RequestURI     string `json:"requestURI"`
	Verb           string `json:"verb"`
	UserAgent      string `json:"userAgent"`
	ResponseStatus *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}

// Code is the response code the event logged, 0 if none.
func (e *Event) Code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// completes reports whether the stage is the end of the request: the
// handler returned (or panicked).
func (e *Event) completes() bool {
	return e.Stage == StageResponseComplete || e.Stage == StagePanic
}

// maxLine bounds the bytes kept of one log line. Metadata-level events (what
// OpenShift's profiles log for reads) are a few KiB; a line longer than this
// carries request or response bodies and is never one of repro's GETs.
const maxLine = 1 << 20

// ScanStats describes one scanned stream.
type ScanStats struct {
	// Bytes and Lines read; Matched lines carried a wanted Audit-ID.
	Bytes, Lines, Matched int64
	// Cut counts lines that did not decode: a file being written ends in a
	// partial line, a rotation or a crash may cut one short.
	Cut int64
	// Oversized counts lines longer than maxLine, skipped.
	Oversized int64
	// First and Last are the earliest and latest stage timestamps read.
	First, Last time.Time
	// Stopped says the scan stopped at a line past the until time.
	Stopped bool
}

var (
	auditIDKey = []byte(`"auditID":"`)
	stageTSKey = []byte(`"stageTimestamp":"`)
)

// Scan reads audit log lines from r and calls fn with every event whose
// Audit-ID is in want. Only matching lines are decoded; the others are
// searched for their ID and stage timestamp only. Scan stops after the first
// line logged later than until (zero: read to the end). skipFirst drops the
// first line, for a stream that starts mid-file.
func Scan(r io.Reader, want map[string]struct{}, until time.Time, skipFirst bool, fn func(Event)) (ScanStats, error) {
	var st ScanStats
	br := bufio.NewReaderSize(r, 256<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		st.Bytes += int64(len(line))
		oversized := false
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				st.Bytes += int64(len(line))
				if len(long)+len(line) <= maxLine {
					long = append(long, line...)
				} else {
					oversized = true
				}
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return st, err
		}
		if skipFirst {
			skipFirst = false
		} else if len(bytes.TrimSpace(line)) > 0 {
			st.Lines++
			switch {
			case oversized:
				st.Oversized++
			default:
				if stop := scanLine(line, want, until, &st, fn); stop {
					st.Stopped = true
					return st, nil
				}
			}
		}
		if err == io.EOF {
			return st, nil
		}
	}
}

// scanLine handles one complete line; it reports whether the scan is past
// until.
func scanLine(line []byte, want map[string]struct{}, until time.Time, st *ScanStats, fn func(Event)) bool {
	ts, ok := stageTimestamp(line)
	if !ok {
		st.Cut++
		return false
	}
	if st.First.IsZero() || ts.Before(st.First) {
		st.First = ts
	}
	if ts.After(st.Last) {
		st.Last = ts
	}
	if id := field(line, auditIDKey); id != nil {
		if _, hit := want[string(id)]; hit {
			var ev Event
			if err := json.Unmarshal(line, &ev); err != nil {
				st.Cut++
			} else {
				st.Matched++
				fn(ev)
			}
		}
	}
	return !until.IsZero() && ts.After(until)
}

// stageTimestamp finds the event's stage timestamp without decoding the
// line. A line cut short has no closing brace and counts as not decodable.
func stageTimestamp(line []byte) (time.Time, bool) {
	t := bytes.TrimRight(line, "\r\n ")
	if len(t) == 0 || t[0] != '{' || t[len(t)-1] != '}' {
		return time.Time{}, false
	}
	v := field(t, stageTSKey)
	if v == nil {
		return time.Time{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, string(v))
	return ts, err == nil
}

// field returns the string value following key (which ends in the opening
// quote), nil when absent. Audit IDs and timestamps hold no escapes.
func field(line, key []byte) []byte {
	i := bytes.Index(line, key)
	if i < 0 {
		return nil
	}
	rest := line[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return nil
	}
	return rest[:j]
}
