// Command benchvegeta compares the `repro probe` CLI process with vegeta
// v12.13.0 processes at the same rate against one local TLS HTTP/1.1 target,
// as issue 32 asks: CPU per request (the child's rusage user+sys), peak RSS
// (the child's Maxrss) and p50/p99 per connection type, in interleaved rounds.
//
// Run it with `make bench-vegeta`. It is a measurement, not a test: nothing
// here asserts a time; it prints the table and the ratios, and fails only if
// a tool's request count disagrees with what the target counted.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/csv"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// paths are the three backends' paths (openshift/origin
// pkg/monitortests/kubeapiserver/disruptionlegacyapiservers) that both tools
// send, so both get the same responses.
var paths = []string{
	"/api/v1/namespaces/default",
	"/apis/image.openshift.io/v1/namespaces/default/imagestreams",
	"/apis/oauth.openshift.io/v1/oauthclients",
}

const vegetaModule = "github.com/tsenart/vegeta/v12@v12.13.0"

func main() {
	serve := flag.String("serve", "", "internal: serve the TLS target with this cert directory")
	rounds := flag.Int("rounds", 3, "rounds; each runs repro and the vegeta pair once, order alternating")
	dur := flag.Duration("duration", 15*time.Second, "how long each tool runs in a round")
	cache := flag.String("cache", "", "where vegeta and repro are built (default the user cache dir)")
	keep := flag.String("keep", "", "keep every run's output here (default a temporary dir, removed)")
	reproBin := flag.String("repro", "", "measure this repro binary instead of building ./cmd/repro (a variant, e.g. without tick staggering)")
	reproEnv := flag.String("repro-env", "", "extra environment for repro, comma-separated K=V (e.g. GOGC=200)")
	flag.Parse()
	if *serve != "" {
		serveTarget(*serve)
		return
	}
	if err := run(*rounds, *dur, *cache, *keep, *reproBin, *reproEnv); err != nil {
		log.Fatal(err)
	}
}

// tool is one measured process's outcome.
type tool struct {
	cpu      time.Duration // rusage user+sys
	maxRSSKB int64
	requests int             // as the tool recorded them
	ids      map[string]bool // repro's samples' Audit-IDs
	counted  int             // as the target counted them
	failed   int
	lat      map[string][]float64 // ms, by connection type "new"/"reused"
}

func run(rounds int, dur time.Duration, cache, keep, repro, reproEnv string) error {
	if cache == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return err
		}
		cache = filepath.Join(d, "repro-bench-vegeta")
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	work := keep
	if work == "" {
		d, err := os.MkdirTemp("", "benchvegeta")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	vegeta := filepath.Join(cache, "vegeta")
	if _, err := os.Stat(vegeta); err != nil {
		log.Printf("building %s into %s", vegetaModule, cache)
		c := exec.Command("go", "install", vegetaModule)
		// Outside the repo's module, so its go.mod neither pins nor gains vegeta.
		c.Dir = cache
		c.Env = append(os.Environ(), "GOBIN="+cache, "GOFLAGS=-mod=mod")
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("building vegeta: %w", err)
		}
	}
	if repro == "" {
		repro = filepath.Join(cache, "repro")
		log.Printf("building repro into %s", repro)
		// The same flags as `make build`, so the measured binary is the shipped one.
		c := exec.Command("go", "build", "-ldflags=-s -w", "-o", repro, "./cmd/repro")
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("building repro: %w", err)
		}
	}

	certs := filepath.Join(work, "certs")
	if err := writeCerts(certs); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv := exec.Command(self, "-serve", certs)
	srv.Stderr = os.Stderr
	out, err := srv.StdoutPipe()
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { _ = srv.Process.Signal(syscall.SIGTERM); _ = srv.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("target did not start: %w", err)
	}
	addr := strings.TrimSpace(line)
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, addr, filepath.Join(certs, "ca.pem")); err != nil {
		return err
	}
	targets := filepath.Join(work, "targets.txt")
	var tb strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&tb, "GET https://%s%s\nAuthorization: Bearer bench\n\n", addr, p)
	}
	if err := os.WriteFile(targets, []byte(tb.String()), 0o644); err != nil {
		return err
	}

	up, _ := os.ReadFile("/proc/loadavg")
	log.Printf("target %s; %d rounds of %v per tool; loadavg before: %s", addr, rounds, dur, strings.TrimSpace(string(up)))
	var rs, vs []tool
	for r := 0; r < rounds; r++ {
		order := []string{"repro", "vegeta"}
		if r%2 == 1 {
			order = []string{"vegeta", "repro"}
		}
		for _, name := range order {
			dir := filepath.Join(work, fmt.Sprintf("round%d-%s", r+1, name))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			before, err := count(addr, certs)
			if err != nil {
				return err
			}
			var t tool
			if name == "repro" {
				t, err = runRepro(repro, kubeconfig, dir, dur, reproEnv)
			} else {
				var ts [2]tool
				ts, err = runVegetaPair(vegeta, targets, filepath.Join(certs, "ca.pem"), dir, dur)
				t = merge(ts)
				if err == nil {
					log.Printf("round %d vegeta: peak RSS %d + %d MB", r+1, ts[0].maxRSSKB/1024, ts[1].maxRSSKB/1024)
				}
			}
			if err != nil {
				return fmt.Errorf("round %d %s: %w", r+1, name, err)
			}
			after, err := count(addr, certs)
			if err != nil {
				return err
			}
			t.counted = int(after - before)
			log.Printf("round %d %s: %s", r+1, name, t.line())
			if name == "repro" {
				// Before polling, repro checks each backend once (not a
				// sample); every other request the target answered must
				// have its sample, found by its Audit-ID.
				seen, err := targetIDs(addr, certs)
				if err != nil {
					return err
				}
				unrecorded := 0
				for _, id := range seen {
					if !t.ids[id] {
						unrecorded++
					}
				}
				if unrecorded != len(paths) || len(seen)-unrecorded != t.requests {
					return fmt.Errorf("round %d repro: the target answered %d requests, %d without a sample (the %d checks expected); repro recorded %d", r+1, len(seen), unrecorded, len(paths), t.requests)
				}
				// The target's count also holds repro's client-go
				// preflight reads (no Audit-ID); the pollers' requests
				// are the ones with one.
				t.counted = len(seen) - len(paths)
			} else if t.counted != t.requests {
				return fmt.Errorf("round %d %s: the target counted %d requests, the tool recorded %d", r+1, name, t.counted, t.requests)
			}
			if name == "repro" {
				rs = append(rs, t)
			} else {
				vs = append(vs, t)
			}
		}
	}
	up, _ = os.ReadFile("/proc/loadavg")
	log.Printf("loadavg after: %s", strings.TrimSpace(string(up)))
	printTable(rs, vs)
	return nil
}

func (t tool) line() string {
	n, r := t.lat["new"], t.lat["reused"]
	return fmt.Sprintf("%d requests (target counted %d, %d failed), CPU %.3f ms/req, peak RSS %d MB, p50/p99 new %.2f/%.2f ms, reused %.2f/%.2f ms",
		t.requests, t.counted, t.failed, t.cpuPerReq(), t.maxRSSKB/1024, pct(n, 50), pct(n, 99), pct(r, 50), pct(r, 99))
}

func (t tool) cpuPerReq() float64 {
	if t.requests == 0 {
		return 0
	}
	return float64(t.cpu) / float64(time.Millisecond) / float64(t.requests)
}

func merge(ts [2]tool) tool {
	m := tool{lat: map[string][]float64{}}
	for _, t := range ts {
		m.cpu += t.cpu
		m.maxRSSKB = max(m.maxRSSKB, t.maxRSSKB)
		m.requests += t.requests
		m.failed += t.failed
		for k, v := range t.lat {
			m.lat[k] = append(m.lat[k], v...)
		}
	}
	return m
}

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

// measure runs c to completion and returns its rusage CPU and peak RSS.
func measure(c *exec.Cmd) (time.Duration, int64, error) {
	if err := c.Run(); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", filepath.Base(c.Path), err)
	}
	ru := c.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return cpu, ru.Maxrss, nil // Maxrss is in KiB on Linux
}

func runRepro(bin, kubeconfig, dir string, dur time.Duration, env string) (tool, error) {
	out := filepath.Join(dir, "results")
	c := exec.Command(bin, "probe", "--kubeconfig", kubeconfig,
		"--backends", "kube-api,openshift-api,oauth-api", "--interval", "10ms",
		"--duration", dur.String(), "--out", out)
	c.Env = os.Environ()
	if env != "" {
		c.Env = append(c.Env, strings.Split(env, ",")...)
	}
	logf, err := os.Create(filepath.Join(dir, "repro.log"))
	if err != nil {
		return tool{}, err
	}
	defer logf.Close()
	c.Stdout, c.Stderr = logf, logf
	t := tool{lat: map[string][]float64{}, ids: map[string]bool{}}
	if t.cpu, t.maxRSSKB, err = measure(c); err != nil {
		return t, err
	}
	f, err := os.Open(filepath.Join(out, "samples.jsonl"))
	if err != nil {
		return t, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s struct {
			AuditID    string  `json:"audit_id"`
			Connection string  `json:"connection"`
			Duration   float64 `json:"duration_ms"`
			Status     int     `json:"status"`
			ErrorClass string  `json:"error_class"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return t, err
		}
		t.requests++
		t.ids[s.AuditID] = true
		if s.ErrorClass != "" || s.Status != 200 {
			t.failed++
			continue
		}
		t.lat[s.Connection] = append(t.lat[s.Connection], s.Duration)
	}
	return t, sc.Err()
}

// runVegetaPair runs the keep-alive and the new-connection attacks at once,
// 300/s each, as the prober's reused and new pollers run at once.
func runVegetaPair(bin, targets, ca, dir string, dur time.Duration) ([2]tool, error) {
	var ts [2]tool
	errs := make(chan error, 2)
	for i, ka := range []bool{false, true} {
		go func(i int, ka bool) {
			res := filepath.Join(dir, fmt.Sprintf("vegeta-keepalive-%v.bin", ka))
			c := exec.Command(bin, "attack", "-rate", "300/s", "-duration", dur.String(),
				"-targets", targets, "-root-certs", ca, "-http2=false",
				"-keepalive="+strconv.FormatBool(ka), "-output", res)
			c.Stderr = os.Stderr
			t := tool{lat: map[string][]float64{}}
			var err error
			if t.cpu, t.maxRSSKB, err = measure(c); err == nil {
				err = readVegeta(bin, res, ka, &t)
			}
			ts[i] = t
			errs <- err
		}(i, ka)
	}
	for range 2 {
		if err := <-errs; err != nil {
			return ts, err
		}
	}
	return ts, nil
}

func readVegeta(bin, res string, ka bool, t *tool) error {
	var buf bytes.Buffer
	c := exec.Command(bin, "encode", "--to", "csv", res)
	c.Stdout, c.Stderr = &buf, os.Stderr
	if err := c.Run(); err != nil {
		return err
	}
	conn := "new"
	if ka {
		conn = "reused"
	}
	r := csv.NewReader(&buf)
	r.FieldsPerRecord = -1
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		// timestamp, code, latency (ns), bytes out, bytes in, error, ...
		t.requests++
		ns, _ := strconv.ParseFloat(rec[2], 64)
		if rec[1] != "200" || rec[5] != "" {
			t.failed++
			continue
		}
		t.lat[conn] = append(t.lat[conn], ns/1e6)
	}
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func span(f func(tool) float64, ts []tool, unit string) string {
	lo, hi := f(ts[0]), f(ts[0])
	for _, t := range ts[1:] {
		lo, hi = min(lo, f(t)), max(hi, f(t))
	}
	return fmt.Sprintf("%.2f–%.2f %s", lo, hi, unit)
}

func printTable(rs, vs []tool) {
	if len(rs) == 0 || len(vs) == 0 {
		return
	}
	figs := []struct {
		name string
		unit string
		f    func(tool) float64
	}{
		{"CPU per request (user+sys)", "ms", tool.cpuPerReq},
		{"p50 new", "ms", func(t tool) float64 { return pct(t.lat["new"], 50) }},
		{"p50 reused", "ms", func(t tool) float64 { return pct(t.lat["reused"], 50) }},
		{"p99 new", "ms", func(t tool) float64 { return pct(t.lat["new"], 99) }},
		{"p99 reused", "ms", func(t tool) float64 { return pct(t.lat["reused"], 99) }},
		{"peak RSS (per process)", "MB", func(t tool) float64 { return float64(t.maxRSSKB) / 1024 }},
	}
	fmt.Println("| figure | vegeta | repro | ratio (per round) |")
	fmt.Println("|---|---|---|---|")
	for _, fg := range figs {
		var rat []string
		for i := range min(len(rs), len(vs)) {
			rat = append(rat, ratio(fg.f(rs[i]), fg.f(vs[i])))
		}
		fmt.Printf("| %s | %s | %s | %s |\n", fg.name, span(fg.f, vs, fg.unit), span(fg.f, rs, fg.unit), strings.Join(rat, " "))
	}
}

// targetIDs returns the Audit-IDs the target received since the last call.
func targetIDs(addr, certs string) ([]string, error) {
	b, err := get(addr, certs, "/ids")
	if err != nil {
		return nil, err
	}
	var ids []string
	return ids, json.Unmarshal(b, &ids)
}

// count asks the target how many backend requests it has answered.
func count(addr, certs string) (int64, error) {
	b, err := get(addr, certs, "/count")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

func get(addr, certs, path string) ([]byte, error) {
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(filepath.Join(certs, "ca.pem"))
	if err != nil {
		return nil, err
	}
	pool.AppendCertsFromPEM(ca)
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer cl.CloseIdleConnections()
	resp, err := cl.Get("https://" + addr + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// serveTarget is the stand-in apiserver, in its own process so that neither
// tool's rusage counts it: HTTP/1.1 only (as origin's sampler negotiates),
// a small JSON body on the three paths, every answered request counted.
func serveTarget(certs string) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(certs, "server.pem"), filepath.Join(certs, "server-key.pem"))
	if err != nil {
		log.Fatal(err)
	}
	var n atomic.Int64
	var mu sync.Mutex
	var ids []string // Audit-IDs in arrival order, for repro's nothing-dropped check
	body := []byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default","uid":"6f1c1e9e-0000-4000-8000-000000000000","resourceVersion":"42"},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`)
	mux := http.NewServeMux()
	for _, p := range paths {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			if id := r.Header.Get("Audit-ID"); id != "" {
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			} else if os.Getenv("BENCH_DEBUG") != "" {
				log.Printf("no Audit-ID: %s %s", r.UserAgent(), r.URL)
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		})
	}
	mux.HandleFunc("/count", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, n.Load()) })
	mux.HandleFunc("/ids", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(ids)
		ids = ids[:0]
	})
	// repro's preflight reads /version before it polls.
	mux.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"major":"1","minor":"30","gitVersion":"v1.30.4"}`))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		log.Printf("target: unexpected request %s %s", r.Method, r.URL)
		http.NotFound(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{
		Handler:      mux,
		TLSConfig:    &tls.Config{Certificates: []tls.Certificate{cert}},
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}, // no HTTP/2
		ErrorLog:     log.New(io.Discard, "", 0),
	}
	fmt.Println(ln.Addr().String())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.ServeTLS(ln, "", ""); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

func writeCerts(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caT := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "benchvegeta CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leafT := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafT, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	files := map[string]*pem.Block{
		"ca.pem":         {Type: "CERTIFICATE", Bytes: caDER},
		"server.pem":     {Type: "CERTIFICATE", Bytes: leafDER},
		"server-key.pem": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(b), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func writeKubeconfig(path, addr, ca string) error {
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster:
    server: https://%s
    certificate-authority: %s
users:
- name: bench
  user:
    token: bench
contexts:
- name: bench
  context: {cluster: bench, user: bench}
current-context: bench
`, addr, ca)
	return os.WriteFile(path, []byte(kc), 0o600)
}
