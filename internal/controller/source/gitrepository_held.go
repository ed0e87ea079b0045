package source

import (
	"context"
	"fmt"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// artifactRebuiltReason is the reason of the event that says the artifact
// of a held GitRepository was rebuilt at the held revision.
const artifactRebuiltReason = "ArtifactRebuilt"

// rebuildConditions are the conditions a rebuild at the held revision
// writes: they are copied from the object the rebuild ran on.
var rebuildConditions = []string{
	sourcev1.FetchFailedCondition,
	sourcev1.IncludeUnavailableCondition,
	sourcev1.StorageOperationFailedCondition,
	sourcev1.ArtifactInStorageCondition,
}

// rebuildHeldArtifact keeps serving the artifact of a GitRepository that a
// closed gate holds: when the artifact in status is missing from storage or
// does not match its digest (a restart with an emptyDir, tampering), it is
// rebuilt at exactly its revision, by the source, include and artifact
// steps with the reference pinned to the held commit and the ignore rules,
// submodules, sparse checkout and includes it was built with. The revision
// in status stays the same, so appliers see no change; no new revision gets
// through. An artifact that is fine costs no fetch at all. It reports
// whether it rebuilt the artifact.
func (r *GitRepositoryReconciler) rebuildHeldArtifact(ctx context.Context, obj *sourcev1.GitRepository) (bool, error) {
	a := obj.GetArtifact()
	if a == nil {
		return false, nil
	}
	why := r.store().checkStoredArtifact(ctx, obj, *a)
	if why == "" {
		return false, nil
	}
	revision := a.Revision
	conditions.MarkFalse(obj, sourcev1.ArtifactInStorageCondition, sourcev1.StorageOperationFailedReason, "artifact %s", why)
	ref, hash, err := parseRevision(revision)
	if err != nil {
		err = fmt.Errorf("cannot rebuild the artifact at the held revision: %w", err)
		conditions.MarkTrue(obj, sourcev1.StorageOperationFailedCondition, sourcev1.StorageOperationFailedReason, "%s", err.Error())
		return false, outcome.Stall(sourcev1.StorageOperationFailedReason, err)
	}
	reconcile.MarkProgress(obj, "rebuilding artifact at the held revision '%s': artifact %s", revision, why)

	held := obj.DeepCopy()
	held.Spec = heldSpec(obj, ref, hash)
	sc := &gitScope{heldRevision: revision, fetch: fetchClock{kind: sourcev1.GitRepositoryKind}}
	defer sc.cleanup()
	defer sc.fetch.end()
	_, err = reconcile.RunSteps(ctx, held, sc, r.reconcileSource, r.reconcileInclude, r.reconcileArtifact)
	obj.Status.Artifact = held.Status.Artifact
	obj.Status.IncludedArtifacts = held.Status.IncludedArtifacts
	for _, t := range rebuildConditions {
		if c := conditions.Get(held, t); c != nil {
			conditions.Set(obj, t, c.Status, c.Reason, "%s", c.Message)
		} else {
			conditions.Delete(obj, t)
		}
	}
	if err != nil {
		return false, err
	}
	ctrl.LoggerFrom(ctx).Info("Rebuilt the artifact at the held revision", "revision", revision)
	r.Events.Normal(ctx, obj, artifactRebuiltReason, revision,
		fmt.Sprintf("artifact %s: rebuilt at the held revision '%s'", why, revision))
	return true, nil
}

// heldSpec is the spec of a rebuild at the held commit hash, seen at ref
// (a short branch or tag name, or "" for a bare commit): what the stored
// artifact was built with, as recorded in status, and the reference pinned
// to the commit. Only a branch that the spec selects by name narrows the
// fetch; any other reference fetches every branch and tag, among which the
// commit must be.
func heldSpec(obj *sourcev1.GitRepository, ref, hash string) sourcev1.GitRepositorySpec {
	spec := *obj.Spec.DeepCopy()
	pinned := &sourcev1.GitRepositoryRef{Commit: hash}
	if ref != "" && specBranch(obj.Spec.Reference) == ref {
		pinned.Branch = ref
	}
	spec.Reference = pinned
	st := obj.Status.DeepCopy()
	spec.Ignore = st.ObservedIgnore
	spec.RecurseSubmodules = st.ObservedRecurseSubmodules
	spec.SparseCheckout = st.ObservedSparseCheckout
	spec.Include = st.ObservedInclude
	return spec
}

// specBranch returns the branch that ref selects, or "" when it selects a
// tag, a semver range or a reference name.
func specBranch(ref *sourcev1.GitRepositoryRef) string {
	switch {
	case ref == nil:
		return git.DefaultBranch
	case ref.Name != "" || ref.SemVer != "" || ref.Tag != "":
		return ""
	case ref.Branch != "":
		return ref.Branch
	case ref.Commit != "":
		return ""
	}
	return git.DefaultBranch
}

// includedArtifacts returns the artifacts to include: normally the current
// artifacts of the included repositories. A rebuild at the held revision
// takes those recorded in status when every one is still in storage with
// its digest, so that the artifact is rebuilt as it was.
func (r *GitRepositoryReconciler) includedArtifacts(ctx context.Context, obj *sourcev1.GitRepository, sc *gitScope) ([]*meta.Artifact, error) {
	recorded := obj.Status.IncludedArtifacts
	if sc.heldRevision == "" || len(obj.Spec.Include) == 0 || len(recorded) != len(obj.Spec.Include) {
		return r.resolveIncludes(ctx, obj)
	}
	artifacts := make([]*meta.Artifact, 0, len(recorded))
	for _, a := range recorded {
		if a == nil || r.Storage.Verify(*a) != nil {
			return r.resolveIncludes(ctx, obj)
		}
		artifacts = append(artifacts, a.DeepCopy())
	}
	conditions.Delete(obj, sourcev1.IncludeUnavailableCondition)
	return artifacts, nil
}

// parseRevision splits a Git revision, "<ref>@sha1:<hex>" or "sha1:<hex>"
// (see git.Commit.String), into its short reference name ("" for a bare
// commit) and its commit hash.
func parseRevision(revision string) (ref, hash string, err error) {
	digest := revision
	if i := strings.LastIndex(revision, "@"); i >= 0 {
		ref, digest = revision[:i], revision[i+1:]
		if ref == "" {
			return "", "", fmt.Errorf("revision '%s' has an empty reference", revision)
		}
	}
	hash, ok := strings.CutPrefix(digest, "sha1:")
	if !ok || !isFullSHA1(hash) {
		return "", "", fmt.Errorf("revision '%s' does not end in sha1:<40 hex digits>", revision)
	}
	return ref, strings.ToLower(hash), nil
}

// isFullSHA1 reports whether s is 40 hex digits.
func isFullSHA1(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}
