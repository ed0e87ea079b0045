#!/usr/bin/env bash
# Builds the local control plane (kube-apiserver, kube-controller-manager and
# etcd) from Go modules, once, into a cache outside the checkout, and prints the
# folder that holds them. envtest finds them there through KUBEBUILDER_ASSETS.
# The work is done by internal/controlplane, which `windlass dev` uses too.
#
#   hack/controlplane.sh          build if missing, print the folder
#   hack/controlplane.sh --print  print the folder only
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec go run ./hack/controlplane "$@"
