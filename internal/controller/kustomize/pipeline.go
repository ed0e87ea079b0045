package kustomize

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	securejoin "github.com/cyphar/filepath-securejoin"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/build"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/inventory"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/reconcile/sourceref"
	"github.com/windlass-dev/windlass/internal/sops"
	"github.com/windlass-dev/windlass/internal/ssa"
	"github.com/windlass-dev/windlass/internal/substitute"
)

// ksScope carries what the steps of one Kustomization run learn.
type ksScope struct {
	// patcher writes the inventory ahead of an apply.
	patcher *patch.Helper
	// source is the Kustomization's source, with an artifact.
	source sourceref.Source
	// inputs are what the build reads besides the artifact.
	inputs *buildInputs
	// target is where and as whom the objects are applied.
	target *impersonation.Target
	// manager applies, prunes and reads the objects on target.
	manager *ssa.Manager
	// live are the applied objects as they are now, by inventory ID.
	live map[string]*unstructured.Unstructured
	// current is set when the inputs are those of the last complete apply
	// and nothing drifted: nothing needs building or applying.
	current bool
}

// run runs the pipeline, after the runner's checks of what is not served
// and of the gates: source, dependencies, inputs, target, apply
// (build, apply, prune), health. Each step sets the status it owns; the
// runner's Summarize sets the rest. When the inputs are those of the last
// complete apply and nothing drifted, the run goes from the target straight
// to the health checks (see applied.go).
func (r *KustomizationReconciler) run(ctx context.Context, obj *kustomizev1.Kustomization, patcher *patch.Helper) (outcome.Result, error) {
	source, key := sourceKey(obj), types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	r.heads.wait(ctx, source, key)
	defer r.heads.ran(source, key)
	sc := &ksScope{patcher: patcher}
	res, err := reconcile.RunSteps(ctx, obj, sc,
		r.reconcileSource, r.reconcileDependencies, r.reconcileInputs, r.reconcileTarget, r.reconcileApply, r.reconcileHealth)
	if err == nil {
		obj.Status.Verified = r.verifiedApply(obj, sc.inputs)
	}
	return res, err
}

// reconcileSource finds the source and its artifact.
func (r *KustomizationReconciler) reconcileSource(ctx context.Context, obj *kustomizev1.Kustomization, sc *ksScope) (outcome.Result, error) {
	source, err := r.getSource(ctx, obj)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	sc.source = source
	return outcome.ResultSuccess, nil
}

// reconcileDependencies waits for the dependencies, then records the
// revision the run attempts.
func (r *KustomizationReconciler) reconcileDependencies(ctx context.Context, obj *kustomizev1.Kustomization, sc *ksScope) (outcome.Result, error) {
	if err := r.checkDependencies(ctx, obj, sc.source); err != nil {
		return outcome.ResultEmpty, err
	}
	obj.Status.LastAttemptedRevision = sc.source.GetArtifact().Revision
	return outcome.ResultSuccess, nil
}

// reconcileInputs reads the substitution variables and decryption keys.
func (r *KustomizationReconciler) reconcileInputs(ctx context.Context, obj *kustomizev1.Kustomization, sc *ksScope) (outcome.Result, error) {
	in, err := r.readInputs(ctx, obj, sc.source.GetArtifact())
	if err != nil {
		return outcome.ResultEmpty, err
	}
	sc.inputs = in
	return outcome.ResultSuccess, nil
}

// reconcileTarget resolves the cluster and identity to apply with, and
// tells whether the last complete apply is still current there.
func (r *KustomizationReconciler) reconcileTarget(ctx context.Context, obj *kustomizev1.Kustomization, sc *ksScope) (outcome.Result, error) {
	tgt, err := r.target(ctx, obj)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	m, err := r.applyManager(obj, tgt)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	sc.target, sc.manager = tgt, m
	sc.live, sc.current, err = r.upToDate(ctx, obj, m, sc.inputs.digest)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	return outcome.ResultSuccess, nil
}

// reconcileApply builds, applies and prunes the revision, unless the last
// complete apply is current.
func (r *KustomizationReconciler) reconcileApply(ctx context.Context, obj *kustomizev1.Kustomization, sc *ksScope) (outcome.Result, error) {
	r.restoreInventory(obj)
	if !sc.current {
		live, err := r.applyRevision(ctx, obj, sc.manager, sc.source, sc.inputs, sc.patcher)
		if err != nil {
			return outcome.ResultEmpty, err
		}
		sc.live = live
	}
	obj.Status.LastAppliedRevision = sc.source.GetArtifact().Revision
	obj.Status.LastAppliedOriginRevision = sc.source.GetArtifact().OriginRevision()
	return outcome.ResultSuccess, nil
}

// reconcileHealth checks the health of the applied objects.
func (r *KustomizationReconciler) reconcileHealth(ctx context.Context, obj *kustomizev1.Kustomization, sc *ksScope) (outcome.Result, error) {
	if err := r.checkHealth(ctx, obj, sc.target, sc.live); err != nil {
		return outcome.ResultEmpty, err
	}
	return outcome.ResultSuccess, nil
}

// applyRevision runs the pipeline from the artifact to the prune, and
// remembers what it applied when every step succeeded. A build whose output
// is what the last complete apply applied, with every object as that apply
// left it, applies nothing. It returns the applied objects as they are now,
// by inventory ID.
func (r *KustomizationReconciler) applyRevision(ctx context.Context, obj *kustomizev1.Kustomization, m *ssa.Manager,
	source sourceref.Source, in *buildInputs, patcher *patch.Helper) (map[string]*unstructured.Unstructured, error) {
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	last, hadLast := r.applied.get(key)
	r.forget(key)
	artifact := source.GetArtifact()
	revision := artifact.Revision
	objs, err := r.buildRevision(ctx, obj, source, in)
	if err != nil {
		return nil, err
	}
	output, err := outputDigest(obj, objs)
	if err != nil {
		return nil, err
	}
	if hadLast && last.output == output {
		live, same, err := verify(ctx, m, last)
		if err != nil {
			return nil, err
		}
		if same {
			r.applied.set(key, appliedState{inputs: in.digest, output: output, objects: last.objects, inventory: obj.Status.Inventory.DeepCopy()})
			return live, nil
		}
	}
	if err := refuseEmptyRevision(obj, objs, revision); err != nil {
		return nil, err
	}
	drift := correctsDrift(obj, revision, in.digest, last, hadLast)
	changes, err := r.apply(ctx, obj, m, objs, revision, appliedBecause(artifact), patcher)
	recordApplied(changes, drift)
	if err != nil {
		return nil, err
	}
	if err := r.prune(ctx, obj, m, changes.Inventory(), revision); err != nil {
		return nil, err
	}
	r.applied.set(key, appliedState{inputs: in.digest, output: output, objects: changes.Applied(), inventory: obj.Status.Inventory.DeepCopy()})
	return changes.Live(), nil
}

// buildRevision builds obj from the artifact of source, fetched into a
// tree shared with the other Kustomizations of the same artifact.
func (r *KustomizationReconciler) buildRevision(ctx context.Context, obj *kustomizev1.Kustomization, source sourceref.Source,
	in *buildInputs) ([]*unstructured.Unstructured, error) {
	dir, release, err := r.acquireTree(ctx, obj.Spec.SourceRef.Kind, source)
	if err != nil {
		return nil, err
	}
	defer release()
	return r.buildObjects(ctx, obj, dir, in)
}

// refuseEmptyRevision fails a revision that builds to no objects while
// objects are applied, unless the Kustomization allows it: an emptied
// branch is more often a mistake than a wish to delete everything.
func refuseEmptyRevision(obj *kustomizev1.Kustomization, objs []*unstructured.Unstructured, revision string) error {
	applied := len(kspec.Inventory(obj))
	if len(objs) > 0 || applied == 0 || obj.GetAnnotations()[kustomizev1.AllowEmptyAnnotation] == "true" {
		return nil
	}
	return outcome.Fail(kustomizev1.EmptySourceReason, fmt.Errorf(
		"revision '%s' has no objects at '%s': refusing to prune the %d objects applied; annotate the Kustomization with %s=true to allow it",
		revision, obj.Spec.Path, applied, kustomizev1.AllowEmptyAnnotation))
}

// buildObjects turns the artifact in dir into objects: generate a kustomization
// when the path has none, decrypt the files that secret generators read,
// build with the spec's overlays, substitute variables, decrypt Secrets.
// dir is only read: what the build adds stays in memory.
func (r *KustomizationReconciler) buildObjects(ctx context.Context, obj *kustomizev1.Kustomization, dir string, in *buildInputs) ([]*unstructured.Unstructured, error) {
	path := filepath.Clean(strings.TrimPrefix(obj.Spec.Path, "./"))
	if _, err := securejoin.SecureJoin(dir, path); err != nil || path == ".." || strings.HasPrefix(path, "../") || filepath.IsAbs(obj.Spec.Path) {
		return nil, outcome.Stall(meta.InvalidPathReason, fmt.Errorf("path '%s' leaves the source's root", obj.Spec.Path))
	}
	files, err := build.Generate(dir, path)
	if err != nil {
		return nil, buildFailed(fmt.Errorf("generating a kustomization for '%s': %w", obj.Spec.Path, err))
	}
	decryptor, err := newDecryptor(obj, in.keys)
	if err != nil {
		return nil, err
	}
	if decryptor != nil {
		decrypted, err := decryptor.DecryptKustomizeSources(dir, path, files)
		if err != nil {
			return nil, decryptionFailed(err)
		}
		files = mergeFiles(files, decrypted)
	}
	opts := kspec.BuildOptions(&obj.Spec)
	opts.NoRemoteBases = r.NoRemoteBases
	opts.Files = files
	buildCtx, cancel := context.WithTimeout(ctx, obj.GetTimeout())
	defer cancel()
	docs, err := r.builder().Build(buildCtx, dir, path, opts)
	if errors.Is(err, build.ErrTimeout) && buildCtx.Err() != nil && ctx.Err() == nil {
		err = fmt.Errorf("%w (spec.timeout is %s)", err, obj.GetTimeout())
	}
	if err != nil {
		return nil, buildFailed(err)
	}
	objs, err := substitutedObjects(obj, docs, in.vars)
	var failed *outcome.Failure
	switch {
	case errors.As(err, &failed):
		return nil, err
	case err != nil:
		return nil, buildFailed(build.Locate(err, dir, path, opts))
	}
	rules, err := compileIgnoreRules(obj.Spec.Ignore)
	if err != nil {
		return nil, err
	}
	rules.Apply(objs)
	if decryptor != nil {
		for _, o := range objs {
			if err := decryptor.DecryptObject(o); err != nil {
				return nil, decryptionFailed(fmt.Errorf("%s/%s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err))
			}
		}
	}
	return objs, nil
}

// mergeFiles returns the in-memory files of a and b together.
func mergeFiles(a, b map[string][]byte) map[string][]byte {
	if len(a) == 0 {
		return b
	}
	for name, data := range b {
		a[name] = data
	}
	return a
}

func buildFailed(err error) error {
	return outcome.Fail(kustomizev1.BuildFailedReason, err)
}

func decryptionFailed(err error) error {
	return outcome.Fail(kustomizev1.DecryptionFailedReason, fmt.Errorf("decryption failed: %w", err))
}

// newDecryptor returns the SOPS decryptor of spec.decryption with keys,
// or nil.
func newDecryptor(obj *kustomizev1.Kustomization, keys map[string][]byte) (*sops.Decryptor, error) {
	if obj.Spec.Decryption == nil {
		return nil, nil
	}
	dec, err := sops.NewDecryptor(keys)
	if err != nil {
		return nil, outcome.Stall(kustomizev1.DecryptionFailedReason, fmt.Errorf("invalid decryption keys: %w", err))
	}
	return dec, nil
}

// substitutedObjects decodes the built documents into objects, each
// substituted first as spec.postBuild says with vars. The errors of the
// substitution are classified failures; a document that does not decode
// is a *build.DecodeError.
func substitutedObjects(obj *kustomizev1.Kustomization, docs *build.Documents, vars map[string]string) ([]*unstructured.Unstructured, error) {
	edit, err := substitution(obj, vars)
	if err != nil {
		return nil, err
	}
	return docs.Objects(edit)
}

// substitution returns the post-build substitution of spec.postBuild with
// vars as an edit of each built document, or nil (see
// kspec.Substitution); the edit's errors are classified failures.
func substitution(obj *kustomizev1.Kustomization, vars map[string]string) (func(*yaml.Node) error, error) {
	sub, err := kspec.Substitution(&obj.Spec, vars, true)
	if err != nil || sub == nil {
		return nil, failedSubstitution(err)
	}
	return func(doc *yaml.Node) error { return failedSubstitution(sub(doc)) }, nil
}

// failedSubstitution classifies an error of the post-build substitution:
// an output past the size limits is a build error, any other a
// substitution error. nil stays nil.
func failedSubstitution(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, substitute.ErrOutputTooLarge):
		return buildFailed(err)
	}
	return outcome.Fail(kustomizev1.SubstitutionFailedReason, err)
}

// substituteVars reads the variables of spec.postBuild (see
// kspec.SubstituteVars). A substituteFrom object that does not
// exist, and is not optional, is waited for.
func (r *KustomizationReconciler) substituteVars(ctx context.Context, obj *kustomizev1.Kustomization) (map[string]string, error) {
	vars, err := kspec.SubstituteVars(ctx, r.Client, obj)
	var from *kspec.SubstituteFromError
	switch {
	case errors.As(err, &from) && from.NotFound():
		return nil, outcome.Wait(kustomizev1.SubstitutionFailedReason,
			fmt.Errorf("substitute from %s '%s' not found", from.Kind, from.Key), r.DependencyRequeue)
	case errors.As(err, &from):
		return nil, from.Err
	case err != nil:
		return nil, err
	}
	return vars, nil
}

// recordInventory stores the applied objects, plus those that could not
// be pruned, as the status inventory.
func recordInventory(obj *kustomizev1.Kustomization, entries []inventory.Entry) {
	obj.Status.Inventory = kspec.ResourceInventory(entries)
}

// compileIgnoreRules compiles spec.ignore; an invalid rule stalls.
func compileIgnoreRules(rules []kustomizev1.IgnoreRule) (ssa.IgnoreRules, error) {
	compiled, err := kspec.IgnoreRules(rules)
	if err != nil {
		return nil, outcome.Stall(kustomizev1.ReconciliationFailedReason, err)
	}
	return compiled, nil
}

// defaultBuilder runs the builds of reconcilers made without a Builder.
var defaultBuilder = sync.OnceValue(func() *build.Builder { return build.NewBuilder(build.Limits{}, nil) })

// builder returns the Builder that runs r's builds.
func (r *KustomizationReconciler) builder() *build.Builder {
	if r.Builder != nil {
		return r.Builder
	}
	return defaultBuilder()
}
