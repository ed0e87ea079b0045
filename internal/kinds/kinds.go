// Package kinds is the one registry of the kinds Windlass serves: for each,
// its group, version and kind, its Go types, the controller that serves it,
// how it waits behind gates, whether it has dependsOn, which references may
// name it as a source, and how the command line names it. The manager, the
// command line, the Receiver's targets, sourceref, dependency and the
// scheme read it; nothing else keeps a list of kinds.
//
// Adding a kind is one row here (see docs/development.md).
package kinds

import (
	"fmt"
	"slices"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
)

// Controller names: what --controllers calls each controller.
const (
	// SourceController reconciles the source.toolkit.fluxcd.io kinds.
	SourceController = "source"
	// KustomizeController reconciles Kustomizations.
	KustomizeController = "kustomize"
	// HelmController reconciles HelmReleases.
	HelmController = "helm"
	// GatingController reconciles Gates.
	GatingController = "gating"
	// NotificationController sends alerts (Providers, Alerts) and serves
	// webhooks (Receivers).
	NotificationController = "notification"
	// ImageReflectorController scans ImageRepositories, elects the images
	// of ImagePolicies and serves the tags.
	ImageReflectorController = "image-reflector"
	// ImageAutomationController commits the images of ImagePolicies to Git
	// (ImageUpdateAutomations).
	ImageAutomationController = "image-automation"
)

// GateRole is how objects of a kind wait behind their spec.gates.
type GateRole int

const (
	// NoGates: the kind has no spec.gates.
	NoGates GateRole = iota
	// SourceGates: Blocked=True while a gate is closed; nothing new is
	// fetched.
	SourceGates
	// ApplierGates: Approved=False while a gate is closed; nothing is
	// applied, pruned or corrected.
	ApplierGates
)

// Use is a reference that may name a kind as its source.
type Use int

const (
	// KustomizationSource: a Kustomization's spec.sourceRef.
	KustomizationSource Use = iota
	// ChartRef: a HelmRelease's spec.chartRef.
	ChartRef
	// HelmChartSource: a HelmChart's spec.sourceRef (and so a HelmRelease's
	// spec.chart.spec.sourceRef).
	HelmChartSource
	// GeneratorSource: an ArtifactGenerator's spec.sources.
	GeneratorSource
)

// Kind is one kind Windlass serves.
type Kind struct {
	// GroupVersion is the version the controllers and the command line
	// read and write.
	GroupVersion schema.GroupVersion
	// Kind is the Kubernetes kind.
	Kind string
	// New returns an empty object of the kind.
	New func() client.Object
	// NewList returns an empty list of the kind.
	NewList func() client.ObjectList
	// Controller names the controller that serves the kind.
	Controller string
	// Unsharded kinds are read by every shard in full: a Gate that a shard
	// could not see would count as closed for its consumers.
	Unsharded bool
	// CachedByHolder kinds are cached, when the replicas share the objects
	// (--shards=auto), only by the replica that holds each object: no
	// other kind's controller watches them (dependsOn reads them).
	CachedByHolder bool
	// ShardAsOne kinds are held, when the replicas share the objects, by
	// one replica for all their objects: an ImagePolicy reads the tags that
	// its ImageRepository's scan keeps in memory.
	ShardAsOne bool
	// Finalized kinds' objects carry the reconcilers' finalizer
	// (meta.Finalizer): deleting one does work in the cluster that must be
	// done before the object goes (a Kustomization prunes, a HelmRelease
	// uninstalls, an ArtifactGenerator deletes its ExternalArtifacts). The
	// other kinds' controllers clean up what they keep of an object (its
	// artifacts, its scan, its series) once it is gone, and spend no write
	// on a finalizer.
	Finalized bool
	// Gates is how objects of the kind wait behind spec.gates. The runner
	// enforces them for the kinds it reconciles; a Produced kind's
	// producer enforces them (the ArtifactGenerator for its
	// ExternalArtifacts).
	Gates GateRole
	// DependsOn returns an object's spec.dependsOn; nil for kinds without.
	DependsOn func(client.Object) []meta.DependencyReference
	// SourceFor lists the references that may name the kind as their
	// source (it publishes an artifact).
	SourceFor []Use
	// WebhookTarget kinds may be named in a Receiver's spec.resources, to
	// be asked to reconcile.
	WebhookTarget bool
	// AlertSource kinds may be named in an Alert's spec.eventSources.
	AlertSource bool
	// Static kinds have no status (Alerts and Providers): no controller
	// reports on them, so nothing is requested of them or waited for.
	Static bool
	// Produced kinds have a status that their producer writes (an
	// ExternalArtifact's, named by its spec.sourceRef): no controller of
	// theirs reconciles them, so nothing is requested of them, and no
	// replica holds them.
	Produced bool
	// SuspendAnnotation, when set, is the annotation that suspends the
	// kind's objects ("Disabled") and resumes them ("Enabled"), in place of
	// spec.suspend: the ArtifactGenerator's API has no spec.suspend.
	SuspendAnnotation string
	// LastHandled returns the reconcile request the controller last
	// handled (status.lastHandledReconcileAt); nil for static and produced
	// kinds.
	LastHandled func(client.Object) string
	// Info returns what an object is at and where it takes it from; nil
	// for kinds with neither (Gates, Providers, Receivers).
	Info func(client.Object) Info
	// Words name the kind on the command line ("source git",
	// "kustomization"), and Aliases are other names of its last word.
	Words, Aliases []string
}

// GroupVersionKind returns the kind's group, version and kind.
func (k Kind) GroupVersionKind() schema.GroupVersionKind {
	return k.GroupVersion.WithKind(k.Kind)
}

// Items returns the objects of a list of the kind.
func (k Kind) Items(list client.ObjectList) []client.Object {
	objs, err := apimeta.ExtractList(list)
	if err != nil {
		panic("kinds: " + k.Kind + ": " + err.Error()) // a list type without Items
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(client.Object))
	}
	return out
}

// Reconciled reports whether a controller reconciles the kind's objects:
// it is neither static nor produced by another kind's controller.
func (k Kind) Reconciled() bool {
	return !k.Static && !k.Produced
}

// SuspendPatch returns the merge patch that suspends an object of the
// kind, or resumes it.
func (k Kind) SuspendPatch(suspend bool) []byte {
	if k.SuspendAnnotation == "" {
		return fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, suspend)
	}
	value := "Enabled"
	if suspend {
		value = "Disabled"
	}
	return fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, k.SuspendAnnotation, value)
}

// IsSourceFor reports whether references of use may name the kind.
func (k Kind) IsSourceFor(use Use) bool {
	return slices.Contains(k.SourceFor, use)
}

// Finalized tells whether the objects of the kind called name carry the
// reconcilers' finalizer (see Kind.Finalized); false for a kind not in the
// registry.
func Finalized(name string) bool {
	k, ok := Named(name)
	return ok && k.Finalized
}

// Named returns the kind called name, or false.
func Named(name string) (Kind, bool) {
	for _, k := range All {
		if k.Kind == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Where returns the kinds for which keep is true, in the order of All.
func Where(keep func(Kind) bool) []Kind {
	var out []Kind
	for _, k := range All {
		if keep(k) {
			out = append(out, k)
		}
	}
	return out
}

// OfController returns the kinds the controller called name serves.
func OfController(name string) []Kind {
	return Where(func(k Kind) bool { return k.Controller == name })
}

// SourcesFor returns the kinds that references of use may name.
func SourcesFor(use Use) []Kind {
	return Where(func(k Kind) bool { return k.IsSourceFor(use) })
}

// Names returns the names of ks.
func Names(ks []Kind) []string {
	out := make([]string, 0, len(ks))
	for _, k := range ks {
		out = append(out, k.Kind)
	}
	return out
}

// WithDependsOn returns the kinds that have spec.dependsOn.
func WithDependsOn() []Kind {
	return Where(func(k Kind) bool { return k.DependsOn != nil })
}
