package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/repro-tools/repro/origin"
	"github.com/repro-tools/repro/results"
)

// budget lets the JSON decoder read at most left bytes until it is
// renewed for the next item.
type budget struct {
	r    io.Reader
	left int64
}

var errItemTooLarge = errors.New("item too large")

func (b *budget) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errItemTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// readNeeded reads an interval file a item at a time and decodes only the
// items the analysis reads (see needed), so that a CI run's file of a few
// hundred megabytes, mostly pod events and logs, never sits in memory
// whole: what is held is one item's bytes and the kept items. The kept
// items go through origin's own decoder, every serialization included. An
// item whose source the cheap look cannot tell (the string-only era) is
// kept. Any fault falls back to origin.ReadFile, whose error names the
// file, line and column.
func readNeeded(path string) ([]origin.Interval, error) {
	f, err := results.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// one item's bytes at most (origin.MaxItemBytes), renewed per item, as
	// origin's own decoder bounds them
	br := &budget{r: bufio.NewReaderSize(f, 1<<20), left: origin.MaxItemBytes}
	dec := json.NewDecoder(br)
	fallback := func() ([]origin.Interval, error) {
		ivs, err := origin.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return needed(ivs), nil
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fallback()
	}
	var kept bytes.Buffer
	kept.WriteString(`{"items":[`)
	n, seen := 0, false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fallback()
		}
		if t != "items" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fallback()
			}
			continue
		}
		seen = true
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return fallback()
		}
		for dec.More() {
			br.left = origin.MaxItemBytes
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return fallback()
			}
			if !wanted(raw) {
				continue
			}
			if n > 0 {
				kept.WriteByte(',')
			}
			kept.Write(raw)
			n++
		}
		if t, err := dec.Token(); err != nil || t != json.Delim(']') {
			return fallback()
		}
	}
	if !seen {
		return fallback()
	}
	kept.WriteString("]}")
	ivs, err := origin.Decode(kept.Bytes())
	if err != nil {
		return fallback()
	}
	return needed(ivs), nil
}

// itemHead is the part of an item that says whether it is needed: its
// source (structured and dual forms), and for KubeEvents whether it is
// about kube-apiserver or the ClusterVersion.
type itemHead struct {
	Source     string `json:"source"`
	TempSource string `json:"tempSource"`
}

var (
	kubeAPIServerNS = []byte(origin.KubeAPIServerNamespace)
	clusterVersion  = []byte("clusterversion")
)

// wanted looks at an item cheaply: kept unless its source is known and
// not one the analysis reads.
func wanted(raw []byte) bool {
	var h itemHead
	if err := json.Unmarshal(raw, &h); err != nil {
		return true // origin's decoder will say what is wrong
	}
	src := h.Source
	if src == "" {
		src = h.TempSource
	}
	switch {
	case src == "":
		return true
	case evidenceSources[src]:
		return true
	case src == origin.SourceKubeEvent:
		return bytes.Contains(raw, kubeAPIServerNS) || bytes.Contains(raw, clusterVersion)
	}
	return bytes.Contains(raw, clusterVersion)
}
