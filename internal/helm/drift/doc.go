// Package drift finds and corrects the drift of a Helm release: objects of
// the release manifest that are missing in the cluster, or whose fields the
// manifest sets hold other values there.
//
// # How drift is found
//
// Detect runs a server-side apply dry run of each object of the manifest,
// with forced ownership, through an ssa.Manager (Manager.Plan), and
// compares the answer with the live object. An object the dry run would
// create is missing. Otherwise the object has changed when the dry-run
// result differs from the live object once metadata.managedFields,
// resourceVersion, generation and status are left out. A forced apply sets
// every field the manifest sets to the manifest's value, and leaves alone
// the fields it does not set, so:
//
//   - right after Helm applied the manifest, the answer equals the live
//     object: no drift, whichever field manager the Manager uses;
//   - a field the manifest sets that someone else changed (kubectl edit, an
//     Update by another field manager, which also takes the field's
//     ownership away from Helm) comes back in the answer: drift;
//   - a field the manifest does not set (a label another tool adds, a
//     defaulted or controller-written field) is the same in both: no drift.
//
// The comparison is of content only. Ownership is not compared: a forced
// dry run by a manager other than Helm's would always change the managed
// fields, and who owns a field with the right value is not drift.
//
// # Field managers
//
// Helm v4 applies with server-side apply as the field manager
// kube.ManagedFieldsManager (helm.sh/helm/v4/pkg/kube), which defaults to
// the program's file name. Correct applies with the Manager's field manager
// and forced ownership. When that is Helm's field manager, a correction
// leaves the ownership as Helm's own apply would. When it is another one,
// the corrected fields get a second owner: a later Helm upgrade that changes
// such a field conflicts unless it forces, and one that drops it leaves it
// in place. The controller should therefore give the Manager the same field
// manager as Helm's actions use. Detect does not depend on it.
//
// # What the manifest lacks
//
// Helm adds to every object it applies a label (app.kubernetes.io/managed-by:
// Helm) and two annotations (meta.helm.sh/release-name and
// meta.helm.sh/release-namespace) that the stored manifest does not hold;
// SetReleaseMetadata adds them to the manifest's objects, as Helm does.
// Without them, a dry run by Helm's own field manager would remove them,
// and every object would drift. The Manager's owner labels are applied too:
// use Owner, which matches the labels the helm post-renderer puts on every
// object.
//
// # Objects left out, and ignored fields
//
// Objects annotated helm.toolkit.fluxcd.io/driftDetection: disabled are
// neither checked nor corrected, and so are objects the ssa policies leave
// alone (kustomize.toolkit.fluxcd.io/ssa: Ignore or IfNotPresent).
//
// Ignore rules (the HelmRelease's spec.driftDetection.ignore, compiled with
// kustomization.IgnoreRules) remove their fields from both sides of the
// comparison, so a change there is not drift. Correct does not revert them:
// for an object that exists, each ignored field the manifest sets is
// applied with its live value (or left out when the live object has none).
// Leaving it out would not do: when Helm's field manager owns the field
// alone, an apply without it deletes it. A missing object is created from
// the manifest as it is.
//
// # Reports and secrets
//
// A Report names the drifted objects ("Deployment/apps/web changed",
// "ConfigMap/apps/cfg missing"); it never holds a diff or a value, so
// Secrets are safe in it. It keeps the manifest's objects (and the live
// objects of changed ones) for Correct; drop it once corrected.
//
// The objects given must carry their namespaces: a namespaced object
// without one is refused, as the ssa.Manager refuses it.
package drift
