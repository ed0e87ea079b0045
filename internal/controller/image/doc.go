// Package image holds the reconcilers of the image.toolkit.fluxcd.io
// kinds, the "gitops controller" pattern of seed 004:
//
//   - ImageRepositoryReconciler reflects a registry into the cluster: it
//     scans an image repository's tags into the controller's tag store
//     (internal/registry, on disk, not in etcd) and reports the scan in the
//     status. A scan that finds the same tags writes nothing.
//   - ImagePolicyReconciler takes a view of those tags: it streams them
//     from the store through the policy's rule (internal/imagepolicy) and
//     writes the image it elects to status.latestRef, optionally with its
//     digest. A pin (the windlass.dev/pinned-tag annotation) elects one
//     tag until it is removed.
//   - ImageUpdateAutomationReconciler acts by committing to Git: it checks
//     out the GitRepository it names, rewrites the values marked with setter
//     comments to the images of its policies (internal/imageupdate),
//     commits with a git note that records what changed and why, and
//     pushes, never by force: a push that loses a race is applied again on
//     the new head.
//
// The tag store is also served read-only over HTTP (TagsHandler), so that
// other tools and the CLI can list a repository's tags, ordered by a
// policy.
package image
