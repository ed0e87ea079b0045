package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/windlass-dev/windlass/internal/scheme"
)

// eventsFlags are the flags of `windlass events`.
type eventsFlags struct {
	kube          kubeFlags
	allNamespaces bool
	forObject     string
	types         []string
	watch         bool
}

func newEventsCommand() *cobra.Command {
	f := &eventsFlags{}
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Show the Kubernetes events of Windlass objects of any kind",
		Long: `Show the Kubernetes events that the controllers recorded about the Windlass
objects of a namespace (-n, default flux-system) or of all (-A), oldest first.
--for KIND/NAME shows the events of one object and of its source; --watch goes
on printing a row for each new event.`,
		Example: `  windlass events
  windlass events --for ks/app --types Warning
  windlass events -A --watch`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd)
		},
	}
	f.kube.bind(cmd)
	fs := cmd.Flags()
	fs.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "show the events of every namespace")
	fs.StringVar(&f.forObject, "for", "", "only the events of this object and of its source, as KIND/NAME, e.g. Kustomization/app or ks/app")
	fs.StringSliceVar(&f.types, "types", nil, "only the events of these types, comma-separated: Normal, Warning")
	fs.BoolVarP(&f.watch, "watch", "w", false, "after listing, print a row for each new event, until interrupted")
	return cmd
}

// eventTarget selects the events of the objects of one kind, or of one
// object.
type eventTarget struct {
	kind objectKind
	// group is the API group of the kind.
	group string
	// namespace is empty for every namespace.
	namespace string
	// name is empty for every object of the kind.
	name string
}

// options are the list options that select the target's events.
func (t eventTarget) options() []client.ListOption {
	fields := client.MatchingFields{"involvedObject.kind": t.kind.kind}
	if t.name != "" {
		fields["involvedObject.name"] = t.name
	}
	opts := []client.ListOption{fields}
	if t.namespace != "" {
		opts = append(opts, client.InNamespace(t.namespace))
	}
	return opts
}

// run lists the events, prints them, then watches them when asked.
func (f *eventsFlags) run(cmd *cobra.Command) error {
	types, err := eventTypes(f.types)
	if err != nil {
		return err
	}
	if f.forObject != "" && f.allNamespaces {
		return fmt.Errorf("--for names an object of one namespace: use -n, not -A")
	}
	c, err := f.kube.watchClient()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	targets, err := f.targets(ctx, c, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	var events []corev1.Event
	versions := make([]string, len(targets))
	for i, t := range targets {
		list := &corev1.EventList{}
		if err := c.List(ctx, list, t.options()...); err != nil {
			return fmt.Errorf("listing events: %w (check that your user may list events here)", err)
		}
		versions[i] = list.ResourceVersion
		for _, e := range list.Items {
			if t.matches(&e, types) {
				events = append(events, e)
			}
		}
	}
	sortEvents(events)
	table := eventTable{allNamespaces: f.allNamespaces || f.spansNamespaces(targets)}
	if len(events) == 0 && !f.watch {
		_, err := fmt.Fprintf(cmd.ErrOrStderr(), "no events found %s\n", f.where())
		return err
	}
	if err := table.print(cmd.OutOrStdout(), events); err != nil {
		return err
	}
	if f.watch {
		table.noHeader = true
		return watchEvents(ctx, c, cmd.OutOrStdout(), targets, versions, types, table)
	}
	return nil
}

// where says which events the command looked for.
func (f *eventsFlags) where() string {
	switch {
	case f.allNamespaces:
		return "in any namespace"
	case f.forObject != "":
		return "for " + f.forObject + " in namespace " + f.kube.namespace
	}
	return "in namespace " + f.kube.namespace
}

// spansNamespaces says whether a target is in another namespace than -n.
func (f *eventsFlags) spansNamespaces(targets []eventTarget) bool {
	for _, t := range targets {
		if t.namespace != f.kube.namespace {
			return true
		}
	}
	return false
}

// targets returns what the events are selected by: every Windlass kind,
// or the object of --for and its sources.
func (f *eventsFlags) targets(ctx context.Context, c client.Client, errOut io.Writer) ([]eventTarget, error) {
	groups := map[string]string{}
	s := scheme.New()
	for _, k := range objectKinds {
		gvk, err := apiutil.GVKForObject(k.new(), s)
		if err != nil {
			return nil, err
		}
		groups[k.kind] = gvk.Group
	}
	if f.forObject == "" {
		namespace := f.kube.namespace
		if f.allNamespaces {
			namespace = ""
		}
		targets := make([]eventTarget, 0, len(objectKinds))
		for _, k := range objectKinds {
			targets = append(targets, eventTarget{kind: k, group: groups[k.kind], namespace: namespace})
		}
		return targets, nil
	}
	kindWord, name, ok := strings.Cut(f.forObject, "/")
	if !ok || kindWord == "" || name == "" {
		return nil, fmt.Errorf("invalid --for %q: write KIND/NAME, e.g. Kustomization/app", f.forObject)
	}
	k, err := lookupKind(kindWord)
	if err != nil {
		return nil, err
	}
	return sourceChain(ctx, c, errOut, groups, eventTarget{kind: k, group: groups[k.kind], namespace: f.kube.namespace, name: name})
}

// sourceChain returns the target and the sources it follows (spec.sourceRef),
// each once.
func sourceChain(ctx context.Context, c client.Client, errOut io.Writer, groups map[string]string, t eventTarget) ([]eventTarget, error) {
	targets := []eventTarget{t}
	seen := map[string]bool{}
	for {
		key := t.kind.kind + "/" + t.namespace + "/" + t.name
		if seen[key] {
			return targets, nil
		}
		seen[key] = true
		obj := t.kind.new()
		err := c.Get(ctx, client.ObjectKey{Namespace: t.namespace, Name: t.name}, obj)
		if apierrors.IsNotFound(err) {
			fmt.Fprintf(errOut, "%s %s/%s not found: showing its events only, not its source's\n", t.kind.kind, t.namespace, t.name)
			return targets, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s %s/%s: %w", t.kind.kind, t.namespace, t.name, err)
		}
		next, ok, err := sourceOf(obj, groups)
		if err != nil || !ok {
			return targets, err
		}
		t = next
		targets = append(targets, t)
	}
}

// sourceOf returns the target of obj's spec.sourceRef, when it has one of
// a kind the verbs know.
func sourceOf(obj runtime.Object, groups map[string]string) (eventTarget, bool, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return eventTarget{}, false, err
	}
	ref, found, _ := unstructured.NestedStringMap(u, "spec", "sourceRef")
	if !found || ref["kind"] == "" || ref["name"] == "" {
		return eventTarget{}, false, nil
	}
	namespace := ref["namespace"]
	if namespace == "" {
		namespace = obj.(client.Object).GetNamespace()
	}
	for _, k := range objectKinds {
		if k.kind == ref["kind"] {
			return eventTarget{kind: k, group: groups[k.kind], namespace: namespace, name: ref["name"]}, true, nil
		}
	}
	return eventTarget{}, false, nil
}

// lookupKind returns the kind named word: its kind or one of its aliases,
// in any case.
func lookupKind(word string) (objectKind, error) {
	names := make([]string, 0, len(objectKinds))
	for _, k := range objectKinds {
		if strings.EqualFold(word, k.kind) {
			return k, nil
		}
		for _, a := range k.aliases {
			if strings.EqualFold(word, a) {
				return k, nil
			}
		}
		names = append(names, k.kind+" ("+strings.Join(k.aliases, ", ")+")")
	}
	return objectKind{}, fmt.Errorf("unknown kind %q: use one of %s", word, strings.Join(names, ", "))
}

// eventTypes checks --types and returns the types asked for, or nil for
// all.
func eventTypes(words []string) (map[string]bool, error) {
	if len(words) == 0 {
		return nil, nil
	}
	types := map[string]bool{}
	for _, w := range words {
		switch {
		case strings.EqualFold(w, corev1.EventTypeNormal):
			types[corev1.EventTypeNormal] = true
		case strings.EqualFold(w, corev1.EventTypeWarning):
			types[corev1.EventTypeWarning] = true
		default:
			return nil, fmt.Errorf("invalid --types %q: choose Normal, Warning or both", w)
		}
	}
	return types, nil
}

// matches says whether e is about an object of the target, of a type asked
// for.
func (t eventTarget) matches(e *corev1.Event, types map[string]bool) bool {
	gv, err := schema.ParseGroupVersion(e.InvolvedObject.APIVersion)
	if err != nil || gv.Group != t.group || e.InvolvedObject.Kind != t.kind.kind {
		return false
	}
	if t.name != "" && (e.InvolvedObject.Name != t.name || e.InvolvedObject.Namespace != t.namespace) {
		return false
	}
	return types == nil || types[e.Type]
}

// lastSeen returns when e last happened, whichever API recorded it.
func lastSeen(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// sortEvents orders events oldest first.
func sortEvents(events []corev1.Event) {
	sort.SliceStable(events, func(i, j int) bool {
		a, b := &events[i], &events[j]
		if ta, tb := lastSeen(a), lastSeen(b); !ta.Equal(tb) {
			return ta.Before(tb)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}

// eventTable prints events as a table.
type eventTable struct {
	allNamespaces bool
	noHeader      bool
}

// print prints events, ages counted up to now.
func (t eventTable) print(w io.Writer, events []corev1.Event) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	if !t.noHeader {
		t.row(tw, "NAMESPACE", "LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE")
	}
	at := now()
	for i := range events {
		e := &events[i]
		t.row(tw, e.InvolvedObject.Namespace, age(metav1.NewTime(lastSeen(e)), at), e.Type, e.Reason,
			e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name, firstLine(e.Message))
	}
	return tw.Flush()
}

// row writes one row, with the namespace when the table shows it.
func (t eventTable) row(w io.Writer, namespace string, cells ...string) {
	if t.allNamespaces {
		cells = append([]string{namespace}, cells...)
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// watchEvents prints a row for each new or repeated event of the targets,
// from the resource versions listed, until ctx ends.
func watchEvents(ctx context.Context, c client.WithWatch, w io.Writer, targets []eventTarget, versions []string,
	types map[string]bool, table eventTable) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rows := make(chan corev1.Event)
	errs := make(chan error, len(targets))
	for i, t := range targets {
		go func() { errs <- watchTarget(ctx, c, t, versions[i], types, rows) }()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			if err != nil {
				return err
			}
		case e := <-rows:
			if err := table.print(w, []corev1.Event{e}); err != nil {
				return err
			}
		}
	}
}

// watchTarget sends the events of t to rows from version on, watching
// again when the API server ends a watch, until ctx ends.
func watchTarget(ctx context.Context, c client.WithWatch, t eventTarget, version string, types map[string]bool, rows chan<- corev1.Event) error {
	for {
		opts := append(t.options(), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: version, AllowWatchBookmarks: true}})
		watcher, err := c.Watch(ctx, &corev1.EventList{}, opts...)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watching events: %w", err)
		}
		version, err = forwardEvents(ctx, watcher, t, types, rows, version)
		watcher.Stop()
		if err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// forwardEvents sends the events of one watch that match to rows, and
// returns the last resource version seen.
func forwardEvents(ctx context.Context, watcher watch.Interface, t eventTarget, types map[string]bool,
	rows chan<- corev1.Event, version string) (string, error) {
	for ev := range watcher.ResultChan() {
		switch ev.Type {
		case watch.Error:
			return version, fmt.Errorf("watching events: %w (run the command again)", apierrors.FromObject(ev.Object))
		case watch.Added, watch.Modified, watch.Bookmark:
		default:
			continue
		}
		e, ok := ev.Object.(*corev1.Event)
		if !ok {
			continue
		}
		version = e.ResourceVersion
		if ev.Type == watch.Bookmark || !t.matches(e, types) {
			continue
		}
		select {
		case rows <- *e:
		case <-ctx.Done():
			return version, nil
		}
	}
	return version, nil
}
