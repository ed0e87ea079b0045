package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/cli/term"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile/gate"
)

// gateFlags are the flags of `windlass gate`.
type gateFlags struct {
	verbFlags
	// at is --at: when the request takes effect (RFC 3339; now without it).
	at string
	// window is --for: the gate's window, set with the request.
	window time.Duration
	// reason is --reason: why the request is made.
	reason string
}

func newGateCommand() *cobra.Command {
	f := &gateFlags{}
	cmd := &cobra.Command{
		Use:   "gate",
		Short: "Open and close Gates, and show what they hold back",
		Long: `Open or close a Gate (gating.toolkit.fluxcd.io) now or at a planned time, and
wait until the gating controller has taken the request; or show a gate's
state, its next transition and the sources and Kustomizations that wait
behind it (spec.gates).

Create a gate with ` + "`windlass create gate`" + `, list gates with ` + "`windlass get gates`" + `.`,
		Example: `  windlass gate open sre-approval --for 2h
  windlass gate close prod-freeze --at 2026-12-24T00:00:00Z
  windlass gate status sre-approval`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return fmt.Errorf("unknown action %q for %q: choose one of close, open, status (see %s --help)",
				args[0], cmd.CommandPath(), cmd.CommandPath())
		},
	}
	f.bindWaiting(cmd)
	cmd.AddCommand(f.requestCommand(true), f.requestCommand(false), f.statusCommand())
	return cmd
}

// requestCommand returns `gate open` (open true) or `gate close`.
func (f *gateFlags) requestCommand(open bool) *cobra.Command {
	action, annotation, state := "close", gatingv1alpha1.CloseRequestAnnotation, "closed"
	if open {
		action, annotation, state = "open", gatingv1alpha1.OpenRequestAnnotation, "opened"
	}
	title := strings.ToUpper(action[:1]) + action[1:]
	cmd := &cobra.Command{
		Use:   action + " NAME",
		Short: title + " a Gate, now or at a planned time, for its window",
		Long: fmt.Sprintf(`%s a Gate: annotate it with %s=TIME
(now, or --at), wait until the gating controller has taken the request, and
print the gate's state. A request lasts the gate's window (spec.window) from its time; then
the gate returns to its default, unless a schedule says otherwise. A request
in the future (--at) is planned: it takes effect at that time.

A gate has one window, shared by all its requests: --for sets it
(spec.window) with the request, so it also applies to the requests after
it. When an open and a close request are both present, the later wins.`, title, annotation),
		Example: fmt.Sprintf(`  windlass gate %[1]s sre-approval
  windlass gate %[1]s sre-approval --for 2h -n apps
  windlass gate %[1]s sre-approval --at 2026-03-27T08:00:00Z`, action),
		Args:              nameArg,
		ValidArgsFunction: objectNames(gateKind()),
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := f.newRequest(cmd, open)
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, c client.Client, w io.Writer) error {
				return f.request(ctx, c, w, args[0], req)
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.at, "at", "", "when the request takes effect, an RFC 3339 time such as 2026-03-27T08:00:00Z (default now)")
	fs.DurationVar(&f.window, "for", 0, "how long the gate stays "+state+": sets the gate's window (spec.window), which every request of the gate lasts")
	fs.StringVar(&f.reason, "reason", "", "why: shown in the gate's state and in the event of the transition it causes")
	return cmd
}

// newRequest reads --at and --for.
func (f *gateFlags) newRequest(cmd *cobra.Command, open bool) (gate.Request, error) {
	current := time.Now().UTC()
	req := gate.NewRequest(open, current)
	req.Reason = f.reason
	if f.at != "" {
		at, err := time.Parse(time.RFC3339, strings.TrimSpace(f.at))
		if err != nil {
			return req, fmt.Errorf("invalid --at %q: write an RFC 3339 time such as 2026-03-27T08:00:00Z", f.at)
		}
		req.At = at.UTC().Truncate(time.Second)
		req.Planned = req.At.After(current)
	}
	if cmd.Flags().Changed("for") {
		d, err := positiveDuration("--for", f.window)
		if err != nil {
			return req, err
		}
		req.Window = d.Duration
	}
	return req, nil
}

// request makes req on the gate name and waits until the controller has
// taken it.
func (f *gateFlags) request(ctx context.Context, c client.Client, w io.Writer, name string, req gate.Request) error {
	k := gateKind()
	obj, err := f.get(ctx, c, k, name)
	if err != nil {
		return err
	}
	g := obj.(*gatingv1alpha1.Gate)
	desc := k.describe(g)
	if g.Spec.Suspend {
		return fmt.Errorf("%s is suspended, so it takes no request: resume it with `windlass resume gate %s -n %s`", desc, name, g.Namespace)
	}
	if err := checkRequest(req, g, time.Now()); err != nil {
		return fmt.Errorf("%s: %w", desc, err)
	}
	patch, err := req.Patch()
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, g, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("requesting that %s %s: %w", desc, req.Action(), err)
	}
	planned := ""
	if req.Planned {
		planned = " (planned)"
	}
	fmt.Fprintf(w, "✚ %s: %s requested at %s%s, for %s\n", desc, req.Action(), stampOf(req.At), planned, shortDuration(g.GetWindow()))
	if !term.IsTerminal(w) {
		fmt.Fprintf(w, "◎ waiting for %s to take the request\n", desc)
	}
	generation := g.Generation
	return f.waitGate(ctx, c, w, g, func(latest *gatingv1alpha1.Gate) bool {
		return latest.Status.ObservedGeneration >= generation && req.TakenBy(latest)
	}, fmt.Sprintf("did not take the %s request of %s", req.Action(), stampOf(req.At)))
}

// checkRequest refuses a request that could not be in force: one whose window
// has lapsed already, or one that a later request overrides. It decides
// the gate as the controller will, with the request made.
func checkRequest(r gate.Request, g *gatingv1alpha1.Gate, current time.Time) error {
	want := g.DeepCopy()
	r.ApplyTo(want)
	d, _, err := gate.Evaluate(want, current)
	var specErr *gate.SpecError
	if errors.As(err, &specErr) {
		return fmt.Errorf("its spec is invalid, so it stays closed: %w; fix the spec first", specErr)
	}
	if r.Planned || (d.RequestedAt != nil && d.RequestedAt.Equal(r.At)) {
		return nil
	}
	window := want.GetWindow()
	if !r.At.Add(window).After(current) {
		return fmt.Errorf("--at %s is more than the gate's window (%s) ago, so the request would have lapsed already: pass a later --at or a longer --for",
			stampOf(r.At), shortDuration(window))
	}
	other := gatingv1alpha1.OpenRequestAnnotation
	if r.Open {
		other = gatingv1alpha1.CloseRequestAnnotation
	}
	return fmt.Errorf("its request %s=%s wins over this one (the later request wins): pass a later --at",
		other, want.Annotations[other])
}

// waitGate waits until done holds for the gate g, then prints its Opened
// message; failing is what the timeout error says g did not do.
func (f *verbFlags) waitGate(ctx context.Context, c client.Client, w io.Writer, g *gatingv1alpha1.Gate,
	done func(*gatingv1alpha1.Gate) bool, failing string) error {
	desc := gateKind().describe(g)
	key := client.ObjectKeyFromObject(g)
	latest := &gatingv1alpha1.Gate{}
	progress := newProgress(w, desc)
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, latest); err != nil {
			return false, nil //nolint:nilerr // a transient error is polled again
		}
		progress.observe(latest, latest.Generation, false)
		return done(latest), nil
	})
	progress.stop()
	if err != nil {
		return fmt.Errorf("%s %s within %s: is the gating controller running? (windlass controller runs it)", desc, failing, f.timeout)
	}
	if ready := conditions.Get(latest, meta.ReadyCondition); ready != nil && ready.Status == metav1.ConditionFalse &&
		ready.ObservedGeneration == latest.Generation {
		return fmt.Errorf("%s is not Ready: %s", desc, firstLine(ready.Message))
	}
	fmt.Fprintf(w, "✔ %s: %s\n", desc, firstLine(conditions.Message(latest, gatingv1alpha1.OpenedCondition)))
	return nil
}

// waitGateEvaluated waits until the gating controller has decided the
// gate g for its generation, after `create gate`.
func (f *verbFlags) waitGateEvaluated(ctx context.Context, c client.Client, w io.Writer, g *gatingv1alpha1.Gate) error {
	return f.waitGate(ctx, c, w, g, func(latest *gatingv1alpha1.Gate) bool {
		return latest.Status.ObservedGeneration == latest.Generation && conditions.Has(latest, gatingv1alpha1.OpenedCondition)
	}, "was not evaluated")
}

func (f *gateFlags) statusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status NAME",
		Short: "Show a Gate's state, its next transition and the objects that wait behind it",
		Long: `Show a Gate's state and why, the request in force and when it lapses, when
the state next changes by itself, the gate's spec, and every GitRepository
and Kustomization, in any namespace, that names the gate in spec.gates, with
its Approved (Kustomization) or Blocked (source) condition.`,
		Example:           `  windlass gate status sre-approval -n flux-system`,
		Args:              nameArg,
		ValidArgsFunction: objectNames(gateKind()),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, c client.Client, w io.Writer) error {
				return f.status(ctx, c, w, args[0])
			})
		},
	}
}

// status prints the report of the gate name.
func (f *gateFlags) status(ctx context.Context, c client.Client, w io.Writer, name string) error {
	key := types.NamespacedName{Namespace: f.kube.namespace, Name: name}
	consumers, err := gateConsumers(ctx, c, key)
	if err != nil {
		return err
	}
	var g gatingv1alpha1.Gate
	if err := c.Get(ctx, key, &g); err != nil {
		if apierrors.IsNotFound(err) {
			naming := "no object names it"
			switch n := len(consumers); {
			case n == 1:
				naming = "1 object names it"
			case n > 1:
				naming = fmt.Sprintf("%d objects name it", n)
			}
			return fmt.Errorf("%s %s does not exist, and a missing gate counts as closed: %s", gatingv1alpha1.GateKind, key, naming)
		}
		return fmt.Errorf("reading %s %s: %w", gatingv1alpha1.GateKind, key, err)
	}
	return printGateStatus(w, &g, consumers)
}

// gateConsumers returns the objects, of every namespace, whose spec.gates
// name the gate key, by kind, namespace and name.
func gateConsumers(ctx context.Context, c client.Client, key types.NamespacedName) ([]listed, error) {
	var out []listed
	for _, k := range objectKinds {
		if _, ok := k.new().(gate.Consumer); !ok {
			continue
		}
		list, all := k.newList()
		if err := c.List(ctx, list); err != nil {
			return nil, listError(pluralKind(k.kind), err)
		}
		var found []listed
		for _, o := range all() {
			consumer := o.(gate.Consumer)
			for _, ref := range consumer.GetGates() {
				if gate.Key(consumer, ref) == key {
					found = append(found, listed{kind: k, obj: o})
					break
				}
			}
		}
		sort.SliceStable(found, func(i, j int) bool {
			a, b := found[i].obj, found[j].obj
			return a.GetNamespace() < b.GetNamespace() || a.GetNamespace() == b.GetNamespace() && a.GetName() < b.GetName()
		})
		out = append(out, found...)
	}
	return out, nil
}

// printGateStatus writes the report of g and its consumers.
func printGateStatus(w io.Writer, g *gatingv1alpha1.Gate, consumers []listed) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	field := func(label, value string) { fmt.Fprintf(tw, "%s:\t%s\n", label, value) }
	field("Gate", g.Namespace+"/"+g.Name)
	state, message := "not evaluated yet: is the gating controller running?", "-"
	if g.Spec.Suspend {
		state = "not evaluated: the gate is suspended"
	}
	if opened := conditions.Get(g, gatingv1alpha1.OpenedCondition); opened != nil {
		state, message = "closed", firstLine(opened.Message)
		if opened.Status == metav1.ConditionTrue {
			state = "opened"
		}
		if g.Spec.Suspend {
			state += " (suspended: it keeps this state until resumed)"
		}
	}
	field("State", state)
	field("Message", message)
	field("Requested at", stampOrDash(g.Status.RequestedAt))
	field("Reset to default", stampOrDash(g.Status.ResetToDefaultAt))
	field("Next transition", stampOrDash(g.Status.NextTransition))
	field("Default", string(g.Spec.Default))
	field("Window", shortDuration(g.GetWindow()))
	if len(g.Spec.Schedules) == 0 {
		field("Schedules", "none")
	}
	for i, s := range g.Spec.Schedules {
		label := ""
		if i == 0 {
			label = "Schedules:"
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, formatSchedule(s))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return printGateConsumers(w, consumers)
}

// printGateConsumers writes the table of the consumers of a gate.
func printGateConsumers(w io.Writer, consumers []listed) error {
	held := 0
	for _, l := range consumers {
		if heldBack(l.obj) {
			held++
		}
	}
	if len(consumers) == 0 {
		_, err := fmt.Fprintln(w, "\nNo object names this gate in spec.gates.")
		return err
	}
	fmt.Fprintf(w, "\nConsumers: %d, %d held back\n", len(consumers), held)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAMESPACE\tNAME\tCONDITION\tMESSAGE")
	for _, l := range consumers {
		condition, message := "-", "not evaluated yet"
		for _, t := range []string{meta.ApprovedCondition, meta.BlockedCondition} {
			if cond := conditions.Get(l.obj, t); cond != nil {
				condition, message = t+"="+string(cond.Status), firstLine(cond.Message)
				break
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.kind.kind, l.obj.GetNamespace(), l.obj.GetName(), condition, message)
	}
	return tw.Flush()
}

// heldBack reports whether a gate holds obj back: an applier not Approved,
// or a source Blocked.
func heldBack(obj reconcilable) bool {
	return conditions.IsFalse(obj, meta.ApprovedCondition) || conditions.IsTrue(obj, meta.BlockedCondition)
}

// gateKind returns the Gate entry of objectKinds.
func gateKind() objectKind { return kindNamed(gatingv1alpha1.GateKind) }

// gateColumns are the columns of `get gates`: whether the gate is open and
// why, and when that next changes.
var gateColumns = &kindColumns{
	header: []string{"OPENED", "MESSAGE", "NEXT"},
	cells: func(o reconcilable) []string {
		g := o.(*gatingv1alpha1.Gate)
		opened, message := "Unknown", ""
		if c := conditions.Get(g, gatingv1alpha1.OpenedCondition); c != nil {
			opened, message = string(c.Status), firstLine(c.Message)
		}
		return []string{opened, message, stampOrDash(g.Status.NextTransition)}
	},
}

// gateRevision is what `get all` shows of a gate in its REVISION column:
// its state, and until when.
func gateRevision(o reconcilable) string {
	g := o.(*gatingv1alpha1.Gate)
	c := conditions.Get(g, gatingv1alpha1.OpenedCondition)
	if c == nil {
		return ""
	}
	state := "closed"
	if c.Status == metav1.ConditionTrue {
		state = "opened"
	}
	if next := g.Status.NextTransition; next != nil {
		state += " until " + stampOf(next.Time)
	}
	return state
}

// formatSchedule writes a schedule as --schedule reads it.
func formatSchedule(s gatingv1alpha1.GateSchedule) string {
	out := fmt.Sprintf("%s %s for %s", s.Action, s.Cron, shortDuration(s.Duration.Duration))
	if s.TimeZone != "" {
		out += " in " + s.TimeZone
	}
	return out
}

// stampOf formats t as RFC 3339 in UTC.
func stampOf(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}

// stampOrDash formats an optional time, "-" without one.
func stampOrDash(t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	return stampOf(t.Time)
}

// shortDuration formats d without its zero minutes and seconds: 24h, 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
