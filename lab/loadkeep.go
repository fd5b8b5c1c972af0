package lab

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/repro-tools/repro/lab/load"
	"github.com/repro-tools/repro/results"
)

// KeepLoad stops the load process and writes its outcomes to dest (the
// results' load.jsonl), each event's apiserver named from the load
// balancer's connection records, and returns run.json's record of the load
// with its figures per apiserver and around each node's termination; nil
// when the lab runs no load.
func (l *Lab) KeepLoad(dest string) (*results.LoadRecord, error) {
	rec, path := l.StopLoad()
	if rec == nil {
		return nil, nil
	}
	events, err := readLoadEvents(path)
	if err != nil {
		return rec, err
	}
	// The latest connection from each client address names its target;
	// the load's connections are long-lived and each is dialled anew.
	type conn struct {
		target string
		opened time.Time
	}
	byClient := map[string][]conn{}
	for _, c := range l.lb.Connections() {
		if c.Target != "" {
			byClient[c.Client] = append(byClient[c.Client], conn{c.Target, c.Opened})
		}
	}
	for _, cs := range byClient {
		sort.Slice(cs, func(i, j int) bool { return cs[i].opened.Before(cs[j].opened) })
	}
	f, err := os.Create(dest)
	if err != nil {
		return rec, err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range events {
		e := &events[i]
		at, _ := time.Parse(time.RFC3339Nano, e.Time)
		// The connection from that address opened last before the event.
		for _, c := range byClient[e.Local] {
			if !c.opened.After(at) {
				e.Target = c.target
			}
		}
		if err := enc.Encode(e); err != nil {
			return rec, err
		}
	}
	if err := w.Flush(); err != nil {
		return rec, err
	}
	var terms []load.Termination
	var last time.Time
	if len(events) > 0 {
		last, _ = time.Parse(time.RFC3339Nano, events[len(events)-1].Time)
	}
	for _, n := range l.nodes {
		ps := n.Processes()
		for i, p := range ps {
			if p.Terminating.IsZero() {
				continue
			}
			t := load.Termination{Node: n.name, Before: p.Terminating, After: last}
			if i+1 < len(ps) {
				switch {
				case !ps[i+1].Warmed.IsZero():
					t.After = ps[i+1].Warmed
				case !ps[i+1].Ready.IsZero():
					t.After = ps[i+1].Ready
				}
			}
			terms = append(terms, t)
		}
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i].Before.Before(terms[j].Before) })
	rec.APIServers, rec.Terminations, rec.Unattributed = load.Summarize(events, terms)
	clients, watches := map[string]bool{}, map[string]bool{}
	for _, e := range events {
		clients[e.Identity+"/"+e.Client+"/"+e.Local] = true
		if e.Kind == "watch-open" && e.Watch != "" {
			watches[watchReflector(e.Watch)] = true
		}
	}
	rec.Watches = len(watches)
	nodes, services, _ := l.load.spec.Scaled()
	rec.Objects = nodes + services + nodes*l.load.spec.PodsPerNode
	rec.Clients = load.ClientCount(l.load.spec)
	return rec, nil
}

// watchReflector strips a watch's sequence number: the reflector it is of.
func watchReflector(id string) string {
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == '#' {
			return id[:i]
		}
	}
	return id
}

func readLoadEvents(path string) ([]results.LoadEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []results.LoadEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e results.LoadEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
