#!/usr/bin/env bash
# Regenerates the embedded build modules of the lab's binaries
# (lab/binaries/kube-apiserver-<version>/*.src, lab/binaries/etcd/*.src,
# lab/binaries/prometheus/*.src) for
# the versions below. They are separate
# modules because k8s.io/kubernetes replaces its staging modules, which must
# not reach repro's own go.mod. Run after changing a version, then rebuild
# with `go run ./cmd/repro lab build`.
set -euo pipefail

# The lab's default first, then the Kubernetes of OpenShift 4.17 and 4.16.
KUBE_VERSIONS=${KUBE_VERSIONS:-v1.34.4 v1.30.14 v1.29.6}
ETCD_VERSION=${ETCD_VERSION:-v3.6.4}
# Prometheus 3.16.0 (its Go module is versioned v0.316.0).
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-mod=mod

# kube-apiserver: k8s.io/kubernetes requires its staging modules at v0.0.0
# and replaces them with ./staging paths; a consumer must replace each with
# the matching v0.x release.
for KUBE_VERSION in $KUBE_VERSIONS; do
	kdir=$work/kube-apiserver-$KUBE_VERSION
	mkdir -p "$kdir"
	cd "$kdir"
	go mod init repro.local/lab/kube-apiserver >/dev/null 2>&1
	go mod edit -go=1.24.0
	staging_minor=v0.${KUBE_VERSION#v1.}
	modfile=$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
	{
		echo
		echo "replace ("
		for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$modfile" | sort); do
			case $m in k8s.io/sample-cli-plugin|k8s.io/sample-controller) continue ;; esac
			printf '\t%s => %s %s\n' "$m" "$m" "$staging_minor"
		done
		echo ")"
	} >>go.mod
	cat >tools.go <<'GO'
//go:build tools

// Package tools pins the kube-apiserver command so go mod tidy keeps its dependencies.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO
	case $KUBE_VERSION in
	v1.29.* | v1.30.*)
		# These still link the in-tree cloud providers, and the module proxy
		# no longer serves k8s.io/legacy-cloud-providers at v0.29/v0.30:
		# resolve with kubernetes' "providerless" tag (binaries.Spec.Tags)
		# and let tidy skip what only the providers' tests import.
		GOFLAGS="-mod=mod -tags=providerless" go get "k8s.io/kubernetes/cmd/kube-apiserver@${KUBE_VERSION}"
		GOFLAGS="-mod=mod -tags=providerless" go mod tidy -e 2>/dev/null || true
		;;
	*)
		go get "k8s.io/kubernetes@${KUBE_VERSION}"
		go mod tidy
		;;
	esac
	# Keep the replace block last, where readers of the file look for it.
	awk '/^replace \($/{inblk=1} inblk{blk=blk $0 "\n"; if ($0==")") {inblk=0; skip=1}; next} skip && /^$/{skip=0; next} {skip=0; print} END{printf "\n%s", blk}' go.mod >go.mod.new
	mv go.mod.new go.mod
	go mod edit -fmt
	dst=$root/lab/binaries/kube-apiserver-$KUBE_VERSION
	mkdir -p "$dst"
	cp go.mod "$dst/go.mod.src"
	cp go.sum "$dst/go.sum.src"
	cp tools.go "$dst/tools.go.src"
done

# etcd: the server's own entry point (etcdmain), built as a small main module.
edir=$work/etcd
mkdir -p "$edir"
cd "$edir"
go mod init repro.local/lab/etcd >/dev/null 2>&1
go mod edit -go=1.24.0
cat >main.go <<'GO'
// Command etcd is etcd's own server entry point, built here so the lab runs the
// etcd version Kubernetes 1.34 pins.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
go mod tidy
dst=$root/lab/binaries/etcd
cp go.mod "$dst/go.mod.src"
cp go.sum "$dst/go.sum.src"
cp main.go "$dst/main.go.src"
# prometheus: the command from its own module, pinned by a tools file; it
# needs the Go release its go.mod names.
pdir=$work/prometheus
mkdir -p "$pdir"
cd "$pdir"
go mod init repro.local/lab/prometheus >/dev/null 2>&1
cat >tools.go <<'GO'
//go:build tools

// Package tools pins the prometheus command so go mod tidy keeps its dependencies.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
GO
go get "github.com/prometheus/prometheus@${PROMETHEUS_VERSION}"
go mod tidy
dst=$root/lab/binaries/prometheus
mkdir -p "$dst"
cp go.mod "$dst/go.mod.src"
cp go.sum "$dst/go.sum.src"
cp tools.go "$dst/tools.go.src"
echo "updated lab build modules: kube-apiserver ${KUBE_VERSIONS}, etcd ${ETCD_VERSION}, prometheus ${PROMETHEUS_VERSION}"
