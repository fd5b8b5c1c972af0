package load

import (
	"slices"
	"sort"
	"time"

	"github.com/repro-tools/repro/results"
)

// Termination is one node's kube-apiserver termination: Before is when it
// was told to stop, After when its successor was in service.
type Termination struct {
	Node          string
	Before, After time.Time
}

// Summarize computes the load's outcomes per apiserver from its events
// (their targets named) and the watches each apiserver held around each
// termination. Events without a target count as unattributed.
func Summarize(events []results.LoadEvent, terms []Termination) (apis []results.LoadAPIServer, out []results.LoadTermination, unattributed int) {
	by := map[string]*results.LoadAPIServer{}
	relists := map[string][]float64{}
	writes := map[string][]float64{}
	get := func(t string) *results.LoadAPIServer {
		if by[t] == nil {
			by[t] = &results.LoadAPIServer{Name: t}
		}
		return by[t]
	}
	type span struct {
		target   string
		from, to time.Time
	}
	spans := map[string]*span{}
	for _, e := range events {
		if e.Target == "" {
			unattributed++
			continue
		}
		a := get(e.Target)
		at, _ := time.Parse(time.RFC3339Nano, e.Time)
		switch e.Kind {
		case "list":
			a.Lists++
			if e.Error != "" {
				a.ListErrors++
			}
		case "relist":
			a.Relists++
			if e.Error != "" {
				a.ListErrors++
			} else {
				relists[e.Target] = append(relists[e.Target], e.LatencyMS)
			}
		case "watch-open":
			if e.Error == "" {
				a.WatchOpens++
				spans[e.Watch] = &span{target: e.Target, from: at}
			}
		case "watch-cut", "watch-stop":
			if e.Kind == "watch-cut" {
				a.WatchCuts++
			}
			if s := spans[e.Watch]; s != nil && s.to.IsZero() {
				s.to = at
			}
		case "write":
			a.Writes++
			if e.Error != "" {
				a.WriteErrors++
			} else {
				writes[e.Target] = append(writes[e.Target], e.LatencyMS)
			}
		}
	}
	for t, a := range by {
		a.RelistP50MS, a.RelistMaxMS = p50max(relists[t])
		a.WriteP50MS, a.WriteMaxMS = p50max(writes[t])
		apis = append(apis, *a)
	}
	sort.Slice(apis, func(i, j int) bool { return apis[i].Name < apis[j].Name })
	held := func(t time.Time) map[string]int {
		m := map[string]int{}
		for _, a := range apis {
			m[a.Name] = 0
		}
		for _, s := range spans {
			if !s.from.After(t) && (s.to.IsZero() || s.to.After(t)) {
				m[s.target]++
			}
		}
		return m
	}
	for _, tm := range terms {
		out = append(out, results.LoadTermination{Node: tm.Node, Before: tm.Before, After: tm.After,
			WatchesBefore: held(tm.Before), WatchesAfter: held(tm.After)})
	}
	return apis, out, unattributed
}

func p50max(v []float64) (p50, mx float64) {
	if len(v) == 0 {
		return 0, 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}
