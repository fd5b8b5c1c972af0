package binaries

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
