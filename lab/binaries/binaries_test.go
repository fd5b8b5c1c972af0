package binaries

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestEnsureWithoutGoToolchainSaysSoInOneLine(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Ensure(context.Background(), KubeAPIServer, Options{CacheDir: t.TempDir()})
	if !errors.Is(err, ErrNoGoToolchain) {
		t.Fatalf("err = %v, want ErrNoGoToolchain", err)
	}
	if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--kube-apiserver PATH") {
		t.Fatalf("error should be one line naming the way out: %q", err)
	}
}

func TestSourcesAreCompleteModules(t *testing.T) {
	for _, s := range All {
		dir := t.TempDir()
		if err := writeSources(s, dir); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"go.mod", "go.sum"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s: %v", s.Name, err)
			}
		}
		mod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
		if !strings.Contains(string(mod), "module repro.local/lab/"+s.Name) {
			t.Errorf("%s go.mod is not the lab's build module:\n%s", s.Name, mod)
		}
	}
	for _, s := range KubeAPIServers {
		mod, err := sources.ReadFile(s.dir + "/go.mod.src")
		if err != nil {
			t.Fatalf("%s %s: %v", s.Name, s.Version, err)
		}
		// Every staging module must be replaced to the matching release
		// (v1.29.6 -> v0.29.6), or the build resolves v0.0.0 and fails.
		staging := "v0." + strings.TrimPrefix(s.Version, "v1.")
		if n := strings.Count(string(mod), "=> k8s.io/"); n < 25 {
			t.Errorf("%s module replaces %d staging modules, want every one (25 or more)", s.Version, n)
		}
		for _, l := range strings.Split(string(mod), "\n") {
			if strings.Contains(l, "=> k8s.io/") && !strings.HasSuffix(strings.TrimSpace(l), " "+staging) {
				t.Errorf("%s module replaces a staging module to another release: %q", s.Version, strings.TrimSpace(l))
			}
		}
		if !strings.Contains(string(mod), "k8s.io/kubernetes "+s.Version) {
			t.Errorf("%s module does not require k8s.io/kubernetes %s", s.Version, s.Version)
		}
	}
}

func TestKubeAPIServerForNamesTheReleases(t *testing.T) {
	for _, v := range []string{"", "v1.34.4", "1.29.6", "v1.30.14"} {
		s, err := KubeAPIServerFor(v)
		if err != nil {
			t.Fatalf("KubeAPIServerFor(%q): %v", v, err)
		}
		if v != "" && s.Version != "v"+strings.TrimPrefix(v, "v") {
			t.Errorf("KubeAPIServerFor(%q) = %s", v, s.Version)
		}
		if !strings.Contains(s.LDFlags, "gitVersion="+s.Version) || !strings.Contains(s.LDFlags, "gitMinor="+strings.Split(s.Version, ".")[1]) {
			t.Errorf("%s is not stamped with its version: %s", s.Version, s.LDFlags)
		}
	}
	_, err := KubeAPIServerFor("v1.31.0")
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "v1.29.6 (OpenShift 4.16)") || !strings.Contains(err.Error(), "--kube-apiserver PATH") {
		t.Fatalf("unknown version: %v", err)
	}
}

func TestBuildTagsChangeTheSourceHash(t *testing.T) {
	// v1.29.6 built without providerless is another binary (or no binary).
	s := KubeAPIServer
	h1, _ := s.sourceHash()
	s.Tags = "providerless"
	h2, _ := s.sourceHash()
	if h1 == h2 {
		t.Fatal("build tags do not change the source hash")
	}
}

func TestPathNeedsMatchingStamp(t *testing.T) {
	cache := t.TempDir()
	p, ok, err := Path(Etcd, Options{CacheDir: cache})
	if err != nil || ok {
		t.Fatalf("empty cache: ok=%v err=%v", ok, err)
	}
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(p+".stamp", []byte("stale\n"), 0o644)
	if _, ok, _ := Path(Etcd, Options{CacheDir: cache}); ok {
		t.Fatal("a binary built from other sources counted as current")
	}
	h, _ := Etcd.sourceHash()
	os.WriteFile(p+".stamp", []byte(h+"\n"), 0o644)
	if got, ok, _ := Path(Etcd, Options{CacheDir: cache}); !ok || got != p {
		t.Fatalf("current binary not found: %s %v", got, ok)
	}
}

func TestSourcesFromAnotherFSKeepFoldersAndSkipTests(t *testing.T) {
	s := Spec{Name: "x", Version: "v0", Package: "./cmd", Sources: fstest.MapFS{
		"go.mod.src":       {Data: []byte("module example.com/x\n")},
		"cmd/main.go":      {Data: []byte("package main\n")},
		"cmd/main_test.go": {Data: []byte("package main\n")},
	}}
	dir := t.TempDir()
	if err := writeSources(s, dir); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]bool{"go.mod": true, "cmd/main.go": true, "cmd/main_test.go": false} {
		_, err := os.Stat(filepath.Join(dir, f))
		if (err == nil) != want {
			t.Errorf("%s present=%v, want %v", f, err == nil, want)
		}
	}
	h1, _ := s.sourceHash()
	s.Sources.(fstest.MapFS)["cmd/main_test.go"] = &fstest.MapFile{Data: []byte("package main // changed\n")}
	h2, _ := s.sourceHash()
	if h1 != h2 {
		t.Error("a test file's change would rebuild the binary")
	}
	s.Sources.(fstest.MapFS)["cmd/main.go"] = &fstest.MapFile{Data: []byte("package main // changed\n")}
	if h3, _ := s.sourceHash(); h3 == h1 {
		t.Error("a source change would not rebuild the binary")
	}
}
