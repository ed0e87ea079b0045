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
}

// kindColumns are the columns of a kind's own table, between NAME and
// AGE.
type kindColumns struct {
	// header names the columns.
	header []string
	// cells returns the cells of an object, one per column.
	cells func(reconcilable) []string
}

// objectKinds are the kinds the verbs know, in dependency order (sources
// before what applies them: a HelmChart after the sources it is built
// from, a HelmRelease after its chart); then the image kinds (a policy
// after the repository it elects from, an automation after its policies);
// then Gates, which sources, appliers and automations wait behind, and
// last the notification kinds, which only watch or call on the others.
var objectKinds = []objectKind{
	{
		words: []string{"source", "git"}, aliases: []string{"gitrepository", "gitrepositories"}, kind: sourcev1.GitRepositoryKind,
		new: func() reconcilable { return &sourcev1.GitRepository{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &sourcev1.GitRepositoryList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		lastHandled: func(o reconcilable) string { return o.(*sourcev1.GitRepository).Status.LastHandledReconcileAt },
		revision: func(o reconcilable) string {
			if a := o.(*sourcev1.GitRepository).Status.Artifact; a != nil {
				return a.Revision
			}
			return ""
		},
	},
	{
		words: []string{"source", "oci"}, aliases: []string{"ocirepository", "ocirepositories", "ocirepo"}, kind: sourcev1.OCIRepositoryKind,
		new: func() reconcilable { return &sourcev1.OCIRepository{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &sourcev1.OCIRepositoryList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		lastHandled: func(o reconcilable) string { return o.(*sourcev1.OCIRepository).Status.LastHandledReconcileAt },
		revision:    artifactRevision,
	},
	{
		words: []string{"source", "bucket"}, aliases: []string{"bucket", "buckets"}, kind: sourcev1.BucketKind,
		new: func() reconcilable { return &sourcev1.Bucket{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &sourcev1.BucketList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		lastHandled: func(o reconcilable) string { return o.(*sourcev1.Bucket).Status.LastHandledReconcileAt },
		revision:    artifactRevision,
	},
	{
		words: []string{"kustomization"}, aliases: []string{"ks", "kustomizations"}, kind: kustomizev1.KustomizationKind,
		new: func() reconcilable { return &kustomizev1.Kustomization{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &kustomizev1.KustomizationList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		lastHandled: func(o reconcilable) string { return o.(*kustomizev1.Kustomization).Status.LastHandledReconcileAt },
		revision:    func(o reconcilable) string { return o.(*kustomizev1.Kustomization).Status.LastAppliedRevision },
		dependsOn: func(o reconcilable) []meta.DependencyReference {
			return dependenciesOfKind(kustomizev1.KustomizationKind, o.(*kustomizev1.Kustomization).Spec.DependsOn)
		},
	},
	{
		words: []string{"source", "helm"}, aliases: []string{"helmrepository", "helmrepositories", "helmrepo"}, kind: sourcev1.HelmRepositoryKind,
		new: func() reconcilable { return &sourcev1.HelmRepository{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &sourcev1.HelmRepositoryList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		lastHandled: func(o reconcilable) string { return o.(*sourcev1.HelmRepository).Status.LastHandledReconcileAt },
		revision:    artifactRevision,
	},
	{
		words: []string{"source", "chart"}, aliases: []string{"helmchart", "helmcharts", "hc"}, kind: sourcev1.HelmChartKind,
		new: func() reconcilable { return &sourcev1.HelmChart{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &sourcev1.HelmChartList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		lastHandled: func(o reconcilable) string { return o.(*sourcev1.HelmChart).Status.LastHandledReconcileAt },
		revision:    artifactRevision,
	},
	{
		words: []string{"helmrelease"}, aliases: []string{"hr", "helmreleases"}, kind: helmv2.HelmReleaseKind,
		new: func() reconcilable { return &helmv2.HelmRelease{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &helmv2.HelmReleaseList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		lastHandled: func(o reconcilable) string { return o.(*helmv2.HelmRelease).Status.LastHandledReconcileAt },
		revision:    releaseRevision,
		dependsOn: func(o reconcilable) []meta.DependencyReference {
			return dependenciesOfKind(helmv2.HelmReleaseKind, o.(*helmv2.HelmRelease).Spec.DependsOn)
		},
	},
	{
		words: []string{"image", "repository"}, aliases: []string{"imagerepository", "imagerepositories", "imgrepo"}, kind: imagev1.ImageRepositoryKind,
		new: func() reconcilable { return &imagev1.ImageRepository{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &imagev1.ImageRepositoryList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		lastHandled: func(o reconcilable) string { return o.(*imagev1.ImageRepository).Status.LastHandledReconcileAt },
		revision:    imageRepositoryRevision,
		columns:     imageRepositoryColumns,
	},
	{
		words: []string{"image", "policy"}, aliases: []string{"imagepolicy", "imagepolicies", "imgpol"}, kind: imagev1.ImagePolicyKind,
		new: func() reconcilable { return &imagev1.ImagePolicy{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &imagev1.ImagePolicyList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		lastHandled: func(o reconcilable) string { return o.(*imagev1.ImagePolicy).Status.LastHandledReconcileAt },
		revision:    imagePolicyRevision,
		columns:     imagePolicyColumns,
	},
	{
		words: []string{"image", "update"}, aliases: []string{"imageupdateautomation", "imageupdateautomations", "iua"}, kind: imagev1.ImageUpdateAutomationKind,
		new: func() reconcilable { return &imagev1.ImageUpdateAutomation{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &imagev1.ImageUpdateAutomationList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		lastHandled: func(o reconcilable) string { return o.(*imagev1.ImageUpdateAutomation).Status.LastHandledReconcileAt },
		revision:    func(o reconcilable) string { return o.(*imagev1.ImageUpdateAutomation).Status.LastPushCommit },
		columns:     imageUpdateColumns,
	},
	{
		words: []string{"gate"}, aliases: []string{"gates"}, kind: gatingv1alpha1.GateKind,
		new: func() reconcilable { return &gatingv1alpha1.Gate{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &gatingv1alpha1.GateList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		lastHandled: func(o reconcilable) string { return o.(*gatingv1alpha1.Gate).Status.LastHandledReconcileAt },
		revision:    gateRevision,
		columns:     gateColumns,
	},
	{
		words: []string{"alert-provider"}, aliases: []string{"alert-providers", "provider", "providers"}, kind: notificationv1beta3.ProviderKind,
		new: func() reconcilable { return &notificationv1beta3.Provider{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &notificationv1beta3.ProviderList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		columns: providerColumns, static: true,
	},
	{
		words: []string{"alert"}, aliases: []string{"alerts"}, kind: notificationv1beta3.AlertKind,
		new: func() reconcilable { return &notificationv1beta3.Alert{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &notificationv1beta3.AlertList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		columns: alertColumns, static: true,
	},
	{
		words: []string{"receiver"}, aliases: []string{"receivers", "rcv"}, kind: notificationv1.ReceiverKind,
		new: func() reconcilable { return &notificationv1.Receiver{} },
		newList: func() (client.ObjectList, func() []reconcilable) {
			l := &notificationv1.ReceiverList{}
			return l, func() []reconcilable { return items(l.Items) }
		},
		lastHandled: func(o reconcilable) string { return o.(*notificationv1.Receiver).Status.LastHandledReconcileAt },
		revision:    func(reconcilable) string { return "" },
		columns:     receiverColumns,
	},
}

// artifactRevision returns the revision of a source's last artifact
// (status.artifact.revision), or "" when it has none yet.
func artifactRevision(o reconcilable) string {
	if a := o.(interface{ GetArtifact() *meta.Artifact }).GetArtifact(); a != nil {
		return a.Revision
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

// items returns pointers to the items of a typed list.
func items[T any, PT interface {
	*T
	reconcilable
}](list []T) []reconcilable {
	out := make([]reconcilable, 0, len(list))
	for i := range list {
		out = append(out, PT(&list[i]))
	}
	return out
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
