// Package postrender is the post-renderer of a HelmRelease: it changes the
// manifests Helm rendered before Helm applies them and records them in the
// release.
//
// New builds, from the HelmRelease, a chain of steps that run in this
// order on the whole stream of documents Helm passes (hooks included, in
// Helm 4's combined strategy):
//
//  1. each spec.postRenderers[i].kustomize, in order: kustomize runs with
//     the stream as its only resource and the entry's patches (strategic
//     merge, or JSON 6902 with a target selector) and images (name,
//     newName, newTag, digest);
//  2. spec.commonMetadata: its labels and annotations are set on every
//     object's metadata (never on selectors or pod templates), replacing
//     values of the same keys;
//  3. the owner labels helm.toolkit.fluxcd.io/name and
//     helm.toolkit.fluxcd.io/namespace, the HelmRelease's name and
//     namespace, on every object; they win over any other source.
//
// # Order and annotations
//
// The output holds the documents in the order of the input (kustomize
// runs without reordering), and every annotation an object had stays
// unless a patch removes it: Helm's hook annotations (helm.sh/hook...) and
// the file-name annotation that Helm uses to split the stream back into
// templates are kept. kustomize's own bookkeeping annotations are removed.
//
// # kustomize
//
// kustomize runs on an in-memory file system that holds only the stream and
// the generated kustomization, with builtin plugins only and no loading of
// other files, so a patch cannot read anything else. kustomize keeps
// process-wide state, so its runs take the lock of internal/build
// (build.Exclusively), shared with every other kustomize run of the
// process. Without kustomize entries, the chain does not run kustomize at
// all, and a stream that holds the same object twice (as a hook and a
// template), or an object with only a generateName, is fine; kustomize
// refuses both.
//
// # Digests
//
// Digest and CommonMetadataDigest are the status.observedPostRenderersDigest
// and status.observedCommonMetadataDigest of a HelmRelease: "sha256:<hex>"
// of the JSON encoding of spec.postRenderers (or spec.commonMetadata),
// followed by a newline, as the reference writes them, and "" when the
// field is not set.
package postrender
