package lab

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/repro-tools/repro/lab/pki"
)

// supervisedChildArg makes the test binary a stand-in apiserver (TestMain):
// an HTTPS server on the lab's serving certificate whose /readyz answers
// 200, so supervised's start, readiness wait and termination run on a
// real process without a kube-apiserver.
const supervisedChildArg = "supervised-child"

// supervisedChild serves as the args say: MODE PORT CERT KEY. Mode "serve"
// exits 0 on SIGTERM, "stubborn" ignores SIGTERM, "broken" exits 3 at once.
func supervisedChild(args []string) {
	mode, port, cert, key := args[0], args[1], args[2], args[3]
	if mode == "broken" {
		fmt.Fprintln(os.Stderr, "E0101 flag provided but not defined: --bogus")
		os.Exit(3)
	}
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() {
			<-term
			fmt.Println("SIGTERM received, exiting")
			os.Exit(0)
		}()
	}
	fmt.Println("serving on", port)
	srv := &http.Server{Addr: "127.0.0.1:" + port, ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })}
	fmt.Fprintln(os.Stderr, srv.ListenAndServeTLS(cert, key))
	os.Exit(1)
}

// testSupervised is a supervised process of a lab that has only what
// supervised needs: options, a directory, the PKI and a context.
func testSupervised(t *testing.T, endpoints func(context.Context) error) *supervised {
	t.Helper()
	dir := t.TempDir()
	b, err := pki.Generate(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	l := &Lab{dir: dir, pki: b, log: zap.NewNop(), opts: Options{StartTimeout: 20 * time.Second, ProbeInterval: time.Second, GracePeriod: 10 * time.Second}}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	t.Cleanup(l.cancel)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := newSupervised(l, port, nil, l.log, "master-9: stand-in", "stand-in", "https://127.0.0.1:"+strconv.Itoa(port)+"/readyz")
	s.endpoints = endpoints
	t.Cleanup(func() { _ = s.release() })
	return &s
}

func (s *supervised) testLaunch(t *testing.T, mode string, life *ProcessLife) launch {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return launch{bin: exe, args: []string{supervisedChildArg, mode, strconv.Itoa(s.port), s.lab.pki.ServingCert, s.lab.pki.ServingKey},
		logPath: filepath.Join(s.lab.dir, mode+".log"), life: life}
}

// A start is ready once /readyz answers; terminate records a graceful exit
// and leaves no process.
func TestSupervisedStartsAndTerminates(t *testing.T) {
	s := testSupervised(t, nil)
	var life ProcessLife
	recorded := false
	ln := s.testLaunch(t, "serve", &life)
	ln.record = func() { recorded = true }
	if err := s.start(context.Background(), ln); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	ready, pid := s.ready, s.proc.PID()
	s.mu.Unlock()
	if !ready || !recorded || life.PID != pid || life.Started.IsZero() || life.Ready.Before(life.Started) {
		t.Fatalf("after start: ready=%v recorded=%v life=%+v pid=%d", ready, recorded, life, pid)
	}
	if err := s.terminate(); err != nil {
		t.Fatal(err)
	}
	if life.Killed || life.ExitStatus != "exit status 0" || life.Exited.Before(life.Terminating) || s.PID() != 0 {
		t.Fatalf("after terminate: %+v pid=%d", life, s.PID())
	}
	out, _ := os.ReadFile(life.LogPath)
	if !strings.Contains(string(out), "SIGTERM received") {
		t.Fatalf("log %s: %q", life.LogPath, out)
	}
	if err := s.terminate(); err != nil {
		t.Fatalf("terminate with no process: %v", err)
	}
}

// A Deployment's pod (endpoints set) is unready and out of its endpoints
// before SIGTERM reaches it; a process that ignores SIGTERM is killed at the
// end of the grace period.
func TestSupervisedReplicaLeavesEndpointsBeforeSIGTERM(t *testing.T) {
	var s *supervised
	var calls atomic.Int32
	var wrong atomic.Value
	s = testSupervised(t, func(context.Context) error {
		calls.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ready || s.proc == nil || s.life.Terminating.IsZero() {
			wrong.Store(fmt.Sprintf("endpoints written with ready=%v running=%v terminating=%v", s.ready, s.proc != nil, s.life.Terminating))
		}
		return nil
	})
	s.lab.opts.GracePeriod = 300 * time.Millisecond
	var life ProcessLife
	if err := s.start(context.Background(), s.testLaunch(t, "stubborn", &life)); err != nil {
		t.Fatal(err)
	}
	if err := s.terminate(); err != nil {
		t.Fatal(err)
	}
	if w, _ := wrong.Load().(string); w != "" || calls.Load() != 1 {
		t.Fatalf("endpoints calls %d: %s", calls.Load(), w)
	}
	if !life.Killed || !strings.Contains(life.ExitStatus, "killed") {
		t.Fatalf("a process ignoring SIGTERM: %+v", life)
	}
}

// A process that exits at start fails the start with its log's tail.
func TestSupervisedExitAtStartCarriesTheLogTail(t *testing.T) {
	s := testSupervised(t, nil)
	var life ProcessLife
	err := s.start(context.Background(), s.testLaunch(t, "broken", &life))
	if err == nil || !strings.Contains(err.Error(), "master-9: stand-in exited at start") || !strings.Contains(err.Error(), "flag provided but not defined") {
		t.Fatalf("broken start: %v", err)
	}
	// A lab that is stopping starts nothing.
	s.lab.cancel()
	if err := s.start(context.Background(), s.testLaunch(t, "serve", &life)); err == nil || !strings.Contains(err.Error(), "lab is stopping") {
		t.Fatalf("start while stopping: %v", err)
	}
}

// The readiness probe (plain /readyz) does not put a replica in its
// endpoints before its start's own, stricter check passed: a replica whose
// /readyz passes may not trust the aggregator's front-proxy identity yet,
// and answers what the aggregator proxies to it as system:anonymous (403).
func TestSupervisedProbeWaitsForTheStartsCheck(t *testing.T) {
	var s *supervised
	var early atomic.Value
	s = testSupervised(t, func(context.Context) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ready && s.life.Ready.IsZero() {
			early.Store("endpoints written ready before the start's check passed")
		}
		return nil
	})
	s.lab.opts.ProbeInterval = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.probeLoop(ctx)
	var life ProcessLife
	ln := s.testLaunch(t, "serve", &life)
	// The stand-in's /readyz answers 200 at once; the start's check
	// refuses for 20 probe intervals more.
	var refusedUntil time.Time
	ln.check = func(ctx context.Context, hc *http.Client) (int, error) {
		code, err := get(ctx, hc, s.readyz)
		if err != nil || code != http.StatusOK {
			return code, err
		}
		if refusedUntil.IsZero() {
			refusedUntil = time.Now().Add(20 * s.lab.opts.ProbeInterval)
		}
		if time.Now().Before(refusedUntil) {
			return http.StatusForbidden, nil
		}
		return http.StatusOK, nil
	}
	if err := s.start(context.Background(), ln); err != nil {
		t.Fatal(err)
	}
	if w, _ := early.Load().(string); w != "" {
		t.Fatal(w)
	}
	s.mu.Lock()
	ready := s.ready
	s.mu.Unlock()
	if !ready {
		t.Fatal("not ready after the start's check passed")
	}
}
