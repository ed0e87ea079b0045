package dependency

import (
	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
)

// kinds are the kinds with dependsOn, which objects of the other kinds may
// depend on.
var kinds = map[string]Kind{
	kustomizev1.KustomizationKind: {
		New: func() Object { return &kustomizev1.Kustomization{} },
		DependsOn: func(o Object) []meta.DependencyReference {
			return o.(*kustomizev1.Kustomization).Spec.DependsOn
		},
	},
	helmv2.HelmReleaseKind: {
		New: func() Object { return &helmv2.HelmRelease{} },
		DependsOn: func(o Object) []meta.DependencyReference {
			return o.(*helmv2.HelmRelease).Spec.DependsOn
		},
	},
}

// Kinds returns the named kinds with dependsOn, for Checker.Others.
func Kinds(names ...string) map[string]Kind {
	out := make(map[string]Kind, len(names))
	for _, n := range names {
		out[n] = kinds[n]
	}
	return out
}
