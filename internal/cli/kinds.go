package cli

import (
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
)

// reconcilable is a Windlass object as the verbs see it.
type reconcilable interface {
	statusObject
	IsSuspended() bool
}

// objectKind is a kind the verbs work on: how the command line names it
// and how to make an object and a list of it.
type objectKind struct {
	// words name the kind on the command line ("source git",
	// "kustomization").
	words []string
	// aliases are other names of its last word.
	aliases []string
	// kind is its Kubernetes kind.
	kind string
	// new returns an empty object of the kind.
	new func() reconcilable
	// newList returns an empty list of the kind, and the function that
	// returns its items.
	newList func() (client.ObjectList, func() []reconcilable)
	// lastHandled returns the reconcile request token the controller last
	// handled.
	lastHandled func(reconcilable) string
	// revision returns what the object reports it is at.
	revision func(reconcilable) string
	// dependsOn returns the objects of the kind an object depends on; nil
	// for kinds without dependsOn.
	dependsOn func(reconcilable) []meta.DependencyReference
	// columns, when set, are the kind's own columns in `get` of this kind
	// alone, in place of REVISION, SUSPENDED, READY and MESSAGE.
	columns *kindColumns
	// static marks a kind without status (Alerts and Providers): no
	// controller reports on it, so there is no reconciliation to request or
	// wait for, and `get all` leaves it out.
	static bool
	// produced marks a kind whose status its producer writes
	// (ExternalArtifacts): nothing reconciles or suspends its objects.
	produced bool
	// suspendPatch returns the patch that suspends or resumes an object.
	suspendPatch func(suspend bool) []byte
}

// kindColumns are the columns of a kind's own table, between NAME and
// AGE.
type kindColumns struct {
	// header names the columns.
	header []string
	// cells returns the cells of an object, one per column.
	cells func(reconcilable) []string
}

// objectKinds are the kinds the verbs know: every kind of the registry,
// in its order (dependency order).
var objectKinds = objectKindsOf(kinds.All)

// objectKindsOf returns the command line's view of the kinds ks.
func objectKindsOf(ks []kinds.Kind) []objectKind {
	out := make([]objectKind, 0, len(ks))
	for _, k := range ks {
		out = append(out, objectKindOf(k))
	}
	return out
}

// objectKindOf returns the command line's view of the kind k: the
// registry's names and types, and the revision and columns of its own
// that presentations gives it.
func objectKindOf(k kinds.Kind) objectKind {
	p := presentations[k.Kind]
	ok := objectKind{
		words: k.Words, aliases: k.Aliases, kind: k.Kind, static: k.Static, produced: k.Produced, columns: p.columns,
		suspendPatch: k.SuspendPatch,
		new:          func() reconcilable { return k.New().(reconcilable) },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := k.NewList()
			return l, func() []reconcilable { return reconcilables(k.Items(l)) }
		},
		revision: p.revision,
	}
	if ok.revision == nil {
		ok.revision = artifactRevision
	}
	if k.LastHandled != nil {
		ok.lastHandled = func(o reconcilable) string { return k.LastHandled(o) }
	}
	if k.DependsOn != nil {
		ok.dependsOn = func(o reconcilable) []meta.DependencyReference { return dependenciesOfKind(k.Kind, k.DependsOn(o)) }
	}
	return ok
}

// presentation is how the command line shows the objects of a kind, when
// it is not the default: a revision other than the artifact's, columns of
// its own.
type presentation struct {
	revision func(reconcilable) string
	columns  *kindColumns
}

// presentations are the kinds' own ways of being shown, by kind.
var presentations = map[string]presentation{
	kustomizev1.KustomizationKind: {revision: func(o reconcilable) string {
		return o.(*kustomizev1.Kustomization).Status.LastAppliedRevision
	}},
	helmv2.HelmReleaseKind:      {revision: releaseRevision},
	imagev1.ImageRepositoryKind: {revision: imageRepositoryRevision, columns: imageRepositoryColumns},
	imagev1.ImagePolicyKind:     {revision: imagePolicyRevision, columns: imagePolicyColumns},
	imagev1.ImageUpdateAutomationKind: {revision: func(o reconcilable) string {
		return o.(*imagev1.ImageUpdateAutomation).Status.LastPushCommit
	}, columns: imageUpdateColumns},
	gatingv1alpha1.GateKind:          {revision: gateRevision, columns: gateColumns},
	notificationv1beta3.ProviderKind: {columns: providerColumns},
	notificationv1beta3.AlertKind:    {columns: alertColumns},
	notificationv1.ReceiverKind:      {columns: receiverColumns},
}

// reconcilables returns objs as the verbs see them.
func reconcilables(objs []client.Object) []reconcilable {
	out := make([]reconcilable, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(reconcilable))
	}
	return out
}

// artifactRevision returns the revision of a source's last artifact
// (status.artifact.revision), or "" when it has none yet or is no source.
func artifactRevision(o reconcilable) string {
	if src, ok := o.(interface{ GetArtifact() *meta.Artifact }); ok {
		if a := src.GetArtifact(); a != nil {
			return a.Revision
		}
	}
	return ""
}

// releaseRevision returns the chart version of a HelmRelease's latest
// release (the newest history snapshot), or the chart version last
// attempted when it has no history yet.
func releaseRevision(o reconcilable) string {
	hr := o.(*helmv2.HelmRelease)
	if latest := hr.Status.History.Latest(); latest != nil {
		return latest.ChartVersion
	}
	return hr.Status.LastAttemptedRevision
}

// dependenciesOfKind returns the entries of deps, those of an object of
// kind, that name an object of the same kind: an entry's kind is its Kind,
// or, when empty, the dependent's own.
func dependenciesOfKind(kind string, deps []meta.DependencyReference) []meta.DependencyReference {
	var out []meta.DependencyReference
	for _, d := range deps {
		if d.Kind == "" || d.Kind == kind {
			out = append(out, d)
		}
	}
	return out
}

// kindRef names an object of a kind of objectKinds.
type kindRef struct {
	kind, namespace, name string
}

// String returns the reference as "Kind namespace/name".
func (r kindRef) String() string {
	return fmt.Sprintf("%s %s/%s", r.kind, r.namespace, r.name)
}

// releaseChartSource returns the object a HelmRelease takes its chart
// from: its spec.chartRef, or the HelmChart the controller makes of its
// chart template (status.helmChart, else the name the controller gives it,
// namespace-name, in the namespace of the template's source).
func releaseChartSource(hr *helmv2.HelmRelease) (kindRef, error) {
	if ref := hr.Spec.ChartRef; ref != nil {
		return kindRef{kind: ref.Kind, namespace: orNamespace(ref.Namespace, hr.Namespace), name: ref.Name}, nil
	}
	if ns, name, found := strings.Cut(hr.Status.HelmChart, "/"); found && ns != "" && name != "" {
		return kindRef{kind: sourcev1.HelmChartKind, namespace: ns, name: name}, nil
	}
	if hr.Spec.Chart == nil {
		return kindRef{}, fmt.Errorf("HelmRelease %s/%s has neither spec.chart nor spec.chartRef", hr.Namespace, hr.Name)
	}
	ns := orNamespace(hr.Spec.Chart.Spec.SourceRef.Namespace, hr.Namespace)
	return kindRef{kind: sourcev1.HelmChartKind, namespace: ns, name: hr.GetHelmChartName()}, nil
}

// chartSourceOf returns the source a HelmChart is built from, in its
// namespace.
func chartSourceOf(hc *sourcev1.HelmChart) kindRef {
	return kindRef{kind: hc.Spec.SourceRef.Kind, namespace: hc.Namespace, name: hc.Spec.SourceRef.Name}
}

// orNamespace returns ns, or fallback when ns is empty.
func orNamespace(ns, fallback string) string {
	if ns == "" {
		return fallback
	}
	return ns
}

// kindOfRef returns the entry of objectKinds of ref's kind, or false for a
// kind the verbs do not know.
func kindOfRef(ref kindRef) (objectKind, bool) {
	for _, k := range objectKinds {
		if k.kind == ref.kind {
			return k, true
		}
	}
	return objectKind{}, false
}

// describe names obj as "Kind namespace/name".
func (k objectKind) describe(obj client.Object) string {
	return fmt.Sprintf("%s %s/%s", k.kind, obj.GetNamespace(), obj.GetName())
}

// use returns the last word of the kind with its placeholder argument.
func (k objectKind) use(arg string) string {
	return strings.TrimSpace(k.words[len(k.words)-1] + " " + arg)
}

// kindNamed returns the entry of objectKinds for the Kubernetes kind name;
// the names are those of the table, so a miss is a programming error.
func kindNamed(name string) objectKind {
	for _, k := range objectKinds {
		if k.kind == name {
			return k
		}
	}
	panic("objectKinds has no " + name)
}
