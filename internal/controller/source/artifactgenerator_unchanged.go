package source

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/generator"
)

// lastGenerations remembers, for each generator, the source artifacts of
// its last complete generation (every artifact published, none held) and
// the generation of its spec then: a commit that changes some folders of a
// source leaves the artifacts that read none of them as they were, and
// they are not built again. Only an optimization: after a restart, or when
// this process's storage did not archive both revisions of a source, every
// artifact is built, as it always may be.
type lastGenerations struct {
	mu    sync.Mutex
	byGen map[types.NamespacedName]lastGeneration
}

// lastGeneration is one generator's last complete generation.
type lastGeneration struct {
	generation int64
	sources    map[string]meta.Artifact
}

// set records the sources of obj's complete generation of its current
// spec.
func (l *lastGenerations) set(obj *sourceextv1beta1.ArtifactGenerator, sources map[string]meta.Artifact) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byGen == nil {
		l.byGen = map[types.NamespacedName]lastGeneration{}
	}
	l.byGen[types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}] = lastGeneration{generation: obj.Generation, sources: sources}
}

// get returns the sources of obj's last complete generation, when it was
// of obj's current spec; nil otherwise.
func (l *lastGenerations) get(obj *sourceextv1beta1.ArtifactGenerator) map[string]meta.Artifact {
	l.mu.Lock()
	defer l.mu.Unlock()
	last, ok := l.byGen[types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}]
	if !ok || last.generation != obj.Generation {
		return nil
	}
	return last.sources
}

// forget drops what is remembered of the generator key.
func (l *lastGenerations) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byGen, key)
}

// unchanged returns the artifact that published (the ExternalArtifact of
// spec) has, when the last complete generation published it and no folder
// that spec's copy rules read changed since in this run's sources: the
// build would give that artifact again. Artifacts whose revision comes from
// a source (spec.revision) are always built.
func (r *ArtifactGeneratorReconciler) unchanged(obj *sourceextv1beta1.ArtifactGenerator, sc *generatorScope,
	spec sourceextv1beta1.OutputArtifact, published *sourcev1.ExternalArtifact) (meta.Artifact, bool) {
	if sc.previous == nil || spec.Revision != "" || published == nil || !generatedBy(published, obj) || published.Status.Artifact == nil {
		return meta.Artifact{}, false
	}
	old := published.Status.Artifact
	if !slices.ContainsFunc(obj.Status.Inventory, func(e sourceextv1beta1.ExternalArtifactReference) bool {
		return e.Name == spec.Name && e.Digest == old.Digest
	}) {
		return meta.Artifact{}, false
	}
	inputs, err := generator.Inputs(generator.Rules(spec), sc.trees)
	if err != nil {
		return meta.Artifact{}, false
	}
	for _, in := range inputs {
		before, known := sc.previous[in.Alias]
		src, ok := sc.sources[in.Alias]
		if !known || !ok {
			return meta.Artifact{}, false
		}
		now := *src.GetArtifact()
		if before.Digest == now.Digest {
			continue
		}
		if changed, known := r.Storage.PathChanged(before, now, in.Folder); changed || !known {
			return meta.Artifact{}, false
		}
	}
	want := r.Storage.NewArtifactFor(sourcev1.ExternalArtifactKind, &metav1.ObjectMeta{Namespace: obj.Namespace, Name: spec.Name}, "", old.FileName())
	stored := r.storedAs(obj, published, want)
	if stored == nil {
		return meta.Artifact{}, false
	}
	return *stored, true
}
