//go:build tools

// Package reference pins the reference toolkit's source-controller and
// kustomize-controller, which the benchmark runs side by side with Windlass
// (go run ./test/bench -controllers reference). They live in a module of
// their own, apart from Windlass's go.mod, which never imports a fluxcd
// package; hack/reference.sh builds them once into the cache folder. They
// need Go 1.27: the script sets GOTOOLCHAIN for this module only.
package reference

import (
	_ "github.com/fluxcd/kustomize-controller"
	_ "github.com/fluxcd/source-controller"
)
