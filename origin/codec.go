package origin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/repro-tools/repro/results"
)

// Format is one of the serializations origin has written interval files in.
type Format int

const (
	// FormatStructured is today's form (pkg/monitor/serialization
	// EventInterval): "source", "display", "locator" and "message" objects.
	FormatStructured Format = iota
	// FormatDual is the transition form: "locator" and "message" as the
	// old strings, with "tempSource", "tempStructuredLocator" and
	// "tempStructuredMessage" beside them (the schema sippy reads as
	// LegacyEventInterval).
	FormatDual
	// FormatDuplicateKeys is the dual form written with the same key twice
	// in one object: "locator" and "message" first as strings, then as
	// objects. encoding/json cannot decode it into one struct.
	FormatDuplicateKeys
	// FormatStrings is the oldest form: "locator" and "message" strings
	// only ("node/NAME", "reason/NodeUpdate phase/Drain ...").
	FormatStrings
)

// timeJSON renders t as metav1.Time does: RFC 3339 in UTC, whole seconds,
// null for the zero time.
func timeJSON(t time.Time) []byte {
	if t.IsZero() {
		return []byte("null")
	}
	return []byte(`"` + t.UTC().Format(time.RFC3339) + `"`)
}

type structuredItem struct {
	Level   string          `json:"level"`
	Source  string          `json:"source,omitempty"`
	Display bool            `json:"display,omitempty"`
	Locator Locator         `json:"locator"`
	Message Message         `json:"message"`
	From    json.RawMessage `json:"from"`
	To      json.RawMessage `json:"to"`
}

type dualItem struct {
	Level             string          `json:"level"`
	Locator           string          `json:"locator"`
	Message           string          `json:"message"`
	Display           bool            `json:"display"`
	Source            string          `json:"tempSource,omitempty"`
	StructuredLocator Locator         `json:"tempStructuredLocator"`
	StructuredMessage Message         `json:"tempStructuredMessage"`
	From              json.RawMessage `json:"from"`
	To                json.RawMessage `json:"to"`
}

type stringItem struct {
	Level   string          `json:"level"`
	Locator string          `json:"locator"`
	Message string          `json:"message"`
	From    json.RawMessage `json:"from"`
	To      json.RawMessage `json:"to"`
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// Encode writes intervals as an interval file ({"items": [...]}) in the
// given serialization, indented by four spaces as origin writes them.
func Encode(w io.Writer, ivs []Interval, f Format) error {
	items := make([]any, 0, len(ivs))
	for _, iv := range ivs {
		loc := Locator{Type: iv.Locator.Type, Keys: nonNil(iv.Locator.Keys)}
		msg := iv.Message
		msg.Annotations = nonNil(msg.Annotations)
		from, to := json.RawMessage(timeJSON(iv.From)), json.RawMessage(timeJSON(iv.To))
		switch f {
		case FormatStructured:
			items = append(items, structuredItem{iv.Level, iv.Source, iv.Display, loc, msg, from, to})
		case FormatDual:
			items = append(items, dualItem{iv.Level, loc.OldLocator(), msg.OldMessage(), iv.Display, iv.Source, loc, msg, from, to})
		case FormatDuplicateKeys:
			items = append(items, duplicateKeysItem{iv: iv, loc: loc, msg: msg})
		case FormatStrings:
			items = append(items, stringItem{iv.Level, loc.OldLocator(), msg.OldMessage(), from, to})
		default:
			return fmt.Errorf("unknown interval file format %d", f)
		}
	}
	b, err := json.MarshalIndent(struct {
		Items []any `json:"items"`
	}{items}, "", "    ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// duplicateKeysItem marshals one object with "locator" and "message" each
// twice: the string, then the object.
type duplicateKeysItem struct {
	iv  Interval
	loc Locator
	msg Message
}

func (d duplicateKeysItem) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	field := func(k string, v any) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
		return nil
	}
	b.WriteByte('{')
	for _, kv := range []struct {
		k string
		v any
	}{
		{"level", d.iv.Level}, {"source", d.iv.Source}, {"display", d.iv.Display},
		{"locator", d.loc.OldLocator()}, {"message", d.msg.OldMessage()},
		{"locator", d.loc}, {"message", d.msg},
		{"from", json.RawMessage(timeJSON(d.iv.From))}, {"to", json.RawMessage(timeJSON(d.iv.To))},
	} {
		if err := field(kv.k, kv.v); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// SyntaxError is a malformed interval file: where, and what was wrong.
type SyntaxError struct {
	Line, Column int
	Msg          string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// MaxItemBytes bounds one item of an interval file, and any other value
// of its top-level object: origin's items are a few hundred bytes, so a
// longer one is not an interval, and the decoder would hold it whole.
const MaxItemBytes = 4 << 20

// MaxFieldBytes bounds one text of an item (a human message, a locator
// key, an annotation): origin keeps a message, not a log.
const MaxFieldBytes = 64 << 10

// ReadFile decodes an interval file, streaming: memory holds the intervals
// decoded and one item at a time, never the file. An error is one line
// naming the file and the position. Anything but a regular file (a FIFO, a
// device, a directory) is refused before it is read.
func ReadFile(path string) ([]Interval, error) {
	return ReadFileFiltered(path, nil)
}

// ReadFileFiltered is ReadFile decoding only the items keep accepts: keep
// sees each item's raw JSON (at most MaxItemBytes) and decides cheaply, so
// that items a caller does not use (a CI file is mostly pod events and
// logs) cost no full decode and no memory. A nil keep keeps every item.
func ReadFileFiltered(path string, keep func(raw []byte) bool) ([]Interval, error) {
	f, err := results.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ivs, err := decodeFiltered(f, func(off int64) (int, int) { return lineColInFile(path, off) }, keep)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ivs, nil
}

// Decode reads an interval file in any of origin's serializations, key by
// key, so a key that is a string in one era and an object in another (or
// both in one object) is taken for what it is.
func Decode(data []byte) ([]Interval, error) {
	return decode(bytes.NewReader(data), func(off int64) (int, int) { return lineColIn(data, off) })
}

func decode(r io.Reader, pos func(off int64) (line, col int)) ([]Interval, error) {
	return decodeFiltered(r, pos, nil)
}

func decodeFiltered(r io.Reader, pos func(off int64) (line, col int), keep func([]byte) bool) ([]Interval, error) {
	br := &budgetReader{r: r, left: MaxItemBytes}
	d := &decoder{br: br, dec: json.NewDecoder(br), pos: pos, item: -1, keep: keep}
	ivs, err := d.file()
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, d.errorf("%v", err)
	}
	return ivs, nil
}

// errTooLarge is budgetReader's error once an item used its budget.
var errTooLarge = errors.New("too large")

// budgetReader lets the JSON decoder read at most left bytes until the
// budget is renewed for the next item: the decoder buffers a whole value
// before it decodes it, so this is what bounds its memory.
type budgetReader struct {
	r    io.Reader
	left int64
	over bool
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.over = true
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *budgetReader) renew() { b.left = MaxItemBytes }

// lineColIn is the line and column of byte offset off of data.
func lineColIn(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return line, int(off) - bytes.LastIndexByte(data[:off], '\n')
}

// lineColInFile is the line and column of byte offset off of the file at
// path, counted by reading it again in chunks (only when reporting an
// error, so the decoder never keeps what it has read).
func lineColInFile(path string, off int64) (int, int) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	line, lastNL := 1, int64(-1)
	var at int64
	for at < off {
		n, err := f.Read(buf[:min(int64(len(buf)), off-at)])
		for i, c := range buf[:n] {
			if c == '\n' {
				line++
				lastNL = at + int64(i)
			}
		}
		at += int64(n)
		if err != nil {
			break
		}
	}
	return line, int(at - lastNL)
}

type decoder struct {
	br  *budgetReader
	dec *json.Decoder
	pos func(off int64) (line, col int)
	// item is the index of the item being decoded, -1 outside "items";
	// itemOff is where it starts.
	item    int
	itemOff int64
	// keep, when set, sees each item's raw JSON first; only the items
	// it accepts are decoded.
	keep func([]byte) bool
}

// filteredItem reads item n whole (within the item budget) and decodes it
// only if d.keep accepts it.
func (d *decoder) filteredItem(n int) (Interval, bool, error) {
	var raw json.RawMessage
	if err := d.dec.Decode(&raw); err != nil {
		return Interval{}, false, d.errorf("%v", err)
	}
	if !d.keep(raw) {
		return Interval{}, false, nil
	}
	start := d.dec.InputOffset() - int64(len(raw))
	sub := &decoder{br: &budgetReader{r: bytes.NewReader(raw), left: MaxItemBytes + 1}, item: n,
		pos: func(off int64) (int, int) { return d.pos(start + off) }}
	sub.dec = json.NewDecoder(sub.br)
	sub.itemOff = 0
	iv, err := sub.decodeItem()
	return iv, err == nil, err
}

// errorf returns a SyntaxError at the decoder's current offset, or, when
// an item outgrew MaxItemBytes, at the item's start.
func (d *decoder) errorf(format string, args ...any) error {
	if d.br.over {
		line, col := d.pos(d.itemOff)
		what := "a value of the file's object"
		if d.item >= 0 {
			what = fmt.Sprintf("items[%d]", d.item)
		}
		return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf("%s is larger than %d MiB: not an interval file origin writes", what, MaxItemBytes>>20)}
	}
	line, col := d.pos(d.dec.InputOffset())
	msg := fmt.Sprintf(format, args...)
	if d.item >= 0 {
		msg = fmt.Sprintf("items[%d]: %s", d.item, msg)
	}
	return &SyntaxError{Line: line, Column: col, Msg: msg}
}

// errorAt returns a SyntaxError at byte offset off.
func (d *decoder) errorAt(off int64, format string, args ...any) error {
	line, col := d.pos(off)
	return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) delim(want json.Delim) error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.errorf("%v", unexpectedEOF(err))
	}
	if got, ok := tok.(json.Delim); !ok || got != want {
		return d.errorf("expected %q, found %v", string(want), describe(tok))
	}
	return nil
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case string:
		return fmt.Sprintf("string %q", v)
	case json.Delim:
		return fmt.Sprintf("%q", string(v))
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

func (d *decoder) file() ([]Interval, error) {
	if err := d.delim('{'); err != nil {
		return nil, err
	}
	var out []Interval
	seenItems := false
	d.item = -1
	for d.dec.More() {
		key, err := d.key()
		if err != nil {
			return nil, err
		}
		if key != "items" {
			d.br.renew()
			d.itemOff = d.dec.InputOffset()
			var skip json.RawMessage
			if err := d.dec.Decode(&skip); err != nil {
				return nil, d.errorf("%v", err)
			}
			continue
		}
		seenItems = true
		tok, err := d.dec.Token()
		if err != nil {
			return nil, d.errorf("%v", unexpectedEOF(err))
		}
		if tok == nil {
			continue
		}
		if t, ok := tok.(json.Delim); !ok || t != '[' {
			return nil, d.errorf(`"items" must be a list, found %v`, describe(tok))
		}
		for n := 0; d.dec.More(); n++ {
			d.br.renew()
			d.item, d.itemOff = n, d.dec.InputOffset()
			if d.keep != nil {
				iv, ok, err := d.filteredItem(n)
				if err != nil {
					return nil, err
				}
				if ok {
					out = append(out, iv)
				}
				continue
			}
			iv, err := d.decodeItem()
			if err != nil {
				return nil, err
			}
			out = append(out, iv)
		}
		d.item = -1
		if err := d.delim(']'); err != nil {
			return nil, err
		}
	}
	if err := d.delim('}'); err != nil {
		return nil, err
	}
	if !seenItems {
		return nil, d.errorf(`no "items": not an interval file`)
	}
	if _, err := d.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, d.errorf("data after the end of the file's object")
	}
	return out, nil
}

func (d *decoder) key() (string, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return "", d.errorf("%v", unexpectedEOF(err))
	}
	k, ok := tok.(string)
	if !ok {
		return "", d.errorf("expected a key, found %v", describe(tok))
	}
	return k, nil
}

// decodeItem decodes one interval object of any era.
func (d *decoder) decodeItem() (Interval, error) {
	var iv Interval
	if err := d.delim('{'); err != nil {
		return iv, err
	}
	d.itemOff = d.dec.InputOffset() - 1 // the item's '{', for errors about the whole item
	var loc eraField[Locator]
	var msg eraField[Message]
	for d.dec.More() {
		key, err := d.key()
		if err != nil {
			return iv, err
		}
		var raw json.RawMessage
		if err := d.dec.Decode(&raw); err != nil {
			return iv, d.errorf("%q: %v", key, err)
		}
		bad := func(err error) error { return d.errorf("%q: %v", key, err) }
		switch key {
		case "level":
			if err := json.Unmarshal(raw, &iv.Level); err != nil {
				return iv, bad(err)
			}
		case "source", "tempSource":
			if err := json.Unmarshal(raw, &iv.Source); err != nil {
				return iv, bad(err)
			}
		case "display":
			if err := json.Unmarshal(raw, &iv.Display); err != nil {
				return iv, bad(err)
			}
		case "locator", "tempStructuredLocator":
			if err := loc.decode(raw, key != "locator"); err != nil {
				return iv, bad(err)
			}
		case "message", "tempStructuredMessage":
			if err := msg.decode(raw, key != "message"); err != nil {
				return iv, bad(err)
			}
		case "from", "to":
			var s *string
			if err := json.Unmarshal(raw, &s); err != nil {
				return iv, bad(err)
			}
			if s == nil || *s == "" {
				continue
			}
			t, err := time.Parse(time.RFC3339Nano, *s)
			if err != nil {
				return iv, bad(fmt.Errorf("not an RFC 3339 time: %q", *s))
			}
			if key == "from" {
				iv.From = t
			} else {
				iv.To = t
			}
		}
	}
	if err := d.delim('}'); err != nil {
		return iv, err
	}
	iv.Locator = loc.pick(emptyLocator, ParseOldLocator)
	iv.Message = msg.pick(emptyMessage, ParseOldMessage)
	iv.Locator.Keys = nonNil(iv.Locator.Keys)
	iv.Message.Annotations = nonNil(iv.Message.Annotations)
	if iv.Message.Reason == "" {
		iv.Message.Reason = iv.Message.Annotations[AnnotationReason]
	}
	if iv.Source == "" {
		iv.Source = inferSource(iv)
	}
	if f := longField(&iv, loc.old, msg.old); f != "" {
		return iv, d.errorAt(d.itemOff, "items[%d]: %s is longer than %d KiB; origin keeps a message, not a log", d.item, f, MaxFieldBytes>>10)
	}
	if !iv.To.IsZero() && iv.To.Before(iv.From) {
		// origin's unset end is "to": null (zero length, as
		// monitorapi's Intervals.Duration counts it); an end before the
		// start is a broken interval, not an open one.
		return iv, d.errorAt(d.itemOff, `items[%d]: "to" %s is before "from" %s; an interval with no end has "to": null`,
			d.item, iv.To.Format(time.RFC3339Nano), iv.From.Format(time.RFC3339Nano))
	}
	return iv, nil
}

// longField names the first text of an item longer than MaxFieldBytes,
// "" when none is.
func longField(iv *Interval, oldLoc, oldMsg string) string {
	texts := []struct {
		name, v string
	}{{"level", iv.Level}, {"source", iv.Source}, {"locator", oldLoc}, {"message", oldMsg},
		{"locator type", iv.Locator.Type}, {"humanMessage", iv.Message.HumanMessage},
		{"reason", iv.Message.Reason}, {"cause", iv.Message.Cause}}
	for _, t := range texts {
		if len(t.v) > MaxFieldBytes {
			return fmt.Sprintf("%q", t.name)
		}
	}
	for k, v := range iv.Locator.Keys {
		if len(k)+len(v) > MaxFieldBytes {
			return fmt.Sprintf("locator key %.40q", k)
		}
	}
	for k, v := range iv.Message.Annotations {
		if len(k)+len(v) > MaxFieldBytes {
			return fmt.Sprintf("annotation %.40q", k)
		}
	}
	return ""
}

// eraField is the locator or the message of an interval, which origin has
// written three ways: a string (the oldest files), a structured object, or
// both, the object under a "tempStructured" key (the files between).
type eraField[T any] struct {
	old       string
	main, tmp *T
}

// decode reads one key's value: a string is the old form, an object the
// structured one (temp: under its "tempStructured" key).
func (f *eraField[T]) decode(raw json.RawMessage, temp bool) error {
	if len(raw) > 0 && raw[0] == '"' {
		return json.Unmarshal(raw, &f.old)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	if temp {
		f.tmp = &v
	} else {
		f.main = &v
	}
	return nil
}

// pick prefers the structured object, then the temp one, then the old
// string parsed.
func (f *eraField[T]) pick(empty func(T) bool, parseOld func(string) T) T {
	switch {
	case f.main != nil && !empty(*f.main):
		return *f.main
	case f.tmp != nil && !empty(*f.tmp):
		return *f.tmp
	}
	return parseOld(f.old)
}

func emptyLocator(l Locator) bool { return l.Type == "" && len(l.Keys) == 0 }
func emptyMessage(m Message) bool {
	return m.Reason == "" && m.HumanMessage == "" && len(m.Annotations) == 0
}

// oldKeyNames maps the string era's abbreviations to today's keys.
var oldKeyNames = map[string]string{"ns": KeyNamespace}

// ParseOldLocator parses a string-era locator ("ns/X pod/Y node/Z",
// "disruption/kube-api connection/new") into keys, guessing the type
// from them as origin's string-era helpers did.
func ParseOldLocator(s string) Locator {
	l := Locator{Keys: map[string]string{}}
	for _, part := range splitOutsideQuotes(s) {
		k, v, ok := strings.Cut(part, "/")
		if !ok || k == "" {
			continue
		}
		if n, ok := oldKeyNames[k]; ok {
			k = n
		}
		if len(v) >= 2 && v[0] == '"' {
			var uq string
			if json.Unmarshal([]byte(v), &uq) == nil {
				v = uq
			}
		}
		l.Keys[k] = v
	}
	switch {
	case l.Keys[KeyBackendDisruptionName] != "" || (l.Keys[KeyDisruption] != "" && l.Keys[KeyConnection] != ""):
		l.Type = LocatorTypeDisruption
	case l.Keys[KeyE2ETest] != "":
		l.Type = LocatorTypeE2ETest
	case l.Keys[KeyClusterOperator] != "":
		l.Type = LocatorTypeClusterOperator
	case l.Keys[KeyPod] != "":
		l.Type = LocatorTypePod
	case l.Keys[KeyNode] != "" && len(l.Keys) == 1:
		l.Type = LocatorTypeNode
	}
	return l
}

// splitOutsideQuotes splits on spaces that are not inside a quoted value
// (e2e-test/"[sig-x] a test name").
func splitOutsideQuotes(s string) []string {
	var parts []string
	var cur strings.Builder
	inQuote, esc := false, false
	for _, r := range s {
		switch {
		case esc:
			esc = false
		case r == '\\' && inQuote:
			esc = true
		case r == '"':
			inQuote = !inQuote
		case r == ' ' && !inQuote:
			if cur.Len() > 0 {
				parts = append(parts, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteRune(r)
	}
	if cur.Len() > 0 {
		parts = append(parts, cur.String())
	}
	return parts
}

// locatorOnlyKeys never name a message annotation: where they appear, the
// human message (which repeats the locator) has begun.
var locatorOnlyKeys = map[string]bool{
	KeyBackendDisruptionName: true, KeyDisruption: true, KeyConnection: true, "ns": true, KeyNamespace: true,
	KeyPod: true, KeyLoadBalancer: true, KeyProtocol: true, KeyTarget: true, KeyServer: true, KeyE2ETest: true,
	"route": true, "uid": true, "container": true,
}

var annotationToken = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.-]*/\S*$`)

// ParseOldMessage parses a string-era message ("reason/NodeUpdate
// phase/Drain roles/master drained node"): leading key/value tokens are
// annotations, the rest is the human message.
func ParseOldMessage(s string) Message {
	m := Message{Annotations: map[string]string{}}
	rest := strings.TrimSpace(s)
	for rest != "" {
		tok, after, _ := strings.Cut(rest, " ")
		if !annotationToken.MatchString(tok) {
			break
		}
		k, v, _ := strings.Cut(tok, "/")
		if locatorOnlyKeys[k] {
			// the human message of a sampler starts with its locator
			break
		}
		m.Annotations[k] = v
		rest = strings.TrimSpace(after)
	}
	m.HumanMessage = rest
	m.Reason = m.Annotations[AnnotationReason]
	m.Cause = m.Annotations[AnnotationCause]
	return m
}

// inferSource names the source of an interval written before origin
// recorded sources, from what the interval is about.
func inferSource(iv Interval) string {
	switch {
	case iv.Locator.BackendDisruptionName() != "":
		return SourceDisruption
	case iv.Message.Reason == ReasonNodeUpdate && iv.Locator.Keys[KeyNode] != "":
		return SourceNodeState
	case iv.Message.Reason == ReasonGracefulAPIServerShutdown || iv.Message.Reason == ReasonIncompleteAPIServerShutdown:
		return SourceAPIServerGracefulShutdown
	case iv.Locator.Keys[KeyClusterOperator] != "" && iv.Message.Annotations[AnnotationCondition] != "":
		return SourceOperatorState
	case terminationEvents[iv.Message.Reason]:
		return SourceKubeEvent
	}
	return ""
}
