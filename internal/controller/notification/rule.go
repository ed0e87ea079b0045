package notification

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	"github.com/windlass-dev/windlass/internal/httptransport"
	"github.com/windlass-dev/windlass/internal/notify"
	"github.com/windlass-dev/windlass/internal/notify/commitstatus"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
	"github.com/windlass-dev/windlass/internal/notify/providers"
	"github.com/windlass-dev/windlass/internal/redact"
)

// Keys of a Provider's secretRef Secret.
const (
	// KeyAddress overrides spec.address.
	KeyAddress = "address"
	// KeyToken is the service's token.
	KeyToken = "token"
	// KeyUsername is the basic-auth username (with KeyPassword).
	KeyUsername = "username"
	// KeyPassword is the basic-auth password.
	KeyPassword = "password"
	// KeyHeaders is a YAML map of headers added to every request.
	KeyHeaders = "headers"
)

// SummaryKey is the metadata key of an Alert's spec.summary.
const SummaryKey = "summary"

// Reasons of the Warning events about an Alert.
const (
	// ProviderNotFoundReason: the Alert's Provider does not exist.
	ProviderNotFoundReason = "ProviderNotFound"
	// SecretNotFoundReason: a Secret of the Provider does not exist.
	SecretNotFoundReason = "SecretNotFound"
	// InvalidProviderReason: the Provider is invalid for its type (type,
	// address, credentials, commitStatusExpr).
	InvalidProviderReason = "InvalidProvider"
	// InvalidSecretReason: a Secret of the Provider holds invalid data
	// (headers, TLS, proxy).
	InvalidSecretReason = "InvalidSecret"
	// InvalidAlertReason: the Alert's spec is invalid (a regex, an event
	// source in another namespace).
	InvalidAlertReason = "InvalidAlert"
	// ReadyReason: the Alert forwards events again after a problem.
	ReadyReason = "Ready"
)

// problem is why an Alert cannot forward events: its message is for users
// and holds no secret. missing tells that an object is missing, which is
// looked for again later; an invalid spec is not retried until it changes.
type problem struct {
	reason, message string
	missing         bool
}

func (p *problem) Error() string { return p.message }

func invalid(reason, format string, args ...any) *problem {
	return &problem{reason: reason, message: fmt.Sprintf(format, args...)}
}

// builtRule is the rule of an Alert, or nothing when the Alert or its
// Provider is suspended.
type builtRule struct {
	rule      dispatch.Rule
	suspended string
}

// buildRule reads the Alert's Provider and Secrets and returns the rule
// of the Alert. A *problem error tells what the user must fix; any other
// error is an API error, to retry.
func (r *AlertReconciler) buildRule(ctx context.Context, alert *notificationv1beta3.Alert) (builtRule, error) {
	if alert.IsSuspended() {
		return builtRule{suspended: "the Alert is suspended"}, nil
	}
	sources, err := r.sources(alert)
	if err != nil {
		return builtRule{}, err
	}
	inclusion, err := compileAll("inclusionList", alert.Spec.InclusionList)
	if err != nil {
		return builtRule{}, err
	}
	exclusion, err := compileAll("exclusionList", alert.Spec.ExclusionList)
	if err != nil {
		return builtRule{}, err
	}
	provider := &notificationv1beta3.Provider{}
	key := types.NamespacedName{Namespace: alert.Namespace, Name: alert.Spec.ProviderRef.Name}
	if err := r.Client.Get(ctx, key, provider); err != nil {
		if apierrors.IsNotFound(err) {
			return builtRule{}, &problem{reason: ProviderNotFoundReason, missing: true,
				message: fmt.Sprintf("Provider '%s' not found in namespace '%s'", key.Name, key.Namespace)}
		}
		return builtRule{}, err
	}
	if provider.IsSuspended() {
		return builtRule{suspended: fmt.Sprintf("Provider '%s' is suspended", provider.Name)}, nil
	}
	notifier, providerKey, err := r.notifier(ctx, provider)
	if err != nil {
		return builtRule{}, err
	}
	if providers.IsCommitStatus(provider.Spec.Type) {
		notifier = alertNotifier{Notifier: notifier, alert: alertContent(alert)}
	}
	return builtRule{rule: dispatch.Rule{
		Key:          keyOf(alert).String(),
		Namespace:    alert.Namespace,
		Sources:      sources,
		Severity:     alert.GetEventSeverity(),
		Inclusion:    inclusion,
		Exclusion:    exclusion,
		Metadata:     metadata(alert),
		NoFold:       providers.IsCommitStatus(provider.Spec.Type),
		Notifier:     notifier,
		ProviderKey:  providerKey,
		Provider:     key,
		ProviderType: provider.Spec.Type,
	}}, nil
}

// sources returns the Alert's event sources, each with its namespace.
func (r *AlertReconciler) sources(alert *notificationv1beta3.Alert) ([]dispatch.Source, error) {
	out := make([]dispatch.Source, 0, len(alert.Spec.EventSources))
	for _, s := range alert.Spec.EventSources {
		namespace := s.Namespace
		if namespace == "" {
			namespace = alert.Namespace
		}
		if r.NoCrossNamespaceRefs && namespace != alert.Namespace {
			return nil, invalid(InvalidAlertReason,
				"event source %s '%s/%s' is in another namespace, and cross-namespace references are not allowed", s.Kind, namespace, s.Name)
		}
		out = append(out, dispatch.Source{Kind: s.Kind, Name: s.Name, Namespace: namespace, MatchLabels: s.MatchLabels})
	}
	return out, nil
}

// compileAll compiles the regexes of the Alert's field.
func compileAll(field string, patterns []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(patterns))
	for i, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, invalid(InvalidAlertReason, "%s[%d] is not a valid regular expression: %v", field, i, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// metadata is what the rule adds to each event: eventMetadata, and the
// summary.
func metadata(alert *notificationv1beta3.Alert) map[string]string {
	out := map[string]string{}
	for k, v := range alert.Spec.EventMetadata {
		out[k] = v
	}
	if alert.Spec.Summary != "" {
		out[SummaryKey] = alert.Spec.Summary
	}
	return out
}

// notifier builds the Provider's Notifier, and the key of its queue: the
// Provider and the versions of it and its Secrets, so that a changed
// Provider gets a fresh queue.
func (r *AlertReconciler) notifier(ctx context.Context, provider *notificationv1beta3.Provider) (notify.Notifier, string, error) {
	cfg, versions, secrets, err := r.providerConfig(ctx, provider)
	if err != nil {
		return nil, "", err
	}
	n, err := providers.New(cfg)
	if err != nil {
		return nil, "", invalid(InvalidProviderReason, "Provider '%s': %s", provider.Name, scrub(redact.Error(err).Error(), secrets))
	}
	key := provider.Namespace + "/" + provider.Name + "@" + strings.Join(versions, ",")
	return n, key, nil
}

// providerConfig reads the Provider and its Secrets into a Config. It
// returns the resource versions read and the secret values, which no
// message may quote.
func (r *AlertReconciler) providerConfig(ctx context.Context, p *notificationv1beta3.Provider) (notify.Config, []string, []string, error) {
	cfg := notify.Config{
		Type: p.Spec.Type, Address: p.Spec.Address, Channel: p.Spec.Channel, Username: p.Spec.Username,
		CommitStatusExpr: p.Spec.CommitStatusExpr, Timeout: p.GetTimeout(), AllowLinkLocal: r.AllowLinkLocal, AllowLoopback: r.AllowLoopback,
		ProviderName: p.Name, ProviderNamespace: p.Namespace,
	}
	versions := []string{p.ResourceVersion}
	var secrets []string
	read := func(ref, field string) (map[string][]byte, error) {
		s, err := r.secret(ctx, p, ref, field)
		if err != nil {
			return nil, err
		}
		versions = append(versions, s.ResourceVersion)
		if s.Data == nil {
			return map[string][]byte{}, nil
		}
		return s.Data, nil
	}
	if ref := p.Spec.SecretRef; ref != nil {
		data, err := read(ref.Name, "secretRef")
		if err != nil {
			return cfg, nil, nil, err
		}
		if secrets, err = applySecret(&cfg, p, ref.Name, data); err != nil {
			return cfg, nil, nil, err
		}
	}
	if ref := p.Spec.CertSecretRef; ref != nil {
		data, err := read(ref.Name, "certSecretRef")
		if err != nil {
			return cfg, nil, nil, err
		}
		if cfg.TLS, err = httptransport.TLSConfig(data); err != nil {
			return cfg, nil, nil, invalid(InvalidSecretReason, "Provider '%s': certSecretRef Secret '%s': %v", p.Name, ref.Name, err)
		}
	}
	proxy, err := r.proxy(p, read)
	if err != nil {
		return cfg, nil, nil, err
	}
	cfg.Proxy = proxy
	return cfg, versions, secrets, nil
}

// proxy returns the proxy of the Provider's proxySecretRef, else of its
// spec.proxy, else nil.
func (r *AlertReconciler) proxy(p *notificationv1beta3.Provider, read func(ref, field string) (map[string][]byte, error)) (*url.URL, error) {
	if ref := p.Spec.ProxySecretRef; ref != nil {
		data, err := read(ref.Name, "proxySecretRef")
		if err != nil {
			return nil, err
		}
		u, err := httptransport.ProxyURL(data)
		if err != nil {
			return nil, invalid(InvalidSecretReason, "Provider '%s': proxySecretRef Secret '%s': %v", p.Name, ref.Name, err)
		}
		return u, nil
	}
	if p.Spec.Proxy == "" {
		return nil, nil
	}
	u, err := url.Parse(p.Spec.Proxy)
	if err != nil || u.Host == "" {
		return nil, invalid(InvalidProviderReason, "Provider '%s': spec.proxy is not a URL with a scheme and a host", p.Name)
	}
	return u, nil
}

// secret reads a Secret of the Provider, uncached.
func (r *AlertReconciler) secret(ctx context.Context, p *notificationv1beta3.Provider, name, field string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := r.secretReader().Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &problem{reason: SecretNotFoundReason, missing: true,
				message: fmt.Sprintf("Secret '%s' (%s of Provider '%s') not found in namespace '%s'", name, field, p.Name, p.Namespace)}
		}
		return nil, err
	}
	return s, nil
}

// applySecret sets the Config from the secretRef Secret's data, and
// returns its secret values.
func applySecret(cfg *notify.Config, p *notificationv1beta3.Provider, name string, data map[string][]byte) ([]string, error) {
	if address := string(data[KeyAddress]); address != "" {
		cfg.Address = strings.TrimSpace(address)
	}
	cfg.Token = strings.TrimSpace(string(data[KeyToken]))
	cfg.BasicUsername = string(data[KeyUsername])
	cfg.Password = string(data[KeyPassword])
	secrets := []string{cfg.Token, cfg.Password, string(data[KeyAddress]), strings.TrimSpace(string(data[KeyAddress]))}
	if raw, ok := data[KeyHeaders]; ok {
		headers := map[string]string{}
		if err := yaml.Unmarshal(raw, &headers); err != nil {
			// The parser's error may quote the Secret's content.
			return nil, invalid(InvalidSecretReason, "Provider '%s': the '%s' key of Secret '%s' is not a YAML map of strings", p.Name, KeyHeaders, name)
		}
		cfg.Headers = headers
		for _, v := range headers {
			secrets = append(secrets, v)
		}
	}
	return secrets, nil
}

// scrub replaces in msg each secret value, and the form redact.URL gives
// an address (a webhook's path may hold its token), with "***". Values
// shorter than 4 bytes are left: they would mangle the message.
func scrub(msg string, secrets []string) string {
	var values []string
	for _, s := range secrets {
		values = append(values, s, redact.URL(s))
	}
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	for _, v := range values {
		if len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "***")
		}
	}
	return msg
}

// alertNotifier gives commit-status notifiers the Alert, for the alert
// variable of commitStatusExpr.
type alertNotifier struct {
	notify.Notifier
	alert map[string]any
}

// Post implements notify.Notifier.
func (n alertNotifier) Post(ctx context.Context, m notify.Message) error {
	return n.Notifier.Post(commitstatus.WithAlert(ctx, n.alert), m)
}

// alertContent is the Alert as commitStatusExpr sees it.
func alertContent(alert *notificationv1beta3.Alert) map[string]any {
	md := map[string]any{"name": alert.Name, "namespace": alert.Namespace}
	if len(alert.Labels) > 0 {
		md["labels"] = toAny(alert.Labels)
	}
	if len(alert.Annotations) > 0 {
		md["annotations"] = toAny(alert.Annotations)
	}
	return map[string]any{
		"apiVersion": notificationv1beta3.GroupVersion.String(),
		"kind":       notificationv1beta3.AlertKind,
		"metadata":   md,
		"spec": map[string]any{
			"providerRef":   map[string]any{"name": alert.Spec.ProviderRef.Name},
			"eventSeverity": alert.GetEventSeverity(),
			"eventMetadata": toAny(alert.Spec.EventMetadata),
			"summary":       alert.Spec.Summary,
		},
	}
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// isProblem returns err as a *problem.
func isProblem(err error) (*problem, bool) {
	var p *problem
	return p, errors.As(err, &p)
}
