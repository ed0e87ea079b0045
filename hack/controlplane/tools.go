//go:build tools

// Package controlplane pins the Kubernetes commands that hack/controlplane.sh
// builds, so that `go mod tidy` keeps them in go.mod.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
