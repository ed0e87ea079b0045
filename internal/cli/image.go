package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/cli/term"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/imageupdate"
	"github.com/windlass-dev/windlass/internal/registry"
)

// imageRepositoryColumns are the columns of `get image repository`: the
// image, how many tags its last scan kept and when it ran.
var imageRepositoryColumns = &kindColumns{
	header: []string{"IMAGE", "TAGS", "LAST SCAN", "READY", "MESSAGE"},
	cells: func(o reconcilable) []string {
		r := o.(*imagev1.ImageRepository)
		tags, scanned := "-", "-"
		if s := r.Status.LastScanResult; s != nil {
			tags = strconv.Itoa(s.TagCount)
			if !s.ScanTime.IsZero() {
				scanned = stampOf(s.ScanTime.Time)
			}
		}
		row := rowOf(imagev1.ImageRepositoryKind, r, "", false, now())
		return []string{r.Spec.Image, tags, scanned, row.Ready, row.Message}
	},
}

// imagePolicyColumns are the columns of `get image policy`: the
// repository, the image elected, and the tag it is pinned to (`windlass
// image set`).
var imagePolicyColumns = &kindColumns{
	header: []string{"IMAGE REPOSITORY", "LATEST IMAGE", "PINNED", "READY", "MESSAGE"},
	cells: func(o reconcilable) []string {
		p := o.(*imagev1.ImagePolicy)
		repo := p.Spec.ImageRepositoryRef.Name
		if ns := p.Spec.ImageRepositoryRef.Namespace; ns != "" && ns != p.Namespace {
			repo = ns + "/" + repo
		}
		row := rowOf(imagev1.ImagePolicyKind, p, "", false, now())
		return []string{repo, orDash(imagePolicyRevision(p)), orDash(p.Annotations[imagev1.PinAnnotation]), row.Ready, row.Message}
	},
}

// imageUpdateColumns are the columns of `get image update`: the Git
// source, when the automation last ran and the last commit it pushed.
var imageUpdateColumns = &kindColumns{
	header: []string{"SOURCE", "LAST RUN", "LAST PUSH", "READY", "MESSAGE"},
	cells: func(o reconcilable) []string {
		a := o.(*imagev1.ImageUpdateAutomation)
		source := a.Spec.SourceRef.Kind + "/" + a.Spec.SourceRef.Name
		if ns := a.Spec.SourceRef.Namespace; ns != "" && ns != a.Namespace {
			source = a.Spec.SourceRef.Kind + "/" + ns + "/" + a.Spec.SourceRef.Name
		}
		row := rowOf(imagev1.ImageUpdateAutomationKind, a, "", false, now())
		return []string{source, stampOrDash(a.Status.LastAutomationRunTime), orDash(short(a.Status.LastPushCommit)), row.Ready, row.Message}
	},
}

// imageRepositoryRevision is the revision of an ImageRepository's last
// scan: a digest of its tags.
func imageRepositoryRevision(o reconcilable) string {
	if s := o.(*imagev1.ImageRepository).Status.LastScanResult; s != nil {
		return s.Revision
	}
	return ""
}

// imagePolicyRevision is the image an ImagePolicy elects, name:tag.
func imagePolicyRevision(o reconcilable) string {
	if ref := o.(*imagev1.ImagePolicy).Status.LatestRef; ref != nil {
		return ref.Name + ":" + ref.Tag
	}
	return ""
}

// imageFlags are the flags of `windlass image`.
type imageFlags struct {
	verbFlags
	// controllerNamespace and address say where the image reflector's
	// HTTP API is: through the API server's service proxy, or direct.
	controllerNamespace, address string
	policy, output               string
	limit                        int
	// clear removes the pin; noWait returns once the requests are made.
	clear, noWait bool
}

// The Service of the image reflector's HTTP API, as the reference names
// it, and its port.
const (
	imageReflectorService = "image-reflector-controller"
	imageReflectorPort    = "http"
)

func newImageCommand() *cobra.Command {
	f := &imageFlags{}
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Show the tags an ImageRepository scanned, and pin an ImagePolicy to a tag",
		Long: `Show the tags that the image reflector keeps for an ImageRepository (as an
ImagePolicy orders them, with --policy), or pin an ImagePolicy to one tag for a
while, so that the ImageUpdateAutomations that use it commit that tag.

Create the objects with ` + "`windlass create image`" + `, list them with ` + "`windlass get images all`" + `.`,
		Example: `  windlass image tags podinfo --policy podinfo --limit 5
  windlass image set podinfo 6.5.0
  windlass image set podinfo --clear`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return fmt.Errorf("unknown action %q for %q: choose one of set, tags (see %s --help)",
				args[0], cmd.CommandPath(), cmd.CommandPath())
		},
	}
	f.bindWaiting(cmd)
	cmd.AddCommand(f.tagsCommand(), f.setCommand())
	return cmd
}

func (f *imageFlags) tagsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tags REPOSITORY",
		Short: "List the tags the image reflector keeps for an ImageRepository",
		Long: `List the tags of the last scan of an ImageRepository, one a line, as the image
reflector serves them (GET /images/NAMESPACE/NAME/tags); with --policy, only
those the ImagePolicy's filter keeps, best first in its order.

The request goes through the API server's proxy to the Service
image-reflector-controller (port http) of --controller-namespace, or straight
to --address, such as http://127.0.0.1:9095 after
  kubectl -n flux-system port-forward svc/image-reflector-controller 9095:http

The image reflector answers those who may get the ImageRepository (and the
ImagePolicy): the command sends the bearer token of the kubeconfig's user,
which a kubeconfig with a client certificate does not have.`,
		Example: `  windlass image tags podinfo
  windlass image tags podinfo --policy podinfo --limit 3
  windlass image tags app -n apps --address http://127.0.0.1:9095 -o json`,
		Args:              nameArg,
		ValidArgsFunction: objectNames(kindNamed(imagev1.ImageRepositoryKind)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.tags(cmd, args[0])
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.policy, "policy", "", "order and filter the tags as this ImagePolicy does: NAME, or NAMESPACE/NAME")
	fs.IntVar(&f.limit, "limit", 0, fmt.Sprintf("list at most this many tags, up to %d (0: the image reflector's default, %d)", registry.MaxLimit, registry.DefaultLimit))
	fs.StringVar(&f.address, "address", "", "the image reflector's HTTP address, like http://127.0.0.1:9095 (default: through the API server)")
	fs.StringVar(&f.controllerNamespace, "controller-namespace", defaultNamespace, "the namespace of the image reflector's Service")
	fs.StringVarP(&f.output, "output", "o", "text", "output format: text (a tag a line) or json (the answer as it is)")
	return cmd
}

// maxTagsAnswer bounds what is read of an answer.
const maxTagsAnswer = 32 << 20

// tags prints the tags of the ImageRepository name.
func (f *imageFlags) tags(cmd *cobra.Command, name string) error {
	if f.output != "text" && f.output != "json" {
		return fmt.Errorf("invalid --output %q: choose text or json", f.output)
	}
	if f.limit < 0 || f.limit > registry.MaxLimit {
		return fmt.Errorf("--limit must be from 1 to %d, or 0 for the image reflector's default (got %d)", registry.MaxLimit, f.limit)
	}
	if f.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	target, httpClient, via, err := f.tagsEndpoint(name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	body, err := getTags(ctx, httpClient, target, via)
	if err != nil {
		return fmt.Errorf("listing the tags of ImageRepository %s/%s: %w", f.kube.namespace, name, err)
	}
	var answer registry.TagsResponse
	if err := json.Unmarshal(body, &answer); err != nil {
		return fmt.Errorf("listing the tags of ImageRepository %s/%s: the answer of %s is not the tags' JSON: %v", f.kube.namespace, name, via, err)
	}
	w := cmd.OutOrStdout()
	if f.output == "json" {
		_, err := fmt.Fprintln(w, strings.TrimSpace(string(body)))
		return err
	}
	for _, tag := range answer.Tags {
		fmt.Fprintln(w, tag)
	}
	if f.policy == "" && answer.Count > len(answer.Tags) {
		fmt.Fprintf(cmd.ErrOrStderr(), "%d of the %d tags of %s (see --limit)\n", len(answer.Tags), answer.Count, answer.Image)
	}
	return nil
}

// tagsEndpoint returns the URL of the tags of the ImageRepository name,
// the client to ask it with, and what it asks (for errors).
func (f *imageFlags) tagsEndpoint(name string) (string, *http.Client, string, error) {
	query := url.Values{}
	if f.policy != "" {
		ns, policy, found := strings.Cut(f.policy, "/")
		if !found {
			ns, policy = "", ns
		}
		if err := checkName("--policy", policy); err != nil {
			return "", nil, "", err
		}
		if found {
			if err := checkName("--policy namespace", ns); err != nil {
				return "", nil, "", err
			}
		}
		query.Set("policy", f.policy)
	}
	if f.limit > 0 {
		query.Set("limit", strconv.Itoa(f.limit))
	}
	tagsPath := path.Join("/images", f.kube.namespace, name, "tags")
	if f.address != "" {
		base, err := url.Parse(f.address)
		if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
			shown := strconv.Quote(f.address)
			if strings.Contains(f.address, "@") {
				shown = "(not shown: it may hold a password)"
			}
			return "", nil, "", fmt.Errorf("--address %s must be an http or https URL, like http://127.0.0.1:9095", shown)
		}
		base.Path, base.RawQuery = path.Join(base.Path, tagsPath), query.Encode()
		httpClient, err := f.directTagsClient()
		if err != nil {
			return "", nil, "", err
		}
		return base.String(), httpClient, "the image reflector at " + base.Host, nil
	}
	cfg, err := f.kube.restConfig()
	if err != nil {
		return "", nil, "", err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return bearerCopier{next: rt} })
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", nil, "", fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return "", nil, "", fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	base.Path = path.Join(base.Path, "/api/v1/namespaces", f.controllerNamespace, "services",
		imageReflectorService+":"+imageReflectorPort, "proxy", tagsPath)
	base.RawQuery = query.Encode()
	via := fmt.Sprintf("the Service %s/%s (through the API server)", f.controllerNamespace, imageReflectorService)
	return base.String(), httpClient, via, nil
}

// getTags asks target for the tags, and returns the answer's body, or the
// error it reports.
func getTags(ctx context.Context, httpClient *http.Client, target, via string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking %s: %w", via, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTagsAnswer))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", via, err)
	}
	if resp.StatusCode == http.StatusOK {
		return body, nil
	}
	// The image reflector answers {"error": ...}; the API server, when it
	// cannot reach it, a Status with a message.
	var failure struct {
		Error, Kind, Message string
	}
	_ = json.Unmarshal(body, &failure)
	switch {
	case failure.Error != "" && resp.StatusCode == http.StatusUnauthorized:
		return nil, fmt.Errorf("%s answered %s: %s (a kubeconfig whose user has no token, such as one with a client certificate, sends none)",
			via, resp.Status, firstLine(failure.Error))
	case failure.Error != "":
		return nil, fmt.Errorf("%s answered %s: %s", via, resp.Status, firstLine(failure.Error))
	case failure.Kind == "Status":
		return nil, fmt.Errorf("%s answered %s: %s (is the image reflector running there? see --controller-namespace and --address)",
			via, resp.Status, firstLine(failure.Message))
	}
	return nil, fmt.Errorf("%s answered %s: %s", via, resp.Status, firstLine(strings.TrimSpace(string(body))))
}

func (f *imageFlags) setCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set POLICY TAG|--clear",
		Short: "Pin an ImagePolicy to one tag, so that its automations commit it",
		Long: `Pin an ImagePolicy to one tag of its repository (the annotation
` + imagev1.PinAnnotation + `): the policy elects that tag, whatever its rule says,
until the pin is removed with --clear. The policy and the
ImageUpdateAutomations of its namespace that select it (spec.policySelector)
are asked to reconcile; the command prints those automations, and waits until
the policy elects the tag (or, with --clear, its own choice again), unless
--no-wait.`,
		Example: `  windlass image set podinfo 6.5.0
  windlass image set podinfo 6.4.1 -n apps --no-wait
  windlass image set podinfo --clear`,
		Args:              rangeArgs(1, 2),
		ValidArgsFunction: objectNames(kindNamed(imagev1.ImagePolicyKind)),
		RunE: func(cmd *cobra.Command, args []string) error {
			tag, err := f.pinnedTag(args)
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, c client.Client, w io.Writer) error {
				return f.set(ctx, c, w, args[0], tag)
			})
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.clear, "clear", false, "remove the pin: the policy elects by its rule again")
	fs.BoolVar(&f.noWait, "no-wait", false, "return once the pin is set and the reconciliations requested")
	return cmd
}

// pinnedTag returns the TAG argument, "" with --clear.
func (f *imageFlags) pinnedTag(args []string) (string, error) {
	if f.clear {
		if len(args) != 1 {
			return "", errors.New("--clear removes the pin: pass the POLICY alone")
		}
		return "", nil
	}
	if len(args) != 2 {
		return "", errors.New("pass the POLICY and the TAG to pin it to, or --clear to remove the pin")
	}
	if !imageupdate.IsTag(args[1]) {
		return "", fmt.Errorf("TAG %q is not an image tag: letters, digits, _, . and -, not starting with . or -, at most 128", args[1])
	}
	return args[1], nil
}

// set pins the ImagePolicy name to tag ("" removes the pin), asks it and
// the automations that select it to reconcile, and waits for the policy.
func (f *imageFlags) set(ctx context.Context, c client.Client, w io.Writer, name, tag string) error {
	k := kindNamed(imagev1.ImagePolicyKind)
	obj, err := f.get(ctx, c, k, name)
	if err != nil {
		return err
	}
	policy := obj.(*imagev1.ImagePolicy)
	desc := k.describe(policy)
	if policy.Spec.Suspend {
		return fmt.Errorf("%s is suspended, so it elects nothing: resume it with `windlass resume image policy %s -n %s`", desc, name, policy.Namespace)
	}
	token := now().UTC().Format(time.RFC3339Nano)
	var pin any = tag
	if tag == "" {
		pin = nil // removes the annotation
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		imagev1.PinAnnotation: pin, meta.ReconcileRequestAnnotation: token}}})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, policy, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("pinning %s: %w", desc, err)
	}
	if tag == "" {
		fmt.Fprintf(w, "✚ %s unpinned: it elects by its rule again\n", desc)
	} else {
		fmt.Fprintf(w, "✚ %s pinned to tag %s\n", desc, tag)
	}
	automations, err := automationsOf(ctx, c, w, policy)
	if err != nil {
		return err
	}
	if !f.noWait {
		if err := f.waitPinned(ctx, c, w, policy, tag, token); err != nil {
			return err
		}
	}
	return requestAutomations(ctx, c, w, automations, token)
}

// waitPinned waits until the policy has handled the request token: it
// elects tag, or, for "", no longer reports a pin.
func (f *imageFlags) waitPinned(ctx context.Context, c client.Client, w io.Writer, policy *imagev1.ImagePolicy, tag, token string) error {
	desc := kindNamed(imagev1.ImagePolicyKind).describe(policy)
	if !term.IsTerminal(w) {
		fmt.Fprintf(w, "◎ waiting for %s to be reconciled\n", desc)
	}
	latest := &imagev1.ImagePolicy{}
	progress := newProgress(w, desc)
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(policy), latest); err != nil {
			return false, nil //nolint:nilerr // a transient error is polled again
		}
		handled := latest.Status.LastHandledReconcileAt == token
		progress.observe(latest, latest.Generation, handled)
		return handled && readyDecided(latest) &&
			(tag != "" || !conditions.IsTrue(latest, meta.ReadyCondition) || !mentionsPin(conditions.Message(latest, meta.ReadyCondition))), nil
	})
	progress.stop()
	if err != nil {
		return fmt.Errorf("%s was not reconciled within %s (ready: %s): the automations were not asked to reconcile",
			desc, f.timeout, conditions.Message(latest, meta.ReadyCondition))
	}
	ready := conditions.Get(latest, meta.ReadyCondition)
	if ready.Status != metav1.ConditionTrue {
		return fmt.Errorf("%s is not Ready: %s", desc, firstLine(ready.Message))
	}
	if tag != "" && (latest.Status.LatestRef == nil || latest.Status.LatestRef.Tag != tag) {
		return fmt.Errorf("%s elects %s, not the tag %s it is pinned to: %s", desc, orDash(imagePolicyRevision(latest)), tag, firstLine(ready.Message))
	}
	fmt.Fprintf(w, "✔ %s elects %s: %s\n", desc, imagePolicyRevision(latest), firstLine(ready.Message))
	return nil
}

// mentionsPin reports whether a policy's message speaks of a pin.
func mentionsPin(message string) bool {
	return strings.Contains(strings.ToLower(message), "pinned") || strings.Contains(message, imagev1.PinAnnotation)
}

// automationsOf returns the ImageUpdateAutomations of the policy's
// namespace that apply it: those whose spec.policySelector selects it (no
// selector selects every policy). It prints them, and says of the
// suspended ones that they commit nothing.
func automationsOf(ctx context.Context, c client.Client, w io.Writer, policy *imagev1.ImagePolicy) ([]*imagev1.ImageUpdateAutomation, error) {
	k := kindNamed(imagev1.ImageUpdateAutomationKind)
	var list imagev1.ImageUpdateAutomationList
	if err := c.List(ctx, &list, client.InNamespace(policy.Namespace)); err != nil {
		return nil, listError(pluralKind(k.kind), err)
	}
	var out []*imagev1.ImageUpdateAutomation
	for i := range list.Items {
		a := &list.Items[i]
		selector := labels.Everything()
		if a.Spec.PolicySelector != nil {
			var err error
			if selector, err = metav1.LabelSelectorAsSelector(a.Spec.PolicySelector); err != nil {
				fmt.Fprintf(w, "⚠ %s has an invalid spec.policySelector, so it commits nothing: %v\n", k.describe(a), err)
				continue
			}
		}
		switch {
		case !selector.Matches(labels.Set(policy.Labels)):
		case a.Spec.Suspend:
			fmt.Fprintf(w, "⚠ %s selects it but is suspended: it commits nothing until resumed\n", k.describe(a))
		default:
			fmt.Fprintf(w, "► %s will commit it\n", k.describe(a))
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		fmt.Fprintf(w, "⚠ no ImageUpdateAutomation of namespace %s commits what %s elects\n", policy.Namespace, policy.Name)
	}
	return out, nil
}

// requestAutomations asks each automation to reconcile, with token.
func requestAutomations(ctx context.Context, c client.Client, w io.Writer, automations []*imagev1.ImageUpdateAutomation, token string) error {
	k := kindNamed(imagev1.ImageUpdateAutomationKind)
	patch := client.RawPatch(types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)))
	for _, a := range automations {
		if err := c.Patch(ctx, a, patch); err != nil {
			return fmt.Errorf("requesting the reconciliation of %s: %w", k.describe(a), err)
		}
		fmt.Fprintf(w, "✔ %s asked to reconcile\n", k.describe(a))
	}
	return nil
}
