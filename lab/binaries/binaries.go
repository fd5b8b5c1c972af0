// Package binaries builds and caches the programs the lab runs: kube-apiserver
// (the Kubernetes of a current OpenShift by default, and those of OpenShift
// 4.16 and 4.17 on request) and etcd at the version Kubernetes pins.
//
// They are built from the Go module proxy in modules of their own, never the
// repro module, because kube-apiserver's dependency graph (k8s.io/kubernetes
// with its staging replaces) must not pull repro's k8s.io libraries to another
// release. The modules' files are embedded here under names the go tool does
// not treat as nested modules (go.mod.src, ...); hack/update-lab-modules.sh
// regenerates them. On first use they are written to
// $XDG_CACHE_HOME/repro/build/<name>-<version>/ and built there; the binary is
// installed to $XDG_CACHE_HOME/repro/bin/<name>-<version>/<name>. This works
// from `go run`, `go test` and an installed repro binary alike.
package binaries

import (
	"bufio"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

//go:embed kube-apiserver-*/*.src kubelet-*/*.src pause/*.src etcd/*.src prometheus/*.src
var sources embed.FS

// Spec describes one buildable program.
type Spec struct {
	// Name is the program name, also the binary's file name.
	Name string
	// Version is the upstream version the embedded module pins.
	Version string
	// Package is the import path passed to go build inside the module.
	Package string
	// LDFlags are passed to go build; kube-apiserver needs its version stamped
	// so clients (and the operator) see v1.34.4 rather than v0.0.0.
	LDFlags string
	// Tags are build tags for every go command on the module. Kubernetes
	// before 1.31 still links its in-tree cloud providers, one of which
	// (k8s.io/legacy-cloud-providers) the module proxy no longer serves at
	// v0.29/v0.30; kubernetes' own "providerless" tag leaves them out, as
	// kube-apiserver on OpenShift has no use for them.
	Tags string
	// Release names the OpenShift release that ships this version, for
	// listings and labels ("" when none is claimed).
	Release string
	// dir is the folder of the embedded module files.
	dir string
	// Sources, when set, holds the module's files at its root instead of
	// this package's embedded folder dir: a program whose sources are
	// embedded by another package (lab/aggregated). Subfolders are kept and
	// _test.go files left out.
	Sources fs.FS
	// ColdBuild is the measured cold build time on 2 cores, shown before the
	// first build so the wait is expected.
	ColdBuild time.Duration
	// NeededModulesOnly downloads only the modules the package's build
	// needs (with Tags), not every module go.mod lists: for a module whose
	// tags leave most of its graph out.
	NeededModulesOnly bool
}

// kubeAPIServer is the Spec of one kube-apiserver release built from
// k8s.io/kubernetes at version (vX.Y.Z), its module files in
// kube-apiserver-<version>/.
func kubeAPIServer(version, release, tags string, cold time.Duration) Spec {
	major, minor, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	return Spec{
		Name:    "kube-apiserver",
		Version: version,
		Package: "k8s.io/kubernetes/cmd/kube-apiserver",
		LDFlags: "-s -w -X k8s.io/component-base/version.gitVersion=" + version +
			" -X k8s.io/component-base/version.gitMajor=" + major + " -X k8s.io/component-base/version.gitMinor=" + minor,
		Tags:      tags,
		Release:   release,
		dir:       "kube-apiserver-" + version,
		ColdBuild: cold,
	}
}

// KubeAPIServer is kube-apiserver v1.34.4, the Kubernetes of OpenShift 4.21
// and the lab's default. Its cold build: 6 m 17 s measured on 2 cores with
// empty Go caches (module downloads included).
var KubeAPIServer = kubeAPIServer("v1.34.4", "OpenShift 4.21", "", 6*time.Minute)

// KubeAPIServers lists every kube-apiserver release the lab can build,
// default first: OpenShift 4.16 ships Kubernetes 1.29 and 4.17 ships 1.30,
// the releases a 4.16 -> 4.17 regression is bisected between (the module
// proxy serves k8s.io/kubernetes v1.29.6 and v1.30.14, the newest patch
// releases of each here).
var KubeAPIServers = []Spec{
	KubeAPIServer,
	kubeAPIServer("v1.30.14", "OpenShift 4.17", "providerless", 5*time.Minute),
	kubeAPIServer("v1.29.6", "OpenShift 4.16", "providerless", 5*time.Minute),
}

// KubeAPIServerFor returns the Spec of a kube-apiserver release by version
// ("v1.29.6" or "1.29.6"; "" is the default), or a one-line error naming the
// versions there are.
func KubeAPIServerFor(version string) (Spec, error) {
	if version == "" {
		return KubeAPIServer, nil
	}
	v := "v" + strings.TrimPrefix(version, "v")
	var have []string
	for _, s := range KubeAPIServers {
		if s.Version == v {
			return s, nil
		}
		have = append(have, s.Version+" ("+s.Release+")")
	}
	return Spec{}, fmt.Errorf("kube-apiserver %s is not one the lab builds: use one of %s, or pass --kube-apiserver PATH for any other build", version, strings.Join(have, ", "))
}

// Kubelet is the kubelet of the lab's default kube-apiserver release
// (v1.34.4), built from the same k8s.io/kubernetes module and staging
// replaces, for a lab node that runs pods for real (the in-cluster vantage's
// pollers). Its module files are kube-apiserver's with cmd/kubelet pinned
// instead, tidied so go.sum holds what the kubelet alone imports (cadvisor,
// runc's libcontainer, the CRI client). It is not in All: only a lab with
// pod-running nodes needs it.
var Kubelet = Spec{
	Name:    "kubelet",
	Version: KubeAPIServer.Version,
	Package: "k8s.io/kubernetes/cmd/kubelet",
	LDFlags: KubeAPIServer.LDFlags,
	Release: KubeAPIServer.Release,
	dir:     "kubelet-" + KubeAPIServer.Version,
	// Measured on 2 cores shared with other builds, with kube-apiserver's
	// packages already in the Go build cache (docs/notes/incluster.md).
	ColdBuild: 4 * time.Minute,
}

// Pause is the lab's pod sandbox program (a static Go binary that sleeps
// until SIGTERM, reaping orphans as PID 1), from which the sandbox image is
// built: containerd needs one for every pod and no registry is reachable.
// The standard library only, so it links statically and builds in seconds.
var Pause = Spec{
	Name:      "pause",
	Version:   "v1",
	Package:   ".",
	LDFlags:   "-s -w",
	dir:       "pause",
	ColdBuild: 10 * time.Second,
}

// Etcd is etcd v3.6.4, the version Kubernetes 1.34 pins.
var Etcd = Spec{
	Name:      "etcd",
	Version:   "v3.6.4",
	Package:   ".",
	LDFlags:   "-s -w",
	dir:       "etcd",
	ColdBuild: time.Minute,
}

// Prometheus is Prometheus 3.16.0 (module version v0.316.0), the lab's
// monitoring: it scrapes the lab's servers every second so that one query
// code reads the lab and a cluster's thanos-querier alike. The
// remove_all_sd tag leaves out every service discovery (Prometheus'
// plugins/plugin_*.go build constraints): the lab's targets are static,
// and the cloud SDKs the discoveries link are most of the build.
var Prometheus = Spec{
	Name:    "prometheus",
	Version: "v0.316.0",
	Package: "github.com/prometheus/prometheus/cmd/prometheus",
	LDFlags: "-s -w -X github.com/prometheus/common/version.Version=3.16.0",
	Tags:    "remove_all_sd",
	Release: "Prometheus 3.16.0",
	dir:     "prometheus",
	// Estimated from its package count against kube-apiserver's (about
	// half); its measured cold build ran on cores shared with other builds.
	ColdBuild:         4 * time.Minute,
	NeededModulesOnly: true,
}

// All lists every program the lab needs, in build order.
var All = []Spec{Etcd, KubeAPIServer, Prometheus}

// ErrNoGoToolchain is returned when a binary must be built and no go command
// is on PATH.
var ErrNoGoToolchain = errors.New("no Go toolchain on PATH")

// ErrNotBuilt is returned where a binary is not in the cache and cannot be
// built from where the caller is (inside repro's network namespace, which
// has no route to the module proxy).
var ErrNotBuilt = errors.New("not built")

// Options tunes Ensure.
type Options struct {
	// CacheDir overrides the cache root (default os.UserCacheDir()/repro).
	CacheDir string
	// Progress receives build progress; a terminal gets a live bar, anything
	// else a line every few percent. Nil means silent.
	Progress io.Writer
}

func (o Options) root() (string, error) {
	if o.CacheDir != "" {
		return o.CacheDir, nil
	}
	if d := os.Getenv("REPRO_CACHE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the user cache dir for the lab's binaries: %w", err)
	}
	return filepath.Join(d, "repro"), nil
}

// files calls fn for each of the module's files, by its path in the module
// (still with its .src suffix) in lexical order.
func (s Spec) files(fn func(name string, b []byte) error) error {
	fsys, root := fs.FS(sources), s.dir
	if s.Sources != nil {
		fsys, root = s.Sources, "."
	}
	return fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, root+"/")
		return fn(rel, b)
	})
}

// sourceHash identifies the embedded module files, so a changed go.mod with
// the same version still rebuilds.
func (s Spec) sourceHash() (string, error) {
	h := sha256.New()
	if err := s.files(func(name string, b []byte) error {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
		return nil
	}); err != nil {
		return "", err
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s", s.Package, s.LDFlags, s.Version)
	if s.Tags != "" {
		// Only when set, so adding the field left older builds' stamps valid.
		fmt.Fprintf(h, "\x00%s", s.Tags)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Path returns where the cached binary lives and whether it is present and
// built from the current embedded sources.
func Path(s Spec, o Options) (string, bool, error) {
	root, err := o.root()
	if err != nil {
		return "", false, err
	}
	p := filepath.Join(root, "bin", s.Name+"-"+s.Version, s.Name)
	want, err := s.sourceHash()
	if err != nil {
		return "", false, err
	}
	stamp, err := os.ReadFile(p + ".stamp")
	if err != nil {
		return p, false, nil
	}
	if _, err := os.Stat(p); err != nil {
		return p, false, nil
	}
	return p, strings.TrimSpace(string(stamp)) == want, nil
}

// Ensure returns the path of the cached binary, building it first when it is
// missing. Concurrent callers (parallel test binaries, two repro processes)
// serialise on a lock file so one builds and the others reuse its result.
func Ensure(ctx context.Context, s Spec, o Options) (string, error) {
	p, ok, err := Path(s, o)
	if err != nil || ok {
		return p, err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("%s %s is not built yet and building it needs a Go toolchain: %w (install Go 1.24 or newer, or pass --%s PATH)", s.Name, s.Version, ErrNoGoToolchain, s.Name)
	}
	root, _ := o.root()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, filepath.Join(root, "build-"+s.Name+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another process may have finished the build while we waited.
	if p, ok, err := Path(s, o); err != nil || ok {
		return p, err
	}
	if err := build(ctx, goBin, s, root, p, o.Progress); err != nil {
		return "", err
	}
	return p, nil
}

// lockFile takes an exclusive flock, giving up when ctx ends.
func lockFile(ctx context.Context, name string) (func(), error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// writeSources lays the embedded module into dir, dropping the .src suffix.
func writeSources(s Spec, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return s.files(func(name string, b []byte) error {
		out := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(name, ".src")))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
}

func goEnv(s Spec, dir string) []string {
	env := os.Environ()
	// The user's GOFLAGS (say -mod=vendor) and a go.work above the cache dir
	// must not change how the pinned module builds.
	flags := "GOFLAGS=-mod=mod -buildvcs=false"
	if s.Tags != "" {
		flags += " -tags=" + s.Tags
	}
	return append(env, flags, "GOWORK=off", "PWD="+dir)
}

func build(ctx context.Context, goBin string, s Spec, root, out string, progress io.Writer) error {
	start := time.Now()
	dir := filepath.Join(root, "build", s.Name+"-"+s.Version)
	if err := writeSources(s, dir); err != nil {
		return fmt.Errorf("writing the %s build module: %w", s.Name, err)
	}
	say := func(format string, args ...any) {
		if progress != nil {
			fmt.Fprintf(progress, format+"\n", args...)
		}
	}
	say("building %s %s from the Go module proxy (first use only; about %s cold on 2 cores) in %s",
		s.Name, s.Version, s.ColdBuild.Round(time.Second), dir)

	// Downloading comes first and is separately visible: on a cold machine it
	// is a large share of the wait and prints nothing itself.
	say("  downloading modules...")
	dl := exec.CommandContext(ctx, goBin, "mod", "download")
	if s.NeededModulesOnly {
		// Listing the package's dependencies downloads exactly their modules.
		dl = exec.CommandContext(ctx, goBin, "list", "-deps", s.Package)
	}
	dl.Dir, dl.Env = dir, goEnv(s, dir)
	if b, err := dl.CombinedOutput(); err != nil {
		return fmt.Errorf("downloading %s's modules: %v: %s", s.Name, err, tail(string(b), 10))
	}

	// Count what go build -v may print: every package in the graph,
	// standard library included (a fresh build cache compiles it too).
	// Packages already in the build cache print nothing, so a warm cache
	// finishes early; the total is an upper bound, never a guess low.
	ls := exec.CommandContext(ctx, goBin, "list", "-deps", "-f", "{{.ImportPath}}", s.Package)
	ls.Dir, ls.Env = dir, goEnv(s, dir)
	lsOut, err := ls.Output()
	if err != nil {
		return fmt.Errorf("listing %s's packages: %v", s.Name, err)
	}
	total := 0
	for _, l := range strings.Split(string(lsOut), "\n") {
		if strings.TrimSpace(l) != "" {
			total++
		}
	}

	tmp := out + ".tmp"
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-v", "-trimpath", "-ldflags", s.LDFlags, "-o", tmp, s.Package)
	cmd.Dir, cmd.Env = dir, goEnv(s, dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	rep := newReporter(progress, s.Name, total)
	var lines []string
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		l := sc.Text()
		lines = append(lines, l)
		if len(lines) > 200 {
			lines = lines[len(lines)-100:]
		}
		// -v prints one import path per compiled package; anything else (a
		// compiler error) is kept for the error message.
		if !strings.ContainsAny(l, " \t:") {
			rep.inc()
		}
	}
	err = cmd.Wait()
	rep.done(err == nil)
	if err != nil {
		os.Remove(tmp)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("building %s %s failed: %v\n%s", s.Name, s.Version, err, tail(strings.Join(lines, "\n"), 15))
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	h, _ := s.sourceHash()
	if err := os.WriteFile(out+".stamp", []byte(h+"\n"), 0o644); err != nil {
		return err
	}
	say("built %s %s in %s -> %s", s.Name, s.Version, time.Since(start).Round(time.Second), out)
	return nil
}

// reporter shows compile progress: an mpb bar with an ETA on a terminal, a
// line per 10% elsewhere (CI logs, go test output).
type reporter struct {
	w     io.Writer
	name  string
	total int
	n     int
	last  int
	start time.Time
	p     *mpb.Progress
	bar   *mpb.Bar
}

func newReporter(w io.Writer, name string, total int) *reporter {
	r := &reporter{w: w, name: name, total: total, start: time.Now()}
	if w == nil {
		return r
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		r.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(40))
		r.bar = r.p.AddBar(int64(total),
			mpb.PrependDecorators(decor.Name("  compiling "+name+" "), decor.CountersNoUnit("%d/%d pkgs ")),
			mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_MMSS), decor.Name(" eta ~"), decor.AverageETA(decor.ET_STYLE_MMSS)),
		)
	}
	return r
}

func (r *reporter) inc() {
	r.n++
	if r.bar != nil {
		if int64(r.n) <= int64(r.total) {
			r.bar.Increment()
		}
		return
	}
	if r.w == nil || r.total == 0 {
		return
	}
	pct := r.n * 100 / r.total
	if pct > 100 {
		pct = 100
	}
	if pct/10 > r.last/10 {
		r.last = pct
		el := time.Since(r.start)
		eta := time.Duration(float64(el) / float64(r.n) * float64(r.total-r.n))
		fmt.Fprintf(r.w, "  compiling %s: %d/%d packages (%d%%), %s elapsed, about %s left\n",
			r.name, r.n, r.total, pct, el.Round(time.Second), eta.Round(time.Second))
	}
}

func (r *reporter) done(ok bool) {
	if r.bar != nil {
		if ok {
			// Packages the build cache already held were never printed:
			// fill the bar and say below how many were compiled.
			r.bar.SetCurrent(int64(r.total))
			r.bar.SetTotal(int64(r.total), true)
		} else {
			r.bar.Abort(false)
		}
		r.p.Wait()
	}
	if ok && r.w != nil {
		cached := max(r.total-r.n, 0)
		fmt.Fprintf(r.w, "  compiled %d packages in %s (%d more came from the Go build cache)\n", r.n, time.Since(r.start).Round(time.Second), cached)
	}
}

func tail(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// Names lists the program names, sorted, for messages.
func Names() []string {
	var n []string
	for _, s := range All {
		n = append(n, s.Name)
	}
	sort.Strings(n)
	return n
}
