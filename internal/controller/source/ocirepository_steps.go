package source

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// defaultOCITag is the tag pulled when spec.ref names none.
const defaultOCITag = "latest"

// reconcileStorage checks that the artifact named in status is in storage
// (see artifactStore.reconcileStorage).
func (r *OCIRepositoryReconciler) reconcileStorage(ctx context.Context, obj *sourcev1.OCIRepository, sc *ociScope) (outcome.Result, error) {
	r.store().reconcileStorage(ctx, obj, &sc.storageCheck, func() { obj.Status.Artifact = nil })
	return outcome.ResultSuccess, nil
}

// reconcileSource checks the spec, reads the credentials and resolves the
// reference to a digest with a HEAD request. When the stored artifact
// already holds that digest with the spec's content settings, nothing more
// is fetched. A new digest is verified when spec.verify asks for it.
func (r *OCIRepositoryReconciler) reconcileSource(ctx context.Context, obj *sourcev1.OCIRepository, sc *ociScope) (outcome.Result, error) {
	if err := r.validateOCISpec(obj); err != nil {
		return outcome.ResultEmpty, err
	}
	var err error
	if sc.remote, err = r.registryOptions(ctx, obj); err != nil {
		return outcome.ResultEmpty, err
	}
	if sc.repo, err = oci.ParseRepository(obj.Spec.URL, sc.remote); err != nil {
		return outcome.ResultEmpty, outcome.Stall(sourcev1.URLInvalidReason, err)
	}
	ctx, cancel := context.WithDeadline(ctx, sc.deadline)
	defer cancel()
	if err := sc.fetch.time(func() error { return r.resolveReference(ctx, obj, sc) }); err != nil {
		return outcome.ResultEmpty, ociFetchFailed(obj, sourcev1.OCIPullFailedReason, err)
	}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	if obj.GetArtifact().HasRevision(sc.revision) && !ociContentConfigChanged(obj) {
		ctrl.LoggerFrom(ctx).V(1).Info("No changes since the last reconciliation", "revision", sc.revision)
		sc.upToDate = true
		return outcome.ResultSuccess, nil
	}
	if err := r.verifyArtifact(ctx, obj, sc); err != nil {
		return outcome.ResultEmpty, err
	}
	if !obj.GetArtifact().HasRevision(sc.revision) {
		conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason,
			"new upstream revision '%s'", sc.revision)
		reconcile.MarkProgress(obj, "building artifact: new upstream revision '%s'", sc.revision)
	}
	return outcome.ResultSuccess, nil
}

// validateOCISpec checks what the CRD schema cannot; what fails can never
// work, so it stalls.
func (r *OCIRepositoryReconciler) validateOCISpec(obj *sourcev1.OCIRepository) error {
	spec := obj.Spec
	stall := func(reason string, format string, args ...any) error {
		return ociFetchFailed(obj, reason, outcome.Stall(reason, fmt.Errorf(format, args...)))
	}
	if spec.Insecure && !r.AllowInsecureHTTP {
		return stall(meta.InsecureConnectionsDisallowedReason,
			"spec.insecure (plain HTTP) refused: the controller runs with --insecure-allow-http=false")
	}
	if ref := spec.Reference; ref != nil {
		if ref.Digest != "" && !isSHA256Digest(ref.Digest) {
			return stall(sourcev1.InvalidSpecReason, "ref.digest '%s' is not sha256:<64 hex digits>", ref.Digest)
		}
		if ref.SemVer != "" {
			if _, err := semver.NewConstraint(ref.SemVer); err != nil {
				return stall(sourcev1.InvalidSemverReason, "invalid ref.semver '%s': %v", ref.SemVer, err)
			}
		}
		if ref.SemverFilter != "" {
			if _, err := regexp.Compile(ref.SemverFilter); err != nil {
				return stall(sourcev1.InvalidSpecReason, "invalid ref.semverFilter '%s': %v", ref.SemverFilter, err)
			}
		}
	}
	return nil
}

// isSHA256Digest reports whether d is sha256:<64 lowercase hex digits>.
func isSHA256Digest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	return strings.Trim(hex, "0123456789abcdef") == ""
}

// resolveReference finds the digest and the revision that spec.ref
// selects: the digest itself, the highest tag in the semver range, or the
// tag (latest by default) resolved with a HEAD request.
func (r *OCIRepositoryReconciler) resolveReference(ctx context.Context, obj *sourcev1.OCIRepository, sc *ociScope) error {
	ref := obj.Spec.Reference
	if ref == nil {
		ref = &sourcev1.OCIRepositoryRef{}
	}
	if ref.Digest != "" {
		sc.digest = sc.repo.Digest(ref.Digest)
		sc.revision = ref.Digest
		return nil
	}
	tag := ref.Tag
	if ref.SemVer != "" {
		var err error
		if tag, err = oci.LatestSemverTag(ctx, sc.repo, ref.SemVer, ref.SemverFilter, sc.remote); err != nil {
			return err
		}
	}
	if tag == "" {
		tag = defaultOCITag
	}
	h, err := oci.Resolve(ctx, sc.repo.Tag(tag), sc.remote)
	if err != nil {
		return err
	}
	sc.digest = sc.repo.Digest(h.String())
	sc.revision = tag + "@" + h.String()
	return nil
}

// registryOptions builds the registry options of obj: credentials from
// spec.secretRef and the imagePullSecrets of spec.serviceAccountName (no
// credentials of the controller's own environment, ever), TLS from
// spec.certSecretRef and a proxy from spec.proxySecretRef.
func (r *OCIRepositoryReconciler) registryOptions(ctx context.Context, obj *sourcev1.OCIRepository) (oci.Options, error) {
	o := oci.Options{Insecure: obj.Spec.Insecure, UserAgent: "windlass-source-controller",
		CredentialsHint: "check spec.secretRef and the imagePullSecrets of spec.serviceAccountName"}
	keychain, err := r.keychain(ctx, obj)
	if err != nil {
		return o, err
	}
	o.Keychain = keychain
	o.Transport, err = r.transport(ctx, obj)
	return o, err
}

// keychain returns the registry credentials of obj's Secrets; anonymous
// when it names none.
func (r *OCIRepositoryReconciler) keychain(ctx context.Context, obj *sourcev1.OCIRepository) (authn.Keychain, error) {
	var names []string
	if obj.Spec.SecretRef != nil {
		names = append(names, obj.Spec.SecretRef.Name)
	}
	if sa := obj.Spec.ServiceAccountName; sa != "" {
		var account corev1.ServiceAccount
		if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: sa}, &account); err != nil {
			return nil, ociFetchFailed(obj, sourcev1.AuthenticationFailedReason,
				outcome.Fail(sourcev1.AuthenticationFailedReason, fmt.Errorf("reading service account '%s': %w", sa, err)))
		}
		for _, s := range account.ImagePullSecrets {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return authn.NewMultiKeychain(), nil
	}
	configs := make([][]byte, 0, len(names))
	for _, n := range names {
		data, err := secretData(ctx, r.Client, obj.Namespace, n)
		if err != nil {
			return nil, ociFetchFailed(obj, sourcev1.AuthenticationFailedReason, outcome.Fail(sourcev1.AuthenticationFailedReason, err))
		}
		config, ok := data[corev1.DockerConfigJsonKey]
		if !ok {
			return nil, ociFetchFailed(obj, sourcev1.AuthenticationFailedReason, outcome.Stall(sourcev1.AuthenticationFailedReason,
				fmt.Errorf("secret '%s' has no '%s': create it with `windlass create secret oci` or kubectl create secret docker-registry", n, corev1.DockerConfigJsonKey)))
		}
		configs = append(configs, config)
	}
	kc, err := oci.KeychainFromDockerConfigs(configs...)
	if err != nil {
		return nil, ociFetchFailed(obj, sourcev1.AuthenticationFailedReason, outcome.Stall(sourcev1.AuthenticationFailedReason,
			fmt.Errorf("invalid registry credentials in secret '%s': %w", strings.Join(names, "', '"), err)))
	}
	return kc, nil
}

// transport returns the HTTP transport of obj's certSecretRef and
// proxySecretRef, or nil for the shared default transport.
func (r *OCIRepositoryReconciler) transport(ctx context.Context, obj *sourcev1.OCIRepository) (http.RoundTripper, error) {
	t, err := sourceTransport(ctx, r.Client, obj.Namespace, obj.Spec.CertSecretRef, obj.Spec.ProxySecretRef, r.AllowInsecureHTTP)
	if err != nil {
		return nil, ociFetchFailed(obj, sourcev1.AuthenticationFailedReason, err)
	}
	return t, nil
}

// verifyArtifact checks the signature of the resolved digest when
// spec.verify asks for it, and sets SourceVerified. An artifact that fails
// is not stored.
func (r *OCIRepositoryReconciler) verifyArtifact(ctx context.Context, obj *sourcev1.OCIRepository, sc *ociScope) error {
	if obj.Spec.Verify == nil {
		conditions.Delete(obj, sourcev1.SourceVerifiedCondition)
		return nil
	}
	policy, err := r.cosignPolicy(ctx, obj)
	if err != nil {
		return err
	}
	result, err := cosignVerify(ctx, sc.digest, policy, sc.remote)
	if err != nil {
		err = fmt.Errorf("signature verification of '%s' failed: %w", sc.revision, err)
		conditions.MarkFalse(obj, sourcev1.SourceVerifiedCondition, sourcev1.VerificationErrorReason, "%s", err.Error())
		r.Events.Warning(ctx, obj, sourcev1.VerificationErrorReason, sc.revision, err.Error())
		return outcome.Fail(sourcev1.VerificationErrorReason, err)
	}
	conditions.MarkTrue(obj, sourcev1.SourceVerifiedCondition, meta.SucceededReason,
		"verified signature of revision %s (%s)", sc.revision, result.Signer)
	return nil
}

// reconcileArtifact downloads the selected layer of the resolved digest
// and stores it: extracted and packaged with the ignore rules, or copied
// unchanged. When the stored artifact is up to date it only confirms it.
// The download, not the packaging, is timed as a part of the fetch.
func (r *OCIRepositoryReconciler) reconcileArtifact(ctx context.Context, obj *sourcev1.OCIRepository, sc *ociScope) (outcome.Result, error) {
	if sc.upToDate && obj.GetArtifact() != nil {
		r.store().upToDate(ctx, obj, sc.storageCheck)
		return outcome.ResultSuccess, nil
	}
	ctx, cancel := context.WithDeadline(ctx, sc.deadline)
	defer cancel()
	a := r.Storage.NewArtifactFor(sourcev1.OCIRepositoryKind, obj, sc.revision, sc.digest.DigestStr()[len("sha256:"):]+".tar.gz")
	if err := sc.fetch.time(func() error { return r.pullLayer(ctx, obj, sc, &a) }); err != nil {
		return outcome.ResultEmpty, err
	}
	if sc.workDir != "" {
		if err := r.store().archive(obj, &a, sc.workDir, obj.Spec.Ignore, "the layer's files"); err != nil {
			return outcome.ResultEmpty, err
		}
	}
	change := r.store().stored(ctx, obj, sc.storageCheck, a, func(a *meta.Artifact) { obj.Status.Artifact = a })
	selector := obj.GetLayerSelector()
	obj.Status.URL = a.URL
	obj.Status.ObservedIgnore = obj.Spec.Ignore
	obj.Status.ObservedLayerSelector = &selector
	r.store().announce(ctx, obj, change, "NewArtifact", sc.revision,
		fmt.Sprintf("stored artifact with revision '%s' from '%s'", sc.revision, obj.Spec.URL))
	return outcome.ResultSuccess, nil
}
