package cli

import (
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// reconcilable is a Windlass object as the verbs see it.
type reconcilable interface {
	statusObject
	GetObservedGeneration() int64
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
// before what applies them); Gates, which sources and appliers wait
// behind, come last.
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
		dependsOn:   func(o reconcilable) []meta.DependencyReference { return o.(*kustomizev1.Kustomization).Spec.DependsOn },
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
}

// artifactRevision returns the revision of a source's last artifact
// (status.artifact.revision), or "" when it has none yet.
func artifactRevision(o reconcilable) string {
	if a := o.(interface{ GetArtifact() *meta.Artifact }).GetArtifact(); a != nil {
		return a.Revision
	}
	return ""
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
