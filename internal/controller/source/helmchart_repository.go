package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/helm/repository"
	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// fromHelmRepository selects the chart version in the HelmRepository of
// obj and pulls it, unless the stored artifact holds it.
func (r *HelmChartReconciler) fromHelmRepository(ctx context.Context, obj *sourcev1.HelmChart, sc *helmChartScope) error {
	repo := &sourcev1.HelmRepository{}
	if err := r.getSource(ctx, obj, repo); err != nil {
		return err
	}
	if repo.GetType() == sourcev1.HelmRepositoryTypeOCI {
		return r.pullOCIChart(ctx, obj, repo, sc)
	}
	if obj.Spec.Verify != nil {
		return unverifiableChart(fmt.Sprintf("HelmRepository '%s' is not of type oci", repo.Name))
	}
	conditions.Delete(obj, sourcev1.SourceVerifiedCondition)
	return r.pullHTTPChart(ctx, obj, repo, sc)
}

// pullHTTPChart selects the highest version of spec.version in the
// repository's index (parsed once per index revision, shared through the
// IndexCache) and downloads it with the repository's credentials, unless
// the stored artifact holds that version: a new index alone builds
// nothing.
func (r *HelmChartReconciler) pullHTTPChart(ctx context.Context, obj *sourcev1.HelmChart, repo *sourcev1.HelmRepository, sc *helmChartScope) error {
	a := repo.GetArtifact()
	if a == nil {
		return r.noArtifactYet(obj)
	}
	idx, err := r.IndexCache.GetOrLoad(a.Digest, func() (*repository.Index, error) { return r.loadIndex(ctx, *a) })
	if err != nil {
		return chartPullFailed(obj, nil, fmt.Errorf("reading the index of HelmRepository '%s': %w", repo.Name, err))
	}
	cv, err := idx.Get(obj.Spec.Chart, obj.GetVersion())
	if err != nil {
		return chartPullFailed(obj, nil, fmt.Errorf("HelmRepository '%s': %w", repo.Name, err))
	}
	sc.sourceRevision, sc.name, sc.version = a.Revision, obj.Spec.Chart, cv.Version
	if chartUpToDate(obj, cv.Version, "") {
		ctrl.LoggerFrom(ctx).V(1).Info("No changes since the last reconciliation",
			"version", cv.Version)
		sc.upToDate = true
		return nil
	}
	creds, err := readHelmCredentials(ctx, r.Client, repo)
	if err != nil {
		return chartPullFailed(obj, nil, err)
	}
	sc.downloaded, err = timed(&sc.fetch, func() ([]byte, error) {
		return repository.DownloadChart(ctx, repo.Spec.URL, cv, helmClientOptions(repo, creds, r.MaxIndexSize, r.maxChartSize()))
	})
	if err != nil {
		return chartPullFailed(obj, repository.ErrUnauthorized, err)
	}
	return nil
}

// loadIndex reads and parses the index artifact a from storage, checking
// that it is the content its digest names.
func (r *HelmChartReconciler) loadIndex(ctx context.Context, a meta.Artifact) (*repository.Index, error) {
	limit := r.MaxIndexSize
	if limit <= 0 {
		limit = repository.DefaultMaxIndexSize
	}
	data, err := r.readIndex(ctx, a, limit)
	if err != nil {
		return nil, err
	}
	if got := repository.Revision(data); got != a.Digest {
		return nil, fmt.Errorf("%s does not match its digest", a.Path)
	}
	return repository.ParseIndexBounded(ctx, data)
}

// readIndex returns the bytes of the index artifact a, at most limit, from
// storage, or from its URL when storage does not hold it and r.Remote is
// set (the HelmRepository is held by another replica).
func (r *HelmChartReconciler) readIndex(ctx context.Context, a meta.Artifact, limit int64) ([]byte, error) {
	f, err := r.Storage.Open(a)
	if errors.Is(err, artifact.ErrNotFound) && r.Remote != nil {
		return r.Remote.ReadAll(ctx, a, limit)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if n, err := io.Copy(&buf, io.LimitReader(f, limit+1)); err != nil {
		return nil, fmt.Errorf("reading %s: %w", a.Path, err)
	} else if n > limit {
		return nil, fmt.Errorf("%s is larger than the limit of %d bytes", a.Path, limit)
	}
	return buf.Bytes(), nil
}

// pullOCIChart pulls the highest version of spec.version of the chart from
// the registry of an OCI HelmRepository, with its credentials and TLS
// settings, and verifies its signature when spec.verify asks for it. The
// version is resolved to its manifest's digest first (a HEAD request):
// nothing is downloaded when the stored artifact holds the same version
// and digest, verified for the current spec.
func (r *HelmChartReconciler) pullOCIChart(ctx context.Context, obj *sourcev1.HelmChart, repo *sourcev1.HelmRepository, sc *helmChartScope) error {
	if !strings.HasPrefix(repo.Spec.URL, oci.Scheme) {
		// The HelmRepository stalls and says why; its fix reconciles obj.
		return outcome.Wait(meta.DependencyNotReadyReason, fmt.Errorf(
			"HelmRepository '%s' is of type oci without an oci:// URL", repo.Name), r.sourceRequeue())
	}
	if repo.Spec.Insecure && !r.AllowInsecureHTTP {
		return chartPullFailed(obj, nil, outcome.Stall(meta.InsecureConnectionsDisallowedReason, fmt.Errorf(
			"HelmRepository '%s' asks for plain HTTP, which the controller refuses (--insecure-allow-http=false)", repo.Name)))
	}
	creds, err := readHelmCredentials(ctx, r.Client, repo)
	if err != nil {
		return chartPullFailed(obj, nil, err)
	}
	opts, err := helmOCIOptions(repo, creds)
	if err != nil {
		return chartPullFailed(obj, nil, err)
	}
	defer closeIdle(opts.Transport)
	ctx, cancel := context.WithTimeout(ctx, repo.GetTimeout())
	defer cancel()
	chart, err := timed(&sc.fetch, func() (repository.OCIChart, error) {
		return repository.ResolveOCIChart(ctx, repo.Spec.URL, obj.Spec.Chart, obj.GetVersion(), opts)
	})
	if err != nil {
		return chartPullFailed(obj, oci.ErrAccessDenied, err)
	}
	sc.sourceRevision, sc.name, sc.version = chart.Version+"@"+chart.Digest, obj.Spec.Chart, chart.Version
	if chartUpToDate(obj, chart.Version, sc.sourceRevision) && verifiedForGeneration(obj) {
		ctrl.LoggerFrom(ctx).V(1).Info("No changes since the last reconciliation", "revision", sc.sourceRevision)
		sc.upToDate = true
		return nil
	}
	if err := r.verifyOCIChart(ctx, obj, chart.Ref(), sc.sourceRevision, opts); err != nil {
		return err
	}
	if sc.downloaded, err = timed(&sc.fetch, func() ([]byte, error) { return chart.Pull(ctx, opts, r.maxChartSize()) }); err != nil {
		return chartPullFailed(obj, oci.ErrAccessDenied, err)
	}
	return nil
}

// verifiedForGeneration reports whether the chart passed the verification
// the current spec asks for, if any.
func verifiedForGeneration(obj *sourcev1.HelmChart) bool {
	if obj.Spec.Verify == nil {
		return true
	}
	c := conditions.Get(obj, sourcev1.SourceVerifiedCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == obj.Generation
}

// verifyOCIChart checks the cosign signature of the chart's manifest when
// spec.verify asks for it, with the policy and the verification of
// OCIRepository, and sets SourceVerified. A chart that fails is not stored.
func (r *HelmChartReconciler) verifyOCIChart(ctx context.Context, obj *sourcev1.HelmChart, digest name.Digest, revision string, opts oci.Options) error {
	if obj.Spec.Verify == nil {
		conditions.Delete(obj, sourcev1.SourceVerifiedCondition)
		return nil
	}
	// The policy comes from spec.verify exactly as an OCIRepository's does.
	shadow := &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: obj.Namespace, Name: obj.Name, Generation: obj.Generation},
		Spec:       sourcev1.OCIRepositorySpec{Verify: obj.Spec.Verify},
	}
	policy, err := (&OCIRepositoryReconciler{Client: r.Client}).cosignPolicy(ctx, shadow)
	if err != nil {
		conditions.MarkFalse(obj, sourcev1.SourceVerifiedCondition, sourcev1.VerificationErrorReason, "%s", err.Error())
		return err
	}
	result, err := cosignVerify(ctx, digest, policy, opts)
	if err != nil {
		err = fmt.Errorf("signature verification of chart '%s' %s failed: %w", obj.Spec.Chart, revision, err)
		conditions.MarkFalse(obj, sourcev1.SourceVerifiedCondition, sourcev1.VerificationErrorReason, "%s", err.Error())
		r.Events.Warning(ctx, obj, sourcev1.VerificationErrorReason, revision, err.Error())
		return outcome.Fail(sourcev1.VerificationErrorReason, err)
	}
	conditions.MarkTrue(obj, sourcev1.SourceVerifiedCondition, meta.SucceededReason,
		"verified signature of chart '%s' %s (%s)", obj.Spec.Chart, revision, result.Signer)
	return nil
}
