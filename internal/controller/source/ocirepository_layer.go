package source

import (
	"context"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// pullLayer reads the manifest of the resolved digest, with its
// annotations as a's metadata, and downloads its selected layer (see
// storeLayer).
func (r *OCIRepositoryReconciler) pullLayer(ctx context.Context, obj *sourcev1.OCIRepository, sc *ociScope, a *meta.Artifact) error {
	manifest, err := oci.GetManifest(ctx, sc.digest, sc.remote)
	if err != nil {
		return ociFetchFailed(obj, sourcev1.OCIPullFailedReason, err)
	}
	layer, err := oci.SelectLayer(manifest, obj.GetLayerSelector().MediaType)
	if err != nil {
		return ociFetchFailed(obj, sourcev1.OCILayerOperationFailedReason, err)
	}
	a.Metadata = manifest.Annotations
	return r.storeLayer(ctx, obj, sc, a, layer)
}

// storeLayer streams the layer into storage as a, copied as it is, or
// extracts it into sc.workDir with the limits of archive.Extract (no
// links, no escapes, a size cap), for reconcileArtifact to package with
// the ignore rules. Nothing is held whole in memory.
func (r *OCIRepositoryReconciler) storeLayer(ctx context.Context, obj *sourcev1.OCIRepository, sc *ociScope, a *meta.Artifact, layer v1.Descriptor) error {
	maxSize := r.maxLayerSize()
	rc, err := oci.OpenLayer(ctx, sc.repo, layer, maxSize, sc.remote)
	if err != nil {
		return ociFetchFailed(obj, sourcev1.OCIPullFailedReason, err)
	}
	defer rc.Close()
	if obj.GetLayerSelector().Operation == sourcev1.OCILayerCopy {
		return r.copyLayer(obj, sc, a, rc)
	}
	if sc.workDir, err = workdir.MkdirTemp(fmt.Sprintf("ocirepository-%s-%s-", obj.Namespace, obj.Name)); err != nil {
		return outcome.Fail(sourcev1.DirCreationFailedReason, fmt.Errorf("creating a working directory: %w", err))
	}
	err = archive.Extract(rc, sc.workDir, archive.WithMaxSize(maxSize))
	if err == nil {
		err = rc.Close() // verifies the digest of what was read
	}
	if err != nil {
		return ociFetchFailed(obj, sourcev1.OCILayerOperationFailedReason, fmt.Errorf("extracting the layer of '%s': %w", sc.revision, err))
	}
	return nil
}

// copyLayer stores the layer rc as it is, as a; a layer whose digest does
// not match fails its last Read (see oci.OpenLayer), and is not kept.
func (r *OCIRepositoryReconciler) copyLayer(obj *sourcev1.OCIRepository, sc *ociScope, a *meta.Artifact, rc io.ReadCloser) error {
	unlock, err := r.Storage.Lock(*a)
	if err != nil {
		return storageFailed(obj, sourcev1.StorageOperationFailedReason, err)
	}
	defer unlock()
	if err := r.Storage.Copy(a, rc); err != nil {
		return ociFetchFailed(obj, sourcev1.OCILayerOperationFailedReason, fmt.Errorf("copying the layer of '%s': %w", sc.revision, err))
	}
	return nil
}

// maxLayerSize returns the bound on a layer's bytes, downloaded and
// extracted.
func (r *OCIRepositoryReconciler) maxLayerSize() int64 {
	if r.MaxLayerSize > 0 {
		return r.MaxLayerSize
	}
	return archive.DefaultMaxSize
}

// ociFetchFailed records a failure to reach the registry (see
// fetchFailed).
func ociFetchFailed(obj *sourcev1.OCIRepository, reason string, err error) error {
	return fetchFailed(obj, reason, oci.ErrAccessDenied, err)
}

// ociContentConfigChanged reports whether the spec asks for an artifact
// with other content than the stored one, even at the same digest, or for
// a verification that has not passed with the current spec.
func ociContentConfigChanged(obj *sourcev1.OCIRepository) bool {
	st := obj.Status
	if !equalPtr(obj.Spec.Ignore, st.ObservedIgnore) {
		return true
	}
	if st.ObservedLayerSelector == nil || *st.ObservedLayerSelector != obj.GetLayerSelector() {
		return true
	}
	if obj.Spec.Verify == nil {
		return false
	}
	verified := conditions.Get(obj, sourcev1.SourceVerifiedCondition)
	return verified == nil || verified.Status != metav1.ConditionTrue || verified.ObservedGeneration != obj.Generation
}
