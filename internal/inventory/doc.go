// Package inventory records which Kubernetes objects a Kustomization (or any
// applier) owns, in the wire format of the GitOps Toolkit APIs:
// status.inventory.entries[] {id, v}.
//
// An entry's ID is "<namespace>_<name>_<group>_<kind>": the namespace is
// empty for cluster-scoped objects and the group is empty for the core API
// group. The API version is kept apart, in the entry's Version ("v"), so that
// an object served at a new version keeps its ID.
//
// # Parse rule
//
// Kubernetes forbids "_" in namespaces (DNS labels), API groups (DNS
// subdomains) and kinds (a CRD's kind must lower-case to a DNS label). Names
// are less strict: RBAC objects may be named with "_" and ":". An ID is
// therefore split at its first "_" (the namespace ends there), its last "_"
// (the kind starts there) and the "_" before that (the group starts there);
// whatever lies between is the name, underscores included. As in the
// reference format, a ":" in a name is written as "__" and read back as ":";
// a name that itself holds "__" cannot round-trip, which Kubernetes names do
// not do in practice.
//
// FromObjects builds a sorted, deduplicated inventory from objects, Diff finds
// the stale entries that a prune must delete, and Merge folds entries that
// must be kept (objects whose deletion failed) into a new inventory.
package inventory
