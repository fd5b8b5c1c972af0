package htmlreport_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

// synthGap is a planned disruption in a synthetic run.
type synthGap struct {
	poller   string
	from, to time.Duration // from the run start; samples starting in [from, to) fail
	class    results.ErrorClass
	node     string
}

// synthetic writes a results folder for a run of length dur: six pollers
// at 10/s, a baseline, one three-node rollout in the middle, a cool-down,
// lb-connections.jsonl naming the node behind every connection, and the
// given gaps. It returns the run start.
func synthetic(t testing.TB, dir string, dur time.Duration, gaps []synthGap) time.Time {
	t.Helper()
	f, err := results.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	end := start.Add(dur)
	run := results.NewRun("run", []string{"repro", "run", "--scenario", "apiserver-rollout"}, start)
	run.Server = "https://127.0.0.1:6443"
	run.Status = results.StatusComplete
	run.End = &end
	run.Extra.Scenario = "apiserver-rollout"
	run.Settings = results.Settings{Interval: results.Duration(100 * time.Millisecond)}
	if err := f.WriteRun(run); err != nil {
		t.Fatal(err)
	}
	nodes := []string{"master-0", "master-1", "master-2"}
	trigger := start.Add(dur / 3)
	// Each node: terminating 12 s, stopped 1 s, starting 4 s, 5 s apart.
	type win struct{ term, stop, fin, start, ready time.Time }
	wins := map[string]win{}
	at := trigger.Add(50 * time.Millisecond)
	for _, n := range nodes {
		w := win{term: at, stop: at.Add(11 * time.Second), fin: at.Add(12 * time.Second)}
		w.start = w.fin.Add(100 * time.Millisecond)
		w.ready = w.start.Add(4 * time.Second)
		wins[n] = w
		at = w.ready.Add(5 * time.Second)
	}
	complete := at
	cool := complete
	ev, err := os.Create(filepath.Join(dir, results.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(ev)
	emit := func(e results.Event) {
		e.Observed = e.Time
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	emit(results.Event{Time: start, Kind: results.KindPhase, Reason: results.PhaseBaseline})
	emit(results.Event{Time: trigger, Kind: results.KindPhase, Reason: results.PhaseRollout, Iteration: 1})
	emit(results.Event{Time: trigger, Kind: results.KindTrigger, Iteration: 1})
	emit(results.Event{Time: trigger.Add(20 * time.Millisecond), Kind: results.KindRevision, Revision: 2, Iteration: 1})
	for _, n := range nodes {
		w := wins[n]
		emit(results.Event{Time: w.term, Kind: results.KindNodeTarget, Node: n, Revision: 2, Iteration: 1})
		emit(results.Event{Time: w.term, Kind: results.KindClusterEvent, Node: n, Reason: "ShutdownInitiated", Message: "Received signal to terminate", Iteration: 1})
		emit(results.Event{Time: w.stop, Kind: results.KindClusterEvent, Node: n, Reason: "TerminationStoppedServing", Message: "Server has stopped listening", Iteration: 1})
		emit(results.Event{Time: w.fin, Kind: results.KindClusterEvent, Node: n, Reason: "TerminationGracefulTerminationFinished", Message: "All pending requests processed", Iteration: 1})
		emit(results.Event{Time: w.start, Kind: results.KindPodCreated, Node: n, Revision: 2, Iteration: 1})
		emit(results.Event{Time: w.ready, Kind: results.KindPodReady, Node: n, Revision: 2, Iteration: 1})
	}
	emit(results.Event{Time: complete, Kind: results.KindConverged, Revision: 2, Iteration: 1})
	emit(results.Event{Time: cool, Kind: results.KindPhase, Reason: results.PhaseCoolDown, Iteration: 1})
	emit(results.Event{Time: end, Kind: results.KindPhase, Reason: results.PhaseEnd})
	if err := ev.Close(); err != nil {
		t.Fatal(err)
	}

	sf, err := os.Create(filepath.Join(dir, results.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	lf, err := os.Create(filepath.Join(dir, "lb-connections.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sw, lw := bufio.NewWriterSize(sf, 1<<20), bufio.NewWriterSize(lf, 1<<20)
	ticks := int(dur / (100 * time.Millisecond))
	port, id := 20000, 0
	var buf []byte
	rng := rand.New(rand.NewPCG(1, 2))
	for _, b := range []string{"kube-api", "openshift-api", "oauth-api"} {
		for ci, conn := range results.ConnectionTypes {
			name := results.PollerName(b, conn)
			reusedAddr := fmt.Sprintf("127.0.0.1:%d", 10000+len(name)*10+ci)
			if conn == results.ReusedConnections {
				id++
				fmt.Fprintf(lw, `{"event":"open","id":%d,"client":%q,"target":"master-1","opened":%q}`+"\n", id, reusedAddr, start.Add(-time.Second).Format(time.RFC3339Nano))
			}
			for i := 0; i < ticks; i++ {
				off := time.Duration(i) * 100 * time.Millisecond
				// Realistic jitter: starts up to 3 ms late, log-normal
				// durations around 6 ms with a tail, random audit IDs.
				s := results.Sample{Backend: b, Connection: conn, Seq: uint64(i), Start: start.Add(off + time.Duration(rng.IntN(3000))*time.Microsecond),
					Duration: time.Duration(float64(6*time.Millisecond) * math.Exp(rng.NormFloat64()*0.5)), StatusCode: 200, Protocol: "HTTP/1.1",
					AuditID: fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<12), rng.IntN(1<<12), rng.Uint64()&(1<<48-1)), RemoteAddr: "127.0.0.1:6443"}
				if conn == results.NewConnections {
					c := time.Duration(200+rng.IntN(300)) * time.Microsecond
					s.Duration += 3 * time.Millisecond
					s.Phases = results.Phases{ConnectDone: c, TLSDone: c + time.Duration(2000+rng.IntN(800))*time.Microsecond, WroteRequest: c + 2900*time.Microsecond, FirstByte: s.Duration - 200*time.Microsecond}
					port++
					if port > 60000 {
						port = 20000
					}
					s.LocalAddr = fmt.Sprintf("127.0.0.1:%d", port)
				} else {
					s.Reused = i > 0
					s.Phases = results.Phases{WroteRequest: 100 * time.Microsecond, FirstByte: s.Duration - 200*time.Microsecond}
					s.LocalAddr = reusedAddr
				}
				target := nodes[i%3]
				for _, g := range gaps {
					if g.poller == name && off >= g.from && off < g.to {
						s.ErrorClass, s.StatusCode, s.Phases.FirstByte = g.class, 0, 0
						s.Error = "Get \"https://127.0.0.1:6443/api/v1/namespaces/default\": " + string(g.class)
						if g.class == results.ClassHeaderTimeout {
							s.Duration = 2 * time.Second
						}
						if g.node != "" && conn == results.NewConnections {
							target = g.node
						}
					}
				}
				if conn == results.NewConnections {
					// One connection per request, with an id as the
					// lab's LB writes it: its close line replaces the open.
					id++
					fmt.Fprintf(lw, `{"event":"close","id":%d,"client":%q,"target":%q,"opened":%q,"closed":%q}`+"\n", id, s.LocalAddr, target, s.Start.Format(time.RFC3339Nano), s.Start.Add(s.Duration).Format(time.RFC3339Nano))
				}
				buf = s.AppendJSON(buf[:0])
				buf = append(buf, '\n')
				sw.Write(buf)
			}
		}
	}
	for _, w := range []*bufio.Writer{sw, lw} {
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	sf.Close()
	lf.Close()
	return start
}

// standardGaps are the disruptions of the synthetic runs: relative to the
// trigger at a third of the run.
func standardGaps(dur time.Duration) []synthGap {
	tr := dur / 3
	return []synthGap{
		// master-0 stops serving at trigger+11.05 s.
		{poller: "kube-api-new-connections", from: tr + 11100*time.Millisecond, to: tr + 12*time.Second, class: results.ClassConnectRefused, node: "master-0"},
		{poller: "openshift-api-reused-connections", from: tr + 11200*time.Millisecond, to: tr + 15*time.Second, class: results.ClassHeaderTimeout},
		{poller: "oauth-api-new-connections", from: tr + 11300*time.Millisecond, to: tr + 11400*time.Millisecond, class: results.ClassTLS, node: "master-0"},
	}
}
