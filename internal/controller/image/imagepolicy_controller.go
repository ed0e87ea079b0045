package image

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/imagepolicy"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/registry"
)

// +kubebuilder:rbac:groups=image.toolkit.fluxcd.io,resources=imagepolicies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=image.toolkit.fluxcd.io,resources=imagepolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=image.toolkit.fluxcd.io,resources=imagepolicies/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// ImagePolicyReconciler reconciles ImagePolicies: it elects the latest
// tag of each one's ImageRepository by the policy's rule, streaming the
// tags from Store, and writes it to status.latestRef. A policy runs again
// when its repository's tags change (the repository's status changes only
// then), when it changes, and at spec.interval under digest reflection
// Always.
type ImagePolicyReconciler struct {
	// Client reads and patches ImagePolicies and reads ImageRepositories,
	// Namespaces and the repositories' Secrets.
	client.Client
	// Store holds the tags the ImageRepositoryReconciler scanned.
	Store *registry.Store
	// Events records events about ImagePolicies.
	Events *event.Recorder
	// JitterPercent spreads the digest interval.
	JitterPercent int
	// NoCrossNamespaceRefs refuses repositories in another namespace.
	NoCrossNamespaceRefs bool
	// AllowInsecureHTTP lets a digest lookup reach an insecure registry.
	AllowInsecureHTTP bool
	// DependencyRequeue is how long to wait for a repository that has not
	// been scanned yet; zero means DefaultDependencyRequeue.
	DependencyRequeue time.Duration

	// announced holds, per policy, the image the last event announced, so
	// that a run that reads a stale copy of the policy (the cache has not
	// seen the status the run before wrote) does not announce it again.
	announced sync.Map
}

// DefaultDependencyRequeue is ImagePolicyReconciler.DependencyRequeue by
// default.
const DefaultDependencyRequeue = 30 * time.Second

func (r *ImagePolicyReconciler) dependencyRequeue() time.Duration {
	if r.DependencyRequeue <= 0 {
		return DefaultDependencyRequeue
	}
	return r.DependencyRequeue
}

// policyScope is what the steps of one run share.
type policyScope struct {
	policy *imagepolicy.Policy
	repo   *imagev1.ImageRepository
	latest imagev1.ImageRef
}

// policyKind is the ImagePolicy kind for the runner.
func (r *ImagePolicyReconciler) policyKind() reconcile.Kind[*imagev1.ImagePolicy] {
	return reconcile.Kind[*imagev1.ImagePolicy]{
		Name:           imagev1.ImagePolicyKind,
		New:            func() *imagev1.ImagePolicy { return &imagev1.ImagePolicy{} },
		SuccessReason:  meta.SucceededReason,
		SuccessMessage: electedMessage,
		Revision: func(obj *imagev1.ImagePolicy) string {
			if obj.Status.LatestRef == nil {
				return ""
			}
			return obj.Status.LatestRef.String()
		},
		// A held policy keeps the image it elected (Approved=False).
		GateRequeue: func(*imagev1.ImagePolicy) time.Duration { return r.dependencyRequeue() },
		Forget:      func(key types.NamespacedName) { r.announced.Delete(key) },
		Run: func(ctx context.Context, obj *imagev1.ImagePolicy, _ *patch.Helper) (outcome.Result, error) {
			return reconcile.RunSteps(ctx, obj, &policyScope{}, r.compile, r.getRepository, r.elect, r.reflectDigest, r.record)
		},
	}
}

// electedMessage is the Ready message of a policy that elected an image.
func electedMessage(obj *imagev1.ImagePolicy) string {
	ref := obj.Status.LatestRef
	if ref == nil {
		return ""
	}
	msg := fmt.Sprintf("Latest image tag for %s resolved to %s", ref.Name, ref.Tag)
	if ref.Digest != "" {
		msg += " with digest " + ref.Digest
	}
	if pinned, ok := obj.Annotations[imagev1.PinAnnotation]; ok && pinned == ref.Tag {
		msg += fmt.Sprintf(" (pinned by the %s annotation)", imagev1.PinAnnotation)
	}
	return msg
}

// repositoryIndexKey indexes ImagePolicies by the "<namespace>/<name>" of
// their ImageRepository.
const repositoryIndexKey = ".spec.imageRepositoryRef"

// SetupWithManager registers the reconciler with mgr: besides what the
// runner watches (the Gates), it watches the ImageRepositories, whose
// status changes when their tags do, and the pin annotation of
// ImagePolicies.
func (r *ImagePolicyReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &imagev1.ImagePolicy{}, repositoryIndexKey, func(o client.Object) []string {
		p := o.(*imagev1.ImagePolicy)
		return []string{p.GetRepositoryNamespace() + "/" + p.Spec.ImageRepositoryRef.Name}
	})
	if err != nil {
		return err
	}
	runner := &reconcile.Runner[*imagev1.ImagePolicy]{
		Client: r.Client, Events: r.Events, JitterPercent: r.JitterPercent, NoCrossNamespaceRefs: r.NoCrossNamespaceRefs,
		Kind: r.policyKind(),
	}
	b, err := runner.Setup(ctx, mgr, opts)
	if err != nil {
		return err
	}
	return b.Watches(&imagev1.ImagePolicy{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(pinChanged())).
		Watches(&imagev1.ImageRepository{}, handler.EnqueueRequestsFromMapFunc(r.policiesOfRepository)).
		Complete(runner)
}

// pinChanged passes the updates that set, change or remove the pin.
func pinChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(ctrlevent.CreateEvent) bool { return false },
		DeleteFunc:  func(ctrlevent.DeleteEvent) bool { return false },
		GenericFunc: func(ctrlevent.GenericEvent) bool { return false },
		UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
			return e.ObjectOld.GetAnnotations()[imagev1.PinAnnotation] != e.ObjectNew.GetAnnotations()[imagev1.PinAnnotation]
		},
	}
}

// policiesOfRepository returns the ImagePolicies of a repository.
func (r *ImagePolicyReconciler) policiesOfRepository(ctx context.Context, repo client.Object) []ctrl.Request {
	var list imagev1.ImagePolicyList
	key := repo.GetNamespace() + "/" + repo.GetName()
	if err := r.List(ctx, &list, client.MatchingFields{repositoryIndexKey: key}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the ImagePolicies of an ImageRepository", "ImageRepository", key)
		return nil
	}
	return requestsFor(list.Items)
}

// compile compiles the policy's rule; a rule that cannot work stalls.
func (r *ImagePolicyReconciler) compile(_ context.Context, obj *imagev1.ImagePolicy, scope *policyScope) (outcome.Result, error) {
	p, err := compilePolicy(obj)
	if err != nil {
		return outcome.ResultEmpty, outcome.Stall(imagev1.ReasonInvalidPolicy, err)
	}
	scope.policy = p
	return outcome.ResultEmpty, nil
}

// compilePolicy compiles obj's rule with the imagepolicy package.
func compilePolicy(obj *imagev1.ImagePolicy) (*imagepolicy.Policy, error) {
	var spec imagepolicy.Spec
	choice := obj.Spec.Policy
	if choice.SemVer != nil {
		spec.SemverRange = choice.SemVer.Range
	}
	if choice.Alphabetical != nil {
		spec.Alphabetical = orDefault(choice.Alphabetical.Order, imagev1.OrderAsc)
	}
	if choice.Numerical != nil {
		spec.Numerical = orDefault(choice.Numerical.Order, imagev1.OrderAsc)
	}
	if f := obj.Spec.FilterTags; f != nil {
		spec.FilterPattern, spec.FilterExtract = f.Pattern, f.Extract
	}
	return imagepolicy.Compile(spec)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// getRepository reads the policy's ImageRepository and checks that the
// policy may use it, and that it has been scanned.
func (r *ImagePolicyReconciler) getRepository(ctx context.Context, obj *imagev1.ImagePolicy, scope *policyScope) (outcome.Result, error) {
	key := types.NamespacedName{Namespace: obj.GetRepositoryNamespace(), Name: obj.Spec.ImageRepositoryRef.Name}
	if key.Namespace != obj.Namespace && r.NoCrossNamespaceRefs {
		return outcome.ResultEmpty, outcome.Stall(imagev1.ReasonAccessDenied,
			fmt.Errorf("cross-namespace reference to ImageRepository '%s' is not allowed", key))
	}
	repo := &imagev1.ImageRepository{}
	if err := r.Get(ctx, key, repo); err != nil {
		if apierrors.IsNotFound(err) {
			return outcome.ResultEmpty, outcome.Fail(imagev1.ReasonDependencyNotReady,
				fmt.Errorf("ImageRepository '%s' not found", key))
		}
		return outcome.ResultEmpty, err
	}
	if key.Namespace != obj.Namespace {
		if err := r.checkAccess(ctx, obj, repo); err != nil {
			return outcome.ResultEmpty, err
		}
	}
	if _, ok := r.Store.Revision(key.Namespace, key.Name); !ok || repo.Status.LastScanResult == nil {
		return outcome.ResultEmpty, outcome.Wait(imagev1.ReasonDependencyNotReady,
			fmt.Errorf("ImageRepository '%s' has not been scanned yet", key), r.dependencyRequeue())
	}
	scope.repo = repo
	return outcome.ResultEmpty, nil
}

// checkAccess refuses a policy whose namespace the repository's
// spec.accessFrom does not select.
func (r *ImagePolicyReconciler) checkAccess(ctx context.Context, obj *imagev1.ImagePolicy, repo *imagev1.ImageRepository) error {
	var ns corev1.Namespace
	if err := r.Get(ctx, types.NamespacedName{Name: obj.Namespace}, &ns); err != nil {
		return err
	}
	if repo.Spec.AccessFrom != nil {
		for _, sel := range repo.Spec.AccessFrom.NamespaceSelectors {
			if labels.SelectorFromSet(sel.MatchLabels).Matches(labels.Set(ns.Labels)) {
				return nil
			}
		}
	}
	return outcome.Fail(imagev1.ReasonAccessDenied, fmt.Errorf(
		"ImageRepository '%s/%s' does not give access to namespace '%s': add a selector of it to the repository's spec.accessFrom.namespaceSelectors",
		repo.Namespace, repo.Name, obj.Namespace))
}

// elect streams the repository's tags through the rule, or takes the
// pinned tag, which must be one of them.
func (r *ImagePolicyReconciler) elect(_ context.Context, obj *imagev1.ImagePolicy, scope *policyScope) (outcome.Result, error) {
	repo := scope.repo
	if pinned, ok := obj.Annotations[imagev1.PinAnnotation]; ok {
		found := false
		err := r.Store.Each(repo.Namespace, repo.Name, func(tag string) bool {
			found = tag == pinned
			return !found
		})
		if err != nil {
			return outcome.ResultEmpty, outcome.Fail(meta.FailedReason, fmt.Errorf("reading the tags of '%s/%s': %w", repo.Namespace, repo.Name, err))
		}
		if !found {
			return outcome.ResultEmpty, outcome.Fail(imagev1.ReasonNoMatchingTag,
				fmt.Errorf("pinned tag '%s' (annotation %s) is not a tag of %s", pinned, imagev1.PinAnnotation, repo.Spec.Image))
		}
		scope.latest = imagev1.ImageRef{Name: repo.Spec.Image, Tag: pinned}
		return outcome.ResultEmpty, nil
	}
	snap, err := r.Store.Open(repo.Namespace, repo.Name)
	if err != nil {
		return outcome.ResultEmpty, outcome.Fail(meta.FailedReason, fmt.Errorf("reading the tags of '%s/%s': %w", repo.Namespace, repo.Name, err))
	}
	defer func() { _ = snap.Close() }()
	latest, err := scope.policy.Latest(snap.All())
	if err == nil {
		err = snap.Err()
	}
	if err != nil {
		if errors.Is(err, imagepolicy.ErrNoCandidate) {
			return outcome.ResultEmpty, outcome.Fail(imagev1.ReasonNoMatchingTag, fmt.Errorf("%s: %w", repo.Spec.Image, err))
		}
		return outcome.ResultEmpty, outcome.Fail(meta.FailedReason, err)
	}
	scope.latest = imagev1.ImageRef{Name: repo.Spec.Image, Tag: latest}
	return outcome.ResultEmpty, nil
}

// reflectDigest looks up the digest of the elected tag, as
// spec.digestReflectionPolicy asks: never, when the tag changes, or at
// every run.
func (r *ImagePolicyReconciler) reflectDigest(ctx context.Context, obj *imagev1.ImagePolicy, scope *policyScope) (outcome.Result, error) {
	mode := obj.GetDigestReflectionPolicy()
	if mode == imagev1.ReflectNever {
		return outcome.ResultEmpty, nil
	}
	if prev := obj.Status.LatestRef; mode == imagev1.ReflectIfNotPresent && prev != nil &&
		prev.Name == scope.latest.Name && prev.Tag == scope.latest.Tag && prev.Digest != "" {
		scope.latest.Digest = prev.Digest
		return outcome.ResultEmpty, nil
	}
	opts, err := registryOptions(ctx, r.Client, scope.repo, r.AllowInsecureHTTP)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	digest, err := registry.Digest(ctx, scope.latest.Name+":"+scope.latest.Tag, opts)
	if err != nil {
		return outcome.ResultEmpty, outcome.Fail(imagev1.ReasonScanFailed,
			fmt.Errorf("looking up the digest of %s:%s: %w", scope.latest.Name, scope.latest.Tag, err))
	}
	scope.latest.Digest = digest
	return outcome.ResultEmpty, nil
}

// record writes the elected image to the status, keeping the one it
// replaces in observedPreviousRef, and records an event when it changed,
// once: a rerun from a stale copy of the policy announces nothing new.
func (r *ImagePolicyReconciler) record(ctx context.Context, obj *imagev1.ImagePolicy, scope *policyScope) (outcome.Result, error) {
	prev := obj.Status.LatestRef
	if prev != nil && *prev == scope.latest {
		return outcome.ResultSuccess, nil
	}
	latest := scope.latest
	obj.Status.ObservedPreviousRef = prev
	obj.Status.LatestRef = &latest
	if last, ok := r.announced.Swap(client.ObjectKeyFromObject(obj), latest); ok && last == latest {
		return outcome.ResultSuccess, nil
	}
	msg := fmt.Sprintf("Latest image tag for %s resolved to %s", latest.Name, latest.Tag)
	if prev != nil {
		msg = fmt.Sprintf("Latest image tag for %s updated from %s to %s", latest.Name, prev.Tag, latest.Tag)
	}
	r.Events.Normal(ctx, obj, meta.SucceededReason, latest.String(), msg)
	return outcome.ResultSuccess, nil
}
