package notification

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/windlass-dev/windlass/api/meta"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// +kubebuilder:rbac:groups=notification.toolkit.fluxcd.io,resources=alerts;providers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="events.k8s.io",resources=events,verbs=create;patch

// DefaultRetryInterval is how long an Alert whose Provider or Secret is
// missing waits before they are looked for again (their creation is
// watched too, so this only bounds a missed event).
const DefaultRetryInterval = time.Minute

// Field indexes of the cache.
const (
	// alertProviderIndex indexes Alerts by spec.providerRef.name.
	alertProviderIndex = ".spec.providerRef.name"
	// providerSecretIndex indexes Providers by the names of their
	// Secrets (secretRef, certSecretRef, proxySecretRef).
	providerSecretIndex = ".spec.secretRefs"
)

// AlertReconciler keeps one rule of Dispatcher per Alert.
type AlertReconciler struct {
	// Client reads Alerts and Providers; it must be the manager's
	// (cached) client, whose field indexes SetupWithManager adds.
	Client client.Client
	// SecretReader reads the Providers' Secrets; SetupWithManager sets the
	// manager's API reader when nil, so that Secrets are never cached whole.
	SecretReader client.Reader
	// Dispatcher receives the rules; its Run must run for them to deliver.
	Dispatcher *dispatch.Dispatcher
	// Events records the problems of Alerts.
	Events *event.Recorder
	// AllowLinkLocal lets Provider addresses reach link-local addresses
	// and cloud metadata endpoints (--allow-link-local-addresses).
	AllowLinkLocal bool
	// AllowLoopback lets Provider addresses reach the controller's own
	// host (--allow-loopback-addresses).
	AllowLoopback bool
	// NoCrossNamespaceRefs refuses event sources in another namespace than
	// the Alert's (--no-cross-namespace-refs).
	NoCrossNamespaceRefs bool
	// RetryInterval is DefaultRetryInterval when zero.
	RetryInterval time.Duration

	mu     sync.Mutex
	states map[string]alertState
}

// alertState is what the reconciler remembers of an Alert.
type alertState struct {
	// providerKey is the ProviderKey of the Alert's rule; empty without a
	// rule.
	providerKey string
	// problem is the last problem reported, so that it is reported once.
	problem string
}

// SetupWithManager registers the reconciler with mgr: it watches Alerts,
// Providers (for the Alerts that name them, and to drop the metrics of
// those deleted) and the metadata of Secrets (for the Alerts of the
// Providers that name them).
func (r *AlertReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts reconcile.ControllerOptions) error {
	if r.SecretReader == nil {
		r.SecretReader = mgr.GetAPIReader()
	}
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &notificationv1beta3.Alert{}, alertProviderIndex, func(o client.Object) []string {
		return []string{o.(*notificationv1beta3.Alert).Spec.ProviderRef.Name}
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &notificationv1beta3.Provider{}, providerSecretIndex, secretNames); err != nil {
		return err
	}
	return reconcile.NewControllerManagedBy(mgr, &notificationv1beta3.Alert{}, opts).
		Watches(&notificationv1beta3.Provider{}, handler.EnqueueRequestsFromMapFunc(r.alertsOfProvider),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&notificationv1beta3.Provider{}, handler.Funcs{DeleteFunc: r.providerDeleted}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.alertsOfSecret),
			builder.OnlyMetadata, builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		Complete(r)
}

// providerDeleted drops the notification metrics of a deleted Provider.
func (r *AlertReconciler) providerDeleted(_ context.Context, e ctrlevent.DeleteEvent, _ workqueue.TypedRateLimitingInterface[ctrl.Request]) {
	r.Dispatcher.ForgetProvider(client.ObjectKeyFromObject(e.Object))
}

// secretNames returns the names of a Provider's Secrets.
func secretNames(o client.Object) []string {
	spec := o.(*notificationv1beta3.Provider).Spec
	var names []string
	for _, ref := range []*meta.LocalObjectReference{spec.SecretRef, spec.CertSecretRef, spec.ProxySecretRef} {
		if ref != nil && !slices.Contains(names, ref.Name) {
			names = append(names, ref.Name)
		}
	}
	return names
}

// Reconcile sets, replaces or deletes the rule of one Alert.
func (r *AlertReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.NamespacedName.String()
	log := ctrl.LoggerFrom(ctx).WithValues("alert", key)
	alert := &notificationv1beta3.Alert{}
	if err := r.Client.Get(ctx, req.NamespacedName, alert); err != nil {
		if apierrors.IsNotFound(err) {
			r.remove(key)
			log.V(1).Info("The Alert is gone: its rule is removed")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !alert.DeletionTimestamp.IsZero() {
		r.remove(key)
		return ctrl.Result{}, nil
	}
	built, err := r.buildRule(ctx, alert)
	if p, ok := isProblem(err); ok {
		return r.report(ctx, log, alert, p), nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if built.suspended != "" {
		r.remove(key)
		log.Info("Not forwarding events", "why", built.suspended)
		return ctrl.Result{}, nil
	}
	if err := r.Dispatcher.SetRule(built.rule); err != nil {
		return r.report(ctx, log, alert, invalid(InvalidAlertReason, "%v", err)), nil
	}
	r.activated(ctx, log, alert, built.rule.ProviderKey)
	return ctrl.Result{}, nil
}

// keyOf is the key of an Alert's rule.
func keyOf(alert *notificationv1beta3.Alert) types.NamespacedName {
	return types.NamespacedName{Namespace: alert.Namespace, Name: alert.Name}
}

// remove deletes the rule of the Alert and forgets it.
func (r *AlertReconciler) remove(key string) {
	r.Dispatcher.DeleteRule(key)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.states, key)
}

// report removes the rule of an Alert with a problem and records a
// Warning event, unless this problem was the last one reported. It
// returns when to look again: later for a missing object, never for an
// invalid spec (a change of it is watched).
func (r *AlertReconciler) report(ctx context.Context, log logr.Logger, alert *notificationv1beta3.Alert, p *problem) ctrl.Result {
	key := keyOf(alert).String()
	r.Dispatcher.DeleteRule(key)
	log.Info("The Alert cannot forward events", "problemReason", p.reason, "problem", p.message)
	if r.setState(key, alertState{problem: p.reason + ": " + p.message}) {
		r.Events.Warning(ctx, alert, p.reason, "", p.message)
	}
	if !p.missing {
		return ctrl.Result{}
	}
	retry := r.RetryInterval
	if retry <= 0 {
		retry = DefaultRetryInterval
	}
	return ctrl.Result{RequeueAfter: retry}
}

// activated remembers the Alert's rule, and says so with a Normal event
// when it had a problem before.
func (r *AlertReconciler) activated(ctx context.Context, log logr.Logger, alert *notificationv1beta3.Alert, providerKey string) {
	r.mu.Lock()
	hadProblem := r.states[keyOf(alert).String()].problem != ""
	r.mu.Unlock()
	r.setState(keyOf(alert).String(), alertState{providerKey: providerKey})
	log.V(1).Info("Forwarding events", "Provider", alert.Namespace+"/"+alert.Spec.ProviderRef.Name)
	if hadProblem {
		r.Events.Normal(ctx, alert, ReadyReason, "",
			fmt.Sprintf("the Alert forwards events to Provider '%s'", alert.Spec.ProviderRef.Name))
	}
}

// setState sets the state of the Alert, and tells whether its problem
// changed.
func (r *AlertReconciler) setState(key string, s alertState) (problemChanged bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.states == nil {
		r.states = map[string]alertState{}
	}
	problemChanged = r.states[key].problem != s.problem
	r.states[key] = s
	return problemChanged
}

// ruleOf returns the ProviderKey of the Alert's rule, if it has one.
func (r *AlertReconciler) ruleOf(key string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.states[key]
	return s.providerKey, ok && s.providerKey != ""
}

// secretReader reads Secrets.
func (r *AlertReconciler) secretReader() client.Reader {
	if r.SecretReader != nil {
		return r.SecretReader
	}
	return r.Client
}

// alertsOfProvider returns the Alerts that name the Provider.
func (r *AlertReconciler) alertsOfProvider(ctx context.Context, obj client.Object) []ctrl.Request {
	return r.alertsOf(ctx, obj.GetNamespace(), obj.GetName())
}

// alertsOfSecret returns the Alerts of the Providers that name the Secret.
func (r *AlertReconciler) alertsOfSecret(ctx context.Context, obj client.Object) []ctrl.Request {
	var list notificationv1beta3.ProviderList
	err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{providerSecretIndex: obj.GetName()})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the Providers of a Secret", "Secret", client.ObjectKeyFromObject(obj).String())
		return nil
	}
	names := make([]string, 0, len(list.Items))
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return r.alertsOf(ctx, obj.GetNamespace(), names...)
}

// alertsOf returns the Alerts in namespace that name one of providers.
func (r *AlertReconciler) alertsOf(ctx context.Context, namespace string, providers ...string) []ctrl.Request {
	var reqs []ctrl.Request
	for _, p := range providers {
		var list notificationv1beta3.AlertList
		if err := r.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{alertProviderIndex: p}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to list the Alerts of a Provider", "Provider", namespace+"/"+p)
			continue
		}
		for _, a := range list.Items {
			reqs = append(reqs, ctrl.Request{NamespacedName: keyOf(&a)})
		}
	}
	return reqs
}
