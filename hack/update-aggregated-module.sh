#!/usr/bin/env bash
# Regenerates lab/aggregated/go.mod.src and go.sum.src, the build module of
# the lab's aggregated API server, from the main module's go.mod so both pin
# the same versions (lab/aggregated's test fails when they differ). Run after
# changing go.mod's k8s.io or openshift versions.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-mod=mod
mkdir -p "$work/server/cmd"
cp "$root"/lab/aggregated/server/*.go "$work/server/"
cp "$root"/lab/aggregated/server/cmd/*.go "$work/server/cmd/"
rm -f "$work"/server/*_test.go "$work"/server/cmd/*_test.go
sed 's#^module .*#module github.com/repro-tools/repro/lab/aggregated#' "$root/go.mod" >"$work/go.mod"
cd "$work"
go mod tidy
go build -o /dev/null ./server/cmd
cp go.mod "$root/lab/aggregated/go.mod.src"
cp go.sum "$root/lab/aggregated/go.sum.src"
