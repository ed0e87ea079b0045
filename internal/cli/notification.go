package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/webhook"
)

// providerColumns are the columns of `get alert-providers`: the service,
// where it is (the host of its address only: the rest of an address may
// be a credential) and the channel.
var providerColumns = &kindColumns{
	header: []string{"TYPE", "ADDRESS", "CHANNEL", "SUSPENDED"},
	cells: func(o reconcilable) []string {
		p := o.(*notificationv1beta3.Provider)
		return []string{p.Spec.Type, addressHost(p), orDash(p.Spec.Channel), fmt.Sprint(p.Spec.Suspend)}
	},
}

// addressHost is what `get alert-providers` shows of a Provider's address:
// its scheme and host, "(secret)" when it is in the Secret.
func addressHost(p *notificationv1beta3.Provider) string {
	if p.Spec.Address == "" {
		if p.Spec.SecretRef != nil {
			return "(secret " + p.Spec.SecretRef.Name + ")"
		}
		return "-"
	}
	u, err := url.Parse(p.Spec.Address)
	if err != nil || u.Host == "" {
		return "(invalid)"
	}
	return u.Scheme + "://" + u.Host
}

// alertColumns are the columns of `get alerts`: the Provider, the
// severity and the event sources.
var alertColumns = &kindColumns{
	header: []string{"PROVIDER", "SEVERITY", "EVENT SOURCES", "SUSPENDED"},
	cells: func(o reconcilable) []string {
		a := o.(*notificationv1beta3.Alert)
		sources := make([]string, 0, len(a.Spec.EventSources))
		for _, s := range a.Spec.EventSources {
			name := s.Name
			if s.Namespace != "" && s.Namespace != a.Namespace {
				name = s.Namespace + "/" + name
			}
			sources = append(sources, s.Kind+"/"+name)
		}
		return []string{a.Spec.ProviderRef.Name, a.GetEventSeverity(), strings.Join(sources, ","), fmt.Sprint(a.Spec.Suspend)}
	},
}

// receiverColumns are the columns of `get receivers`: the service, and
// whether the webhook is served (the message names its path).
var receiverColumns = &kindColumns{
	header: []string{"TYPE", "SUSPENDED", "READY", "MESSAGE"},
	cells: func(o reconcilable) []string {
		r := o.(*notificationv1.Receiver)
		row := rowOf(notificationv1.ReceiverKind, r, "", r.Spec.Suspend, now())
		return []string{r.Spec.Type, row.Suspended, row.Ready, row.Message}
	},
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// triggerFlags are the flags of `trigger receiver`.
type triggerFlags struct {
	verbFlags
	address, payload, event string
}

func newTriggerCommand() *cobra.Command {
	f := &triggerFlags{}
	cmd := &cobra.Command{Use: "trigger", Short: "Send a test request to a webhook"}
	f.kube.bind(cmd)
	cmd.PersistentFlags().DurationVar(&f.timeout, "timeout", defaultTriggerTimeout, "how long to wait for the answer")
	leaf := &cobra.Command{
		Use:     "receiver NAME",
		Aliases: []string{"rcv"},
		Short:   "Send a Receiver a webhook request, signed the way its service signs one",
		Long: `Send a Receiver a request as its service would: a sample push payload of the
service (or --payload), with the service's event header and its signature or
token made with the Receiver's Secret, to the Receiver's webhook path on the
controller's webhook address. The Receiver then asks the objects it selects to
reconcile (or opens or closes its Gates), as it would for the real service.

--address is where the controller serves webhooks (--receiver-addr); in a
cluster, forward it first:
  kubectl -n flux-system port-forward svc/webhook-receiver 9292:80`,
		Example: `  windlass trigger receiver github
  windlass trigger receiver gitlab --event "Tag Push Hook" --payload ./tag-push.json
  windlass trigger receiver approve --address http://127.0.0.1:9292`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, c client.Client, w io.Writer) error {
				return f.trigger(ctx, c, cmd.InOrStdin(), w, args[0])
			})
		},
	}
	fs := leaf.Flags()
	fs.StringVar(&f.address, "address", "http://localhost:9292", "the controller's webhook address")
	fs.StringVar(&f.payload, "payload", "", "a file with the body to send, - for stdin (default: a sample push of the service)")
	fs.StringVar(&f.event, "event", "", "the event to send (default: the Receiver's first event, or a push)")
	cmd.AddCommand(leaf)
	return cmd
}

// defaultTriggerTimeout bounds `trigger receiver` by default.
const defaultTriggerTimeout = 30 * time.Second

// trigger sends the Receiver name a request signed with its token.
func (f *triggerFlags) trigger(ctx context.Context, c client.Client, in io.Reader, w io.Writer, name string) error {
	k := kindNamed(notificationv1.ReceiverKind)
	obj, err := f.get(ctx, c, k, name)
	if err != nil {
		return err
	}
	rcv := obj.(*notificationv1.Receiver)
	if rcv.Spec.Suspend {
		return fmt.Errorf("%s is suspended, so its webhook answers nothing: resume it with `windlass resume receiver %s`", k.describe(rcv), name)
	}
	if rcv.Status.WebhookPath == "" || !conditions.IsTrue(rcv, meta.ReadyCondition) {
		return fmt.Errorf("%s is not Ready, so it serves no webhook: %s", k.describe(rcv), orDash(conditions.Message(rcv, meta.ReadyCondition)))
	}
	token, err := receiverToken(ctx, c, rcv)
	if err != nil {
		return err
	}
	body, err := f.readPayload(in)
	if err != nil {
		return err
	}
	spec := webhook.Spec{Type: rcv.Spec.Type, Events: rcv.Spec.Events, Token: token}
	if f.event != "" {
		spec.Events = []string{f.event}
	}
	target, err := webhookURL(f.address, rcv.Status.WebhookPath)
	if err != nil {
		return err
	}
	req, err := webhook.NewRequest(ctx, target, spec, body)
	if err != nil {
		return err
	}
	return sendWebhook(w, req, k.describe(rcv), rcv.Spec.Type)
}

// receiverToken reads the token of a Receiver's Secret.
func receiverToken(ctx context.Context, c client.Client, rcv *notificationv1.Receiver) (string, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: rcv.Namespace, Name: rcv.Spec.SecretRef.Name}
	if err := c.Get(ctx, key, secret); err != nil {
		return "", fmt.Errorf("reading the Secret %s of Receiver %s/%s, which signs the request: %w", key, rcv.Namespace, rcv.Name, err)
	}
	token := string(secret.Data[notificationv1.TokenKey])
	if token == "" {
		return "", fmt.Errorf("the Secret %s of Receiver %s/%s has no %s key", key, rcv.Namespace, rcv.Name, notificationv1.TokenKey)
	}
	return token, nil
}

// readPayload returns the body of --payload (a file, or stdin for "-"),
// nil without it; a body larger than the webhook accepts is refused here.
func (f *triggerFlags) readPayload(in io.Reader) ([]byte, error) {
	if f.payload == "" {
		return nil, nil
	}
	if f.payload != "-" {
		file, err := os.Open(f.payload)
		if err != nil {
			return nil, fmt.Errorf("reading --payload: %w", err)
		}
		defer file.Close()
		in = file
	}
	body, err := io.ReadAll(io.LimitReader(in, webhook.MaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading --payload: %w", err)
	}
	if len(body) > webhook.MaxBodyBytes {
		return nil, fmt.Errorf("--payload is larger than a webhook accepts (%d bytes)", webhook.MaxBodyBytes)
	}
	return body, nil
}

// webhookURL joins the webhook address and a Receiver's path.
func webhookURL(address, path string) (string, error) {
	u, err := url.Parse(address)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--address %q must be an http or https URL, like http://localhost:9292", address)
	}
	return strings.TrimSuffix(u.String(), "/") + path, nil
}

// sendWebhook sends req, a request of the service receiverType to what,
// and reports the answer: an error unless it is a success.
func sendWebhook(w io.Writer, req *http.Request, what, receiverType string) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("sending the webhook of %s: %w", what, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the webhook of %s answered %s: %s", what, resp.Status, firstLine(strings.TrimSpace(string(answer))))
	}
	fmt.Fprintf(w, "✔ %s accepted the %s request (%s)\n", what, receiverType, resp.Status)
	return nil
}
