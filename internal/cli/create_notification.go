package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/notify/providers"
	"github.com/windlass-dev/windlass/internal/webhook"
)

// eventSourceKinds are the kinds an Alert's event source may name.
var eventSourceKinds = kinds.Names(kinds.Where(func(k kinds.Kind) bool { return k.AlertSource }))

// receiverKinds are the kinds a Receiver's resource may name: those a
// controller reconciles when asked, Gates included.
var receiverKinds = kinds.Names(kinds.Where(func(k kinds.Kind) bool { return k.WebhookTarget }))

// providerFlags are the flags of `create alert-provider`.
type providerFlags struct {
	providerType, address, channel, username string
	secretRef, certSecretRef, proxySecretRef string
	timeout                                  time.Duration
}

func newCreateProviderCommand(f *createFlags) *cobra.Command {
	p := &providerFlags{}
	cmd := &cobra.Command{
		Use:     "alert-provider NAME",
		Aliases: []string{"provider"},
		Short:   "Create or update a Provider: where and how Alerts send notifications",
		Long: `Create or update a Provider (notification.toolkit.fluxcd.io/v1beta3): the
service that Alerts send notifications to, its address and its credentials.

An address that holds a secret (a Slack or Teams webhook URL, a URL with a
password) belongs in a Secret's address key, named by --secret-ref, not in
--address: create it with kubectl, e.g.
  kubectl -n flux-system create secret generic slack-url --from-literal=address=https://hooks.slack.com/services/...`,
		Example: `  windlass create alert-provider slack --type slack --channel ops --secret-ref slack-url
  windlass create alert-provider oncall --type pagerduty --address https://events.pagerduty.com --secret-ref pd-routing-key
  windlass create alert-provider github-status --type github --address https://github.com/org/app --secret-ref github-token`,
		Args: nameArg,
		RunE: applyCreated(f, p.object),
	}
	fs := cmd.Flags()
	fs.StringVar(&p.providerType, "type", "", "the service: "+strings.Join(servedProviderTypes(), ", "))
	fs.StringVar(&p.address, "address", "", "the service's URL (a repository URL for the commit-status types)")
	fs.StringVar(&p.channel, "channel", "", "the channel, room or chat to post to, for the types that have one")
	fs.StringVar(&p.username, "username", "", "the name to post as, where the service allows it")
	fs.StringVar(&p.secretRef, "secret-ref", "", "the Secret with the credentials: address, token, username, password, headers")
	fs.StringVar(&p.certSecretRef, "cert-secret-ref", "", "the Secret with the TLS material: ca.crt, tls.crt and tls.key")
	fs.StringVar(&p.proxySecretRef, "proxy-secret-ref", "", "the Secret with the proxy to send through: address, username, password")
	fs.DurationVar(&p.timeout, "timeout", 0, "how long one notification may take (the controller's default is 15s)")
	return cmd
}

// servedProviderTypes lists the Provider types Windlass sends to, sorted.
func servedProviderTypes() []string { return providers.Types() }

// object returns the Provider the flags declare, or the first flag that is
// wrong.
func (p *providerFlags) object(name string, f *createFlags) (*notificationv1beta3.Provider, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(servedProviderTypes(), p.providerType) {
		return nil, fmt.Errorf("--type %q is not a provider type Windlass sends to: choose one of %s",
			p.providerType, strings.Join(servedProviderTypes(), ", "))
	}
	if err := checkProviderAddress(p.providerType, p.address); err != nil {
		return nil, err
	}
	if p.address == "" && p.secretRef == "" {
		return nil, errors.New("give the service's address: --address, or --secret-ref naming a Secret with an address key")
	}
	if providers.NeedsToken(p.providerType) && p.secretRef == "" {
		return nil, fmt.Errorf("a %s provider needs --secret-ref: a Secret whose token key may call the forge's API (commit statuses, pull request comments)", p.providerType)
	}
	spec := notificationv1beta3.ProviderSpec{Type: p.providerType, Address: p.address, Channel: p.channel, Username: p.username}
	for _, ref := range []struct {
		flag, name string
		into       **meta.LocalObjectReference
	}{{"--secret-ref", p.secretRef, &spec.SecretRef}, {"--cert-secret-ref", p.certSecretRef, &spec.CertSecretRef},
		{"--proxy-secret-ref", p.proxySecretRef, &spec.ProxySecretRef}} {
		if ref.name == "" {
			continue
		}
		if err := checkName(ref.flag, ref.name); err != nil {
			return nil, err
		}
		*ref.into = &meta.LocalObjectReference{Name: ref.name}
	}
	if p.timeout != 0 {
		timeout, err := positiveDuration("--timeout", p.timeout)
		if err != nil {
			return nil, err
		}
		spec.Timeout = &timeout
	}
	return &notificationv1beta3.Provider{ObjectMeta: om, Spec: spec}, nil
}

// checkProviderAddress refuses an --address that is not a URL of the
// type's schemes (http(s), or nats:// and tls:// for nats), or that carries
// a password, which belongs in the Secret.
func checkProviderAddress(providerType, address string) error {
	if address == "" {
		return nil
	}
	schemes := providers.AddressSchemes(providerType)
	u, err := url.Parse(address)
	if err != nil || !slices.Contains(schemes, u.Scheme) || u.Host == "" {
		if slices.Contains(schemes, "http") {
			return errors.New("--address must be an http or https URL, like https://hooks.example.com/notify")
		}
		return fmt.Errorf("--address must be a %s URL, like %s://host:4222", strings.Join(schemes, " or "), schemes[0])
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		return errors.New("--address must not carry a password: put the address in a Secret's address key and pass --secret-ref")
	}
	return nil
}

// alertFlags are the flags of `create alert`.
type alertFlags struct {
	providerRef, severity        string
	sources                      []string
	inclusionList, exclusionList []string
	metadata                     []string
}

func newCreateAlertCommand(f *createFlags) *cobra.Command {
	a := &alertFlags{}
	cmd := &cobra.Command{
		Use:   "alert NAME",
		Short: "Create or update an Alert: which events go to a Provider",
		Long: `Create or update an Alert (notification.toolkit.fluxcd.io/v1beta3): the events
of the objects it selects (--event-source Kind/name, '*' for every object of
the kind, Kind/namespace/name for another namespace) go to its Provider, all
of them (--event-severity info) or only the failures (error).

The same event of the same object and revision is sent once within the
controller's window (--rate-limit-interval, 5m); a flood from one failing
source is folded into one message; and when an object that failed is Ready
again, one "Resolved" message goes to the Providers that heard of its failure.`,
		Example: `  windlass create alert prod-failures --provider-ref oncall --event-severity error --event-source 'Kustomization/*' --event-source 'GitRepository/*'
  windlass create alert frontend-releases --provider-ref slack --event-source HelmRelease/frontend --inclusion-list '.*upgrade.*succeeded.*'`,
		Args: nameArg,
		RunE: applyCreated(f, a.object),
	}
	fs := cmd.Flags()
	fs.StringVar(&a.providerRef, "provider-ref", "", "the Provider, in the same namespace, that the events go to")
	fs.StringSliceVar(&a.sources, "event-source", nil, "the objects whose events are sent: Kind/name or Kind/namespace/name, name '*' for all (repeat or separate with commas)")
	fs.StringVar(&a.severity, "event-severity", notificationv1beta3.EventSeverityInfo, "info (every event) or error (only failures)")
	fs.StringArrayVar(&a.inclusionList, "inclusion-list", nil, "send only the events whose message matches one of these Go regular expressions (repeat)")
	fs.StringArrayVar(&a.exclusionList, "exclusion-list", nil, "never send the events whose message matches one of these Go regular expressions (repeat)")
	fs.StringSliceVar(&a.metadata, "event-metadata", nil, "key=value added to every event sent, such as env=prod or summary=... (repeat)")
	return cmd
}

// object returns the Alert the flags declare, or the first flag that is
// wrong.
func (a *alertFlags) object(name string, f *createFlags) (*notificationv1beta3.Alert, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	if a.providerRef == "" {
		return nil, errors.New("--provider-ref is required: the Provider the events go to (see `windlass create alert-provider`)")
	}
	if err := checkName("--provider-ref", a.providerRef); err != nil {
		return nil, err
	}
	if a.severity != notificationv1beta3.EventSeverityInfo && a.severity != notificationv1beta3.EventSeverityError {
		return nil, fmt.Errorf("--event-severity %q: choose info or error", a.severity)
	}
	if len(a.sources) == 0 {
		return nil, errors.New("--event-source is required: Kind/name, like Kustomization/app or 'GitRepository/*'")
	}
	spec := notificationv1beta3.AlertSpec{ProviderRef: meta.LocalObjectReference{Name: a.providerRef}, EventSeverity: a.severity,
		InclusionList: a.inclusionList, ExclusionList: a.exclusionList}
	for _, raw := range a.sources {
		ref, err := parseKindSelector("--event-source", raw, eventSourceKinds)
		if err != nil {
			return nil, err
		}
		spec.EventSources = append(spec.EventSources, notificationv1beta3.EventSource{Kind: ref.kind, Namespace: ref.namespace, Name: ref.name})
	}
	for flag, list := range map[string][]string{"--inclusion-list": a.inclusionList, "--exclusion-list": a.exclusionList} {
		for _, expr := range list {
			if _, err := regexp.Compile(expr); err != nil {
				return nil, fmt.Errorf("%s %q is not a Go regular expression: %w", flag, expr, err)
			}
		}
	}
	if len(a.metadata) > 0 {
		if spec.EventMetadata, err = parseKeyValues("--event-metadata", a.metadata); err != nil {
			return nil, err
		}
	}
	return &notificationv1beta3.Alert{ObjectMeta: om, Spec: spec}, nil
}

// parseKeyValues parses key=value flag values.
func parseKeyValues(flag string, values []string) (map[string]string, error) {
	out := make(map[string]string, len(values))
	for _, v := range values {
		key, value, found := strings.Cut(v, "=")
		if !found || key == "" {
			return nil, fmt.Errorf("%s %q is not key=value", flag, v)
		}
		out[key] = value
	}
	return out, nil
}

// receiverFlags are the flags of `create receiver`.
type receiverFlags struct {
	receiverType, secretRef, resourceFilter string
	events, resources                       []string
}

func newCreateReceiverCommand(f *createFlags) *cobra.Command {
	r := &receiverFlags{}
	cmd := &cobra.Command{
		Use:   "receiver NAME",
		Short: "Create or update a Receiver: a webhook that reconciles objects at once",
		Long: `Create or update a Receiver (notification.toolkit.fluxcd.io/v1): a webhook that a
Git host, a registry or a CI job calls, so that the objects it names reconcile
at once instead of at their next interval. A Gate named as a resource is
opened (Gate/name:open, the default) or closed (Gate/name:close) instead.

The Secret of --secret-ref holds the token in its token key; it signs or
authenticates the requests (as the service does) and salts the webhook path,
printed once the Receiver is Ready: give the service that path on the
controller's webhook address (--receiver-addr, :9292). Create the Secret with
e.g. kubectl -n flux-system create secret generic webhook-token --from-literal=token=$(openssl rand -hex 20)
and ` + "`windlass trigger receiver NAME`" + ` sends it a test request.`,
		Example: `  windlass create receiver github --type github --event push --resource GitRepository/app --secret-ref webhook-token
  windlass create receiver registry --type harbor --resource 'OCIRepository/*' --secret-ref harbor-token
  windlass create receiver approve --type generic-hmac --resource Gate/prod-window:open --secret-ref ci-token`,
		Args: nameArg,
		RunE: applyCreated(f, r.object),
	}
	fs := cmd.Flags()
	fs.StringVar(&r.receiverType, "type", "", "the service that calls the webhook: "+strings.Join(webhook.Types(), ", "))
	fs.StringArrayVar(&r.events, "event", nil, "an event to act on, such as push (GitHub) or 'Push Hook' (GitLab); default every event (repeat)")
	fs.StringSliceVar(&r.resources, "resource", nil, "the objects to reconcile: Kind/name or Kind/namespace/name, name '*' for all; Gate/name:open|close (repeat or separate with commas)")
	fs.StringVar(&r.secretRef, "secret-ref", "", "the Secret whose token key authenticates the requests")
	fs.StringVar(&r.resourceFilter, "resource-filter", "", "a CEL expression over res (an object) and req (the request's body) that must hold for the object to be acted on")
	return cmd
}

// object returns the Receiver the flags declare, or the first flag that is
// wrong.
func (r *receiverFlags) object(name string, f *createFlags) (*notificationv1.Receiver, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	if !notificationv1.ReceiverTypeServed(r.receiverType) {
		return nil, fmt.Errorf("--type %q is not a receiver type Windlass serves: choose one of %s", r.receiverType, strings.Join(webhook.Types(), ", "))
	}
	if r.secretRef == "" {
		return nil, errors.New("--secret-ref is required: a Secret with the webhook's token in its token key")
	}
	if err := checkName("--secret-ref", r.secretRef); err != nil {
		return nil, err
	}
	if len(r.resources) == 0 {
		return nil, errors.New("--resource is required: Kind/name, like GitRepository/app or Gate/prod-window:open")
	}
	spec := notificationv1.ReceiverSpec{Type: r.receiverType, Events: r.events, ResourceFilter: r.resourceFilter,
		SecretRef: meta.LocalObjectReference{Name: r.secretRef}}
	for _, raw := range r.resources {
		ref, action, err := parseReceiverResource(raw)
		if err != nil {
			return nil, err
		}
		resource := notificationv1.ResourceReference{Kind: ref.kind, Namespace: ref.namespace, Name: ref.name, Action: action}
		if ref.kind == notificationv1.GateKind && resource.GetAction() == notificationv1.GateActionOpen &&
			r.receiverType != notificationv1.ReceiverTypeGenericHMAC {
			return nil, fmt.Errorf("--resource %q: a Gate is opened only by a Receiver of --type %s, whose requests are signed with a time",
				raw, notificationv1.ReceiverTypeGenericHMAC)
		}
		spec.Resources = append(spec.Resources, resource)
	}
	return &notificationv1.Receiver{ObjectMeta: om, Spec: spec}, nil
}

// parseReceiverResource parses a --resource: Kind/[namespace/]name, with
// :open or :close after a Gate's name, and returns the action too.
func parseReceiverResource(raw string) (kindRef, string, error) {
	value, action, hasAction := strings.Cut(raw, ":")
	ref, err := parseKindSelector("--resource", value, receiverKinds)
	if err != nil || !hasAction {
		return ref, "", err
	}
	if ref.kind != notificationv1.GateKind {
		return ref, "", fmt.Errorf("--resource %q: only a Gate takes an action (:open or :close)", raw)
	}
	if action != notificationv1.GateActionOpen && action != notificationv1.GateActionClose {
		return ref, "", fmt.Errorf("--resource %q: the action %q is not open or close", raw, action)
	}
	return ref, action, nil
}

// reportStaticRefs says, for an Alert or a Provider just applied, which of
// the objects it names are missing: no controller reports on these kinds
// in a status, so the command line looks for itself.
func reportStaticRefs(ctx context.Context, c client.Client, w io.Writer, obj client.Object) error {
	type ref struct{ kind, name string }
	var refs []ref
	switch o := obj.(type) {
	case *notificationv1beta3.Alert:
		refs = append(refs, ref{notificationv1beta3.ProviderKind, o.Spec.ProviderRef.Name})
	case *notificationv1beta3.Provider:
		for _, r := range []*meta.LocalObjectReference{o.Spec.SecretRef, o.Spec.CertSecretRef, o.Spec.ProxySecretRef} {
			if r != nil {
				refs = append(refs, ref{"Secret", r.Name})
			}
		}
	}
	for _, r := range refs {
		var target client.Object = &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}
		if r.kind == notificationv1beta3.ProviderKind {
			target = &notificationv1beta3.Provider{}
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: r.name}, target)
		switch {
		case apierrors.IsNotFound(err):
			fmt.Fprintf(w, "⚠ %s %s/%s does not exist yet: nothing is sent until it does\n", r.kind, obj.GetNamespace(), r.name)
		case err != nil:
			return fmt.Errorf("reading %s %s/%s: %w", r.kind, obj.GetNamespace(), r.name, err)
		}
	}
	return nil
}
