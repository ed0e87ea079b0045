package image

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/imageupdate"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/gitsource"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// +kubebuilder:rbac:groups=image.toolkit.fluxcd.io,resources=imageupdateautomations,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=image.toolkit.fluxcd.io,resources=imageupdateautomations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=image.toolkit.fluxcd.io,resources=imageupdateautomations/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups=image.toolkit.fluxcd.io,resources=imagepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories,verbs=get;list;watch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates,verbs=get;list;watch

// ImageUpdateAutomationReconciler reconciles ImageUpdateAutomations: it
// checks out the GitRepository each one names, rewrites the values marked
// with setters to the images its policies elect, and commits and pushes
// the change with a git note that records it. Nothing is cloned while
// neither the policies nor the branch moved since the last run.
type ImageUpdateAutomationReconciler struct {
	// Client reads and patches automations, and reads their policies,
	// GitRepositories, Secrets and Gates.
	client.Client
	// Events records events about automations; the event of a push names
	// what was updated, so that an Alert can announce it.
	Events *event.Recorder
	// JitterPercent spreads each automation's interval.
	JitterPercent int
	// NoCrossNamespaceRefs refuses a GitRepository or a Gate in another
	// namespace.
	NoCrossNamespaceRefs bool
	// AllowInsecureHTTP lets an automation push over plain HTTP.
	AllowInsecureHTTP bool
	// WorkDir is where checkouts are made, one temporary folder each; ""
	// means the process's work folder (package workdir).
	WorkDir string
	// MaxCloneSize, when positive, bounds each checkout's bytes received,
	// its objects inflated and its files written, each, as a
	// GitRepository's clone is (--git-clone-max-size); else the git
	// package's defaults bound them.
	MaxCloneSize int64
	// MaxPushAttempts bounds how many times a push that lost a race is
	// applied again on the new head; zero means DefaultMaxPushAttempts.
	MaxPushAttempts int

	// branchTurns makes the automations that push to one branch take
	// turns.
	branchTurns turns
}

// DefaultMaxPushAttempts is ImageUpdateAutomationReconciler.MaxPushAttempts
// by default.
const DefaultMaxPushAttempts = 5

// automationScope is what the steps of one run share.
type automationScope struct {
	source     *sourcev1.GitRepository
	url        string
	auth       *git.AuthOptions
	proxy      *git.ProxyOptions
	checkout   git.CheckoutOptions
	selector   labels.Selector
	refs       map[imageupdate.PolicyKey]imageupdate.ImageRef
	policies   map[imageupdate.PolicyKey]*imagev1.ImagePolicy
	observed   imagev1.ObservedPolicies
	signer     git.Signer
	runStarted time.Time
}

// automationKind is the ImageUpdateAutomation kind for the runner.
func (r *ImageUpdateAutomationReconciler) automationKind() reconcile.Kind[*imagev1.ImageUpdateAutomation] {
	return reconcile.Kind[*imagev1.ImageUpdateAutomation]{
		Name:           imagev1.ImageUpdateAutomationKind,
		New:            func() *imagev1.ImageUpdateAutomation { return &imagev1.ImageUpdateAutomation{} },
		SuccessReason:  meta.SucceededReason,
		SuccessMessage: automationMessage,
		Revision:       func(obj *imagev1.ImageUpdateAutomation) string { return obj.Status.ObservedSourceRevision },
		Run: func(ctx context.Context, obj *imagev1.ImageUpdateAutomation, _ *patch.Helper) (outcome.Result, error) {
			scope := &automationScope{runStarted: time.Now()}
			return reconcile.RunSteps(ctx, obj, scope, r.checkSpec, r.getSource,
				r.selectPolicies, r.readSigningKey, r.update)
		},
	}
}

// automationMessage is the Ready message of an automation whose last run
// succeeded.
func automationMessage(obj *imagev1.ImageUpdateAutomation) string {
	if obj.Status.LastPushCommit != "" {
		return fmt.Sprintf("repository up-to-date at %s, last push %s", obj.Status.ObservedSourceRevision, shortHash(obj.Status.LastPushCommit))
	}
	return fmt.Sprintf("repository up-to-date at %s", obj.Status.ObservedSourceRevision)
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// sourceIndexKey indexes automations by the "<namespace>/<name>" of their
// GitRepository.
const sourceIndexKey = ".spec.sourceRef"

// SetupWithManager registers the reconciler with mgr: besides what the
// runner watches (the Gates), it watches the ImagePolicies (an automation
// runs when one of its namespace elects a new image) and the
// GitRepositories (a change of URL or credentials, or of the namespaces
// they lend their credentials to).
func (r *ImageUpdateAutomationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &imagev1.ImageUpdateAutomation{}, sourceIndexKey, func(o client.Object) []string {
		a := o.(*imagev1.ImageUpdateAutomation)
		return []string{a.GetSourceNamespace() + "/" + a.Spec.SourceRef.Name}
	})
	if err != nil {
		return err
	}
	runner := &reconcile.Runner[*imagev1.ImageUpdateAutomation]{
		Client: r.Client, Events: r.Events, JitterPercent: r.JitterPercent, NoCrossNamespaceRefs: r.NoCrossNamespaceRefs,
		Kind: r.automationKind(),
	}
	b, err := runner.Setup(ctx, mgr, opts)
	if err != nil {
		return err
	}
	return b.Watches(&imagev1.ImagePolicy{}, handler.EnqueueRequestsFromMapFunc(r.automationsOfPolicy),
		builder.WithPredicates(latestRefChanged())).
		Watches(&sourcev1.GitRepository{}, handler.EnqueueRequestsFromMapFunc(r.automationsOfSource),
			builder.WithPredicates(sourceChanged())).
		Complete(runner)
}

// automationsOfPolicy returns the automations of the policy's namespace
// that select it.
func (r *ImageUpdateAutomationReconciler) automationsOfPolicy(ctx context.Context, policy client.Object) []ctrl.Request {
	var list imagev1.ImageUpdateAutomationList
	if err := r.List(ctx, &list, client.InNamespace(policy.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the ImageUpdateAutomations of an ImagePolicy",
			"imagepolicy", client.ObjectKeyFromObject(policy).String())
		return nil
	}
	var requests []ctrl.Request
	for i := range list.Items {
		a := &list.Items[i]
		selector, err := policySelector(a)
		if err != nil || !selector.Matches(labels.Set(policy.GetLabels())) {
			continue
		}
		requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(a)})
	}
	return requests
}

// automationsOfSource returns the automations of a GitRepository.
func (r *ImageUpdateAutomationReconciler) automationsOfSource(ctx context.Context, repo client.Object) []ctrl.Request {
	var list imagev1.ImageUpdateAutomationList
	key := repo.GetNamespace() + "/" + repo.GetName()
	if err := r.List(ctx, &list, client.MatchingFields{sourceIndexKey: key}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the ImageUpdateAutomations of a GitRepository", "GitRepository", key)
		return nil
	}
	return requestsFor(list.Items)
}

// requestsFor returns a reconcile request for each object.
func requestsFor[T any, PT interface {
	*T
	client.Object
}](items []T) []ctrl.Request {
	requests := make([]ctrl.Request, 0, len(items))
	for i := range items {
		requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(PT(&items[i]))})
	}
	return requests
}

// policySelector returns the automation's policy selector; nil selects
// every policy.
func policySelector(obj *imagev1.ImageUpdateAutomation) (labels.Selector, error) {
	if obj.Spec.PolicySelector == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(obj.Spec.PolicySelector)
}

// checkSpec stalls an automation whose spec no retry can make work: an
// update strategy other than Setters, an invalid policy selector, a
// commit message or branch template that does not parse or uses a removed
// field.
func (r *ImageUpdateAutomationReconciler) checkSpec(_ context.Context, obj *imagev1.ImageUpdateAutomation, scope *automationScope) (outcome.Result, error) {
	if u := obj.Spec.Update; u != nil && u.Strategy != "" && u.Strategy != imagev1.UpdateStrategySetters {
		return outcome.ResultEmpty, outcome.Stall(imagev1.ReasonInvalidUpdateStrategy,
			fmt.Errorf("update strategy '%s' is not supported: the only strategy is %s", u.Strategy, imagev1.UpdateStrategySetters))
	}
	selector, err := policySelector(obj)
	if err != nil {
		return outcome.ResultEmpty, outcome.Stall(imagev1.ReasonInvalidPolicySelector, fmt.Errorf("invalid spec.policySelector: %w", err))
	}
	scope.selector = selector
	if err := checkTemplates(obj); err != nil {
		return outcome.ResultEmpty, err
	}
	return outcome.ResultEmpty, nil
}

// getSource reads the GitRepository, its URL and credentials, and works
// out what to check out.
func (r *ImageUpdateAutomationReconciler) getSource(ctx context.Context, obj *imagev1.ImageUpdateAutomation, scope *automationScope) (outcome.Result, error) {
	key := types.NamespacedName{Namespace: obj.GetSourceNamespace(), Name: obj.Spec.SourceRef.Name}
	if kind := obj.Spec.SourceRef.Kind; kind != "" && kind != sourcev1.GitRepositoryKind {
		return outcome.ResultEmpty, outcome.Stall(imagev1.ReasonInvalidSourceConfiguration,
			fmt.Errorf("source kind '%s' is not supported: an automation pushes to a GitRepository", kind))
	}
	if key.Namespace != obj.Namespace && r.NoCrossNamespaceRefs {
		return outcome.ResultEmpty, outcome.Stall(meta.AccessDeniedReason,
			fmt.Errorf("cross-namespace reference to GitRepository '%s' is not allowed", key))
	}
	source := &sourcev1.GitRepository{}
	if err := r.Get(ctx, key, source); err != nil {
		if apierrors.IsNotFound(err) {
			return outcome.ResultEmpty, outcome.Fail(imagev1.ReasonInvalidSourceConfiguration, fmt.Errorf("GitRepository '%s' not found", key))
		}
		return outcome.ResultEmpty, err
	}
	if key.Namespace != obj.Namespace && !lendsPushTo(source, obj.Namespace) {
		return outcome.ResultEmpty, outcome.Stall(meta.AccessDeniedReason,
			fmt.Errorf("GitRepository '%s' is in another namespace and lends its credentials to no push from '%s': annotate it %s=%s",
				key, obj.Namespace, imagev1.PushFromNamespacesAnnotation, obj.Namespace))
	}
	u, err := url.Parse(source.Spec.URL)
	if err != nil || u.Host == "" || !slices.Contains([]string{"http", "https", "ssh"}, u.Scheme) {
		return outcome.ResultEmpty, outcome.Stall(imagev1.ReasonInvalidSourceConfiguration,
			fmt.Errorf("GitRepository '%s' has no http, https or ssh URL", key))
	}
	if u.Scheme == "http" && !r.AllowInsecureHTTP {
		return outcome.ResultEmpty, outcome.Stall(meta.InsecureConnectionsDisallowedReason,
			fmt.Errorf("GitRepository '%s' is plain HTTP, which the controller refuses (--insecure-allow-http=false)", key))
	}
	if scope.auth, scope.proxy, err = gitsource.CredentialsWith(ctx, r.Client, source, *u, gitsource.Options{AllowInsecureHTTP: r.AllowInsecureHTTP}); err != nil {
		return outcome.ResultEmpty, err
	}
	scope.source, scope.url = source, source.Spec.URL
	ref := source.Spec.Reference
	if g := obj.Spec.GitSpec; g != nil && g.Checkout != nil {
		ref = &g.Checkout.Reference
	}
	scope.checkout = gitsource.CheckoutOptions(ref)
	// The tip is all a commit needs: a push that its history would be
	// needed to judge is reported as a race, and applied again on the
	// fetched tip.
	scope.checkout.ShallowClone = true
	scope.checkout.MaxTransferBytes, scope.checkout.MaxObjectBytes, scope.checkout.MaxCheckoutBytes = r.MaxCloneSize, r.MaxCloneSize, r.MaxCloneSize
	if pushBranch(obj, scope) == "" && !hasBranchTemplate(obj) {
		return outcome.ResultEmpty, outcome.Stall(imagev1.ReasonInvalidSourceConfiguration,
			fmt.Errorf("nothing to push to: the checkout is not a branch; set spec.git.push.branch"))
	}
	return outcome.ResultEmpty, nil
}

// lendsPushTo reports whether source lets the automations of namespace
// push with its credentials (imagev1.PushFromNamespacesAnnotation).
func lendsPushTo(source *sourcev1.GitRepository, namespace string) bool {
	for _, ns := range strings.Split(source.GetAnnotations()[imagev1.PushFromNamespacesAnnotation], ",") {
		if ns = strings.TrimSpace(ns); ns == "*" || ns == namespace {
			return true
		}
	}
	return false
}

// checkoutBranch returns the branch checked out, or "" when the checkout
// is a tag, a semver range, a reference or a commit without a branch.
func checkoutBranch(scope *automationScope) string {
	c := scope.checkout
	switch {
	case c.Commit != "":
		return c.Branch
	case c.RefName != "", c.SemVer != "", c.Tag != "":
		return ""
	case c.Branch == "":
		return git.DefaultBranch
	}
	return c.Branch
}

// pushBranch returns spec.git.push.branch, or the branch checked out.
func pushBranch(obj *imagev1.ImageUpdateAutomation, scope *automationScope) string {
	if g := obj.Spec.GitSpec; g != nil && g.Push != nil && g.Push.Branch != "" {
		return g.Push.Branch
	}
	return checkoutBranch(scope)
}

func hasBranchTemplate(obj *imagev1.ImageUpdateAutomation) bool {
	g := obj.Spec.GitSpec
	return g != nil && g.Push != nil && g.Push.BranchTemplate != ""
}

// selectPolicies lists the policies of the automation's namespace that
// its selector selects and that have elected an image.
func (r *ImageUpdateAutomationReconciler) selectPolicies(ctx context.Context, obj *imagev1.ImageUpdateAutomation, scope *automationScope) (outcome.Result, error) {
	var list imagev1.ImagePolicyList
	if err := r.List(ctx, &list, client.InNamespace(obj.Namespace), client.MatchingLabelsSelector{Selector: scope.selector}); err != nil {
		return outcome.ResultEmpty, err
	}
	scope.refs = map[imageupdate.PolicyKey]imageupdate.ImageRef{}
	scope.policies = map[imageupdate.PolicyKey]*imagev1.ImagePolicy{}
	scope.observed = imagev1.ObservedPolicies{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.LatestRef == nil {
			continue
		}
		key := imageupdate.PolicyKey{Namespace: p.Namespace, Name: p.Name}
		ref := *p.Status.LatestRef
		scope.refs[key] = imageupdate.ImageRef{Name: ref.Name, Tag: ref.Tag, Digest: ref.Digest}
		scope.policies[key] = p
		scope.observed[p.Name] = ref
	}
	return outcome.ResultEmpty, nil
}
