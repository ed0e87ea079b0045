package source

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/artifact"
	windlassevent "github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/gate"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/reconcile/sourceref"
)

// +kubebuilder:rbac:groups=source.extensions.fluxcd.io,resources=artifactgenerators,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=source.extensions.fluxcd.io,resources=artifactgenerators/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=source.extensions.fluxcd.io,resources=artifactgenerators/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=externalartifacts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=externalartifacts/status,verbs=get;update;patch

// artifactGeneratorNegativeConditions are the ArtifactGenerator conditions
// that explain a Ready=False, most important first.
var artifactGeneratorNegativeConditions = []string{
	sourcev1.FetchFailedCondition,
	sourcev1.BuildFailedCondition,
	sourcev1.StorageOperationFailedCondition,
}

// ArtifactGeneratorReconciler reconciles ArtifactGenerators: it reads the
// artifacts of a generator's sources, builds each of its artifacts by its
// copy operations, stores it and publishes it as an ExternalArtifact; it
// deletes the ExternalArtifacts (and their stored artifacts) the spec no
// longer lists. An artifact whose content did not change keeps its
// revision and digest, and its ExternalArtifact is not written.
type ArtifactGeneratorReconciler struct {
	client.Client
	// Events records events about ArtifactGenerators.
	Events *windlassevent.Recorder
	// Storage holds the generated artifacts, and the sources' when they
	// run in this process.
	Storage *artifact.Storage
	// Remote, when set, downloads from their URL the artifacts of sources
	// that Storage does not hold: another replica's, or another
	// producer's ExternalArtifacts.
	Remote *fetch.HTTP
	// JitterPercent spreads each object's interval.
	JitterPercent int
	// DependencyRequeue is how long to wait for a source that is missing
	// or has no artifact yet; zero means 30s.
	DependencyRequeue time.Duration
	// MaxSize bounds the bytes of one generated artifact's files; zero
	// means archive.DefaultMaxSize, what a consumer unpacks at most.
	MaxSize int64
	// NoCrossNamespaceRefs refuses sources and gates in other namespaces.
	NoCrossNamespaceRefs bool

	// trees holds the extracted artifacts of the sources, shared by the
	// generators of one revision.
	trees fetch.TreeCache
	// last remembers each generator's last complete generation.
	last lastGenerations
}

// SetupWithManager registers the reconciler with mgr: it watches the
// generators, their gates and their sources (a new artifact of a source
// reconciles the generators that use it at once), the deletion of the
// ExternalArtifacts they generated, and the gates of those.
func (r *ArtifactGeneratorReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	// Extracted artifacts are removed when the manager stops.
	if err := mgr.Add(reconcile.OnStop(r.trees.RemoveAll)); err != nil {
		return err
	}
	runner := &reconcile.Runner[*sourceextv1beta1.ArtifactGenerator]{
		Client: r.Client, Events: r.Events, JitterPercent: r.JitterPercent, NoCrossNamespaceRefs: r.NoCrossNamespaceRefs,
		Kind: reconcile.Kind[*sourceextv1beta1.ArtifactGenerator]{
			Name:               sourceextv1beta1.ArtifactGeneratorKind,
			New:                func() *sourceextv1beta1.ArtifactGenerator { return &sourceextv1beta1.ArtifactGenerator{} },
			NegativeConditions: artifactGeneratorNegativeConditions,
			CheckSpec:          checkGeneratorSpec,
			SuccessReason:      meta.SucceededReason,
			SuccessMessage:     generatedMessage,
			Run:                r.run,
			Finalize:           r.removeAll,
			Forget:             r.forget,
			SourceRef: &reconcile.SourceRef[*sourceextv1beta1.ArtifactGenerator]{
				Use: kinds.GeneratorSource, Refs: generatorSourceRefs,
			},
		},
	}
	if opts.Sharder != nil {
		if err := r.store().sweepMovedAway(ctx, mgr.GetCache()); err != nil {
			return err
		}
	}
	b, err := runner.Setup(ctx, mgr, opts)
	if err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &sourcev1.ExternalArtifact{}, gate.IndexKey, gate.IndexValues); err != nil {
		return fmt.Errorf("indexing ExternalArtifact gates: %w", err)
	}
	return b.Watches(&sourcev1.ExternalArtifact{},
		handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrlreconcile.Request { return producerOf(o) }),
		builder.WithPredicates(outputChanged())).
		Watches(&gatingv1alpha1.Gate{}, handler.EnqueueRequestsFromMapFunc(r.gatedOutputs), builder.WithPredicates(gate.OpenedChanged())).
		Complete(runner)
}

// generatorSourceRefs returns the sources of a generator.
func generatorSourceRefs(obj *sourceextv1beta1.ArtifactGenerator) []sourceref.Ref {
	refs := make([]sourceref.Ref, 0, len(obj.Spec.Sources))
	for _, s := range obj.Spec.Sources {
		refs = append(refs, sourceref.Ref{Kind: s.Kind, Name: s.Name, Namespace: s.Namespace})
	}
	return refs
}

// generatedMessage is the message of a Ready generator.
func generatedMessage(obj *sourceextv1beta1.ArtifactGenerator) string {
	return fmt.Sprintf("generated %d artifact(s)", len(obj.Status.Inventory))
}

// generatorScope carries what the steps of one run learn.
type generatorScope struct {
	// sources are the generator's sources, by alias.
	sources map[string]sourceref.Source
	// sourcesDigest is the digest of the sources' artifacts.
	sourcesDigest string
	// upToDate is set when every generated artifact is in storage and
	// published, from the same sources and spec: nothing is built.
	upToDate bool
	// previous are the source artifacts of the last complete generation of
	// this spec, by alias; nil when not known.
	previous map[string]meta.Artifact
	// trees are the folders of the sources' extracted artifacts, by alias.
	trees map[string]string
	// release gives the trees back to the cache.
	release []func()
	// generated are the artifacts built, in the order of the spec, and
	// those a gate holds at the artifact they had.
	generated []generated
	// held are the names of the artifacts a gate holds back.
	held []string
}

// generated is an artifact built and stored.
type generated struct {
	name     string
	artifact meta.Artifact
}

func (sc *generatorScope) cleanup() {
	for _, release := range sc.release {
		release()
	}
}

// run brings a generator's artifacts up to date, unless a gate holds it
// back.
func (r *ArtifactGeneratorReconciler) run(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, _ *patch.Helper) (outcome.Result, error) {
	sc := &generatorScope{}
	defer sc.cleanup()
	return reconcile.RunSteps(ctx, obj, sc, r.reconcileSources, r.reconcileArtifacts, r.reconcileInventory)
}

// store returns the storage steps shared with the source kinds, for the
// artifacts of the ExternalArtifacts the generators publish.
func (r *ArtifactGeneratorReconciler) store() artifactStore {
	return artifactStore{kind: sourcev1.ExternalArtifactKind, storage: r.Storage, events: r.Events}
}

// forget drops, when the replicas share one address (see
// artifact.Storage.SetShared), the artifacts this replica generated for
// the generator key, deleted or held by another replica: consumers
// download them from the replica that holds it.
func (r *ArtifactGeneratorReconciler) forget(key types.NamespacedName) {
	if !r.Storage.Shared() {
		return
	}
	ctx := context.Background()
	var list sourcev1.ExternalArtifactList
	if err := r.List(ctx, &list, client.InNamespace(key.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the ExternalArtifacts of a generator another replica holds", "artifactgenerator", key)
		return
	}
	for i := range list.Items {
		ea := &list.Items[i]
		for _, owner := range ea.OwnerReferences {
			if owner.Kind == sourceextv1beta1.ArtifactGeneratorKind && owner.Name == key.Name {
				r.store().sweep(ctx, ea)
			}
		}
	}
}
