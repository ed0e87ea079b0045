package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/helm/repository"
	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/redact"
)

// reconcileStorage checks that the artifact named in status is in storage
// (see artifactStore.reconcileStorage).
func (r *HelmRepositoryReconciler) reconcileStorage(ctx context.Context, obj *sourcev1.HelmRepository, sc *helmRepositoryScope) (outcome.Result, error) {
	r.store().reconcileStorage(ctx, obj, &sc.storageCheck, func() { obj.Status.Artifact = nil })
	return outcome.ResultSuccess, nil
}

// reconcileSource checks the URL, reads the credentials, fetches the index
// (within the size limit and spec.timeout) and normalises it: its revision
// is the digest of the normalised form. When the stored artifact holds
// that revision nothing more is written.
func (r *HelmRepositoryReconciler) reconcileSource(ctx context.Context, obj *sourcev1.HelmRepository, sc *helmRepositoryScope) (outcome.Result, error) {
	if err := r.validateHTTPURL(obj); err != nil {
		return outcome.ResultEmpty, helmRepositoryFetchFailed(obj, err)
	}
	creds, err := readHelmCredentials(ctx, r.Client, obj)
	if err != nil {
		return outcome.ResultEmpty, helmRepositoryFetchFailed(obj, err)
	}
	data, err := timed(&sc.fetch, func() ([]byte, error) {
		return repository.FetchIndex(ctx, obj.Spec.URL, helmClientOptions(obj, creds, r.MaxIndexSize, 0))
	})
	if err != nil {
		return outcome.ResultEmpty, helmRepositoryFetchFailed(obj, err)
	}
	if sc.index, err = repository.ParseIndexBounded(ctx, data); err != nil {
		return outcome.ResultEmpty, helmRepositoryFetchFailed(obj,
			fmt.Errorf("parsing the index of '%s': %w", redact.URL(obj.Spec.URL), err))
	}
	if sc.normalised, err = repository.Normalise(sc.index); err != nil {
		return outcome.ResultEmpty, helmRepositoryFetchFailed(obj, err)
	}
	sc.revision = repository.Revision(sc.normalised)
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	if obj.GetArtifact().HasRevision(sc.revision) {
		ctrl.LoggerFrom(ctx).V(1).Info("No changes since the last reconciliation",
			"revision", sc.revision)
		sc.upToDate = true
		return outcome.ResultSuccess, nil
	}
	conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason,
		"new index revision '%s'", sc.revision)
	reconcile.MarkProgress(obj, "building artifact: new index revision '%s'", sc.revision)
	return outcome.ResultSuccess, nil
}

// validateHTTPURL checks the URL of an HTTP repository; what can never
// work stalls.
func (r *HelmRepositoryReconciler) validateHTTPURL(obj *sourcev1.HelmRepository) error {
	u, err := url.Parse(obj.Spec.URL)
	if err != nil || u.Host == "" {
		// The URL that does not parse is not quoted: it may hide a password.
		return outcome.Stall(sourcev1.URLInvalidReason,
			errors.New("invalid URL: spec.url must be an http:// or https:// URL with a host"))
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if !r.AllowInsecureHTTP {
			return outcome.Stall(meta.InsecureConnectionsDisallowedReason, fmt.Errorf(
				"plain-HTTP URL '%s' refused: the controller runs with --insecure-allow-http=false", redact.URL(obj.Spec.URL)))
		}
		return nil
	case "oci":
		return outcome.Stall(sourcev1.URLInvalidReason, fmt.Errorf(
			"URL '%s' is an OCI registry: set spec.type to oci", redact.URL(obj.Spec.URL)))
	}
	return outcome.Stall(sourcev1.URLInvalidReason, fmt.Errorf(
		"invalid URL '%s': the scheme must be http or https", redact.URL(obj.Spec.URL)))
}

// reconcileArtifact stores the normalised index as index-<hex>.yaml and
// shares the parsed index, by the artifact's digest, with the HelmCharts.
// When the stored artifact is up to date it only confirms it.
func (r *HelmRepositoryReconciler) reconcileArtifact(ctx context.Context, obj *sourcev1.HelmRepository, sc *helmRepositoryScope) (outcome.Result, error) {
	if sc.upToDate && obj.GetArtifact() != nil {
		conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
		obj.Status.URL = obj.Status.Artifact.URL
		r.IndexCache.Set(obj.Status.Artifact.Digest, sc.index)
		return outcome.ResultSuccess, nil
	}
	a := r.Storage.NewArtifactFor(sourcev1.HelmRepositoryKind, obj, sc.revision,
		"index-"+strings.TrimPrefix(sc.revision, "sha256:")+".yaml")
	if err := r.store().copyBytes(obj, &a, sc.normalised); err != nil {
		return outcome.ResultEmpty, err
	}
	change := r.store().stored(ctx, obj, sc.storageCheck, a, func(a *meta.Artifact) { obj.Status.Artifact = a })
	obj.Status.URL = a.URL
	r.IndexCache.Set(a.Digest, sc.index)
	r.store().announce(ctx, obj, change, "NewArtifact", sc.revision, fmt.Sprintf("stored fetched index of %d charts (%d bytes) from '%s'",
		len(sc.index.Entries), len(sc.normalised), redact.URL(obj.Spec.URL)))
	return outcome.ResultSuccess, nil
}

// reconcileOCI checks an OCI HelmRepository, which has no index and no
// artifact (its HelmCharts pull from the registry): the URL, the provider
// and plain HTTP. An artifact left from a former type default is removed.
func (r *HelmRepositoryReconciler) reconcileOCI(ctx context.Context, obj *sourcev1.HelmRepository, _ *helmRepositoryScope) (outcome.Result, error) {
	if err := r.validateOCI(obj); err != nil {
		return outcome.ResultEmpty, helmRepositoryFetchFailed(obj, err)
	}
	if obj.Status.Artifact != nil {
		if err := r.store().removeAll(ctx, obj); err != nil {
			return outcome.ResultEmpty, storageFailed(obj, sourcev1.StorageOperationFailedReason, err)
		}
		obj.Status.Artifact = nil
	}
	obj.Status.URL = ""
	for _, c := range []string{sourcev1.ArtifactInStorageCondition, sourcev1.ArtifactOutdatedCondition,
		sourcev1.FetchFailedCondition, sourcev1.StorageOperationFailedCondition} {
		conditions.Delete(obj, c)
	}
	return outcome.ResultSuccess, nil
}

// validateOCI checks the spec of an OCI HelmRepository; what can never
// work stalls.
func (r *HelmRepositoryReconciler) validateOCI(obj *sourcev1.HelmRepository) error {
	spec := obj.Spec
	if !strings.HasPrefix(spec.URL, oci.Scheme) {
		return outcome.Stall(sourcev1.URLInvalidReason, fmt.Errorf(
			"invalid URL '%s': a HelmRepository of type oci needs an oci:// URL", redact.URL(spec.URL)))
	}
	if _, err := oci.ParseRepository(spec.URL, oci.Options{Insecure: spec.Insecure}); err != nil {
		return outcome.Stall(sourcev1.URLInvalidReason, err)
	}
	if spec.Insecure && !r.AllowInsecureHTTP {
		return outcome.Stall(meta.InsecureConnectionsDisallowedReason,
			errors.New("spec.insecure (plain HTTP) refused: the controller runs with --insecure-allow-http=false"))
	}
	return nil
}

// copyBytes writes data into storage as a, under the lock of a's file.
func (s artifactStore) copyBytes(obj sourceObject, a *meta.Artifact, data []byte) error {
	unlock, err := s.storage.Lock(*a)
	if err != nil {
		return storageFailed(obj, sourcev1.StorageOperationFailedReason, err)
	}
	defer unlock()
	if err := s.storage.Copy(a, bytes.NewReader(data)); err != nil {
		return storageFailed(obj, sourcev1.StorageOperationFailedReason, fmt.Errorf("writing %s: %w", a.FileName(), err))
	}
	return nil
}

// helmRepositoryFetchFailed records a failure to fetch or read the index
// (see fetchFailed).
func helmRepositoryFetchFailed(obj *sourcev1.HelmRepository, err error) error {
	return fetchFailed(obj, sourcev1.IndexationFailedReason, repository.ErrUnauthorized, err)
}
