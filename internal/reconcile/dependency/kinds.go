package dependency

import (
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/kinds"
)

// Kinds returns the named kinds with dependsOn, from the registry of
// kinds, for Checker.Others.
func Kinds(names ...string) map[string]Kind {
	out := make(map[string]Kind, len(names))
	for _, n := range names {
		k, ok := kinds.Named(n)
		if !ok || k.DependsOn == nil {
			panic("dependency: " + n + " is not a kind with dependsOn")
		}
		out[n] = Kind{
			New:       func() Object { return k.New().(Object) },
			DependsOn: func(o Object) []meta.DependencyReference { return k.DependsOn(o) },
		}
	}
	return out
}
