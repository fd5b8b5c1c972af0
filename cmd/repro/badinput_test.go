package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/repro-tools/repro/results"
)

// The bad-input suite runs the built repro the way a user does, with
// inputs a careful new user or a hostile one might give, and checks for
// each the exit code and the words of the one error line: the flag or file
// it names and what to do. Nothing here starts a lab or builds one: lab
// cases are dry runs or fail validation, cluster cases talk to local
// httptest TLS servers. To add a case, add a row to badInputCases (reader
// faults: add rows with the fixtures of badInputFixtures).

// cliOnce builds the CLI once for these tests; TestMain's binary is used
// when it built one, REPRO_TEST_BIN when set.
var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

func cli(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		// REPRO_TEST_BIN runs the suite against another build (e.g. an
		// older one, to see which cases it fails).
		if p := os.Getenv("REPRO_TEST_BIN"); p != "" {
			cliPath = p
			return
		}
		if reproBin != "" {
			if _, err := os.Stat(reproBin); err == nil {
				cliPath = reproBin
				return
			}
		}
		dir, err := os.MkdirTemp("", "repro-badinput-")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "repro")
		out, err := exec.Command("go", "build", "-o", cliPath, ".").CombinedOutput()
		if err != nil {
			cliErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliPath
}

// cliResult is one run of the CLI.
type cliResult struct {
	code           int
	stdout, stderr string
	timedOut       bool
}

// runCLI runs the CLI with env (nothing of the caller's environment but
// PATH and the Go and lab caches) and a bound on how long it may take.
func runCLI(t *testing.T, env []string, limit time.Duration, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli(t), args...)
	cmd.Env = env
	// A default results folder (./repro-results) lands in the test's temp
	// dir, never in the source tree.
	cmd.Dir = t.TempDir()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cliResult{stdout: out.String(), stderr: errb.String(), timedOut: ctx.Err() != nil}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running repro: %v", err)
	}
	return r
}

// cleanEnv is an environment with home as HOME and no way to a cluster
// (no KUBECONFIG, not in a pod); the user's caches are kept so a lab dry
// run can say what is built.
func cleanEnv(home string, extra ...string) []string {
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	for _, k := range []string{"XDG_CACHE_HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if _, ok := os.LookupEnv("XDG_CACHE_HOME"); !ok {
		if h, err := os.UserHomeDir(); err == nil {
			env = append(env, "XDG_CACHE_HOME="+filepath.Join(h, ".cache"))
		}
	}
	return append(env, extra...)
}

// Verdicts of the suite's cases, for the count at the end.
const (
	clear     = "clear"     // one clear line before this work
	tolerated = "tolerated" // accepted sensibly (exit 0, or a sensible default)
	fixed     = "fixed"     // confusing, silent or hanging before this work
)

type badInputCase struct {
	name    string
	args    []string // {NAME} is replaced by a fixture
	env     []string // added to the clean environment, {NAME} replaced
	code    int
	words   []string // each must appear in stderr (case-insensitive)
	verdict string
}

// badInputFixtures makes the files and servers the cases name.
func badInputFixtures(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	f := map[string]string{"TMP": dir}
	mk := func(name, rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		f[name] = p
	}
	mk("FILE", "plain.txt", "hello\n")
	mk("BADYAML", "bad.kubeconfig", "{{{ not yaml")
	mk("EMPTYKC", "empty.kubeconfig", "")
	mk("BADJSON", "bad.json", "[")
	mk("NOTRUN", "notrun/samples.jsonl", "not json\n")
	f["EMPTYDIR"] = filepath.Join(dir, "emptydir")
	f["NOFILE"] = filepath.Join(dir, "does-not-exist")
	f["HOME"] = filepath.Join(dir, "home")
	for _, d := range []string{f["EMPTYDIR"], f["HOME"]} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Reader faults (issue 22: 5, 6, 10): results folders and interval
	// files that are not what they claim.
	mk("LINES", "ones/samples.jsonl", strings.Repeat("{}\n", 1000))
	mk("LONGLINE", "longline/samples.jsonl", `{"backend":"`+strings.Repeat("a", 2<<20)+`"}`+"\n")
	mk("EMPTYSAMPLES", "emptyrun/samples.jsonl", "")
	mk("EMPTYINT", "interrupted/samples.jsonl", "")
	interrupted := results.NewRun("run", []string{"repro", "run"}, time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	interrupted.Finish(interrupted.Start.Add(time.Second), results.StatusInterrupted)
	runJSON, err := json.Marshal(interrupted)
	if err != nil {
		t.Fatal(err)
	}
	mk("EMPTYINTRUN", "interrupted/run.json", string(runJSON))
	mk("BRACKETS", "brackets/e2e-timelines_spyglass_1.json", "[[[[")
	ivItem := func(from, to, msg string) string {
		return `{"level":"Error","display":true,"source":"Disruption","locator":{"type":"Disruption","keys":{"backend-disruption-name":"kube-api-new-connections","connection":"new","disruption":"openshift-tests"}},` +
			`"message":{"reason":"DisruptionBegan","cause":"","humanMessage":"` + msg + `","annotations":{}},"from":"` + from + `","to":"` + to + `"}`
	}
	mk("HUGEMSG", "hugemsg/e2e-timelines_spyglass_1.json", `{"items":[`+ivItem("2026-03-04T10:00:10Z", "2026-03-04T10:00:12Z", strings.Repeat("x", 5<<20))+`]}`)
	mk("LONGMSG", "longmsg/e2e-timelines_spyglass_1.json", `{"items":[`+ivItem("2026-03-04T10:00:10Z", "2026-03-04T10:00:12Z", strings.Repeat("x", 100<<10))+`]}`)
	mk("BACKWARDS", "backwards/e2e-timelines_spyglass_1.json", `{"items":[`+ivItem("2026-03-04T10:00:10Z", "2026-03-04T10:00:12Z", "a")+`,`+ivItem("2026-03-04T10:00:20Z", "2026-03-04T10:00:15Z", "b")+`]}`)
	for _, d := range []string{"fiforun", "zerorun", "fifoimport"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f["FIFORUN"] = filepath.Join(dir, "fiforun")
	if err := syscall.Mkfifo(filepath.Join(dir, "fiforun", "samples.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	f["ZERORUN"] = filepath.Join(dir, "zerorun")
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zerorun", "samples.jsonl")); err != nil {
		t.Fatal(err)
	}
	f["FIFOIMPORT"] = filepath.Join(dir, "fifoimport", "e2e-timelines_spyglass_1.json")
	if err := syscall.Mkfifo(f["FIFOIMPORT"], 0o644); err != nil {
		t.Fatal(err)
	}
	f["FIFO"] = filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(f["FIFO"], 0o644); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/version" {
			fmt.Fprint(w, `{"major":"1","minor":"34","gitVersion":"v1.34.4"}`)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(ts.Close)
	f["SERVER"] = ts.URL
	f["HOSTPORT"] = strings.TrimPrefix(ts.URL, "https://")
	mk("CA", "ca.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})))
	mk("KC", "named.kubeconfig", kubeconfigFor(ts.URL, f["CA"], "NAMED-TOKEN", ""))
	return f
}

// kubeconfigFor is a kubeconfig with one context "ctx" for server whose
// user authenticates with token; extraUser is added to the user's entry.
func kubeconfigFor(server, caFile, token, extraUser string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: u
  user:
    token: %s
%scontexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`, server, caFile, token, extraUser)
}

var badInputCases = []badInputCase{
	// run: its own flags.
	{"run no scenario", []string{"run"}, nil, 1, []string{`"scenario"`}, clear},
	{"run unknown scenario", []string{"run", "--scenario", "nope"}, nil, 1, []string{"nope", "repro scenarios"}, clear},
	{"run iterations 0", []string{"run", "--scenario", "apiserver-rollout", "--iterations", "0"}, nil, 1, []string{"--iterations", "1..1000"}, clear},
	{"run iterations huge", []string{"run", "--scenario", "apiserver-rollout", "--iterations", "99999999999", "--dry-run"}, nil, 1, []string{"--iterations", "1..1000"}, fixed},
	{"run iterations overflow", []string{"run", "--scenario", "apiserver-rollout", "--iterations", "99999999999999999999999"}, nil, 1, []string{"--iterations", "out of range"}, clear},
	{"run iterations not a number", []string{"run", "--scenario", "apiserver-rollout", "--iterations", "two"}, nil, 1, []string{"--iterations", "two"}, clear},
	{"run max-disruption negative", []string{"run", "--scenario", "apiserver-rollout", "--max-disruption", "-1s"}, nil, 1, []string{"--max-disruption", "negative"}, clear},
	{"run baseline negative", []string{"run", "--scenario", "apiserver-rollout", "--baseline", "-1s"}, nil, 1, []string{"--baseline", "negative"}, clear},
	{"run cool-down negative", []string{"run", "--scenario", "apiserver-rollout", "--cool-down", "-1s"}, nil, 1, []string{"--cool-down", "negative"}, clear},
	{"run follow-timeout negative", []string{"run", "--scenario", "apiserver-rollout", "--follow-timeout", "-1m"}, nil, 1, []string{"--follow-timeout", "negative"}, clear},
	{"run baseline not a duration", []string{"run", "--scenario", "apiserver-rollout", "--baseline", "ten"}, nil, 1, []string{"--baseline", "ten"}, clear},
	{"run interval too small", []string{"run", "--scenario", "apiserver-rollout", "--interval", "1ms"}, nil, 1, []string{"--interval", "minimum"}, clear},
	{"run probe-timeout 1ns", []string{"run", "--scenario", "apiserver-rollout", "--probe-timeout", "1ns"}, nil, 1, []string{"--probe-timeout", "minimum of 100ms"}, fixed},
	{"run probe-timeout negative", []string{"run", "--scenario", "apiserver-rollout", "--probe-timeout", "-1s"}, nil, 1, []string{"--probe-timeout", "minimum"}, clear},
	{"run unknown backend", []string{"run", "--scenario", "apiserver-rollout", "--backends", "nope"}, nil, 1, []string{"--backends", "nope", "valid"}, clear},
	{"run unknown vantage", []string{"run", "--scenario", "apiserver-rollout", "--vantage", "nope", "--dry-run"}, nil, 1, []string{"--vantage", "nope", "external-lb"}, clear},
	{"run vantage internal-lb on lab", []string{"run", "--scenario", "apiserver-rollout", "--vantage", "internal-lb", "--lab", "--lab-lb", "proxy", "--nodes", "0"}, nil, 1, []string{"--nodes"}, fixed},
	{"run unknown flag", []string{"run", "--scenario", "apiserver-rollout", "--bogus"}, nil, 1, []string{"--bogus"}, clear},
	{"run positional arg", []string{"run", "--scenario", "apiserver-rollout", "extra"}, nil, 1, []string{"extra"}, clear},
	// run on the lab: every lab option checked before any build.
	{"lab dry run", []string{"run", "--scenario", "apiserver-rollout", "--dry-run"}, nil, 0, nil, fixed}, // stdout checked in TestDryRunIgnoresFoundKubeconfig
	{"lab nodes -2", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--nodes", "-2"}, nil, 1, []string{"--nodes", "1..9"}, fixed},
	{"lab nodes 0", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--nodes", "0"}, nil, 1, []string{"--nodes", "1..9"}, fixed},
	{"lab nodes 10", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--nodes", "10"}, nil, 1, []string{"--nodes", "1..9"}, fixed},
	{"lab kube version made up", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--lab-kube-version", "v9.9.9"}, nil, 1, []string{"--lab-kube-version", "v9.9.9", "v1.30.14"}, fixed},
	{"lab shutdown-delay negative", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--shutdown-delay", "-5s"}, nil, 1, []string{"--shutdown-delay", "negative"}, fixed},
	{"lab grace below delay, auto lb", []string{"run", "--scenario", "apiserver-rollout", "--shutdown-delay", "30s", "--grace-period", "10s"}, nil, 1, []string{"--grace-period", "--shutdown-delay"}, fixed},
	{"lab grace below delay, dry run", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--shutdown-delay", "30s", "--grace-period", "10s"}, nil, 1, []string{"--grace-period", "--shutdown-delay"}, fixed},
	{"lab listen not an IP", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--listen", "999.1.1.1:0"}, nil, 1, []string{"999.1.1.1", "127.0.0.1:0"}, fixed},
	{"lab listen no port", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--listen", "127.0.0.1"}, nil, 1, []string{"127.0.0.1", "HOST:PORT"}, fixed},
	{"lab listen port too big", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--listen", "127.0.0.1:70000"}, nil, 1, []string{"70000", "0..65535"}, fixed},
	{"lab min-ready-time negative", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--min-ready-time", "-1s"}, nil, 1, []string{"--min-ready-time", "negative"}, fixed},
	{"lab health interval negative", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--lb-health-interval", "-1s"}, nil, 1, []string{"--lb-health-interval", "negative"}, fixed},
	{"lab health timeout negative", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--lb-health-timeout", "-1s"}, nil, 1, []string{"--lb-health-timeout", "negative"}, fixed},
	{"lab healthy threshold 0", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--lb-healthy-threshold", "0"}, nil, 1, []string{"--lb-healthy-threshold", "at least 1"}, fixed},
	{"lab unhealthy threshold -1", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--lb-unhealthy-threshold", "-1"}, nil, 1, []string{"--lb-unhealthy-threshold", "at least 1"}, fixed},
	{"lab probe-interval negative", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--probe-interval", "-1s"}, nil, 1, []string{"--probe-interval", "negative"}, fixed},
	{"lab start-timeout negative", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--start-timeout", "-1s"}, nil, 1, []string{"--start-timeout", "negative"}, fixed},
	{"lab kube-apiserver missing", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--kube-apiserver", "{NOFILE}"}, nil, 1, []string{"kube-apiserver binary", "does-not-exist", "executable"}, fixed},
	{"lab kube-apiserver not executable", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--kube-apiserver", "{FILE}"}, nil, 1, []string{"plain.txt", "not an executable"}, fixed},
	{"lab etcd is a folder", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--etcd", "{EMPTYDIR}"}, nil, 1, []string{"etcd binary", "not an executable"}, fixed},
	{"lab both apiserver choices", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--kube-apiserver", "/bin/true", "--lab-kube-version", "v1.30.14"}, nil, 1, []string{"--kube-apiserver", "--lab-kube-version", "give one"}, fixed},
	{"lab unknown timing", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--lab-timing", "slow"}, nil, 1, []string{"--lab-timing", "slow", "fast"}, clear},
	{"lab unknown profile", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--lab-profile", "nope"}, nil, 1, []string{"--lab-profile", "nope", "healthy"}, clear},
	{"lab unknown knob", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--lab-set", "nope=1"}, nil, 1, []string{"--lab-set", "nope"}, clear},
	{"lab knob without value", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--lab-set", "etcd-stall"}, nil, 1, []string{"--lab-set", "etcd-stall"}, clear},
	{"lab unknown lb", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--lab-lb", "nope"}, nil, 1, []string{"--lab-lb", "nope", "proxy"}, clear},
	{"lab etcd-stall-on unknown node", []string{"run", "--scenario", "apiserver-rollout", "--dry-run", "--lab-set", "etcd-stall-on=master-7"}, nil, 1, []string{"master-7"}, fixed},
	// run against a cluster: how it is named.
	{"run empty kubeconfig flag", []string{"run", "--scenario", "apiserver-rollout", "--kubeconfig", ""}, nil, 1, []string{"--kubeconfig is empty", "path of a kubeconfig"}, fixed},
	{"run missing kubeconfig", []string{"run", "--scenario", "apiserver-rollout", "--kubeconfig", "{NOFILE}", "--dry-run"}, nil, 1, []string{"--kubeconfig", "does-not-exist", "existing file"}, clear},
	{"run kubeconfig is a folder", []string{"run", "--scenario", "apiserver-rollout", "--kubeconfig", "{EMPTYDIR}", "--dry-run"}, nil, 1, []string{"--kubeconfig", "not a regular file"}, fixed},
	{"run kubeconfig is a FIFO", []string{"run", "--scenario", "apiserver-rollout", "--kubeconfig", "{FIFO}", "--dry-run"}, nil, 1, []string{"--kubeconfig", "not a regular file"}, fixed},
	{"run kubeconfig not YAML", []string{"run", "--scenario", "apiserver-rollout", "--kubeconfig", "{BADYAML}", "--dry-run"}, nil, 1, []string{"kubeconfig", "bad.kubeconfig"}, clear},
	{"run kubeconfig empty file", []string{"run", "--scenario", "apiserver-rollout", "--kubeconfig", "{EMPTYKC}", "--dry-run"}, nil, 1, []string{"kubeconfig"}, clear},
	{"run KUBECONFIG missing", []string{"run", "--scenario", "apiserver-rollout", "--dry-run"}, []string{"KUBECONFIG={NOFILE}"}, 1, []string{"kubeconfig"}, clear},
	{"run unknown context", []string{"run", "--scenario", "apiserver-rollout", "--kubeconfig", "{KC}", "--context", "nope", "--dry-run"}, nil, 1, []string{"--context nope", "get-contexts"}, fixed},
	{"run empty context", []string{"run", "--scenario", "apiserver-rollout", "--context", ""}, nil, 1, []string{"--context is empty"}, fixed},
	{"run empty server", []string{"run", "--scenario", "apiserver-rollout", "--server", ""}, nil, 1, []string{"--server is empty", "https://HOST:PORT"}, fixed},
	{"run server bad scheme", []string{"run", "--scenario", "apiserver-rollout", "--server", "ftp://x:1", "--dry-run"}, nil, 1, []string{"--server", "ftp", "https://HOST:PORT"}, fixed},
	{"run server not a URL", []string{"run", "--scenario", "apiserver-rollout", "--server", "https://", "--dry-run"}, nil, 1, []string{"--server", "https://HOST:PORT"}, fixed},
	{"run server over plain http", []string{"run", "--scenario", "apiserver-rollout", "--server", "http://{HOSTPORT}", "--dry-run"}, nil, 1, []string{"plain HTTP", "https://"}, fixed},
	{"run CA file missing", []string{"run", "--scenario", "apiserver-rollout", "--server", "{SERVER}", "--certificate-authority", "{NOFILE}", "--dry-run"}, nil, 1, []string{"--certificate-authority", "does-not-exist"}, fixed},
	{"run client key missing", []string{"run", "--scenario", "apiserver-rollout", "--server", "{SERVER}", "--client-key", "{NOFILE}", "--dry-run"}, nil, 1, []string{"--client-key", "does-not-exist"}, fixed},
	{"run empty token", []string{"run", "--scenario", "apiserver-rollout", "--server", "{SERVER}", "--token", ""}, nil, 1, []string{"--token is empty"}, fixed},
	{"run server untrusted cert", []string{"run", "--scenario", "apiserver-rollout", "--server", "{SERVER}", "--dry-run"}, nil, 1, []string{"x509"}, clear},
	{"run live needs yes", []string{"run", "--scenario", "apiserver-rollout", "--server", "{SERVER}", "--certificate-authority", "{CA}", "--dry-run"}, nil, 1, []string{"checking permissions"}, clear},
	// probe.
	{"probe no duration", []string{"probe"}, nil, 1, []string{"--duration", "10m"}, clear},
	{"probe negative duration", []string{"probe", "--duration", "-1s"}, nil, 1, []string{"--duration", "positive"}, clear},
	{"probe interval too small", []string{"probe", "--duration", "1s", "--interval", "1ms"}, nil, 1, []string{"--interval", "minimum"}, clear},
	{"probe probe-timeout 1ns", []string{"probe", "--duration", "1s", "--probe-timeout", "1ns"}, nil, 1, []string{"--probe-timeout", "minimum of 100ms"}, fixed},
	{"probe unknown backend", []string{"probe", "--duration", "1s", "--backends", "nope"}, nil, 1, []string{"--backends", "nope"}, clear},
	{"probe no kubeconfig", []string{"probe", "--duration", "1s"}, nil, 1, []string{"no kubeconfig found", "--kubeconfig"}, clear},
	{"probe empty kubeconfig flag", []string{"probe", "--duration", "1s", "--kubeconfig", ""}, nil, 1, []string{"--kubeconfig is empty"}, fixed},
	{"probe out is a file", []string{"probe", "--duration", "1s", "--kubeconfig", "{KC}", "--out", "{FILE}"}, nil, 1, []string{"plain.txt"}, clear},
	{"probe http server", []string{"probe", "--duration", "1s", "--server", "http://{HOSTPORT}"}, nil, 1, []string{"plain HTTP", "https://"}, fixed},
	{"probe scheme-less server is https", []string{"probe", "--duration", "1s", "--server", "{HOSTPORT}", "--certificate-authority", "{CA}", "--backends", "kube-api"}, nil, 1, []string{"kube-api"}, fixed},
	// report, diagnose, import, compare: the readers (H2 adds reader faults).
	{"report no arg", []string{"report"}, nil, 1, []string{"accepts 1 arg"}, clear},
	{"report missing folder", []string{"report", "{NOFILE}"}, nil, 1, []string{"does-not-exist", "no such file"}, clear},
	{"report file not folder", []string{"report", "{FILE}"}, nil, 1, []string{"plain.txt", "not a directory"}, clear},
	{"report empty folder", []string{"report", "{EMPTYDIR}"}, nil, 1, []string{"samples.jsonl"}, clear},
	{"report bad flag", []string{"report", "{EMPTYDIR}", "--bogus"}, nil, 1, []string{"--bogus"}, clear},
	{"diagnose no arg", []string{"diagnose"}, nil, 1, []string{"accepts 1 arg"}, clear},
	{"diagnose missing folder", []string{"diagnose", "{NOFILE}"}, nil, 1, []string{"does-not-exist"}, clear},
	{"diagnose file not folder", []string{"diagnose", "{FILE}"}, nil, 1, []string{"plain.txt"}, clear},
	{"diagnose empty folder", []string{"diagnose", "{EMPTYDIR}"}, nil, 1, []string{"samples.jsonl"}, clear},
	{"diagnose two args", []string{"diagnose", "{EMPTYDIR}", "{EMPTYDIR}"}, nil, 1, []string{"accepts 1 arg"}, clear},
	{"import no arg", []string{"import"}, nil, 1, []string{"interval files"}, clear},
	{"import missing file", []string{"import", "{NOFILE}"}, nil, 1, []string{"does-not-exist", "interval files"}, clear},
	{"import not JSON", []string{"import", "{FILE}"}, nil, 1, []string{"nothing could be imported", "plain.txt", "line 1, column 1"}, fixed},
	{"import truncated JSON", []string{"import", "{BADJSON}"}, nil, 1, []string{"nothing could be imported", "bad.json", "line 1, column 2"}, fixed},
	{"import empty folder", []string{"import", "{EMPTYDIR}"}, nil, 1, []string{"emptydir", "no interval files"}, clear},
	{"report samples a FIFO", []string{"report", "{FIFORUN}"}, nil, 1, []string{"samples.jsonl", "named pipe (FIFO)", "give the path of a file"}, fixed},
	{"report samples /dev/zero", []string{"report", "{ZERORUN}"}, nil, 1, []string{"samples.jsonl", "character device"}, fixed},
	{"report 1000 empty objects", []string{"report", "{TMP}/ones"}, nil, 1, []string{"samples.jsonl line 1:"}, fixed},
	{"report 2 MB sample line", []string{"report", "{TMP}/longline"}, nil, 1, []string{"line 1", "longer than 1 MiB"}, fixed},
	{"report empty samples interrupted", []string{"report", "{TMP}/interrupted"}, nil, 1, []string{"is empty", "interrupted before its first request"}, fixed},
	{"report empty samples no run.json", []string{"report", "{TMP}/emptyrun"}, nil, 1, []string{"is empty", "is this a results folder"}, fixed},
	{"import interval file a FIFO", []string{"import", "{FIFOIMPORT}"}, nil, 1, []string{"named pipe (FIFO)"}, fixed},
	{"import brackets", []string{"import", "{BRACKETS}"}, nil, 1, []string{"line 1, column 2"}, fixed},
	{"import 5 MB humanMessage", []string{"import", "{HUGEMSG}"}, nil, 1, []string{"items[0] is larger than 4 MiB"}, fixed},
	{"import 100 KB humanMessage", []string{"import", "{LONGMSG}"}, nil, 1, []string{"humanMessage", "longer than 64 KiB"}, fixed},
	{"import to before from", []string{"import", "{BACKWARDS}"}, nil, 1, []string{"items[1]", "is before", `"to": null`}, fixed},
	// CI runs (issue 23): URLs, job histories and their flags.
	{"import bare prow view", []string{"import", "https://prow.ci.openshift.org/view/gs/"}, nil, 1, []string{"view/gs/BUCKET/logs/JOB/BUILD", "gs://BUCKET"}, clear},
	{"import not a prow URL", []string{"import", "https://example.com/foo"}, nil, 1, []string{"not a prow job page", "gs://BUCKET"}, clear},
	{"import job without since", []string{"import", "--job", "foo"}, nil, 1, []string{"--job needs --since"}, clear},
	{"import bad since", []string{"import", "--job", "foo", "--since", "2024-13-01"}, nil, 1, []string{"--since", "2006-01-02"}, clear},
	{"import until before since", []string{"import", "--job", "foo", "--since", "2024-07-01", "--until", "2024-06-01"}, nil, 1, []string{"--until", "before --since"}, clear},
	{"import since without job", []string{"import", "{FILE}", "--since", "2024-07-01"}, nil, 1, []string{"--since", "give --job"}, clear},
	{"import negative limit", []string{"import", "--job", "j", "--since", "2024-07-01", "--limit", "-1"}, nil, 1, []string{"--limit", "0 (all) or more"}, clear},
	{"import offline not cached", []string{"import", "--offline", "--cache-dir", "{EMPTYDIR}", "gs://test-platform-results/logs/job/123"}, nil, 1, []string{"nothing could be imported"}, clear},
	{"import bad compare-by", []string{"import", "--compare-by", "bogus", "{FILE}"}, nil, 1, []string{"--compare-by", "job, date="}, clear},
	{"import negative cache size", []string{"import", "--cache-max-size", "-1", "{FILE}"}, nil, 1, []string{"--cache-max-size", "positive size"}, fixed},
	{"import zero parallel", []string{"import", "--parallel", "0", "{FILE}"}, nil, 1, []string{"--parallel", "1 to 64"}, fixed},
	{"import negative window", []string{"import", "--window", "-5s", "{FILE}"}, nil, 1, []string{"--window", "positive duration"}, fixed},
	{"import negative threshold", []string{"import", "--threshold", "-1s", "{FILE}"}, nil, 1, []string{"--threshold", "0 or more"}, fixed},
	{"import negative at-least", []string{"import", "--at-least", "-1", "{FILE}"}, nil, 1, []string{"--at-least", "0 or more"}, fixed},
	{"import zero max-object", []string{"import", "--max-object", "0", "{FILE}"}, nil, 1, []string{"--max-object", "positive size"}, fixed},
	{"import zero sampler-timeout", []string{"import", "--sampler-timeout", "0", "{FILE}"}, nil, 1, []string{"--sampler-timeout", "34s"}, fixed},
	{"import sippy without job", []string{"import", "--sippy", "gs://b/logs/j/1"}, nil, 1, []string{"--sippy", "give --job"}, clear},
	{"import bad pattern", []string{"import", "{FILE}", "--pattern", "bogus", "--out", "{TMP}/imp"}, nil, 1, []string{"--pattern", "apiserver-rollout"}, clear},
	{"compare one folder", []string{"compare", "{EMPTYDIR}"}, nil, 1, []string{"at least two"}, clear},
	{"compare missing folder", []string{"compare", "{NOFILE}", "{EMPTYDIR}"}, nil, 1, []string{"does-not-exist"}, clear},
	{"compare alpha out of range", []string{"compare", "{EMPTYDIR}", "{EMPTYDIR}", "--alpha", "2"}, nil, 1, []string{"--alpha", "between 0 and 1"}, clear},
	{"compare threshold not a duration", []string{"compare", "{EMPTYDIR}", "{EMPTYDIR}", "--threshold", "1x"}, nil, 1, []string{"--threshold", "1s,20%"}, clear},
	{"compare threshold negative", []string{"compare", "{EMPTYDIR}", "{EMPTYDIR}", "--threshold", "-5s,-20%"}, nil, 1, []string{"--threshold", "negative", "positive"}, fixed},
	{"compare threshold two durations", []string{"compare", "{EMPTYDIR}", "{EMPTYDIR}", "--threshold", "1s,2s"}, nil, 1, []string{"--threshold", "at most one"}, fixed},
	{"compare threshold empty part", []string{"compare", "{EMPTYDIR}", "{EMPTYDIR}", "--threshold", "1s,"}, nil, 1, []string{"--threshold", "empty part"}, clear},
	{"compare file not folder", []string{"compare", "{FILE}", "{EMPTYDIR}"}, nil, 1, []string{"plain.txt"}, clear},
	// attribute.
	{"attribute no arg", []string{"attribute"}, nil, 1, []string{"accepts 1 arg"}, clear},
	{"attribute negative timeout", []string{"attribute", "{EMPTYDIR}", "--server-request-timeout", "-1s"}, nil, 1, []string{"--server-request-timeout", "positive"}, fixed},
	{"attribute zero timeout", []string{"attribute", "{EMPTYDIR}", "--server-request-timeout", "0s"}, nil, 1, []string{"--server-request-timeout", "positive"}, fixed},
	{"attribute missing folder", []string{"attribute", "{NOFILE}"}, nil, 1, []string{"does-not-exist"}, clear},
	{"attribute folder without samples", []string{"attribute", "{EMPTYDIR}"}, nil, 1, []string{"samples.jsonl", "results folder"}, clear},
	{"attribute no cluster named", []string{"attribute", "{TMP}/notrun"}, nil, 1, []string{"--kubeconfig", "not used"}, fixed},
	// sweep (its flags parse before anything is built).
	{"sweep nothing to sweep", []string{"sweep", "--scenario", "apiserver-rollout"}, nil, 1, []string{"--lab-set", "--lab-kube-version"}, clear},
	{"sweep unknown knob", []string{"sweep", "--scenario", "apiserver-rollout", "--lab-set", "nope=1,2"}, nil, 1, []string{"nope"}, clear},
	{"sweep made-up kube version", []string{"sweep", "--scenario", "apiserver-rollout", "--lab-kube-version", "v9.9.9,v1.30.14"}, nil, 1, []string{"v9.9.9"}, clear},
	// lab.
	{"lab up nodes 0", []string{"lab", "up", "--nodes", "0"}, nil, 1, []string{"--nodes", "1..9"}, fixed},
	{"lab up nodes -2", []string{"lab", "up", "--nodes", "-2"}, nil, 1, []string{"--nodes", "1..9"}, fixed},
	{"lab up listen bad", []string{"lab", "up", "--listen", "999.1.1.1:0"}, nil, 1, []string{"999.1.1.1"}, clear},
	{"lab up grace below delay", []string{"lab", "up", "--shutdown-delay", "30s", "--grace-period", "10s"}, nil, 1, []string{"--grace-period", "--shutdown-delay"}, fixed},
	{"lab up unknown timing", []string{"lab", "up", "--lab-timing", "slow"}, nil, 1, []string{"--lab-timing", "fast"}, clear},
	{"lab up unknown profile", []string{"lab", "up", "--lab-profile", "nope"}, nil, 1, []string{"--lab-profile", "healthy"}, clear},
	{"lab up unknown lb", []string{"lab", "up", "--lab-lb", "nope"}, nil, 1, []string{"--lab-lb", "proxy"}, clear},
	{"lab up made-up kube version", []string{"lab", "up", "--lab-kube-version", "v0.1"}, nil, 1, []string{"--lab-kube-version", "v0.1"}, fixed},
	{"lab build made-up kube version", []string{"lab", "build", "--lab-kube-version", "v0.1"}, nil, 1, []string{"--lab-kube-version", "v0.1", "v1.30.14"}, clear},
	{"lab versions extra arg", []string{"lab", "versions", "extra"}, nil, 1, []string{"extra"}, clear},
	{"lab profiles extra arg", []string{"lab", "profiles", "extra"}, nil, 1, []string{"extra"}, clear},
	{"lab unknown subcommand", []string{"lab", "bogus"}, nil, 1, []string{"bogus", "build, up, profiles or versions"}, fixed},
	// rbac, scenarios, root.
	{"rbac unknown backend", []string{"rbac", "--backends", "nope"}, nil, 1, []string{"--backends", "nope"}, clear},
	{"rbac extra arg", []string{"rbac", "extra"}, nil, 1, []string{"extra"}, clear},
	{"rbac empty name", []string{"rbac", "--name", ""}, nil, 1, []string{"--name", "empty"}, fixed},
	{"rbac name with a slash", []string{"rbac", "--name", "a/b"}, nil, 1, []string{"--name", "a/b"}, fixed},
	{"scenarios extra arg", []string{"scenarios", "extra"}, nil, 1, []string{"extra"}, clear},
	{"unknown command", []string{"bogus"}, nil, 1, []string{"bogus"}, clear},
	{"bad log level", []string{"--log-level", "loud", "scenarios"}, nil, 1, []string{"--log-level", "loud", "debug"}, clear},
	{"version of nothing", []string{"scenarios"}, nil, 0, nil, clear},
}

// TestBadInput runs every case against the built CLI.
func TestBadInput(t *testing.T) {
	fx := badInputFixtures(t)
	subst := func(s string) string {
		for k, v := range fx {
			s = strings.ReplaceAll(s, "{"+k+"}", v)
		}
		return s
	}
	var mu sync.Mutex
	counts := map[string]int{}
	seen := map[string]bool{}
	t.Run("cases", func(t *testing.T) {
		for _, c := range badInputCases {
			if seen[c.name] {
				t.Errorf("two cases named %q", c.name)
			}
			seen[c.name] = true
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				args := make([]string, len(c.args))
				for i, a := range c.args {
					args[i] = subst(a)
				}
				var env []string
				for _, e := range c.env {
					env = append(env, subst(e))
				}
				r := runCLI(t, cleanEnv(fx["HOME"], env...), 60*time.Second, args...)
				if r.timedOut {
					t.Fatalf("repro %s did not exit within 60s", strings.Join(args, " "))
				}
				if r.code != c.code {
					t.Errorf("repro %s: exit %d, want %d\nstderr: %s", strings.Join(args, " "), r.code, c.code, r.stderr)
				}
				line := errorLine(r.stderr)
				for _, w := range c.words {
					if !strings.Contains(strings.ToLower(line), strings.ToLower(subst(w))) {
						t.Errorf("repro %s: error line %q lacks %q", strings.Join(args, " "), line, subst(w))
					}
				}
				mu.Lock()
				counts[c.verdict]++
				mu.Unlock()
			})
		}
	})
	if len(badInputCases) < 100 {
		t.Errorf("the suite has %d cases, want at least 100", len(badInputCases))
	}
	var vs []string
	for v, n := range counts {
		vs = append(vs, fmt.Sprintf("%s %d", v, n))
	}
	sort.Strings(vs)
	t.Logf("bad-input suite: %d cases by verdict: %s", len(badInputCases), strings.Join(vs, ", "))
}

// errorLine is the error repro ended with: stderr from its last "repro: "
// line (an error that lists several problems goes on, indented), or all of
// stderr when there is none.
func errorLine(stderr string) string {
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "repro: ") {
			return strings.Join(lines[i:], "\n")
		}
	}
	return stderr
}
