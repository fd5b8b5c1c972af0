// Package image builds the container images repro runs in a cluster: the
// in-cluster pollers' image, whose entry point is repro's own prober, and the
// lab's pod sandbox image. They are built with go-containerregistry from
// files on this machine, with no container engine and no base image: the
// programs are static, and no registry is reachable from the lab. The result
// is a docker-archive tarball that `ctr images import`, `podman load` and
// `docker load` all read, and that a user pushes with `crane push`.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// File is one file put into the image's single layer.
type File struct {
	// Source is the file's path on this machine.
	Source string
	// Path is its absolute path inside the image.
	Path string
	// Mode is its permission bits (0o755 for a program).
	Mode int64
}

// Spec describes one image.
type Spec struct {
	// Ref is the image's name, as pods name it (repro.local/pause:v1).
	Ref string
	// Files make up the image's one layer.
	Files []File
	// Entrypoint and Cmd are the image config's, as in a Containerfile.
	Entrypoint []string
	Cmd        []string
	// Labels go into the image config (the source revision, say).
	Labels map[string]string
}

// epoch is every file's and the image's timestamp: the same inputs give the
// same digest, so a rebuilt image that did not change is not re-imported.
var epoch = time.Unix(0, 0).UTC()

// Build assembles the image in memory.
func Build(s Spec) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range s.Files {
		// Parent directories first, as a layer from a real build has them.
		var parents []string
		for d := path.Dir(f.Path); d != "/" && d != "." && !dirs[d]; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755, ModTime: epoch}); err != nil {
				return nil, err
			}
		}
		b, err := os.ReadFile(f.Source)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.Ref, err)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path[1:], Mode: f.Mode, Size: int64(len(b)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	// containerd matches an image's platform against its own: without OS
	// and architecture the import succeeds and every run fails.
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = s.Entrypoint
	cf.Config.Cmd = s.Cmd
	cf.Config.Labels = s.Labels
	cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	return mutate.ConfigFile(img, cf)
}

// Built is what WriteTarball wrote.
type Built struct {
	// Ref is the image's name in the tarball.
	Ref string
	// Digest is the image manifest's digest.
	Digest string
	// Size is the tarball's size in bytes.
	Size int64
}

// WriteTarball builds the image and writes it to out as a docker-archive
// tarball tagged s.Ref.
func WriteTarball(s Spec, out string) (Built, error) {
	img, err := Build(s)
	if err != nil {
		return Built{}, err
	}
	tag, err := name.NewTag(s.Ref)
	if err != nil {
		return Built{}, fmt.Errorf("image name %q: %w", s.Ref, err)
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return Built{}, fmt.Errorf("writing image %s: %w", s.Ref, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return Built{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return Built{}, err
	}
	st, err := os.Stat(out)
	if err != nil {
		return Built{}, err
	}
	return Built{Ref: s.Ref, Digest: d.String(), Size: st.Size()}, nil
}

// PauseRef is the lab's sandbox image name: containerd's sandbox_image and
// nothing else names it.
const PauseRef = "repro.local/pause:v1"

// ProberRef is the default name of the in-cluster pollers' image when it is
// built here; on a cluster the user names their own (--in-cluster-image).
const ProberRef = "repro.local/repro:dev"

// Pause is the sandbox image around the lab's pause program.
func Pause(pauseBinary string) Spec {
	return Spec{Ref: PauseRef, Files: []File{{Source: pauseBinary, Path: "/pause", Mode: 0o755}}, Entrypoint: []string{"/pause"}}
}

// Prober is the in-cluster pollers' image: a static repro binary whose
// entry point is its own prober (`repro probe`), so the pods' samples are
// the same records, with the same timing and classes, as the external
// pollers'. The pods' arguments go in Cmd.
func Prober(reproBinary, ref string, labels map[string]string) Spec {
	return Spec{Ref: ref, Files: []File{{Source: reproBinary, Path: "/usr/bin/repro", Mode: 0o755}},
		Entrypoint: []string{"/usr/bin/repro", "probe"}, Labels: labels}
}
