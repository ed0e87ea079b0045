package notification

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	"github.com/windlass-dev/windlass/internal/cel"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/webhook"
)

// +kubebuilder:rbac:groups=notification.toolkit.fluxcd.io,resources=receivers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=notification.toolkit.fluxcd.io,resources=receivers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=notification.toolkit.fluxcd.io,resources=receivers/finalizers,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="events.k8s.io",resources=events,verbs=create;patch

// Reasons of a Receiver's Ready condition.
const (
	// TokenNotFoundReason: the Secret of spec.secretRef, or its token, is
	// missing (the reference's reason).
	TokenNotFoundReason = "TokenNotFound"
	// UnsupportedTypeReason: spec.type is one Windlass does not serve.
	UnsupportedTypeReason = "UnsupportedType"
	// InvalidResourceReason: a spec.resources entry cannot name a kind
	// (its apiVersion does not parse, or the kind is unknown).
	InvalidResourceReason = "InvalidResource"
)

// filterVars are the variables of a resourceFilter: res, the object, and
// req, the request's payload.
var filterVars = []string{"res", "req"}

// ReceiverReconciler reconciles Receivers: it reads each one's token and
// writes its webhook path to status.webhookPath, with Ready=True "Receiver
// initialized for path: <path>". The Server serves the paths.
type ReceiverReconciler struct {
	// Client reads and patches Receivers and reads their Secrets (the
	// manager's client, which reads Secrets from the API).
	client.Client
	// Events records events about Receivers.
	Events *event.Recorder
	// JitterPercent spreads each Receiver's interval.
	JitterPercent int
	// NoCrossNamespaceRefs refuses resources in another namespace than the
	// Receiver's: such a Receiver is Stalled (AccessDenied).
	NoCrossNamespaceRefs bool
}

// receiverScope is what the steps of one run share.
type receiverScope struct {
	token string
}

// receiverKind is the Receiver kind for the runner.
func (r *ReceiverReconciler) receiverKind() reconcile.Kind[*notificationv1.Receiver] {
	return reconcile.Kind[*notificationv1.Receiver]{
		Name:          notificationv1.ReceiverKind,
		New:           func() *notificationv1.Receiver { return &notificationv1.Receiver{} },
		SuccessReason: meta.SucceededReason,
		SuccessMessage: func(obj *notificationv1.Receiver) string {
			return "Receiver initialized for path: " + obj.Status.WebhookPath
		},
		Run: func(ctx context.Context, obj *notificationv1.Receiver, _ *patch.Helper) (outcome.Result, error) {
			return reconcile.RunSteps(ctx, obj, &receiverScope{}, r.checkSpec, r.readToken, r.publishPath)
		},
		// A deleted Receiver's requests are no longer counted.
		Forget: metrics.ForgetReceiver,
	}
}

// secretIndexKey indexes Receivers by the name of their Secret.
const secretIndexKey = ".spec.secretRef.name"

// SetupWithManager registers the reconciler with mgr: it watches Receivers
// and the metadata of Secrets, so that a Secret created or rotated
// publishes the path of its token at once.
func (r *ReceiverReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &notificationv1.Receiver{}, secretIndexKey, func(o client.Object) []string {
		return []string{o.(*notificationv1.Receiver).Spec.SecretRef.Name}
	})
	if err != nil {
		return err
	}
	runner := &reconcile.Runner[*notificationv1.Receiver]{
		Client: r.Client, Events: r.Events, JitterPercent: r.JitterPercent, Kind: r.receiverKind(),
	}
	b, err := runner.Setup(ctx, mgr, opts)
	if err != nil {
		return err
	}
	return b.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.receiversOfSecret),
		builder.OnlyMetadata, builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		Complete(runner)
}

// receiversOfSecret returns the Receivers whose token is in secret.
func (r *ReceiverReconciler) receiversOfSecret(ctx context.Context, secret client.Object) []ctrl.Request {
	var list notificationv1.ReceiverList
	if err := r.List(ctx, &list, client.InNamespace(secret.GetNamespace()),
		client.MatchingFields{secretIndexKey: secret.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the Receivers of a Secret", "Secret", client.ObjectKeyFromObject(secret).String())
		return nil
	}
	requests := make([]ctrl.Request, 0, len(list.Items))
	for _, rcv := range list.Items {
		requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&rcv)})
	}
	return requests
}

// checkSpec stalls a Receiver whose spec no retry can make work; its
// webhook path is withdrawn.
func (r *ReceiverReconciler) checkSpec(_ context.Context, obj *notificationv1.Receiver, _ *receiverScope) (outcome.Result, error) {
	if err := CheckSpec(obj, r.NoCrossNamespaceRefs); err != nil {
		obj.Status.WebhookPath = ""
		return outcome.ResultEmpty, err
	}
	return outcome.ResultEmpty, nil
}

// CheckSpec returns a Stalling error (see internal/reconcile) when obj's
// spec cannot work: a type Windlass does not serve, a resource whose kind
// cannot be resolved, a resource in another namespace when
// noCrossNamespaceRefs is set, a Gate to open by a type that signs no
// time, or a resourceFilter that does not compile.
func CheckSpec(obj *notificationv1.Receiver, noCrossNamespaceRefs bool) error {
	if !notificationv1.ReceiverTypeServed(obj.Spec.Type) || !slices.Contains(webhook.Types(), obj.Spec.Type) {
		return outcome.Stall(UnsupportedTypeReason, fmt.Errorf("receiver type '%s' is not served by Windlass (served: %s)",
			obj.Spec.Type, strings.Join(webhook.Types(), ", ")))
	}
	for _, ref := range obj.Spec.Resources {
		if _, err := resourceGVK(ref); err != nil {
			return outcome.Stall(InvalidResourceReason, err)
		}
		if err := checkNamespace(obj, ref, noCrossNamespaceRefs); err != nil {
			return outcome.Stall(meta.AccessDeniedReason, err)
		}
		if err := checkGateOpener(obj, ref); err != nil {
			return outcome.Stall(InvalidResourceReason, err)
		}
	}
	if obj.Spec.ResourceFilter != "" {
		if _, err := cel.Compile(obj.Spec.ResourceFilter, filterVars); err != nil {
			return outcome.Stall(meta.InvalidCELExpressionReason, fmt.Errorf("spec.resourceFilter: %w", err))
		}
	}
	return nil
}

// checkNamespace refuses a resource in another namespace than obj's when
// noCrossNamespaceRefs is set.
func checkNamespace(obj *notificationv1.Receiver, ref notificationv1.ResourceReference, noCrossNamespaceRefs bool) error {
	if noCrossNamespaceRefs && ref.Namespace != "" && ref.Namespace != obj.Namespace {
		return fmt.Errorf("cross-namespace reference to %s '%s/%s' is not allowed", ref.Kind, ref.Namespace, ref.Name)
	}
	return nil
}

// checkGateOpener refuses a resource that opens Gates on a Receiver whose
// requests cannot carry a signed time: a captured request could open them
// again, at any later time.
func checkGateOpener(obj *notificationv1.Receiver, ref notificationv1.ResourceReference) error {
	gvk, err := resourceGVK(ref)
	if err != nil || !isGate(gvk) || ref.GetAction() != notificationv1.GateActionOpen {
		return nil
	}
	if obj.Spec.Type != notificationv1.ReceiverTypeGenericHMAC {
		return fmt.Errorf("Gate '%s' is opened only by a Receiver of type '%s', whose requests are signed with a time; type '%s' cannot tell a replayed request",
			ref.Name, notificationv1.ReceiverTypeGenericHMAC, obj.Spec.Type)
	}
	return nil
}

// readToken reads the token of the Receiver's Secret. A missing Secret or
// token withdraws the webhook path; every failure is retried.
func (r *ReceiverReconciler) readToken(ctx context.Context, obj *notificationv1.Receiver, scope *receiverScope) (outcome.Result, error) {
	token, err := readToken(ctx, r.Client, obj)
	if err != nil {
		var missing *tokenError
		if errors.As(err, &missing) {
			obj.Status.WebhookPath = ""
		}
		return outcome.ResultEmpty, outcome.Fail(TokenNotFoundReason, err)
	}
	scope.token = token
	return outcome.ResultEmpty, nil
}

// publishPath writes the webhook path of the token to the status.
func (r *ReceiverReconciler) publishPath(_ context.Context, obj *notificationv1.Receiver, scope *receiverScope) (outcome.Result, error) {
	obj.Status.WebhookPath = webhook.WebhookPath(scope.token, obj.Name, obj.Namespace)
	return outcome.ResultSuccess, nil
}

// tokenError says that a Receiver's Secret is missing or has no token.
type tokenError struct {
	secret   types.NamespacedName
	notFound bool
}

func (e *tokenError) Error() string {
	if e.notFound {
		return fmt.Sprintf("secret '%s' not found: create it with the webhook token under the key '%s'", e.secret, notificationv1.TokenKey)
	}
	return fmt.Sprintf("secret '%s' has no '%s' key, or it is empty: set the webhook token there", e.secret, notificationv1.TokenKey)
}

// readToken returns the token of obj's Secret. Its errors name the Secret,
// never the token; a missing Secret or token is a *tokenError.
func readToken(ctx context.Context, c client.Reader, obj *notificationv1.Receiver) (string, error) {
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Spec.SecretRef.Name}
	var secret corev1.Secret
	if err := c.Get(ctx, key, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return "", &tokenError{secret: key, notFound: true}
		}
		return "", fmt.Errorf("reading secret '%s': %w", key, err)
	}
	token := string(secret.Data[notificationv1.TokenKey])
	if strings.TrimSpace(token) == "" {
		return "", &tokenError{secret: key}
	}
	return token, nil
}
