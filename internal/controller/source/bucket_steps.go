package source

import (
	"context"
	"fmt"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/bucket"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/sourceignore"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// Keys of the Secret of a Bucket's spec.secretRef.
const (
	bucketAccessKey = "accesskey"
	bucketSecretKey = "secretkey"
)

// defaultBucketConcurrency bounds the downloads of one bucket when the
// reconciler does not say.
const defaultBucketConcurrency = 8

// reconcileStorage checks that the artifact named in status is in storage
// (see artifactStore.reconcileStorage).
func (r *BucketReconciler) reconcileStorage(ctx context.Context, obj *sourcev1.Bucket, sc *bucketScope) (outcome.Result, error) {
	r.store().reconcileStorage(ctx, obj, &sc.storageCheck, func() { obj.Status.Artifact = nil })
	return outcome.ResultSuccess, nil
}

// reconcileSource checks the spec, reads the credentials and lists the
// bucket. The revision is the digest of the listing, less the objects the
// ignore rules exclude; when the stored artifact holds it, nothing is
// downloaded.
func (r *BucketReconciler) reconcileSource(ctx context.Context, obj *sourcev1.Bucket, sc *bucketScope) (outcome.Result, error) {
	opts, err := r.bucketOptions(ctx, obj)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	if sc.client, err = bucket.New(opts); err != nil {
		return outcome.ResultEmpty, bucketFetchFailed(obj, outcome.Stall(sourcev1.InvalidSpecReason, err))
	}
	ctx, cancel := context.WithDeadline(ctx, sc.deadline)
	defer cancel()
	listed, err := timed(&sc.fetch, func() ([]bucket.Object, error) {
		return sc.client.List(ctx, obj.Spec.BucketName, obj.Spec.Prefix)
	})
	if err != nil {
		return outcome.ResultEmpty, bucketFetchFailed(obj, err)
	}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	ignored := sourceignore.NewKeyFilter(obj.Spec.Ignore)
	sc.objects = listed[:0]
	for _, o := range listed {
		if !ignored(o.Key, false) {
			sc.objects = append(sc.objects, o)
		}
	}
	sc.revision = bucket.Revision(sc.objects)
	if obj.GetArtifact().HasRevision(sc.revision) && equalPtr(obj.Spec.Ignore, obj.Status.ObservedIgnore) {
		ctrl.LoggerFrom(ctx).V(1).Info("No changes since the last reconciliation", "revision", sc.revision)
		sc.upToDate = true
		return outcome.ResultSuccess, nil
	}
	if !obj.GetArtifact().HasRevision(sc.revision) {
		conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason,
			"new upstream revision '%s'", sc.revision)
		reconcile.MarkProgress(obj, "building artifact: new upstream revision '%s'", sc.revision)
	}
	return outcome.ResultSuccess, nil
}

// bucketOptions builds how to reach obj's bucket: the spec, the keys of
// spec.secretRef, TLS and proxy. What can never work stalls.
func (r *BucketReconciler) bucketOptions(ctx context.Context, obj *sourcev1.Bucket) (bucket.Options, error) {
	spec := obj.Spec
	o := bucket.Options{Endpoint: spec.Endpoint, Insecure: spec.Insecure, Region: spec.Region}
	if spec.Insecure && !r.AllowInsecureHTTP {
		return o, bucketFetchFailed(obj, outcome.Stall(meta.InsecureConnectionsDisallowedReason,
			fmt.Errorf("spec.insecure (plain HTTP) refused: the controller runs with --insecure-allow-http=false")))
	}
	if spec.SecretRef != nil {
		data, err := secretData(ctx, r.Client, obj.Namespace, spec.SecretRef.Name)
		if err != nil {
			return o, bucketFetchFailed(obj, outcome.Fail(sourcev1.AuthenticationFailedReason, err))
		}
		o.AccessKey, o.SecretKey = string(data[bucketAccessKey]), string(data[bucketSecretKey])
		if o.AccessKey == "" || o.SecretKey == "" {
			return o, bucketFetchFailed(obj, outcome.Stall(sourcev1.AuthenticationFailedReason,
				fmt.Errorf("secret '%s' needs both '%s' and '%s'", spec.SecretRef.Name, bucketAccessKey, bucketSecretKey)))
		}
	}
	t, err := sourceTransport(ctx, r.Client, obj.Namespace, spec.CertSecretRef, spec.ProxySecretRef, r.AllowInsecureHTTP)
	if err != nil {
		return o, bucketFetchFailed(obj, err)
	}
	o.Transport = t
	return o, nil
}

// reconcileArtifact downloads the objects into a working folder and stores
// them as an artifact, with the ignore rules (and the .sourceignore
// objects of the bucket). When the stored artifact is up to date it only
// confirms it.
func (r *BucketReconciler) reconcileArtifact(ctx context.Context, obj *sourcev1.Bucket, sc *bucketScope) (outcome.Result, error) {
	if sc.upToDate && obj.GetArtifact() != nil {
		r.store().upToDate(ctx, obj, sc.storageCheck)
		return outcome.ResultSuccess, nil
	}
	var err error
	if sc.workDir, err = workdir.MkdirTemp(fmt.Sprintf("bucket-%s-%s-", obj.Namespace, obj.Name)); err != nil {
		return outcome.ResultEmpty, outcome.Fail(sourcev1.DirCreationFailedReason, fmt.Errorf("creating a working directory: %w", err))
	}
	dlCtx, cancel := context.WithDeadline(ctx, sc.deadline)
	defer cancel()
	maxSize := r.maxSize()
	if err := sc.fetch.time(func() error {
		return sc.client.Download(dlCtx, obj.Spec.BucketName, sc.objects, sc.workDir, bucket.DownloadOptions{
			Concurrency: r.concurrency(), MaxObjectSize: maxSize, MaxTotalSize: maxSize,
		})
	}); err != nil {
		return outcome.ResultEmpty, bucketFetchFailed(obj, err)
	}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	a := r.Storage.NewArtifactFor(sourcev1.BucketKind, obj, sc.revision, strings.TrimPrefix(sc.revision, "sha256:")+".tar.gz")
	if err := r.store().archive(obj, &a, sc.workDir, obj.Spec.Ignore, "the objects"); err != nil {
		return outcome.ResultEmpty, err
	}
	change := r.store().stored(ctx, obj, sc.storageCheck, a, func(a *meta.Artifact) { obj.Status.Artifact = a })
	obj.Status.URL = a.URL
	obj.Status.ObservedIgnore = obj.Spec.Ignore
	r.store().announce(ctx, obj, change, "NewArtifact", sc.revision,
		fmt.Sprintf("stored artifact with %d objects from bucket '%s'", len(sc.objects), obj.Spec.BucketName))
	return outcome.ResultSuccess, nil
}

// maxSize returns the bound on the bytes downloaded from a bucket.
func (r *BucketReconciler) maxSize() int64 {
	if r.MaxSize > 0 {
		return r.MaxSize
	}
	return archive.DefaultMaxSize
}

// concurrency returns the bound on a bucket's parallel downloads.
func (r *BucketReconciler) concurrency() int {
	if r.DownloadConcurrency > 0 {
		return r.DownloadConcurrency
	}
	return defaultBucketConcurrency
}

// bucketFetchFailed records a failure to reach the bucket (see
// fetchFailed).
func bucketFetchFailed(obj *sourcev1.Bucket, err error) error {
	return fetchFailed(obj, sourcev1.BucketOperationFailedReason, bucket.ErrAccessDenied, err)
}
