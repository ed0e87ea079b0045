package kustomize

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-dev/windlass/internal/health"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/ssa"
	"github.com/windlass-dev/windlass/internal/versions"
)

// HealthWatch tells the health of applied objects as a watch last saw
// them: a versions cache made WithHealth.
type HealthWatch = health.Watch

// WatchOptions are the options of the versions cache that the reconciler's
// Versions and Health are: the health of the kinds health.Watchable
// selects, with their fingerprints for the reconciler's field manager.
func WatchOptions() []versions.Option {
	return []versions.Option{versions.WithHealth(health.Judge, health.Watchable, func(obj *unstructured.Unstructured) string {
		return ssa.FingerprintAs(obj, kspec.FieldManager)
	})}
}
