package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	securejoin "github.com/cyphar/filepath-securejoin"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/imageupdate"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/gitsource"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// reconcileStorage checks that the artifact named in status is in storage
// (see artifactStore.reconcileStorage).
func (r *GitRepositoryReconciler) reconcileStorage(ctx context.Context, obj *sourcev1.GitRepository, sc *gitScope) (outcome.Result, error) {
	r.store().reconcileStorage(ctx, obj, &sc.storageCheck, func() { obj.Status.Artifact = nil })
	return outcome.ResultSuccess, nil
}

// reconcileSource resolves the included artifacts, then checks the
// repository out, unless the remote still points at the stored revision and
// nothing in the spec changes the artifact's content. A new commit is
// verified when the spec asks for it.
func (r *GitRepositoryReconciler) reconcileSource(ctx context.Context, obj *sourcev1.GitRepository, sc *gitScope) (outcome.Result, error) {
	u, checkout, err := validateGitSpec(obj)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	if u.Scheme == "http" && !r.AllowInsecureHTTP {
		return outcome.ResultEmpty, outcome.Stall(meta.InsecureConnectionsDisallowedReason,
			fmt.Errorf("plain-HTTP URL '%s' refused: the controller runs with --insecure-allow-http=false", git.SanitizeURL(obj.Spec.URL)))
	}
	checkout.MaxTransferBytes, checkout.MaxObjectBytes, checkout.MaxCheckoutBytes = r.MaxCloneSize, r.MaxCloneSize, r.MaxCloneSize
	checkout.RefusePlainHTTP = !r.AllowInsecureHTTP
	auth, proxy, err := r.gitCredentials(ctx, obj, *u)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	if proxy != nil && strings.HasPrefix(strings.ToLower(proxy.URL), "http://") && !r.AllowInsecureHTTP {
		return outcome.ResultEmpty, outcome.Stall(meta.InsecureConnectionsDisallowedReason,
			fmt.Errorf("the proxy of secret '%s' is plain HTTP, which the controller refuses (--insecure-allow-http=false)", obj.Spec.ProxySecretRef.Name))
	}
	if sc.includes, err = r.includedArtifacts(ctx, obj, sc); err != nil {
		return outcome.ResultEmpty, err
	}
	if a := obj.GetArtifact(); a != nil && sc.heldRevision == "" && !gitContentConfigChanged(obj, sc.includes) {
		checkout.LastObservedCommit = a.Revision
	}

	if sc.workDir, err = workdir.MkdirTemp(fmt.Sprintf("gitrepository-%s-%s-", obj.Namespace, obj.Name)); err != nil {
		return outcome.ResultEmpty, outcome.Fail(sourcev1.DirCreationFailedReason, fmt.Errorf("creating a working directory: %w", err))
	}
	client, err := git.NewClient(sc.workDir, auth, proxy)
	if err != nil {
		return outcome.ResultEmpty, outcome.Stall(sourcev1.AuthenticationFailedReason, err)
	}
	// The files stay in memory until the artifact is built, unless the
	// included artifacts are to be copied among them.
	checkout.InMemory = len(obj.Spec.Include) == 0
	sc.client = client
	cloneCtx, cancel := context.WithTimeout(ctx, obj.GetTimeout())
	defer cancel()
	url := obj.Spec.URL
	commit, err := timed(&sc.fetch, func() (*git.Commit, error) {
		return reconcile.AnnounceIfSlow(ctx, reconcile.AnnounceDelay, sc.announce, func() (*git.Commit, error) {
			return client.Clone(cloneCtx, url, checkout)
		})
	})
	if err != nil {
		return outcome.ResultEmpty, markFetchFailed(obj, err)
	}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	sc.commit = commit
	if sc.heldRevision != "" {
		// The held commit was verified when its artifact was first built.
		return outcome.ResultSuccess, nil
	}

	if !git.IsConcreteCommit(*commit) {
		ctrl.LoggerFrom(ctx).V(1).Info("No changes since the last reconciliation", "revision", commit.String())
		sc.upToDate = true
		return outcome.ResultSuccess, nil
	}
	if err := r.verifyCommit(ctx, obj, commit); err != nil {
		return outcome.ResultEmpty, err
	}
	if !obj.GetArtifact().HasRevision(commit.String()) {
		conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason,
			"new upstream revision '%s'", commit.String())
		reconcile.MarkProgress(obj, "building artifact: new upstream revision '%s'", commit.String())
	}
	return outcome.ResultSuccess, nil
}

// validateGitSpec checks what the CRD schema cannot: that the URL parses
// with a supported scheme, that Windlass serves the provider and that a
// semver range is valid. It returns the URL and the checkout options.
func validateGitSpec(obj *sourcev1.GitRepository) (*url.URL, git.CheckoutOptions, error) {
	var checkout git.CheckoutOptions
	u, err := url.Parse(obj.Spec.URL)
	if err != nil {
		// Neither the URL nor url.Parse's error, which quotes it, is shown:
		// a URL that does not parse may hide a password anywhere.
		return nil, checkout, outcome.Stall(sourcev1.URLInvalidReason,
			errors.New("invalid URL: spec.url does not parse; it must be an http, https or ssh URL with a host"))
	}
	if u.Host == "" || !slices.Contains([]string{"http", "https", "ssh"}, u.Scheme) {
		return nil, checkout, outcome.Stall(sourcev1.URLInvalidReason,
			fmt.Errorf("invalid URL '%s': the scheme must be http, https or ssh, with a host", git.SanitizeURL(obj.Spec.URL)))
	}
	if ref := obj.Spec.Reference; ref != nil {
		if ref.SemVer != "" {
			if _, err := semver.NewConstraint(ref.SemVer); err != nil {
				return nil, checkout, outcome.Stall(sourcev1.InvalidSemverReason,
					fmt.Errorf("invalid semver range '%s': %w", ref.SemVer, err))
			}
		}
		checkout = gitsource.CheckoutOptions(ref)
	}
	checkout.ShallowClone = true
	checkout.Notes = true
	checkout.RecurseSubmodules = obj.Spec.RecurseSubmodules
	checkout.SparseCheckoutDirectories = obj.Spec.SparseCheckout
	if obj.Spec.Verification != nil && !obj.Spec.Verification.Mode.Normalize().Valid() {
		return nil, checkout, outcome.Stall(sourcev1.InvalidSpecReason,
			fmt.Errorf("invalid verification mode '%s'", obj.Spec.Verification.Mode))
	}
	return u, checkout, nil
}

// gitCredentials reads the Secrets of spec.secretRef and spec.proxySecretRef
// and, with provider github, gets the app's installation token (see
// gitsource.CredentialsWith), recording a failure in FetchFailed.
func (r *GitRepositoryReconciler) gitCredentials(ctx context.Context, obj *sourcev1.GitRepository, u url.URL) (*git.AuthOptions, *git.ProxyOptions, error) {
	auth, proxy, err := gitsource.CredentialsWith(ctx, r.Client, obj, u, gitsource.Options{AllowInsecureHTTP: r.AllowInsecureHTTP})
	if err != nil {
		return nil, nil, markFetchFailed(obj, err)
	}
	return auth, proxy, nil
}

// markFetchFailed records a failure to fetch in the FetchFailed condition
// and returns err as a reconcile error with the matching reason.
func markFetchFailed(obj *sourcev1.GitRepository, err error) error {
	reason := outcome.ReasonOf(err, "")
	if reason == "" {
		err = classifyGitError(err)
		reason = outcome.ReasonOf(err, sourcev1.GitOperationFailedReason)
	}
	conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, reason, "%s", err.Error())
	return err
}

// classifyGitError turns an error of the git client into a reconcile error:
// options or credentials that can never work stall; refused credentials and
// other failures are retried.
func classifyGitError(err error) error {
	var (
		invalidOptions *git.InvalidOptionsError
		invalidAuth    *git.InvalidAuthError
	)
	switch {
	case errors.As(err, &invalidOptions):
		return outcome.Stall(sourcev1.InvalidSpecReason, fmt.Errorf("invalid spec: %w", err))
	case errors.As(err, &invalidAuth):
		return outcome.Stall(sourcev1.AuthenticationFailedReason, fmt.Errorf("invalid credentials: %w", err))
	case git.IsAuthError(err):
		return outcome.Fail(sourcev1.AuthenticationFailedReason, fmt.Errorf("failed to checkout and determine revision: %w", err))
	}
	return outcome.Fail(sourcev1.GitOperationFailedReason, fmt.Errorf("failed to checkout and determine revision: %w", err))
}

// verifyCommit checks the signatures that spec.verify asks for, and sets
// SourceVerified.
func (r *GitRepositoryReconciler) verifyCommit(ctx context.Context, obj *sourcev1.GitRepository, commit *git.Commit) error {
	mode := obj.GetVerificationMode()
	if mode == nil {
		conditions.Delete(obj, sourcev1.SourceVerifiedCondition)
		return nil
	}
	keys, err := secretData(ctx, r.Client, obj.Namespace, obj.Spec.Verification.SecretRef.Name)
	if err != nil {
		conditions.MarkFalse(obj, sourcev1.SourceVerifiedCondition, sourcev1.VerificationErrorReason, "%s", err.Error())
		return outcome.Fail(sourcev1.VerificationErrorReason, err)
	}
	var signers []string
	if mode.VerifiesTag() {
		if commit.ReferencingTag == nil {
			err := fmt.Errorf("cannot verify tag: the reference is not an annotated tag")
			conditions.MarkFalse(obj, sourcev1.SourceVerifiedCondition, sourcev1.VerificationErrorReason, "%s", err.Error())
			return outcome.Stall(sourcev1.VerificationErrorReason, err)
		}
		signer, err := commit.ReferencingTag.Verify(keys)
		if err != nil {
			return verificationFailed(obj, fmt.Errorf("signature of tag '%s' failed verification: %w", commit.ReferencingTag.Name, err))
		}
		signers = append(signers, "tag signed by "+signer)
	}
	if mode.VerifiesHEAD() {
		signer, err := commit.Verify(keys)
		if err != nil {
			return verificationFailed(obj, fmt.Errorf("signature of commit '%s' failed verification: %w", commit.Hash, err))
		}
		signers = append(signers, "commit signed by "+signer)
	}
	conditions.MarkTrue(obj, sourcev1.SourceVerifiedCondition, meta.SucceededReason,
		"verified revision '%s': %s", commit.String(), strings.Join(signers, ", "))
	return nil
}

func verificationFailed(obj *sourcev1.GitRepository, err error) error {
	conditions.MarkFalse(obj, sourcev1.SourceVerifiedCondition, sourcev1.VerificationErrorReason, "%s", err.Error())
	return outcome.Fail(sourcev1.VerificationErrorReason, err)
}

// resolveIncludes returns the artifacts of the included GitRepositories.
func (r *GitRepositoryReconciler) resolveIncludes(ctx context.Context, obj *sourcev1.GitRepository) ([]*meta.Artifact, error) {
	if len(obj.Spec.Include) == 0 {
		conditions.Delete(obj, sourcev1.IncludeUnavailableCondition)
		return nil, nil
	}
	artifacts := make([]*meta.Artifact, 0, len(obj.Spec.Include))
	for _, inc := range obj.Spec.Include {
		if err := checkIncludePath(inc.GetToPath()); err != nil {
			return nil, outcome.Stall(sourcev1.InvalidSpecReason, err)
		}
		var dep sourcev1.GitRepository
		key := types.NamespacedName{Namespace: obj.Namespace, Name: inc.GitRepositoryRef.Name}
		err := r.Get(ctx, key, &dep)
		switch {
		case apierrors.IsNotFound(err):
			err = fmt.Errorf("included GitRepository '%s' not found", key)
		case err == nil && dep.GetArtifact() == nil:
			err = fmt.Errorf("included GitRepository '%s' has no artifact yet", key)
		}
		if err != nil {
			conditions.MarkTrue(obj, sourcev1.IncludeUnavailableCondition, sourcev1.IncludeUnavailableReason, "%s", err.Error())
			return nil, outcome.Wait(sourcev1.IncludeUnavailableReason, err, r.DependencyRequeue)
		}
		artifacts = append(artifacts, dep.GetArtifact().DeepCopy())
	}
	conditions.Delete(obj, sourcev1.IncludeUnavailableCondition)
	return artifacts, nil
}

// checkIncludePath refuses include destinations that leave the artifact's
// root.
func checkIncludePath(p string) error {
	clean := filepath.ToSlash(filepath.Clean(p))
	if filepath.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("include path '%s' leaves the artifact's root", p)
	}
	return nil
}

// reconcileInclude copies the included artifacts into the checkout. An
// included artifact that this storage defers (see artifact.Storage.Defer)
// is asked for and waited for: once stored, it runs the includer again
// (see SetupWithManager).
func (r *GitRepositoryReconciler) reconcileInclude(_ context.Context, obj *sourcev1.GitRepository, sc *gitScope) (outcome.Result, error) {
	if sc.upToDate {
		return outcome.ResultSuccess, nil
	}
	for i, inc := range obj.Spec.Include {
		if r.Storage.Ask(*sc.includes[i]) {
			return outcome.ResultEmpty, outcome.Wait(sourcev1.IncludeUnavailableReason,
				fmt.Errorf("the artifact of the included GitRepository '%s' is being stored again here", inc.GitRepositoryRef.Name), r.DependencyRequeue)
		}
		dest, err := securejoin.SecureJoin(sc.workDir, inc.GetToPath())
		if err != nil {
			return outcome.ResultEmpty, outcome.Stall(sourcev1.InvalidSpecReason, err)
		}
		if err := os.RemoveAll(dest); err != nil {
			return outcome.ResultEmpty, outcome.Fail(sourcev1.IncludeUnavailableReason, err)
		}
		if err := r.Storage.ExtractTo(*sc.includes[i], inc.GetFromPath(), dest); err != nil {
			err = fmt.Errorf("including the artifact of '%s': %w", inc.GitRepositoryRef.Name, err)
			conditions.MarkTrue(obj, sourcev1.IncludeUnavailableCondition, sourcev1.IncludeUnavailableReason, "%s", err.Error())
			return outcome.ResultEmpty, outcome.Fail(sourcev1.IncludeUnavailableReason, err)
		}
	}
	return outcome.ResultSuccess, nil
}

// reconcileArtifact archives the checkout into storage, records the new
// artifact in status and collects old artifacts. When the stored artifact is
// up to date it only confirms it; one that the storage lacks (see
// storageCheck) is deferred until a reader asks for it.
func (r *GitRepositoryReconciler) reconcileArtifact(ctx context.Context, obj *sourcev1.GitRepository, sc *gitScope) (outcome.Result, error) {
	if sc.upToDate && obj.GetArtifact() != nil {
		r.store().upToDate(ctx, obj, sc.storageCheck)
		return outcome.ResultSuccess, nil
	}
	revision := sc.commit.String()
	if sc.heldRevision != "" {
		revision = sc.heldRevision
	}
	a := r.Storage.NewArtifactFor(sourcev1.GitRepositoryKind, obj, revision, sc.commit.Hash+".tar.gz")
	a.Metadata = artifactMetadata(sc.commit, obj.GetArtifact(), revision)
	if err := r.archiveCheckout(obj, &a, sc); err != nil {
		return outcome.ResultEmpty, err
	}

	change := r.store().stored(ctx, obj, sc.storageCheck, a, func(a *meta.Artifact) { obj.Status.Artifact = a })
	obj.Status.IncludedArtifacts = sc.includes
	obj.Status.ObservedIgnore = obj.Spec.Ignore
	obj.Status.ObservedRecurseSubmodules = obj.Spec.RecurseSubmodules
	obj.Status.ObservedInclude = obj.Spec.Include
	obj.Status.ObservedSparseCheckout = obj.Spec.SparseCheckout
	obj.Status.SourceVerificationMode = obj.GetVerificationMode()
	if sc.heldRevision == "" {
		r.store().announce(ctx, obj, change, "NewArtifact", revision,
			fmt.Sprintf("stored artifact for commit '%s'", sc.commit.ShortMessage()))
	}
	return outcome.ResultSuccess, nil
}

// archiveCheckout packages the checkout into storage as a: from memory
// when the clone left the files there, else from the work directory.
func (r *GitRepositoryReconciler) archiveCheckout(obj *sourcev1.GitRepository, a *meta.Artifact, sc *gitScope) error {
	if sc.client != nil {
		if files := sc.client.Files(); files != nil {
			return r.store().archiveFiles(obj, a, files, obj.Spec.Ignore, "the checkout")
		}
	}
	return r.store().archive(obj, a, sc.workDir, obj.Spec.Ignore, "the checkout")
}

// artifactMetadata returns the metadata of the artifact of commit at
// revision: the commit's author, time and subject, and its note. A partial
// commit (the remote was unchanged, or the revision is held) keeps what the
// previous artifact of the same revision said of its commit.
func artifactMetadata(commit *git.Commit, previous *meta.Artifact, revision string) map[string]string {
	if !git.IsConcreteCommit(*commit) && previous.HasRevision(revision) {
		return maps.Clone(previous.Metadata)
	}
	out := commit.Metadata()
	if out == nil {
		return noteMetadata(commit.Note)
	}
	maps.Copy(out, noteMetadata(commit.Note))
	return out
}

// noteMetadata returns the artifact metadata of a commit's note: an
// automated image update's note, so that what applies the artifact can
// say why it changed (windlass trace). Other notes are not kept.
func noteMetadata(note string) map[string]string {
	if !imageupdate.IsNote(note) {
		return nil
	}
	if len(note) > imageupdate.MaxNoteMetadataBytes {
		note = strings.ToValidUTF8(note[:imageupdate.MaxNoteMetadataBytes], "")
	}
	return map[string]string{imageupdate.NoteMetadataKey: note}
}

// gitContentConfigChanged reports whether the spec asks for an artifact with
// other content than the stored one, even at the same revision.
func gitContentConfigChanged(obj *sourcev1.GitRepository, includes []*meta.Artifact) bool {
	st := obj.Status
	switch {
	case !equalPtr(obj.Spec.Ignore, st.ObservedIgnore),
		obj.Spec.RecurseSubmodules != st.ObservedRecurseSubmodules,
		!slices.Equal(obj.Spec.SparseCheckout, st.ObservedSparseCheckout),
		!equalPtr(obj.GetVerificationMode(), st.SourceVerificationMode),
		!slices.Equal(obj.Spec.Include, st.ObservedInclude),
		len(includes) != len(st.IncludedArtifacts):
		return true
	}
	for i, a := range includes {
		if !st.IncludedArtifacts[i].HasDigest(a.Digest) {
			return true
		}
	}
	return false
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
