// Package ssa is the apply engine of the Kustomization API: it validates,
// applies and prunes Kubernetes objects with server-side apply (SSA).
//
// A Manager is built from a controller-runtime client, a caching REST mapper,
// a field manager (kustomize-controller for Kustomizations) and an Owner,
// whose labels (kustomize.toolkit.fluxcd.io/name and /namespace) go on every
// applied object.
//
// # Apply
//
// ApplyAllStaged applies a set of objects in three stages: (1) CRDs,
// Namespaces, ClusterRoles and ClusterRoleBindings, then a wait until the
// CRDs are established and their kinds resolve through the mapper, and the
// namespaces exist; (2) kinds ending in "Class" (StorageClass, IngressClass,
// PriorityClass, RuntimeClass, GatewayClass...); (3) the rest. Custom
// resources whose CRD comes in stage 1, and objects in a namespace that
// stage 1 creates, work in the same call.
//
// Each object is first checked with a server-side dry-run apply (Validate
// runs that check alone). When any object is refused, nothing is applied.
// The dry-run result is then compared with the live object, leaving out
// managedFields, resourceVersion, generation and status; when they are equal
// and the field manager would own exactly the fields it owns now, the
// object is not written and is reported unchanged. Otherwise it is applied
// with forced ownership, which also reverts drift: a field that
// another manager (kubectl edit, before-first-apply...) changed is taken
// back. When an earlier stage changed something, the later stages are
// checked again before they are applied.
//
// # Per-object policies
//
// Read from annotations, then labels, values compared without regard to
// case:
//
//   - kustomize.toolkit.fluxcd.io/ssa: Override (default) applies with
//     forced ownership.
//   - ssa: Merge applies without forced ownership and without the fields
//     that another field manager owns in the live object with a different
//     value. Fields no other manager owns are applied (and kept in sync);
//     fields another manager owns with the desired value are applied too,
//     which shares their ownership; fields another manager owns with another
//     value are left to that manager, so its changes stay. Merge never takes
//     a field over; a conflict that arises between the check and the apply
//     fails the apply instead.
//   - ssa: IfNotPresent creates the object when it is absent and never
//     updates it afterwards (reported skipped).
//   - ssa: Ignore, or the legacy kustomize.toolkit.fluxcd.io/reconcile:
//     disabled, skips the object. These two are honoured on the live object
//     as well, and also keep the object from being pruned.
//   - kustomize.toolkit.fluxcd.io/force: Enabled, or ApplyOptions.Force:
//     when the API server refuses a change to an immutable field (an Invalid
//     status saying "immutable", "may not change once set", "cannot be
//     changed"), the object is deleted, its deletion awaited, and it is
//     created again (reported created).
//   - kustomize.toolkit.fluxcd.io/prune: Disabled keeps the object when it
//     leaves the source.
//
// # Prune
//
// Prune deletes stale inventory entries with background propagation,
// custom resources before CRDs and namespaced objects before namespaces. It
// deletes only objects that still carry the Manager's owner labels and are
// not marked prune: disabled. A deletion the cluster refuses (an admission
// webhook, a ValidatingAdmissionPolicy) does not stop the others: the
// refused entries come back in a *PruneError as Survivors, to be kept in
// the inventory and retried. Entries of kinds no longer served (the CRD is
// gone) are dropped quietly. Delete applies an owner's deletion policy to
// its whole inventory.
//
// # Reports and secrets
//
// Every call returns a ChangeSet: one Change per object, with the actions
// created, configured, unchanged, skipped and deleted. Its String and
// Summary ("Deployment/default/app configured") never hold object data, and
// no diff is ever produced. Error messages about a Secret are rebuilt from
// the structured parts of the API status, leaving out the ones that can
// quote a value, and any of the Secret's values (and kubectl's
// last-applied-configuration annotation) that still appear are replaced by
// "[redacted]".
//
// kubectl's last-applied-configuration annotation is dropped from the
// objects before they are applied. Removing other field managers' entries
// from live objects (the reference's --override-manager cleanup) is out of
// scope: with forced ownership the fields Windlass applies are Windlass's
// anyway, and the fields it does not apply stay with their managers.
package ssa
