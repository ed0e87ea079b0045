package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/generator"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/parallel"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/reconcile/sourceref"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// checkGeneratorSpec (the kind's CheckSpec, run first) stalls a generator
// whose spec can never work (generator.CheckSpec).
func checkGeneratorSpec(obj *sourceextv1beta1.ArtifactGenerator) error {
	if err := generator.CheckSpec(obj.Spec); err != nil {
		return outcome.Stall(sourceextv1beta1.ValidationFailedReason, err)
	}
	return nil
}

// reconcileSources gets the generator's sources and tells whether what was
// generated from them is still whole: then nothing is fetched or built. A
// source that does not exist or has no artifact yet is waited for; one in
// another namespace stalls under --no-cross-namespace-refs.
func (r *ArtifactGeneratorReconciler) reconcileSources(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, sc *generatorScope) (outcome.Result, error) {
	resolver := sourceref.Resolver{Client: r.Client, Kinds: sourceref.For(kinds.GeneratorSource),
		NoCrossNamespaceRefs: r.NoCrossNamespaceRefs, Requeue: sourceRequeue(r.DependencyRequeue)}
	sc.sources = map[string]sourceref.Source{}
	h := sha256.New()
	for _, s := range obj.Spec.Sources {
		src, err := resolver.Get(ctx, obj.Namespace, sourceref.Ref{Kind: s.Kind, Name: s.Name, Namespace: s.Namespace})
		if err != nil {
			return outcome.ResultEmpty, err
		}
		sc.sources[s.Alias] = src
		a := src.GetArtifact()
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00", s.Alias, sourceref.KeyOf(s.Kind, src), a.Digest, a.Revision, a.Metadata[meta.OriginRevisionKey])
	}
	sc.sourcesDigest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	sc.previous = r.last.get(obj)
	sc.upToDate = obj.Status.ObservedSourcesDigest == sc.sourcesDigest && obj.Status.ObservedGeneration == obj.Generation &&
		conditions.IsTrue(obj, meta.ReadyCondition) && r.inventoryWhole(ctx, obj)
	if !sc.upToDate {
		reconcile.MarkProgress(obj, "generating artifacts")
	}
	return outcome.ResultSuccess, nil
}

// inventoryWhole reports whether every artifact of the inventory is in
// storage with its digest, and published by an ExternalArtifact of this
// generator at this storage's address.
func (r *ArtifactGeneratorReconciler) inventoryWhole(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator) bool {
	for _, entry := range obj.Status.Inventory {
		ea := &sourcev1.ExternalArtifact{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: entry.Namespace, Name: entry.Name}, ea); err != nil {
			return false
		}
		a := ea.Status.Artifact
		want := r.Storage.NewArtifactFor(sourcev1.ExternalArtifactKind, ea, "", entry.Filename)
		if !generatedBy(ea, obj) || a == nil || a.Digest != entry.Digest || a.URL != want.URL || a.Path != want.Path {
			return false
		}
		if err := r.Storage.Verify(*a); err != nil {
			ctrl.LoggerFrom(ctx).Info("Generated artifact not in storage, generating it again", "path", a.Path, "error", err.Error())
			if r.Storage.ArtifactExists(*a) {
				_ = os.Remove(r.Storage.LocalPath(*a))
			}
			return false
		}
	}
	return true
}

// generatedBy reports whether the generator obj generated ea.
func generatedBy(ea *sourcev1.ExternalArtifact, obj *sourceextv1beta1.ArtifactGenerator) bool {
	return ea.Labels[sourceextv1beta1.GeneratorLabel] == string(obj.UID)
}

// reconcileArtifacts builds each artifact from the sources' trees, stores
// it, and publishes it as an ExternalArtifact, unless a gate of that
// ExternalArtifact holds it back: then it keeps the artifact it had. When
// nothing changed, only the gates of the ExternalArtifacts are looked at.
func (r *ArtifactGeneratorReconciler) reconcileArtifacts(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, sc *generatorScope) (outcome.Result, error) {
	if sc.upToDate {
		return outcome.ResultSuccess, r.enforceOutputGates(ctx, obj)
	}
	if err := r.acquireTrees(ctx, obj, sc); err != nil {
		return outcome.ResultEmpty, err
	}
	plan, err := planArtifacts(obj, sc.trees)
	if err != nil {
		var stalling *outcome.Stalling
		if !errors.As(err, &stalling) {
			conditions.MarkTrue(obj, sourcev1.BuildFailedCondition, meta.BuildFailedReason, "%s", err.Error())
		}
		return outcome.ResultEmpty, err
	}
	if err := r.generateAll(ctx, obj, sc, plan); err != nil {
		return outcome.ResultEmpty, err
	}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	conditions.Delete(obj, sourcev1.BuildFailedCondition)
	conditions.Delete(obj, sourcev1.StorageOperationFailedCondition)
	return outcome.ResultSuccess, nil
}

// generateConcurrency is how many artifacts of one generator are built and
// published at once when it generates for the first time: then every one
// is created and published, two requests each, and the builds wait on the
// API server. Later runs build one at a time: most artifacts are unchanged,
// nothing is written for them, and a commit's one changed artifact reaches
// its Kustomization sooner when the generator leaves it a core.
const generateConcurrency = 4

// generation is what generating one planned artifact came to.
type generation struct {
	// generated is the artifact published, or kept while held; nil when
	// a held artifact has none yet, or on failure.
	generated *generated
	held      bool
	err       error
	// failed holds the condition that says why it failed.
	failed *sourceextv1beta1.ArtifactGenerator
}

// generateAll generates the planned artifacts (generateConcurrency at once
// the first time, one at a time after), and records them in sc in the
// order of the plan. One that fails does not
// hold the others back; the first to fail, in the order of the plan, fails
// the run with its condition, and the inventory is left as it was.
func (r *ArtifactGeneratorReconciler) generateAll(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, sc *generatorScope,
	plan []generator.Planned) error {
	results := make([]generation, len(plan))
	limit := 1
	if len(obj.Status.Inventory) == 0 {
		limit = generateConcurrency
	}
	panics := parallel.Do(ctx, len(plan), limit, func(i int) {
		results[i] = r.generate(ctx, obj, sc, plan[i])
	})
	for _, p := range panics {
		results[p.Index] = generation{err: outcome.Fail(meta.ReconciliationFailedReason, fmt.Errorf("artifact '%s': %w", plan[p.Index].Spec.Name, p))}
	}
	for i, res := range results {
		if res.err != nil {
			if res.failed != nil {
				for _, c := range res.failed.Status.Conditions {
					conditions.Set(obj, c.Type, c.Status, c.Reason, "%s", c.Message)
				}
			}
			return res.err
		}
		if res.held {
			sc.held = append(sc.held, plan[i].Spec.Name)
		}
		if res.generated != nil {
			sc.generated = append(sc.generated, *res.generated)
		}
	}
	return nil
}

// generate builds, stores and publishes the artifact p, or keeps the
// artifact its ExternalArtifact has while a gate holds it back. It writes
// no condition of obj, which other artifacts' generations read: a failure's
// condition is in the result.
func (r *ArtifactGeneratorReconciler) generate(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, sc *generatorScope, p generator.Planned) generation {
	out, err := r.readOutput(ctx, obj, p.Spec.Name)
	if err != nil {
		return generation{err: err}
	}
	held, err := r.heldBack(ctx, out)
	if err != nil {
		return generation{err: err}
	}
	if held {
		res := generation{held: true}
		if a := out.ea.Status.Artifact; a != nil && generatedBy(out.ea, obj) {
			res.generated = &generated{name: p.Spec.Name, artifact: *a}
		}
		return res
	}
	failed := &sourceextv1beta1.ArtifactGenerator{ObjectMeta: obj.ObjectMeta}
	a, err := r.build(ctx, obj, failed, sc, p.Spec, out.before)
	if err != nil {
		return generation{err: err, failed: failed}
	}
	if err := r.publish(ctx, obj, out, p.Spec.Name, p.Labels, a); err != nil {
		return generation{err: err}
	}
	return generation{generated: &generated{name: p.Spec.Name, artifact: a}}
}

// acquireTrees extracts (or finds extracted) the artifact of every source.
func (r *ArtifactGeneratorReconciler) acquireTrees(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, sc *generatorScope) error {
	sc.trees = map[string]string{}
	for alias, src := range sc.sources {
		dir, release, err := r.trees.AcquireArtifact(ctx, *src.GetArtifact(), sourceFetcher(r.Storage, r.Remote))
		if err != nil {
			err = fmt.Errorf("fetching the artifact of source '%s': %w", alias, err)
			conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, sourceextv1beta1.SourceFetchFailedReason, "%s", err.Error())
			return outcome.Fail(sourceextv1beta1.SourceFetchFailedReason, err)
		}
		sc.release = append(sc.release, release)
		sc.trees[alias] = dir
	}
	return nil
}

// build builds the artifact spec into a folder and stores it, unless
// storage holds that content already; it returns the stored artifact.
func (r *ArtifactGeneratorReconciler) build(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, failed conditions.Setter,
	sc *generatorScope, spec sourceextv1beta1.OutputArtifact, published *sourcev1.ExternalArtifact) (meta.Artifact, error) {
	if a, ok := r.unchanged(obj, sc, spec, published); ok {
		return a, nil
	}
	dir, err := workdir.MkdirTemp("generator-*")
	if err != nil {
		return meta.Artifact{}, storageFailed(failed, sourcev1.DirCreationFailedReason, err)
	}
	defer workdir.RemoveLater(dir)
	if err := (&generator.Builder{Sources: sc.trees, MaxSize: r.MaxSize}).Build(generator.Rules(spec), dir); err != nil {
		err = fmt.Errorf("artifact '%s': %w", spec.Name, err)
		conditions.MarkTrue(failed, sourcev1.BuildFailedCondition, meta.BuildFailedReason, "%s", err.Error())
		return meta.Artifact{}, outcome.Fail(meta.BuildFailedReason, err)
	}
	content, err := generator.TreeDigest(dir)
	if err != nil {
		return meta.Artifact{}, storageFailed(failed, sourcev1.ArchiveOperationFailedReason, err)
	}
	ea := &metav1.ObjectMeta{Namespace: obj.Namespace, Name: spec.Name}
	a := r.Storage.NewArtifactFor(sourcev1.ExternalArtifactKind, ea, "", content+".tar.gz")
	stored := r.storedAs(obj, published, a)
	if stored != nil {
		a = *stored
	} else if err := r.store().archiveFiltered(failed, &a, dir, nil, "the artifact's files"); err != nil {
		return meta.Artifact{}, err
	}
	a.Revision = "latest@" + a.Digest
	if alias := strings.TrimPrefix(spec.Revision, "@"); alias != "" {
		a.Revision = sc.sources[alias].GetArtifact().Revision
	}
	a.Metadata = nil
	if alias := strings.TrimPrefix(spec.OriginRevision, "@"); alias != "" {
		a.Metadata = map[string]string{meta.OriginRevisionKey: originRevision(*sc.sources[alias].GetArtifact())}
	}
	if keepsOrigin(stored, a) {
		// The same files at the same revision: the origin stays the one
		// that last changed them, and the ExternalArtifact is not written.
		a.Metadata = stored.Metadata
	}
	if _, err := r.Storage.GarbageCollect(ctx, a); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Garbage collection of old generated artifacts failed", "artifact", spec.Name)
	}
	return a, nil
}

// storedAs returns the artifact that published (the ExternalArtifact of
// the artifact, nil when there is none yet) already publishes when it is
// a, stored whole: its file, digest, size and time are kept. It returns
// nil otherwise.
func (r *ArtifactGeneratorReconciler) storedAs(obj *sourceextv1beta1.ArtifactGenerator, published *sourcev1.ExternalArtifact, a meta.Artifact) *meta.Artifact {
	if published == nil || !generatedBy(published, obj) {
		return nil
	}
	old := published.Status.Artifact
	if old == nil || old.Path != a.Path || r.Storage.Verify(*old) != nil {
		return nil
	}
	stored := old.DeepCopy()
	stored.URL = a.URL
	return stored
}

// sourceArtifacts returns the artifacts of sources, by alias.
func sourceArtifacts(sources map[string]sourceref.Source) map[string]meta.Artifact {
	out := make(map[string]meta.Artifact, len(sources))
	for alias, src := range sources {
		out[alias] = *src.GetArtifact().DeepCopy()
	}
	return out
}

// keepsOrigin reports whether a, which has the content of stored, keeps
// stored's origin revision: its revision is stored's, and both have an
// origin revision or neither has.
func keepsOrigin(stored *meta.Artifact, a meta.Artifact) bool {
	return stored != nil && stored.Revision == a.Revision &&
		(stored.Metadata[meta.OriginRevisionKey] == "") == (a.Metadata[meta.OriginRevisionKey] == "")
}

// originRevision returns the revision of the origin of a: its
// org.opencontainers.image.revision metadata, else its revision.
func originRevision(a meta.Artifact) string {
	if rev := a.Metadata[meta.OriginRevisionKey]; rev != "" {
		return rev
	}
	return a.Revision
}

// reconcileInventory records what was generated, and deletes the
// ExternalArtifacts of this generator that the spec no longer lists, with
// their stored artifacts.
func (r *ArtifactGeneratorReconciler) reconcileInventory(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, sc *generatorScope) (outcome.Result, error) {
	if sc.upToDate {
		return outcome.ResultSuccess, nil
	}
	keep := map[string]bool{}
	for _, name := range sc.held {
		keep[name] = true
	}
	inventory := make([]sourceextv1beta1.ExternalArtifactReference, 0, len(sc.generated))
	for _, g := range sc.generated {
		keep[g.name] = true
		inventory = append(inventory, sourceextv1beta1.ExternalArtifactReference{
			Name: g.name, Namespace: obj.Namespace, Digest: g.artifact.Digest, Filename: g.artifact.FileName(),
		})
	}
	if err := r.deleteGenerated(ctx, obj, func(name string) bool { return !keep[name] }); err != nil {
		return outcome.ResultEmpty, err
	}
	slices.SortFunc(inventory, func(a, b sourceextv1beta1.ExternalArtifactReference) int { return strings.Compare(a.Name, b.Name) })
	obj.Status.Inventory = inventory
	if len(sc.held) == 0 {
		// While a gate holds an artifact back, the next run builds again:
		// the artifact is published as soon as its gates open.
		obj.Status.ObservedSourcesDigest = sc.sourcesDigest
		r.last.set(obj, sourceArtifacts(sc.sources))
	}
	return outcome.ResultSuccess, nil
}

// removeAll deletes every ExternalArtifact of a deleted generator, with
// its stored artifacts.
func (r *ArtifactGeneratorReconciler) removeAll(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator) error {
	r.last.forget(types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name})
	return r.deleteGenerated(ctx, obj, func(string) bool { return true })
}

// deleteGenerated deletes the ExternalArtifacts of obj's namespace that obj
// generated (its inventory's, and any other with its label) and whose name
// drop reports, with their stored artifacts.
func (r *ArtifactGeneratorReconciler) deleteGenerated(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, drop func(string) bool) error {
	names := map[string]bool{}
	for _, entry := range obj.Status.Inventory {
		names[entry.Name] = true
	}
	list := &sourcev1.ExternalArtifactList{}
	if err := r.List(ctx, list, client.InNamespace(obj.Namespace),
		client.MatchingLabels{sourceextv1beta1.GeneratorLabel: string(obj.UID)}); err != nil {
		return err
	}
	for _, ea := range list.Items {
		names[ea.Name] = true
	}
	var errs []error
	for name := range names {
		if drop(name) {
			errs = append(errs, r.deleteOne(ctx, obj, name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return outcome.Fail(meta.ReconciliationFailedReason, err)
	}
	return nil
}

// deleteOne deletes the ExternalArtifact name, when obj generated it, and
// its stored artifacts.
func (r *ArtifactGeneratorReconciler) deleteOne(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, name string) error {
	ea := &sourcev1.ExternalArtifact{}
	err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: name}, ea)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case generatedBy(ea, obj):
		if err := r.Delete(ctx, ea); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting ExternalArtifact '%s': %w", name, err)
		}
		r.Events.Normal(ctx, obj, "ArtifactDeleted", "", fmt.Sprintf("deleted ExternalArtifact '%s'", name))
	}
	key := types.NamespacedName{Namespace: obj.Namespace, Name: name}
	if err := r.store().removeAll(ctx, &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
		return fmt.Errorf("ExternalArtifact '%s': %w", name, err)
	}
	r.store().forgetTrees(key)
	return nil
}
