package ssa

import (
	"context"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/parallel"
)

// ApplyOptions configure ApplyAllStaged and Validate.
type ApplyOptions struct {
	// Force recreates every object whose apply fails on an immutable field,
	// as the force annotation does for a single object.
	Force bool
	// WaitTimeout bounds the wait for stage 1 to be ready and the wait for
	// an object being recreated to be gone; DefaultWaitTimeout when zero.
	WaitTimeout time.Duration
	// BeforeWrite, when set, is called before each stage writes anything,
	// with the inventory of the objects the stage is about to create or
	// change. A caller that records them first (a write-ahead inventory)
	// can prune them later even when the process dies half-way through
	// the apply. When it fails, the stage writes nothing and
	// ApplyAllStaged returns its error.
	BeforeWrite func(ctx context.Context, entries []inventory.Entry) error
	// Fresh says that nothing of the set was applied before (the caller's
	// inventory is empty): the objects of the default policy are then
	// applied without a dry run first, one request each. Such an apply
	// does not take over fields that other managers own: an object that
	// exists with other values, or another manager's object marked
	// Ignore in the cluster, is refused with a conflict, and then read,
	// dry-run and applied as in any other apply. An object the API server
	// refuses fails alone, after the others of its stage are written, as
	// a *ValidationError whose Partial is set. Plan and Validate ignore
	// it.
	Fresh bool
}

// item is one object on its way through an apply.
type item struct {
	// given is the caller's object, kept to scrub its values from messages.
	given *unstructured.Unstructured
	// desired is the normalized copy that is applied.
	desired *unstructured.Unstructured
	id      inventory.ObjMetadata
	version string
	stage   int
	policy  Policy
	force   bool

	// Set by plan.
	deferred bool
	action   Action
	recreate bool
	live     *unstructured.Unstructured
	toApply  *unstructured.Unstructured
	// planned is the dry run's answer, for Plan.
	planned *unstructured.Unstructured
	// direct is set for an object of a Fresh apply that is applied
	// without a dry run.
	direct bool

	// Set by applyItem: the object as the run left it (the live one when
	// nothing was written), for its fingerprint.
	result *unstructured.Unstructured
}

func (it *item) gvk() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: it.id.Group, Version: it.version, Kind: it.id.Kind}
}

// setIndex records what stage 1 of a set brings, so that the objects that
// need it are checked only once it is there.
type setIndex struct {
	crdKinds   map[schema.GroupKind]bool
	namespaces map[string]bool
}

// Validate runs a server-side dry-run apply of every object, with the same
// policies, owner labels and force rules as ApplyAllStaged, and applies
// nothing. When some objects are refused it returns a *ValidationError that
// names each one and why.
//
// Objects that cannot be checked before stage 1 of the same set is applied
// (custom resources whose CRD is in the set and not yet served, objects in a
// namespace the set creates) are left out here; ApplyAllStaged checks them
// after stage 1.
func (m *Manager) Validate(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions) error {
	opts.Fresh = false
	items, idx, err := m.prepare(objs)
	if err != nil {
		return err
	}
	return m.planAll(ctx, items, idx, opts, false)
}

// ApplyAllStaged applies objs with server-side apply, taking ownership of
// conflicting fields, in three stages: (1) CustomResourceDefinitions,
// Namespaces, ClusterRoles and ClusterRoleBindings, after which it waits
// until the CRDs are established and served and the namespaces exist;
// (2) kinds whose name ends in "Class"; (3) everything else.
//
// Every object is first checked with a server-side dry run; when any is
// refused nothing is applied and a *ValidationError is returned (objects
// that need stage 1 are checked after stage 1). An object whose dry-run
// result equals the live object is not written and is reported unchanged.
// A Fresh apply skips the dry runs (see ApplyOptions.Fresh).
//
// The ChangeSet lists what happened to every object, also when an error is
// returned: it then holds the objects handled before the failure, which the
// caller should keep in its inventory. Apply failures of one stage are
// collected into an *ApplyError and stop the later stages.
func (m *Manager) ApplyAllStaged(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions) (*ChangeSet, error) {
	cs := &ChangeSet{}
	items, idx, err := m.prepare(objs)
	if err != nil {
		return cs, err
	}
	if err := m.planAll(ctx, items, idx, opts, false); err != nil {
		return cs, err
	}
	var stages [stageCount][]*item
	for _, it := range items {
		stages[it.stage] = append(stages[it.stage], it)
	}
	changed := false
	for s, stage := range stages {
		// What an earlier stage changed (a CRD's schema, a default
		// StorageClass) can change this stage's dry-run results, and
		// deferred objects were never planned: plan those again.
		var replan []*item
		for _, it := range stage {
			if it.deferred || changed {
				replan = append(replan, it)
			}
		}
		if err := m.planAll(ctx, replan, idx, opts, true); err != nil {
			return cs, err
		}
		if err := announceWrites(ctx, stage, opts); err != nil {
			return cs, err
		}
		failures := m.applyAll(ctx, stage, opts, s > 0)
		m.watchApplied(ctx, stage)
		for _, it := range stage {
			if it.result == nil && it.policy != PolicyIgnore {
				continue // not applied: its error is among the failures
			}
			cs.Entries = append(cs.Entries, Change{Object: it.id, Version: it.version, Action: it.action, Fingerprint: m.resultFingerprint(it), Live: it.result})
			changed = changed || isChange(it.action)
		}
		if len(failures) > 0 && opts.Fresh {
			return cs, &ValidationError{Failures: failures, Partial: true}
		}
		if len(failures) > 0 {
			return cs, &ApplyError{Failures: failures}
		}
		if s == 0 {
			if err := m.waitForStage(ctx, stage, waitTimeout(opts.WaitTimeout)); err != nil {
				return cs, err
			}
		}
	}
	return cs, nil
}

// watchApplied asks Options.Versions to watch the kinds of the stage's
// objects that the apply left with a version, which a later Verify asks
// about.
func (m *Manager) watchApplied(ctx context.Context, stage []*item) {
	if m.versions == nil {
		return
	}
	watched := map[schema.GroupVersionKind]bool{}
	for _, it := range stage {
		if gvk := it.gvk(); it.result != nil && !watched[gvk] {
			watched[gvk] = true
			m.versions.Watch(ctx, gvk)
		}
	}
}

// announceWrites passes the inventory of the stage's objects that will be
// written to opts.BeforeWrite.
func announceWrites(ctx context.Context, stage []*item, opts ApplyOptions) error {
	if opts.BeforeWrite == nil {
		return nil
	}
	var entries []inventory.Entry
	for _, it := range stage {
		if it.action == ActionCreated || it.action == ActionConfigured {
			entries = append(entries, inventory.Entry{ID: it.id.ID(), Version: it.version})
		}
	}
	if len(entries) == 0 {
		return nil
	}
	return opts.BeforeWrite(ctx, entries)
}

// prepare normalizes copies of objs and indexes what stage 1 brings. It
// refuses objects without identity, duplicates and unknown policies.
func (m *Manager) prepare(objs []*unstructured.Unstructured) ([]*item, setIndex, error) {
	idx := setIndex{crdKinds: map[schema.GroupKind]bool{}, namespaces: map[string]bool{}}
	items := make([]*item, 0, len(objs))
	seen := make(map[string]bool, len(objs))
	var failures []*ObjectError
	for _, obj := range objs {
		if obj == nil {
			continue
		}
		id := inventory.ObjMetadataOf(obj)
		gvk := obj.GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" || obj.GetName() == "" {
			failures = append(failures, newObjectErrorf(id, "apiVersion, kind and metadata.name are required"))
			continue
		}
		if seen[id.ID()] {
			failures = append(failures, newObjectErrorf(id, "the object appears more than once"))
			continue
		}
		seen[id.ID()] = true
		policy, err := PolicyOf(obj)
		if err != nil {
			failures = append(failures, newObjectErrorf(id, "%v", err))
			continue
		}
		it := &item{
			given:   obj,
			desired: m.normalize(obj),
			id:      id,
			version: gvk.Version,
			stage:   stageOf(id.GroupKind()),
			policy:  policy,
			force:   ForceEnabled(obj),
		}
		items = append(items, it)
		switch id.GroupKind() {
		case crdKind:
			if gk, ok := definedKind(obj); ok {
				idx.crdKinds[gk] = true
			}
		case namespaceKind:
			idx.namespaces[obj.GetName()] = true
		}
	}
	if len(failures) > 0 {
		return nil, idx, &ValidationError{Failures: failures}
	}
	return items, idx, nil
}

// normalize returns the copy of obj that is applied: without server-set
// metadata and kubectl's last-applied configuration, with the owner labels.
func (m *Manager) normalize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	u := obj.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp",
		"generation", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	if ann := u.GetAnnotations(); ann != nil {
		if _, ok := ann[LastAppliedConfigAnnotation]; ok {
			delete(ann, LastAppliedConfigAnnotation)
			if len(ann) == 0 {
				ann = nil
			}
			u.SetAnnotations(ann)
		}
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = make(map[string]string, len(m.owner))
	}
	for k, v := range m.owner {
		labels[k] = v
	}
	u.SetLabels(labels)
	return u
}

// definedKind returns the group and kind a CRD object defines.
func definedKind(crd *unstructured.Unstructured) (schema.GroupKind, bool) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	return schema.GroupKind{Group: group, Kind: kind}, kind != ""
}

// resultFingerprint returns the fingerprint of what the run left of it.
func (m *Manager) resultFingerprint(it *item) string {
	if it.policy == PolicyIgnore {
		return fingerprintIgnored
	}
	return m.Fingerprint(it.result)
}

// planAll plans every item, several at once, and collects the refusals in
// the items' order. final means stage 1 is in place, so nothing may be
// deferred any more.
func (m *Manager) planAll(ctx context.Context, items []*item, idx setIndex, opts ApplyOptions, final bool) error {
	failures := forEach(ctx, items, func(it *item) *ObjectError { return m.plan(ctx, it, idx, opts, final) })
	if len(failures) > 0 {
		return &ValidationError{Failures: failures}
	}
	return nil
}

// applyAll carries out the plans of items and returns the failures in the
// items' order. With parallel, several are written at once; without, one
// after the other in their order, as stage 1 needs: of two CRDs that claim
// the same names, the first one wins.
func (m *Manager) applyAll(ctx context.Context, items []*item, opts ApplyOptions, parallel bool) []*ObjectError {
	apply := func(it *item) *ObjectError { return m.applyItem(ctx, it, opts) }
	if parallel {
		return forEach(ctx, items, apply)
	}
	var failures []*ObjectError
	for _, it := range items {
		if oe := apply(it); oe != nil {
			failures = append(failures, oe)
		}
	}
	return failures
}

// requestConcurrency bounds the requests that one plan or apply of a set
// sends at once: objects are independent within a stage, and a set's
// requests in flight together cost the API server what a few sets applied
// one after another would.
const requestConcurrency = 8

// forEach calls f for every item, at most requestConcurrency at once, and
// returns the non-nil results in the items' order. An item whose call
// panicked fails with an error that says so.
func forEach(ctx context.Context, items []*item, f func(*item) *ObjectError) []*ObjectError {
	results := make([]*ObjectError, len(items))
	panics := parallel.Do(ctx, len(items), requestConcurrency, func(i int) { results[i] = f(items[i]) })
	for _, p := range panics {
		results[p.Index] = newObjectError(items[p.Index].id, items[p.Index].given, p)
	}
	var failures []*ObjectError
	for _, oe := range results {
		if oe != nil {
			failures = append(failures, oe)
		}
	}
	return failures
}

// plan decides what to do with one item: it runs the dry-run apply, reads
// the live object and compares. It may defer an item that needs stage 1.
//
// An object applied with the default policy is dry-run first: when the
// answer has no resourceVersion the object does not exist and is created,
// so a new object costs no read. The other policies need the live object
// to shape what they apply, and read it first.
func (m *Manager) plan(ctx context.Context, it *item, idx setIndex, opts ApplyOptions, final bool) *ObjectError {
	it.deferred, it.recreate, it.live, it.toApply, it.action, it.result, it.planned, it.direct = false, false, nil, nil, "", nil, nil, false
	if it.policy == PolicyIgnore {
		it.action = ActionSkipped
		return nil
	}
	needsStage1 := !final && (idx.crdKinds[it.id.GroupKind()] || idx.namespaces[it.desired.GetNamespace()])
	if oe := m.resolveScope(it, needsStage1); oe != nil || it.deferred {
		return oe
	}
	it.toApply = it.desired
	if opts.Fresh && it.policy == PolicyOverride {
		it.direct, it.action = true, ActionCreated
		return nil
	}
	liveRead := it.policy != PolicyOverride
	if liveRead {
		if oe := m.shapeFromLive(ctx, it); oe != nil || it.action == ActionSkipped {
			return oe
		}
	}
	dryRun := it.toApply.DeepCopy()
	dryRunErr := m.serverApply(ctx, dryRun, true, it.policy != PolicyMerge)
	if !liveRead && (dryRunErr != nil || dryRun.GetResourceVersion() != "") {
		// The object may exist: its live state decides. When the read
		// fails too, the dry run's refusal is the one to report.
		if oe := m.readLive(ctx, it); oe != nil {
			if dryRunErr != nil {
				return newObjectError(it.id, it.given, dryRunErr)
			}
			return oe
		}
		if it.live != nil && ignored(it.live) {
			it.action = ActionSkipped
			return nil
		}
	}
	if dryRunErr != nil {
		switch {
		case it.live != nil && isImmutableError(dryRunErr) && (opts.Force || it.force):
			it.recreate = true
			it.action = ActionCreated
			return nil
		case it.live == nil && apierrors.IsNotFound(dryRunErr) && needsStage1:
			it.deferred = true
			return nil
		}
		return newObjectError(it.id, it.given, dryRunErr)
	}
	it.planned = dryRun
	switch {
	case it.live == nil:
		it.action = ActionCreated
	case sameObject(it.live, dryRun, m.fieldManager):
		it.action = ActionUnchanged
	default:
		it.action = ActionConfigured
	}
	return nil
}

// resolveScope checks the item's kind against the RESTMapper: a namespaced
// object needs a namespace, a cluster-scoped one loses it. A kind not
// served yet defers an item that stage 1 brings it for.
func (m *Manager) resolveScope(it *item, needsStage1 bool) *ObjectError {
	mapping, err := m.mapper.RESTMapping(it.id.GroupKind(), it.version)
	if err != nil {
		if meta.IsNoMatchError(err) && needsStage1 {
			it.deferred = true
			return nil
		}
		return newObjectError(it.id, it.given, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if it.desired.GetNamespace() == "" {
			return newObjectErrorf(it.id, "%s is namespaced and the object has no namespace", it.id.Kind)
		}
	} else if it.desired.GetNamespace() != "" {
		it.desired.SetNamespace("")
		it.id.Namespace = ""
	}
	return nil
}

// shapeFromLive reads the live object for the policies that need it before
// the dry run: an object ignored in the cluster, or present under
// IfNotPresent, is skipped; Merge leaves out the fields other managers own.
func (m *Manager) shapeFromLive(ctx context.Context, it *item) *ObjectError {
	if oe := m.readLive(ctx, it); oe != nil {
		return oe
	}
	if it.live == nil {
		return nil
	}
	if ignored(it.live) || it.policy == PolicyIfNotPresent {
		it.action = ActionSkipped
		return nil
	}
	if it.policy == PolicyMerge {
		stripped, err := withoutForeignFields(it.desired, it.live, m.fieldManager)
		if err != nil {
			return newObjectErrorf(it.id, "reading the managed fields: %v", err)
		}
		it.toApply = stripped
	}
	return nil
}

// readLive reads the live object of it into it.live; nil when there is
// none.
func (m *Manager) readLive(ctx context.Context, it *item) *ObjectError {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(it.gvk())
	err := m.client.Get(ctx, client.ObjectKey{Namespace: it.desired.GetNamespace(), Name: it.desired.GetName()}, live)
	switch {
	case apierrors.IsNotFound(err):
		it.live = nil
	case err != nil:
		return newObjectError(it.id, it.given, err)
	default:
		it.live = live
	}
	return nil
}

// applyItem carries out the plan of one item and sets its result.
func (m *Manager) applyItem(ctx context.Context, it *item, opts ApplyOptions) *ObjectError {
	if it.action == ActionUnchanged || it.action == ActionSkipped {
		it.result = it.live
		return nil
	}
	if it.recreate {
		return m.recreate(ctx, it, opts)
	}
	if it.direct {
		return m.applyDirect(ctx, it, opts)
	}
	applied := it.toApply.DeepCopy()
	err := m.serverApply(ctx, applied, false, it.policy != PolicyMerge)
	if err != nil && it.live != nil && isImmutableError(err) && (opts.Force || it.force) {
		return m.recreate(ctx, it, opts)
	}
	if err != nil {
		return newObjectError(it.id, it.given, err)
	}
	it.result = applied
	return nil
}

// applyDirect applies an object of a Fresh apply without a dry run and
// without taking over other managers' fields. When the server answers with
// a conflict (the object exists, and another manager owns what would
// change) or an immutable field, the object is planned and applied as in
// any other apply: read, dry-run, then applied, forced.
func (m *Manager) applyDirect(ctx context.Context, it *item, opts ApplyOptions) *ObjectError {
	applied := it.toApply.DeepCopy()
	err := m.serverApply(ctx, applied, false, false)
	switch {
	case err == nil:
		it.result, it.action = applied, ActionConfigured
		if createdBy(applied, m.fieldManager) {
			it.action = ActionCreated
		}
		return nil
	case !apierrors.IsConflict(err) && !isImmutableError(err):
		return newObjectError(it.id, it.given, err)
	}
	opts.Fresh = false
	if oe := m.plan(ctx, it, setIndex{}, opts, true); oe != nil {
		return oe
	}
	return m.applyItem(ctx, it, opts)
}

// createdBy reports whether obj, as an apply answered it, has no field
// managed by anyone but manager: the apply created it (or a run of the
// same manager did, and nobody touched it since).
func createdBy(obj *unstructured.Unstructured, manager string) bool {
	for _, e := range managedEntries(obj) {
		if e.Manager != manager {
			return false
		}
	}
	return true
}

// recreate deletes the live object, waits until it is gone and applies the
// desired one in its place.
func (m *Manager) recreate(ctx context.Context, it *item, opts ApplyOptions) *ObjectError {
	uid := it.live.GetUID()
	err := m.client.Delete(ctx, it.live,
		client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return newObjectError(it.id, it.given, err)
	}
	if oe := m.waitGone(ctx, it.id, it.live, waitTimeout(opts.WaitTimeout)); oe != nil {
		return oe
	}
	applied := it.desired.DeepCopy()
	if err := m.serverApply(ctx, applied, false, true); err != nil {
		return newObjectError(it.id, it.given, err)
	}
	it.action, it.result = ActionCreated, applied
	return nil
}

// serverApply sends obj as a server-side apply; the server's answer is
// written into obj.
func (m *Manager) serverApply(ctx context.Context, obj *unstructured.Unstructured, dryRun, force bool) error {
	opts := []client.ApplyOption{client.FieldOwner(m.fieldManager)}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	return m.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), opts...)
}

// immutableMarkers are the phrases with which the API server refuses a
// change to a field that cannot change.
var immutableMarkers = []string{"immutable", "may not change once set", "cannot be changed", "cannot change"}

// isImmutableError reports whether err refuses a change to an immutable
// field: an Invalid status whose message says so.
func isImmutableError(err error) bool {
	if !apierrors.IsInvalid(err) {
		return false
	}
	msg := strings.ToLower(err.Error())
	for _, marker := range immutableMarkers {
		if strings.Contains(msg, marker) {
			return true
		}
	}
	return false
}

// The kinds that stage 1 holds and waits for.
var (
	crdKind       = schema.GroupKind{Group: apiextensionsv1.GroupName, Kind: "CustomResourceDefinition"}
	namespaceKind = schema.GroupKind{Kind: "Namespace"}
)
