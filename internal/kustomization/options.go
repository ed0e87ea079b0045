package kustomization

import (
	"fmt"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/build"
	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// FieldManager is the server-side apply field manager of the objects a
// Kustomization applies: the reference implementation's, so that clusters
// move over without conflicts.
const FieldManager = "kustomize-controller"

// BuildOptions maps the overlay fields of spec onto the options of
// build.BuildYAML. Files and NoRemoteBases are left for the caller: they
// come from the artifact and the controller's flags, not from the spec.
func BuildOptions(spec *kustomizev1.KustomizationSpec) build.Options {
	opts := build.Options{
		Components:              spec.Components,
		IgnoreMissingComponents: spec.IgnoreMissingComponents,
		NamePrefix:              spec.NamePrefix,
		NameSuffix:              spec.NameSuffix,
		TargetNamespace:         spec.TargetNamespace,
		BuildMetadata:           spec.BuildMetadata,
	}
	for _, p := range spec.Patches {
		kp := build.Patch{Patch: p.Patch}
		if t := p.Target; t != nil {
			kp.Target = &build.Selector{Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name,
				Namespace: t.Namespace, LabelSelector: t.LabelSelector, AnnotationSelector: t.AnnotationSelector}
		}
		opts.Patches = append(opts.Patches, kp)
	}
	for _, i := range spec.Images {
		opts.Images = append(opts.Images, build.Image{Name: i.Name, NewName: i.NewName, NewTag: i.NewTag, Digest: i.Digest})
	}
	if m := spec.CommonMetadata; m != nil {
		opts.CommonMetadata = &build.CommonMetadata{Labels: m.Labels, Annotations: m.Annotations}
	}
	return opts
}

// IgnoreRules compiles the rules of spec.ignore. The error for an invalid
// rule names it from the spec: "spec.ignore[1].target: ...".
func IgnoreRules(rules []kustomizev1.IgnoreRule) (ssa.IgnoreRules, error) {
	in := make([]ssa.IgnoreRule, 0, len(rules))
	for _, r := range rules {
		rule := ssa.IgnoreRule{Paths: r.Paths}
		if t := r.Target; t != nil {
			rule.Target = &ssa.Selector{Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name,
				Namespace: t.Namespace, LabelSelector: t.LabelSelector, AnnotationSelector: t.AnnotationSelector}
		}
		in = append(in, rule)
	}
	compiled, err := ssa.CompileIgnoreRules(in)
	if err != nil {
		return nil, fmt.Errorf("spec.%w", err)
	}
	return compiled, nil
}

// Owner returns the owner whose labels the controller puts on the objects
// that obj applies.
func Owner(obj *kustomizev1.Kustomization) ssa.Owner {
	return ssa.Owner{Group: kustomizev1.GroupVersion.Group, Name: obj.Name, Namespace: obj.Namespace}
}

// HealthExprs returns the health expressions of spec.healthCheckExprs (of
// a Kustomization or a HelmRelease), checked: expressions that do not
// compile are an error (see health.ValidateExprs).
func HealthExprs(checks []kustomizev1.CustomHealthCheck) ([]health.Expr, error) {
	exprs := make([]health.Expr, 0, len(checks))
	for _, e := range checks {
		exprs = append(exprs, health.Expr{APIVersion: e.APIVersion, Kind: e.Kind, Current: e.Current, InProgress: e.InProgress, Failed: e.Failed})
	}
	if err := health.ValidateExprs(exprs); err != nil {
		return nil, err
	}
	return exprs, nil
}

// ResourceInventory returns the status inventory of entries (of a
// Kustomization or a HelmRelease); never nil.
func ResourceInventory(entries []inventory.Entry) *kustomizev1.ResourceInventory {
	refs := make([]kustomizev1.ResourceRef, 0, len(entries))
	for _, e := range entries {
		refs = append(refs, kustomizev1.ResourceRef{ID: e.ID, Version: e.Version})
	}
	return &kustomizev1.ResourceInventory{Entries: refs}
}

// Inventory returns the entries of obj's status inventory; nil when the
// status has no inventory.
func Inventory(obj *kustomizev1.Kustomization) []inventory.Entry {
	return Entries(obj.Status.Inventory)
}

// Entries returns the entries of a status inventory (a Kustomization's or
// a HelmRelease's); nil for none.
func Entries(inv *kustomizev1.ResourceInventory) []inventory.Entry {
	if inv == nil {
		return nil
	}
	entries := make([]inventory.Entry, 0, len(inv.Entries))
	for _, e := range inv.Entries {
		entries = append(entries, inventory.Entry{ID: e.ID, Version: e.Version})
	}
	return entries
}
