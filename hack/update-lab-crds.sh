#!/usr/bin/env bash
# Copies the KubeAPIServer CRD from github.com/openshift/api at the version
# repro's go.mod pins into lab/crds, where the lab embeds it. Run after
# bumping github.com/openshift/api.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=$(go list -m -f '{{.Version}}' github.com/openshift/api)
dir=$(go mod download -json "github.com/openshift/api@${version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
src=$dir/operator/v1/zz_generated.crd-manifests/0000_20_kube-apiserver_01_kubeapiservers-Default.crd.yaml
{
	echo "# Copied by hack/update-lab-crds.sh from github.com/openshift/api@${version}"
	echo "# operator/v1/zz_generated.crd-manifests/0000_20_kube-apiserver_01_kubeapiservers-Default.crd.yaml"
	cat "$src"
} >lab/crds/kubeapiservers.operator.openshift.io.yaml
echo "updated lab/crds/kubeapiservers.operator.openshift.io.yaml from openshift/api ${version}"
