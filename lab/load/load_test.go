package load

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/repro-tools/repro/results"
)

func TestLookupNamesTheLoads(t *testing.T) {
	if _, ok, err := Lookup(None); ok || err != nil {
		t.Errorf("none: ok %v err %v", ok, err)
	}
	_, _, err := Lookup("bogus")
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "none, cl2-load") {
		t.Errorf("bogus: %v, want one line naming none, cl2-load", err)
	}
	s, _, _ := Lookup("cl2-load")
	if n, svc, churn := s.Scaled(); n != 10 || svc != 17 || churn != 1 {
		t.Errorf("cl2-load scaled to %d nodes, %d services, %v pods/s; want 10, 17, 1", n, svc, churn)
	}
}

func TestSummarizeWatchesAroundATermination(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) string { return t0.Add(time.Duration(s) * time.Second).Format(time.RFC3339Nano) }
	ev := []results.LoadEvent{
		{Time: at(0), Kind: "list", Target: "master-0"},
		{Time: at(1), Kind: "watch-open", Watch: "a#1", Target: "master-0"},
		{Time: at(1), Kind: "watch-open", Watch: "b#1", Target: "master-1"},
		{Time: at(5), Kind: "watch-cut", Watch: "a#1", Target: "master-0"},
		{Time: at(6), Kind: "relist", Target: "master-1", LatencyMS: 30},
		{Time: at(6), Kind: "watch-open", Watch: "a#2", Target: "master-1"},
		{Time: at(7), Kind: "write", Target: "master-1", Error: "boom"},
		{Time: at(7), Kind: "write"},
	}
	apis, terms, un := Summarize(ev, []Termination{{Node: "master-0", Before: t0.Add(4 * time.Second), After: t0.Add(8 * time.Second)}})
	if un != 1 || len(apis) != 2 || apis[1].Relists != 1 || apis[1].RelistMaxMS != 30 || apis[1].WriteErrors != 1 || apis[0].WatchCuts != 1 {
		t.Fatalf("apis %+v unattributed %d", apis, un)
	}
	if b, a := terms[0].WatchesBefore, terms[0].WatchesAfter; b["master-0"] != 1 || b["master-1"] != 1 || a["master-0"] != 0 || a["master-1"] != 2 {
		t.Errorf("before %v after %v", b, a)
	}
}

func TestTrackedWatchReportsCutAndStop(t *testing.T) {
	for _, stop := range []bool{false, true} {
		fw := watch.NewFake()
		got := make(chan bool, 2)
		tw := newTracked(fw, func(stopped bool) { got <- stopped })
		if stop {
			tw.Stop()
		} else {
			fw.Stop()
		}
		for range tw.ResultChan() {
		}
		if s := <-got; s != stop {
			t.Errorf("stop %v: reported stopped=%v", stop, s)
		}
		tw.Stop()
	}
}
