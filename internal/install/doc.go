// Package install installs Windlass into a cluster and takes it out again.
//
// Render builds the manifests of an installation (CRDs, Namespace, RBAC,
// the controllers' Deployments, the Services of the artifacts, the webhook
// receiver, the event endpoint and the image tags, and a NetworkPolicy)
// from the kustomizations embedded in package config, through the
// kustomize API on an in-memory file system, with the options applied on
// top: the controllers, the image's registry and tag, the namespace, one
// Deployment for all controllers or one each, the NetworkPolicy or not.
//
// Apply applies them with server-side apply (field manager "windlass"),
// CRDs and the Namespace first and waited for, through internal/ssa; it is
// idempotent. WaitAvailable waits for the Deployments and says which is
// not Available and why. Uninstall removes an installation without
// pruning what its Kustomizations applied, and the checks say whether a
// cluster can take an installation and whether one works.
//
// Every object carries the labels app.kubernetes.io/part-of=windlass,
// app.kubernetes.io/version, install.windlass.dev/name=windlass and
// install.windlass.dev/namespace=<namespace>; the names of the
// cluster-scoped RBAC objects end with the namespace, so that
// installations in two namespaces do not share them.
package install
