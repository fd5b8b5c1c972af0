package htmlreport

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/repro-tools/repro/results"
)

// FileName is the page written into every results folder.
const FileName = "report.html"

//go:embed assets/page.js
var pageJS string

//go:embed assets/page.css
var pageCSS string

//go:embed assets/page.html
var pageHTML string

var pageTmpl = template.Must(template.New("page").Parse(pageHTML))

// Classes returns the error classes in the order the page colours them.
func Classes() []string {
	out := make([]string, 0, len(results.ErrorClasses))
	for _, c := range results.ErrorClasses {
		out = append(out, string(c))
	}
	return out
}

// Build assembles the page data for one run (compare false) or for several
// runs aligned on their first trigger (compare true; a run without a
// trigger is aligned on its first sample).
func Build(title string, runs []*Run, compare bool) (*Page, error) {
	p := &Page{Title: title, Compare: compare, Classes: Classes()}
	for _, r := range runs {
		var t0 time.Time
		if compare && len(r.Iterations) > 0 {
			t0 = r.Iterations[0].Trigger
		}
		rd, err := BuildRun(r, p.Classes, t0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Label, err)
		}
		if compare && t0.IsZero() {
			rd.Notes = append(rd.Notes, "no trigger in this run: aligned on its first sample")
		}
		p.Runs = append(p.Runs, *rd)
		if !compare {
			p.Sections = append(p.Sections, r.Sections...)
		}
	}
	return p, nil
}

// WriteRun writes the self-contained report page of one run.
func WriteRun(w io.Writer, r *Run) error {
	title := "repro report"
	if r.Label != "" {
		title += ": " + r.Label
	}
	p, err := Build(title, []*Run{r}, false)
	if err != nil {
		return err
	}
	return Render(w, p)
}

// WriteCompare writes one page comparing runs: their totals side by side
// and their timelines aligned on the trigger.
func WriteCompare(w io.Writer, runs []*Run) error {
	p, err := Build("repro compare", runs, true)
	if err != nil {
		return err
	}
	return Render(w, p)
}

// Render writes page p as HTML with its script, style and data embedded.
// The data is JSON, gzip-compressed and base64-encoded; the page inflates
// it with the browser's DecompressionStream.
func Render(w io.Writer, p *Page) error {
	data, err := Encode(p)
	if err != nil {
		return err
	}
	return pageTmpl.Execute(w, map[string]any{
		"Title":    p.Title,
		"CSS":      template.CSS(pageCSS),
		"JS":       template.JS(pageJS),
		"Data":     template.JS(`"` + data + `"`),
		"Sections": p.Sections,
	})
}

// Encode returns the page data as embedded: JSON with the lanes' T, Seq
// and level indexes delta-encoded, gzip-compressed, base64.
func Encode(p *Page) (string, error) {
	enc := *p
	enc.Runs = make([]RunData, len(p.Runs))
	for i, r := range p.Runs {
		r.Lanes = append([]Lane(nil), r.Lanes...)
		for j := range r.Lanes {
			l := &r.Lanes[j]
			l.T, l.Seq = delta(l.T), delta(l.Seq)
			lv := make([]Level, len(l.Levels))
			for k, v := range l.Levels {
				lv[k] = Level{BucketMs: v.BucketMs, Idx: delta(v.Idx)}
			}
			l.Levels = lv
		}
		enc.Runs[i] = r
	}
	js, err := json.Marshal(&enc)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if _, err := zw.Write(js); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// Decode reverses Encode (for tests and tools).
func Decode(s string) (*Page, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	var p Page
	if err := json.NewDecoder(zr).Decode(&p); err != nil {
		return nil, err
	}
	for i := range p.Runs {
		for j := range p.Runs[i].Lanes {
			l := &p.Runs[i].Lanes[j]
			l.T, l.Seq = undelta(l.T), undelta(l.Seq)
			for k := range l.Levels {
				l.Levels[k].Idx = undelta(l.Levels[k].Idx)
			}
		}
	}
	return &p, nil
}

func delta(xs []int64) []int64 {
	out := make([]int64, len(xs))
	var prev int64
	for i, x := range xs {
		out[i] = x - prev
		prev = x
	}
	return out
}

func undelta(xs []int64) []int64 {
	out := make([]int64, len(xs))
	var acc int64
	for i, x := range xs {
		acc += x
		out[i] = acc
	}
	return out
}
