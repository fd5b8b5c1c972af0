package prober_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"k8s.io/client-go/rest"

	"github.com/repro-tools/repro/prober"
	"github.com/repro-tools/repro/results"
)

var (
	vsVegetaDuration = flag.Duration("vs-vegeta-duration", 20*time.Second, "time each tool runs in BenchmarkVsVegeta, over all its turns")
	vsVegetaRounds   = flag.Int("vs-vegeta-rounds", 20, "turns each tool takes in BenchmarkVsVegeta, in ABBA order; -vs-vegeta-duration is shared among them")
	vsVegetaStagger  = flag.Bool("vs-vegeta-stagger", true, "start vegeta's reused-connection attack half a tick after its new-connection one, so that both tools send requests at the same instants")
	vsVegetaOnly     = flag.String("vs-vegeta-only", "", `run only one side of BenchmarkVsVegeta ("repro" or "vegeta"), for profiling`)
	vsVegetaKeep     = flag.String("vs-vegeta-keep", "", "keep repro's samples of BenchmarkVsVegeta in this folder (one samples-<turn>.jsonl per turn) to read their phases")
)

// benchServerEnv makes the test binary a TLS server (see TestMain): the
// target of BenchmarkVsVegeta runs in its own process, so the client's CPU
// figures (getrusage of this process) hold the client alone.
const benchServerEnv = "REPRO_BENCH_TLS_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) != "" {
		serveBenchTLS()
		return
	}
	os.Exit(m.Run())
}

// serveBenchTLS serves every path with a small Namespace body over
// HTTP/1.1 and TLS on a loopback port, prints the address and the CA
// certificate on stdout, and serves until stdin closes.
func serveBenchTLS() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	cert := ecdsaCert(&fatalTB{})
	body := []byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}),
		TLSConfig:    &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}},
		ErrorLog:     log.New(io.Discard, "", 0),
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	fmt.Printf("%s\n%s", ln.Addr(), caPEM)
	os.Stdout.Close()
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	_ = srv.ServeTLS(ln, "", "")
}

// fatalTB lets ecdsaCert run outside a test.
type fatalTB struct{ testing.TB }

func (fatalTB) Fatal(args ...any) { log.Fatal(args...) }

// startBenchServer starts the server process and returns its URL and CA.
func startBenchServer(b testing.TB) (string, []byte) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	out, err := io.ReadAll(bufio.NewReader(stdout))
	if err != nil {
		b.Fatal(err)
	}
	addr, ca, ok := strings.Cut(string(out), "\n")
	if !ok {
		b.Fatalf("server said %q", out)
	}
	return "https://" + addr, []byte(ca)
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// switches is how often this process's threads have given up a core so
// far, voluntarily (blocked: a sleeping scheduler, an idle thread parked)
// or not: each is a wake-up paid in kernel time.
func switches() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Nvcsw + ru.Nivcsw
}

// stolen is the time the hypervisor has kept this machine's CPUs from
// running so far (the steal column of /proc/stat, in USER_HZ ticks of
// 10ms, summed over CPUs); zero where /proc/stat cannot be read. On a
// shared host it comes in bursts that slow every request of a turn alike.
func stolen() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	ticks, err := strconv.ParseInt(f[8], 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// usage is what a process has spent so far: CPU time, heap allocations and
// GC cycles, context switches, and the machine's stolen time and wall
// time, which tell a turn the machine slowed from one the tool did.
type usage struct {
	cpu      time.Duration
	mallocs  uint64
	bytes    uint64
	switches int64
	gcs      uint32
	steal    time.Duration
	wall     time.Duration
	at       time.Time
}

// spent returns this process's usage so far.
func spent() usage {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{cpu: cpuTime(), mallocs: ms.Mallocs, bytes: ms.TotalAlloc, switches: switches(),
		gcs: ms.NumGC, steal: stolen(), at: time.Now()}
}

// since is the usage from u to now.
func (u usage) since() usage {
	now := spent()
	return usage{cpu: now.cpu - u.cpu, mallocs: now.mallocs - u.mallocs, bytes: now.bytes - u.bytes,
		switches: now.switches - u.switches, gcs: now.gcs - u.gcs, steal: now.steal - u.steal, wall: now.at.Sub(u.at)}
}

// sideFigures are one tool's latencies per connection type and what it
// spent: CPU and allocations, over all its requests.
type sideFigures struct {
	lat    map[results.ConnectionType][]time.Duration
	n      int
	failed int
	usage
}

func (f *sideFigures) pct(ct results.ConnectionType, q float64) time.Duration {
	l := f.lat[ct]
	if len(l) == 0 {
		return 0
	}
	return l[int(q*float64(len(l)-1))]
}

func newSideFigures() *sideFigures {
	return &sideFigures{lat: map[results.ConnectionType][]time.Duration{}}
}

// add folds the figures of one turn into f.
func (f *sideFigures) add(g *sideFigures) {
	for ct, l := range g.lat {
		f.lat[ct] = append(f.lat[ct], l...)
	}
	f.n += g.n
	f.failed += g.failed
	f.cpu += g.cpu
	f.mallocs += g.mallocs
	f.bytes += g.bytes
	f.switches += g.switches
	f.gcs += g.gcs
	f.steal += g.steal
	f.wall += g.wall
}

func (f *sideFigures) sort() {
	for _, l := range f.lat {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	}
}

// warm is the share of each phase left out of the latencies: the first
// connections of either tool's pools and the first TLS sessions.
const warm = 0.1

// BenchmarkVsVegeta runs vegeta (github.com/tsenart/vegeta/v12/lib) and
// the prober against the same local TLS server, in another process, at
// the rate of the field comparison (issue 15): 600 requests/s over
// HTTP/1.1, 300/s on new connections and 300/s on reused ones. vegeta runs
// as two concurrent attacks (keep-alive off and on) over the three backend
// paths; the prober as six pollers (three backends x new/reused) every
// 10ms, its samples written to a samples.jsonl as repro probe does. Each
// tool gets -vs-vegeta-duration in all, cut into -vs-vegeta-rounds turns
// taken in ABBA order (vegeta, repro, repro, vegeta, ...), so that a
// machine whose speed drifts during the run (a shared host, a CPU's
// clock) weighs on both alike. The turns are short (1s by default)
// because at this rate either tool's p99 is made of brief stalls that are
// not its own code: GC cycles' ends (the slowest new-connection requests
// overlap them far more often than requests do on average) and the
// hypervisor's steal bursts, and over long turns these fall unevenly
// enough between the tools to move a run's p99 ratio with the same code
// (docs/prober-cost.md has the figures).
// It prints p50 and p99 latency per connection type, CPU, allocations and
// context switches per request, GC cycles and stolen time per second for
// both, and repro's ratios to vegeta. Run it with make bench-vs-vegeta.
func BenchmarkVsVegeta(b *testing.B) {
	url, ca := startBenchServer(b)
	backends, err := prober.LookupBackends([]string{"kube-api", "openshift-api", "oauth-api"})
	if err != nil {
		b.Fatal(err)
	}
	rounds := *vsVegetaRounds
	if rounds < 1 {
		b.Fatalf("-vs-vegeta-rounds %d: want at least 1", rounds)
	}
	turn := *vsVegetaDuration / time.Duration(rounds)
	for i := 0; i < b.N; i++ {
		var v, r *sideFigures
		if *vsVegetaOnly != "repro" {
			v = newSideFigures()
		}
		if *vsVegetaOnly != "vegeta" {
			r = newSideFigures()
		}
		for k := 0; k < rounds; k++ {
			sides := []func(){
				func() {
					if v != nil {
						v.add(runVegeta(b, url, ca, backends, turn))
					}
				},
				func() {
					if r != nil {
						r.add(runRepro(b, url, ca, backends, turn))
					}
				},
			}
			if k%2 == 1 {
				sides[0], sides[1] = sides[1], sides[0]
			}
			for _, run := range sides {
				run()
			}
		}
		for _, f := range []*sideFigures{v, r} {
			if f != nil {
				f.sort()
			}
		}
		for _, side := range []struct {
			name string
			f    *sideFigures
		}{{"vegeta", v}, {"repro", r}} {
			if side.f == nil {
				continue
			}
			f := side.f
			b.Logf("%-6s p50 new %6.3f ms  p99 new %6.3f ms  p50 reused %6.3f ms  p99 reused %6.3f ms  CPU %.3f ms/req  %d allocs/req %.1f KB/req %.1f switches/req  GC %.1f/s  steal %.0f ms/s  (%d requests, %d failed)",
				side.name, ms(f.pct(results.NewConnections, .5)), ms(f.pct(results.NewConnections, .99)),
				ms(f.pct(results.ReusedConnections, .5)), ms(f.pct(results.ReusedConnections, .99)),
				ms(f.cpu)/float64(f.n), f.mallocs/uint64(f.n), float64(f.bytes)/1024/float64(f.n), float64(f.switches)/float64(f.n),
				float64(f.gcs)/f.wall.Seconds(), ms(f.steal)/f.wall.Seconds(), f.n, f.failed)
			if f.failed > 0 {
				b.Errorf("%s: %d of %d requests failed against a healthy server", side.name, f.failed, f.n)
			}
		}
		if v == nil || r == nil {
			continue
		}
		ratio := func(ct results.ConnectionType, q float64) float64 {
			return float64(r.pct(ct, q)) / float64(v.pct(ct, q))
		}
		cpuRatio := (float64(r.cpu) / float64(r.n)) / (float64(v.cpu) / float64(v.n))
		b.Logf("repro/vegeta: p50 new %.2fx  p99 new %.2fx  p50 reused %.2fx  p99 reused %.2fx  CPU/req %.2fx",
			ratio(results.NewConnections, .5), ratio(results.NewConnections, .99),
			ratio(results.ReusedConnections, .5), ratio(results.ReusedConnections, .99), cpuRatio)
		b.ReportMetric(ratio(results.NewConnections, .5), "x-p50-new")
		b.ReportMetric(ratio(results.NewConnections, .99), "x-p99-new")
		b.ReportMetric(ratio(results.ReusedConnections, .5), "x-p50-reused")
		b.ReportMetric(ratio(results.ReusedConnections, .99), "x-p99-reused")
		b.ReportMetric(cpuRatio, "x-cpu/req")
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func runVegeta(b *testing.B, url string, ca []byte, backends []prober.Backend, d time.Duration) *sideFigures {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	var targets []vegeta.Target
	for _, be := range backends {
		targets = append(targets, vegeta.Target{Method: http.MethodGet, URL: url + be.Path,
			Header: http.Header{"Accept": []string{"application/json"}, "Authorization": []string{"Bearer bench-token"}}})
	}
	f := newSideFigures()
	var mu sync.Mutex
	var wg sync.WaitGroup
	const perSecond = 300
	u0 := spent()
	for i, ct := range results.ConnectionTypes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := vegeta.NewAttacker(vegeta.KeepAlive(ct == results.ReusedConnections),
				vegeta.TLSConfig(&tls.Config{RootCAs: pool}), vegeta.HTTP2(false))
			if *vsVegetaStagger && i > 0 {
				// The second attack starts half a tick after the first: the
				// two then send one request every 1/600 s, new and reused in
				// turn, the instants at which the prober's six pollers,
				// spread over their interval, send theirs. Started
				// together, each tick would send two requests at once.
				time.Sleep(time.Second / perSecond / 2)
			}
			began := time.Now()
			for res := range a.Attack(vegeta.NewStaticTargeter(targets...), vegeta.Rate{Freq: perSecond, Per: time.Second}, d, string(ct)) {
				mu.Lock()
				f.n++
				if res.Error != "" {
					f.failed++
				} else if res.Timestamp.Sub(began) >= time.Duration(warm*float64(d)) {
					f.lat[ct] = append(f.lat[ct], res.Latency)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	f.usage = u0.since()
	return f
}

// reproTurns numbers runRepro's turns, naming the files -vs-vegeta-keep keeps.
var reproTurns int

func runRepro(b *testing.B, url string, ca []byte, backends []prober.Backend, d time.Duration) *sideFigures {
	rc := &rest.Config{Host: url, BearerToken: "bench-token", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	p, err := prober.New(rc, prober.WithBackends(backends...), prober.WithInterval(10*time.Millisecond),
		prober.WithProbeTimeout(5*time.Second), prober.WithDuration(d))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	dir := b.TempDir()
	if *vsVegetaKeep != "" {
		dir = *vsVegetaKeep
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	reproTurns++
	w, err := results.CreateJSONL(filepath.Join(dir, fmt.Sprintf("samples-%d.jsonl", reproTurns)))
	if err != nil {
		b.Fatal(err)
	}
	f := newSideFigures()
	u0 := spent()
	ch := p.Run(context.Background())
	var began time.Time
	for s := range ch {
		if err := w.Write(&s); err != nil {
			b.Fatal(err)
		}
		if began.IsZero() {
			began = p.Base()
		}
		f.n++
		if s.Failed() {
			f.failed++
		} else if s.Start.Sub(began) >= time.Duration(warm*float64(d)) {
			f.lat[s.Connection] = append(f.lat[s.Connection], s.Duration)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	f.usage = u0.since()
	return f
}

// BenchmarkPollerCPU measures the prober's CPU at the default 10 Hz with
// the three legacy backends (6 pollers) and with the default backends,
// cache-* included (12 pollers), against the local TLS server in another
// process: CPU per second of probing (a share of one core) and per request,
// GC cycles per second and bytes allocated per request.
func BenchmarkPollerCPU(b *testing.B) {
	url, ca := startBenchServer(b)
	rc := &rest.Config{Host: url, BearerToken: "bench-token", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	d := *vsVegetaDuration
	for _, names := range [][]string{{"kube-api", "openshift-api", "oauth-api"}, prober.DefaultBackendNames} {
		backends, err := prober.LookupBackends(names)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("pollers=%d", 2*len(backends)), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				p, err := prober.New(rc, prober.WithBackends(backends...), prober.WithDuration(d))
				if err != nil {
					b.Fatal(err)
				}
				u0 := spent()
				n := 0
				for s := range p.Run(context.Background()) {
					n++
					if s.Failed() {
						b.Errorf("%s: %s", s.Name(), s.Error)
					}
				}
				u := u0.since()
				p.Close()
				b.ReportMetric(100*u.cpu.Seconds()/d.Seconds(), "%-of-a-core")
				b.ReportMetric(ms(u.cpu)/float64(n), "ms-cpu/req")
				b.ReportMetric(float64(u.gcs)/u.wall.Seconds(), "gc/s")
				b.ReportMetric(float64(u.bytes)/1024/float64(n), "KB/req")
			}
		})
	}
}
