package dependency

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
)

// Order returns objs with every object after those of objs it depends on,
// and otherwise in the order given. Dependencies outside objs are ignored;
// the objects of a cycle keep the order given.
func Order[T client.Object](objs []T, dependsOn func(T) []meta.DependencyReference) []T {
	index := make(map[types.NamespacedName]int, len(objs))
	for i, o := range objs {
		index[client.ObjectKeyFromObject(o)] = i
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]int, len(objs))
	out := make([]T, 0, len(objs))
	var visit func(i int)
	visit = func(i int) {
		if state[i] != unvisited {
			return // done, or a cycle: leave it where it is
		}
		state[i] = visiting
		for _, dep := range dependsOn(objs[i]) {
			if j, ok := index[Key(objs[i], dep)]; ok {
				visit(j)
			}
		}
		state[i] = done
		out = append(out, objs[i])
	}
	for i := range objs {
		visit(i)
	}
	return out
}
