#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, kube-controller-manager and
# etcd) from Go modules, once, into a cache outside the checkout, and prints the
# folder that holds them. envtest finds them there through KUBEBUILDER_ASSETS.
#
#   hack/controlplane.sh          build if missing, print the folder
#   hack/controlplane.sh --print  print the folder only
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
k8s_version=v1.36.3
etcd_version=v3.6.8
cache_root=${WINDLASS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/windlass}
assets="$cache_root/controlplane/k8s-$k8s_version-etcd-$etcd_version-$(go env GOOS)-$(go env GOARCH)"

if [[ "${1:-}" == "--print" ]]; then
  echo "$assets"
  exit 0
fi

build() { # build NAME PACKAGE
  local name=$1 pkg=$2
  if [[ -x "$assets/$name" ]]; then
    return 0
  fi
  echo "controlplane: building $name from $pkg into $assets (first run only; several minutes)" >&2
  local start=$SECONDS
  (cd "$here/controlplane" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$assets/$name.tmp" "$pkg")
  mv "$assets/$name.tmp" "$assets/$name"
  echo "controlplane: built $name in $((SECONDS - start))s" >&2
}

mkdir -p "$assets"
build etcd ./etcd
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
echo "$assets"
