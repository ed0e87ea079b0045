package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/cli/term"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile/dependency"
)

// verbFlags are the flags of reconcile, suspend and resume.
type verbFlags struct {
	kube    kubeFlags
	timeout time.Duration
	all     bool
	// withSource reconciles a Kustomization's source, or a HelmRelease's
	// chart and its source, first.
	withSource bool
	// force and reset ask the helm controller to install or upgrade a
	// HelmRelease even when nothing changed, and to reset its failure
	// counts.
	force, reset bool
}

// pollInterval is how often a verb that waits looks at its object.
const pollInterval = 500 * time.Millisecond

func newReconcileCommand() *cobra.Command {
	f := &verbFlags{}
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "Reconcile an object now, and wait for the outcome",
		Long: `Ask the controller to reconcile an object now (the reconcile.fluxcd.io/requestedAt
annotation), wait until it has, and print the outcome; the exit code is not
zero when the object is not Ready.`,
		Example: `  windlass reconcile source git app
  windlass reconcile kustomization app --with-source
  windlass reconcile helmrelease redis -n apps --force`,
	}
	f.bindWaiting(cmd)
	addKindCommands(cmd, func(k objectKind) *cobra.Command {
		if k.static || k.produced {
			return nil // nothing reconciles it: it is read when it is used
		}
		leaf := &cobra.Command{
			Use:     k.use("NAME"),
			Short:   "Reconcile a " + k.kind + " now",
			Example: kindExamples("reconcile", k, "app", "app -n apps --timeout 1m"),
			Args:    nameArg,
			RunE: func(cmd *cobra.Command, args []string) error {
				return f.run(cmd, func(ctx context.Context, c client.Client, w io.Writer) error {
					return f.reconcile(ctx, c, w, k, args[0])
				})
			},
		}
		switch k.kind {
		case kustomizev1.KustomizationKind:
			leaf.Flags().BoolVar(&f.withSource, "with-source", false, "reconcile the Kustomization's source first")
		case helmv2.HelmReleaseKind:
			leaf.Flags().BoolVar(&f.withSource, "with-source", false, "reconcile the HelmRelease's chart (and the chart's source) first")
			leaf.Flags().BoolVar(&f.force, "force", false, "install or upgrade the release even when nothing changed ("+meta.ForceRequestAnnotation+")")
			leaf.Flags().BoolVar(&f.reset, "reset", false, "reset the release's failure counts, so that its retries start over ("+meta.ResetRequestAnnotation+")")
		}
		return leaf
	})
	return cmd
}

func newSuspendCommand() *cobra.Command {
	return newSuspensionCommand("suspend", "Suspend the reconciliation of objects", true)
}

func newResumeCommand() *cobra.Command {
	return newSuspensionCommand("resume", "Resume the reconciliation of objects, and wait until they are Ready", false)
}

// newSuspensionCommand returns suspend (suspend true) or resume.
func newSuspensionCommand(use, short string, suspend bool) *cobra.Command {
	f := &verbFlags{}
	cmd := &cobra.Command{Use: use, Short: short, Example: fmt.Sprintf(`  windlass %[1]s kustomization app
  windlass %[1]s source git app -n apps
  windlass %[1]s kustomization --all`, use)}
	f.bindWaiting(cmd)
	cmd.PersistentFlags().BoolVar(&f.all, "all", false, "every object of the kind in the namespace")
	addKindCommands(cmd, func(k objectKind) *cobra.Command {
		if k.produced {
			return nil // its producer writes it: suspend the producer
		}
		return &cobra.Command{
			Use:     k.use("[NAME]"),
			Short:   short + ": " + k.kind,
			Example: kindExamples(use, k, "app", "--all -n apps"),
			Args:    optionalNameArg,
			RunE: func(cmd *cobra.Command, args []string) error {
				if (len(args) == 1) == f.all {
					return errors.New("name one object, or pass --all")
				}
				return f.run(cmd, func(ctx context.Context, c client.Client, w io.Writer) error {
					return f.setSuspended(ctx, c, w, k, args, suspend)
				})
			},
		}
	})
	return cmd
}

// bindWaiting adds the cluster flags and --timeout to cmd.
func (f *verbFlags) bindWaiting(cmd *cobra.Command) {
	f.kube.bind(cmd)
	cmd.PersistentFlags().DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long to wait for the outcome")
}

// run connects to the cluster and runs do within the timeout.
func (f *verbFlags) run(cmd *cobra.Command, do func(context.Context, client.Client, io.Writer) error) error {
	if f.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	c, err := f.kube.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	return do(ctx, c, cmd.OutOrStdout())
}

// addKindCommands adds under verb one command per kind, made by leaf,
// nested by the kind's words ("source git"); leaf returns nil for a kind
// the verb does not apply to.
func addKindCommands(verb *cobra.Command, leaf func(objectKind) *cobra.Command) {
	for _, k := range objectKinds {
		l := leaf(k)
		if l == nil {
			continue
		}
		parent := verb
		for _, word := range k.words[:len(k.words)-1] {
			parent = childCommand(parent, word)
		}
		l.Aliases = k.aliases
		parent.AddCommand(l)
	}
}

// childCommand returns the subcommand of parent called name, adding a
// group command when there is none.
func childCommand(parent *cobra.Command, name string) *cobra.Command {
	for _, c := range parent.Commands() {
		if c.Name() == name {
			return c
		}
	}
	c := &cobra.Command{Use: name, Short: groupShort(parent, name)}
	parent.AddCommand(c)
	return c
}

// reconcile requests the reconciliation of the object name of kind k and
// waits for its outcome.
func (f *verbFlags) reconcile(ctx context.Context, c client.Client, w io.Writer, k objectKind, name string) error {
	obj, err := f.get(ctx, c, k, name)
	if err != nil {
		return err
	}
	if obj.IsSuspended() {
		return fmt.Errorf("%s is suspended: resume it with `windlass resume %s %s`", k.describe(obj), strings.Join(k.words, " "), name)
	}
	if ks, ok := obj.(*kustomizev1.Kustomization); ok && f.withSource {
		if err := f.reconcileSourceOf(ctx, c, w, ks); err != nil {
			return err
		}
	}
	var also []string
	if hr, ok := obj.(*helmv2.HelmRelease); ok {
		if f.withSource {
			if err := f.reconcileChartOf(ctx, c, w, hr); err != nil {
				return err
			}
		}
		also = f.releaseRequests()
	}
	return f.requestAndWait(ctx, c, w, k, obj, also...)
}

// releaseRequests returns the annotations that --force and --reset set on
// a HelmRelease, besides the reconcile request.
func (f *verbFlags) releaseRequests() []string {
	var out []string
	if f.force {
		out = append(out, meta.ForceRequestAnnotation)
	}
	if f.reset {
		out = append(out, meta.ResetRequestAnnotation)
	}
	return out
}

// reconcileChartOf reconciles the chart of hr first: the source of its
// HelmChart, then the HelmChart; or the OCIRepository of its chartRef.
func (f *verbFlags) reconcileChartOf(ctx context.Context, c client.Client, w io.Writer, hr *helmv2.HelmRelease) error {
	ref, err := releaseChartSource(hr)
	if err != nil {
		return err
	}
	chain := []kindRef{ref}
	if ref.kind == sourcev1.HelmChartKind {
		hc := &sourcev1.HelmChart{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ref.namespace, Name: ref.name}, hc); err != nil {
			return fmt.Errorf("reading the chart %s of HelmRelease %s/%s: %w", ref, hr.Namespace, hr.Name, err)
		}
		chain = []kindRef{chartSourceOf(hc), ref}
	}
	for _, r := range chain {
		k, ok := kindOfRef(r)
		if !ok {
			return fmt.Errorf("the chart source kind %q of HelmRelease %s/%s is not one this version knows", r.kind, hr.Namespace, hr.Name)
		}
		source := k.new()
		if err := c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.name}, source); err != nil {
			return fmt.Errorf("reading %s, the chart source of HelmRelease %s/%s: %w", r, hr.Namespace, hr.Name, err)
		}
		if source.IsSuspended() {
			return fmt.Errorf("%s is suspended: resume it with `windlass resume %s %s -n %s`, or leave --with-source out",
				r, strings.Join(k.words, " "), r.name, r.namespace)
		}
		if err := f.requestAndWait(ctx, c, w, k, source); err != nil {
			return err
		}
	}
	return nil
}

// reconcileSourceOf reconciles the source of ks first.
func (f *verbFlags) reconcileSourceOf(ctx context.Context, c client.Client, w io.Writer, ks *kustomizev1.Kustomization) error {
	ref := ks.Spec.SourceRef
	for _, k := range objectKinds {
		if k.kind != ref.Kind {
			continue
		}
		ns := ref.Namespace
		if ns == "" {
			ns = ks.Namespace
		}
		source := k.new()
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, source); err != nil {
			return fmt.Errorf("reading the source %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
		}
		return f.requestAndWait(ctx, c, w, k, source)
	}
	return fmt.Errorf("the source kind %q of %s is not one this version knows", ref.Kind, ks.Name)
}

// requestAndWait sets a new reconcile request on obj, and the annotations
// also with the same token, waits until the controller handled it, and
// reports the outcome.
func (f *verbFlags) requestAndWait(ctx context.Context, c client.Client, w io.Writer, k objectKind, obj reconcilable, also ...string) error {
	token := now().UTC().Format(time.RFC3339Nano)
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	for _, a := range append([]string{meta.ReconcileRequestAnnotation}, also...) {
		annotations[a] = token
	}
	obj.SetAnnotations(annotations)
	if err := c.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("requesting the reconciliation of %s: %w", k.describe(obj), err)
	}
	if !term.IsTerminal(w) {
		fmt.Fprintf(w, "◎ waiting for %s to be reconciled\n", k.describe(obj))
	}
	return f.waitOutcome(ctx, c, w, k, obj, func(o reconcilable) bool { return k.lastHandled(o) == token })
}

// waitOutcome waits until handled holds for obj and its Ready condition is
// decided for its generation, then reports it: an error when it is not
// Ready. While the object waits for something else (a source, a
// dependency, a gate) the wait goes on until the timeout, saying what it
// waits for.
func (f *verbFlags) waitOutcome(ctx context.Context, c client.Client, w io.Writer, k objectKind, obj reconcilable,
	handled func(reconcilable) bool) error {
	key := client.ObjectKeyFromObject(obj)
	latest := k.new()
	progress := newProgress(w, k.describe(obj))
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, latest); err != nil {
			return false, nil //nolint:nilerr // a transient error is polled again
		}
		done := handled(latest)
		progress.observe(latest, latest.GetGeneration(), done)
		return done && readyDecided(latest), nil
	})
	progress.stop()
	if err != nil {
		if waiting := waitingFor(latest, latest.GetGeneration()); waiting != "" && handled(latest) {
			return fmt.Errorf("%s was not reconciled within %s: it still waits: %s", k.describe(obj), f.timeout, waiting)
		}
		return fmt.Errorf("%s was not reconciled within %s (ready: %s)", k.describe(obj), f.timeout, conditions.Message(latest, meta.ReadyCondition))
	}
	ready := conditions.Get(latest, meta.ReadyCondition)
	if ready.Status != metav1.ConditionTrue {
		return fmt.Errorf("%s is not Ready: %s", k.describe(obj), ready.Message)
	}
	fmt.Fprintf(w, "✔ %s reconciled: %s\n", k.describe(obj), firstLine(ready.Message))
	return nil
}

// setSuspended sets spec.suspend (or the kind's suspend annotation) of the
// objects named (or all of the
// namespace); resuming also requests a reconciliation and waits for it.
func (f *verbFlags) setSuspended(ctx context.Context, c client.Client, w io.Writer, k objectKind, names []string, suspend bool) error {
	objs, err := f.selected(ctx, c, k, names)
	if err != nil {
		return err
	}
	if !suspend && k.dependsOn != nil {
		// A dependency resumed later would hold back, and fail, the wait
		// for what depends on it.
		objs = dependency.Order(objs, k.dependsOn)
	}
	for _, obj := range objs {
		patch := client.RawPatch("application/merge-patch+json", k.suspendPatch(suspend))
		if err := c.Patch(ctx, obj, patch); err != nil {
			return fmt.Errorf("updating %s: %w", k.describe(obj), err)
		}
		if suspend {
			fmt.Fprintf(w, "✔ %s suspended\n", k.describe(obj))
			continue
		}
		if k.static {
			fmt.Fprintf(w, "✔ %s resumed\n", k.describe(obj))
			continue
		}
		if err := f.requestAndWait(ctx, c, w, k, obj); err != nil {
			return err
		}
	}
	return nil
}

// selected returns the object named, or every object of kind k in the
// namespace.
func (f *verbFlags) selected(ctx context.Context, c client.Client, k objectKind, names []string) ([]reconcilable, error) {
	if len(names) == 1 {
		obj, err := f.get(ctx, c, k, names[0])
		if err != nil {
			return nil, err
		}
		return []reconcilable{obj}, nil
	}
	list, all := k.newList()
	if err := c.List(ctx, list, client.InNamespace(f.kube.namespace)); err != nil {
		return nil, listError(pluralKind(k.kind), err)
	}
	return all(), nil
}

// get reads the object name of kind k in the namespace of the flags.
func (f *verbFlags) get(ctx context.Context, c client.Client, k objectKind, name string) (reconcilable, error) {
	obj := k.new()
	if err := c.Get(ctx, client.ObjectKey{Namespace: f.kube.namespace, Name: name}, obj); err != nil {
		return nil, notFound(k.kind, f.kube.namespace, name, err)
	}
	return obj, nil
}
