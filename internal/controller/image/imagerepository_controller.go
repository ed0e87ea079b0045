package image

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/registry"
)

// +kubebuilder:rbac:groups=image.toolkit.fluxcd.io,resources=imagerepositories,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=image.toolkit.fluxcd.io,resources=imagerepositories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=image.toolkit.fluxcd.io,resources=imagerepositories/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets;serviceaccounts,verbs=get;list;watch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="events.k8s.io",resources=events,verbs=create;patch

// ImageRepositoryReconciler reconciles ImageRepositories: it scans each
// one's tags into Store at every interval, and reports the scan in the
// status. A scan that finds the same tags as the last one writes neither
// the store nor the status.
type ImageRepositoryReconciler struct {
	// Client reads and patches ImageRepositories and reads their Secrets.
	client.Client
	// Store keeps the tags.
	Store *registry.Store
	// Events records events about ImageRepositories.
	Events *event.Recorder
	// JitterPercent spreads each repository's interval.
	JitterPercent int
	// AllowInsecureHTTP lets spec.insecure reach a registry over plain
	// HTTP.
	AllowInsecureHTTP bool
	// NoCrossNamespaceRefs refuses gates in another namespace.
	NoCrossNamespaceRefs bool
}

// repositoryScope is what the steps of one run share.
type repositoryScope struct {
	opts registry.Options
}

// repositoryKind is the ImageRepository kind for the runner.
func (r *ImageRepositoryReconciler) repositoryKind() reconcile.Kind[*imagev1.ImageRepository] {
	return reconcile.Kind[*imagev1.ImageRepository]{
		Name:          imagev1.ImageRepositoryKind,
		New:           func() *imagev1.ImageRepository { return &imagev1.ImageRepository{} },
		SuccessReason: meta.SucceededReason,
		SuccessMessage: func(obj *imagev1.ImageRepository) string {
			if obj.Status.LastScanResult == nil {
				return ""
			}
			return fmt.Sprintf("successful scan: found %d tags", obj.Status.LastScanResult.TagCount)
		},
		Revision: func(obj *imagev1.ImageRepository) string {
			if obj.Status.LastScanResult == nil {
				return ""
			}
			return obj.Status.LastScanResult.Revision
		},
		Run: func(ctx context.Context, obj *imagev1.ImageRepository, _ *patch.Helper) (outcome.Result, error) {
			return reconcile.RunSteps(ctx, obj, &repositoryScope{}, r.readCredentials, r.scan)
		},
		CheckSpec: checkRepositorySpec,
		Forget:    func(key types.NamespacedName) { _ = r.Store.Delete(key.Namespace, key.Name) },
	}
}

// SetupWithManager registers the reconciler with mgr: the runner watches
// the Gates too.
func (r *ImageRepositoryReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	runner := &reconcile.Runner[*imagev1.ImageRepository]{
		Client: r.Client, Events: r.Events, JitterPercent: r.JitterPercent, NoCrossNamespaceRefs: r.NoCrossNamespaceRefs,
		Kind: r.repositoryKind(),
	}
	b, err := runner.Setup(ctx, mgr, opts)
	if err != nil {
		return err
	}
	return b.Complete(runner)
}

// checkRepositorySpec (the kind's CheckSpec) stalls a repository whose spec no retry can make work: an
// image that is not a repository, a provider Windlass does not serve, an
// exclusion that does not compile. It writes the canonical image name.
func checkRepositorySpec(obj *imagev1.ImageRepository) error {
	if p := obj.Spec.Provider; p != "" && p != imagev1.ProviderGeneric {
		return outcome.Stall(imagev1.ReasonUnsupportedProvider,
			fmt.Errorf("spec.provider '%s' is not served by Windlass (it needs a cloud workload identity): "+
				"use provider generic with spec.secretRef or spec.serviceAccountName", p))
	}
	repo, err := registry.ParseImage(obj.Spec.Image)
	if err != nil {
		return outcome.Stall(imagev1.ReasonInvalidImage, fmt.Errorf("invalid spec.image: %w", err))
	}
	for i, expr := range obj.GetExclusionList() {
		if _, err := regexp.Compile(expr); err != nil {
			return outcome.Stall(imagev1.ReasonInvalidSpec,
				fmt.Errorf("spec.exclusionList[%d]: invalid regular expression: %w", i, err))
		}
	}
	obj.Status.CanonicalImageName = registry.CanonicalName(repo)
	return nil
}

// readCredentials reads the registry's credentials, TLS settings and
// proxy.
func (r *ImageRepositoryReconciler) readCredentials(ctx context.Context, obj *imagev1.ImageRepository, scope *repositoryScope) (outcome.Result, error) {
	opts, err := registryOptions(ctx, r.Client, obj, r.AllowInsecureHTTP)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	scope.opts = opts
	return outcome.ResultEmpty, nil
}

// scan lists the repository's tags into the store, and counts the scan
// in windlass_image_scans_total. A failure keeps the tags of the last good
// scan, in the store and in the status, so that the policies go on
// electing from them.
func (r *ImageRepositoryReconciler) scan(ctx context.Context, obj *imagev1.ImageRepository, scope *repositoryScope) (outcome.Result, error) {
	res, err := r.Store.Scan(ctx, obj.Namespace, obj.Name, scope.opts)
	metrics.RecordImageScan(err)
	if err != nil {
		return outcome.ResultEmpty, scanError(err)
	}
	exclusions := obj.GetExclusionList()
	last := obj.Status.LastScanResult
	if last == nil || last.Revision != res.Revision || !slices.Equal(obj.Status.ObservedExclusionList, exclusions) {
		obj.Status.LastScanResult = &imagev1.ScanResult{
			Revision:   res.Revision,
			TagCount:   res.TagCount,
			ScanTime:   metav1.NewTime(res.ScanTime),
			LatestTags: res.LatestTags,
		}
		obj.Status.ObservedExclusionList = append([]string{}, exclusions...)
		r.Events.Normal(ctx, obj, "ScanSucceeded", res.Revision,
			fmt.Sprintf("successful scan: found %d tags", res.TagCount))
	}
	return outcome.ResultSuccess, nil
}

// scanError classifies an error of a scan: a spec the registry package
// refuses stalls, refused credentials and other failures are retried.
func scanError(err error) error {
	var invalid *registry.InvalidSpecError
	switch {
	case errors.As(err, &invalid):
		return outcome.Stall(imagev1.ReasonInvalidSpec, err)
	case registry.IsAuthError(err):
		return outcome.Fail(imagev1.ReasonAuthenticationFailed, fmt.Errorf("scan failed: %w", err))
	}
	return outcome.Fail(imagev1.ReasonScanFailed, fmt.Errorf("scan failed: %w", err))
}
