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
	kas, _ := sources.ReadFile("kube-apiserver/go.mod.src")
	// Every staging module must be replaced to the matching release, or the
	// build resolves v0.0.0 and fails.
	if n := strings.Count(string(kas), "=> k8s.io/"); n < 29 {
		t.Errorf("kube-apiserver module replaces %d staging modules, want 29", n)
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
