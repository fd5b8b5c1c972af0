// Command build-image builds repro's container images without a container
// engine or a base image: the in-cluster pollers' image (a static repro
// binary whose entry point is `repro probe`) and the lab's pod sandbox
// image, each a docker-archive tarball for `ctr -n k8s.io images import`,
// `podman load` or `crane push`.
//
//	go run ./hack/build-image -o /tmp/images [-ref registry.example/repro:tag]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/repro-tools/repro/incluster/image"
	"github.com/repro-tools/repro/lab/binaries"
)

func main() {
	out := flag.String("o", ".", "folder the image tarballs are written to")
	ref := flag.String("ref", image.ProberRef, "name of the pollers' image")
	flag.Parse()
	if err := run(*out, *ref); err != nil {
		fmt.Fprintln(os.Stderr, "build-image:", err)
		os.Exit(1)
	}
}

func run(out, ref string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	start := time.Now()
	bin := filepath.Join(out, "repro.static")
	// CGO off: the image has no libc, so the binary must not need one.
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/repro")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building a static repro: %w", err)
	}
	defer os.Remove(bin)
	b, err := image.WriteTarball(image.Prober(bin, ref, nil), filepath.Join(out, "repro-prober.tar"))
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %d bytes (%s)\n", b.Ref, b.Digest, b.Size, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	pause, err := binaries.Ensure(context.Background(), binaries.Pause, binaries.Options{Progress: os.Stderr})
	if err != nil {
		return err
	}
	b, err = image.WriteTarball(image.Pause(pause), filepath.Join(out, "pause.tar"))
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %d bytes (%s)\n", b.Ref, b.Digest, b.Size, time.Since(start).Round(time.Millisecond))
	return nil
}
