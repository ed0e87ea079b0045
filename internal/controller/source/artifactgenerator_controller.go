package source

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/artifact"
	windlassevent "github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
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
}

// SetupWithManager registers the reconciler with mgr: it watches the
// generators, their gates and their sources (a new artifact of a source
// reconciles the generators that use it at once), and the deletion of
// the ExternalArtifacts they generated.
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
	return b.Watches(&sourcev1.ExternalArtifact{}, handler.EnqueueRequestsFromMapFunc(generatorOf),
		builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
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

// generatorOf returns the request of the generator that generated the
// ExternalArtifact o, if one did.
func generatorOf(_ context.Context, o client.Object) []ctrlreconcile.Request {
	ea, ok := o.(*sourcev1.ExternalArtifact)
	if !ok || ea.Spec.SourceRef == nil || ea.Spec.SourceRef.Kind != sourceextv1beta1.ArtifactGeneratorKind ||
		ea.Labels[sourceextv1beta1.GeneratorLabel] == "" {
		return nil
	}
	ns := ea.Spec.SourceRef.Namespace
	if ns == "" {
		ns = ea.Namespace
	}
	return []ctrlreconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: ea.Spec.SourceRef.Name}}}
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
	// trees are the folders of the sources' extracted artifacts, by alias.
	trees map[string]string
	// release gives the trees back to the cache.
	release []func()
	// generated are the artifacts built, in the order of the spec.
	generated []generated
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
