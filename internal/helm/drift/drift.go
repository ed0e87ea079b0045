package drift

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/inventory"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/ssa"
	"github.com/windlass-dev/windlass/internal/versions"
)

// Kind says how an object drifted.
type Kind string

const (
	// Missing means the object is not in the cluster; Correct creates it.
	Missing Kind = "missing"
	// Changed means fields that the manifest sets hold other values in the
	// cluster; Correct applies them again.
	Changed Kind = "changed"
)

// maxSummaryEntries bounds the objects Summary names, so that a condition
// message stays short when a whole release drifted.
const maxSummaryEntries = 10

// Entry is one drifted object.
type Entry struct {
	// Object identifies the object.
	Object inventory.ObjMetadata
	// Version is its API version in the manifest.
	Version string
	// Kind is how it drifted.
	Kind Kind

	// desired is the manifest's object, live the cluster's (Changed only).
	desired, live *unstructured.Unstructured
}

// String returns "Kind/namespace/name missing|changed"; it never holds
// object data.
func (e Entry) String() string {
	return e.Object.Subject() + " " + string(e.Kind)
}

// Report lists the drifted objects of a release, in the manifest's order.
type Report struct {
	// Entries holds one Entry per drifted object.
	Entries []Entry
	// InSync holds the objects compared and found without drift, with the
	// fields version (versions.FieldsDigest of the field manager) they
	// had.
	InSync map[inventory.ObjMetadata]string

	// ignore are the rules of the detection, for Correct.
	ignore ssa.IgnoreRules
}

// DriftedObjects returns the objects of Entries.
func (r *Report) DriftedObjects() []inventory.ObjMetadata {
	if r == nil {
		return nil
	}
	out := make([]inventory.ObjMetadata, 0, len(r.Entries))
	for _, e := range r.Entries {
		out = append(out, e.Object)
	}
	return out
}

// Drifted reports whether any object drifted.
func (r *Report) Drifted() bool {
	return r != nil && len(r.Entries) > 0
}

// Summary names the drifted objects, comma-separated
// ("Deployment/apps/web changed, ConfigMap/apps/cfg missing"), at most
// ten, then "and N more". It is empty without drift.
func (r *Report) Summary() string {
	if r == nil {
		return ""
	}
	parts := make([]string, 0, min(len(r.Entries), maxSummaryEntries)+1)
	for i, e := range r.Entries {
		if i == maxSummaryEntries {
			parts = append(parts, fmt.Sprintf("and %d more", len(r.Entries)-maxSummaryEntries))
			break
		}
		parts = append(parts, e.String())
	}
	return strings.Join(parts, ", ")
}

// Owner returns the owner whose labels the Manager of hr's drift detection
// must apply: the labels the helm post-renderer puts on every object.
func Owner(hr *helmv2.HelmRelease) ssa.Owner {
	return ssa.Owner{Group: helmv2.GroupVersion.Group, Name: hr.Name, Namespace: hr.Namespace}
}

// The metadata Helm puts on every object of a release when it applies it,
// which the stored manifest does not hold.
const (
	managedByLabel             = "app.kubernetes.io/managed-by"
	managedByHelm              = "Helm"
	releaseNameAnnotation      = "meta.helm.sh/release-name"
	releaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// SetReleaseMetadata sets on each of objs, in place, what Helm sets on
// every object it applies and leaves out of the stored manifest: the label
// app.kubernetes.io/managed-by: Helm and the annotations
// meta.helm.sh/release-name and meta.helm.sh/release-namespace of the
// release name and namespace. Call it on a manifest's objects before
// Detect, or every object drifts on them.
func SetReleaseMetadata(objs []*unstructured.Unstructured, releaseName, releaseNamespace string) {
	for _, o := range objs {
		if o == nil {
			continue
		}
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[managedByLabel] = managedByHelm
		o.SetLabels(labels)
		annotations := o.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[releaseNameAnnotation] = releaseName
		annotations[releaseNamespaceAnnotation] = releaseNamespace
		o.SetAnnotations(annotations)
	}
}

// Helm keeps an object it would otherwise delete when the object carries
// this annotation with this value.
const (
	resourcePolicyAnnotation = "helm.sh/resource-policy"
	keepPolicy               = "keep"
)

// DeletedByUpgrade reports whether an upgrade whose manifest no longer
// holds live deletes it: unless its helm.sh/resource-policy annotation
// keeps it.
func DeletedByUpgrade(live *unstructured.Unstructured) bool {
	return live.GetAnnotations()[resourcePolicyAnnotation] != keepPolicy
}

// Inventory returns the entries of hr's status.inventory: the objects of
// its last release.
func Inventory(hr *helmv2.HelmRelease) []inventory.Entry {
	return kspec.Entries(hr.Status.Inventory)
}

// Disabled reports whether obj asks to be left out of drift detection.
func Disabled(obj *unstructured.Unstructured) bool {
	v, ok := obj.GetAnnotations()[helmv2.DriftDetectionAnnotation]
	return ok && strings.EqualFold(strings.TrimSpace(v), helmv2.DriftDetectionDisabled)
}

// Detect compares objs, the objects of a release manifest with Helm's
// release metadata set (SetReleaseMetadata) and their namespaces, with the
// cluster (see the package documentation) and reports the drifted ones.
// ignore may be nil. Nothing is written. When the API server refuses the
// dry run of an object (its kind is no longer served, say), the detection
// fails with the ssa *ValidationError that names it.
func Detect(ctx context.Context, m *ssa.Manager, objs []*unstructured.Unstructured, ignore ssa.IgnoreRules) (*Report, error) {
	checked := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if o != nil && !Disabled(o) {
			checked = append(checked, o)
		}
	}
	report := &Report{ignore: ignore, InSync: map[inventory.ObjMetadata]string{}}
	if len(checked) == 0 {
		return report, nil
	}
	plans, err := m.Plan(ctx, checked, ssa.ApplyOptions{})
	if err != nil {
		return nil, fmt.Errorf("dry-run apply of the release's objects: %w", err)
	}
	for i, p := range plans {
		kind, drifted := compare(p, ignore)
		if !drifted {
			if p.Live != nil {
				report.InSync[p.Object] = versions.FieldsDigest(p.Live, m.FieldManager())
			}
			continue
		}
		e := Entry{Object: p.Object, Version: p.Version, Kind: kind, desired: checked[i]}
		if kind == Changed {
			e.live = p.Live
		}
		report.Entries = append(report.Entries, e)
	}
	return report, nil
}

// compare tells how a planned object drifted, if it did.
func compare(p ssa.Planned, ignore ssa.IgnoreRules) (Kind, bool) {
	switch {
	case p.Action == ssa.ActionSkipped:
		return "", false
	case p.Action == ssa.ActionCreated || p.Live == nil:
		return Missing, true
	case p.Result == nil:
		return "", false
	}
	live, result := comparable(p.Live), comparable(p.Result)
	ignore.Apply([]*unstructured.Unstructured{live, result})
	if equality.Semantic.DeepEqual(live.Object, result.Object) {
		return "", false
	}
	return Changed, true
}

// comparedOut are the fields that change without the object's content
// changing, or that belong to controllers: the comparison leaves them out.
var comparedOut = [][]string{
	{"metadata", "managedFields"},
	{"metadata", "resourceVersion"},
	{"metadata", "generation"},
	{"status"},
}

// comparable returns a copy of u without the fields comparedOut names.
func comparable(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	for _, f := range comparedOut {
		unstructured.RemoveNestedField(c.Object, f...)
	}
	return c
}
