package importer

import (
	"bytes"
	"encoding/json"

	"github.com/repro-tools/repro/origin"
)

// readNeeded reads an interval file an item at a time and decodes only the
// items the analysis reads (see needed), so that a CI run's file of a few
// hundred megabytes, mostly pod events and logs, never sits in memory
// whole: what is held is one item's bytes and the kept items. The kept
// items go through origin's own decoder, every serialization included. An
// item whose source the cheap look cannot tell (the string-only era) is
// kept. origin.ReadFileFiltered bounds each item, refuses what is not a
// regular file, and names the file, line and column of any fault.
func readNeeded(path string) ([]origin.Interval, error) {
	ivs, err := origin.ReadFileFiltered(path, wanted)
	if err != nil {
		return nil, err
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
