// Package registry scans the tags of an image repository for an
// ImageRepository (image.toolkit.fluxcd.io/v1), keeps them on disk and
// serves them read-only over HTTP. The tags are never stored in
// Kubernetes: the status carries only lastScanResult (the revision, the
// count and the 10 greatest tags).
//
// Using it:
//
//	repo, err := registry.ParseImage(obj.Spec.Image) // *InvalidSpecError if wrong
//	status.CanonicalImageName = registry.CanonicalName(repo)
//	store, err := registry.NewStore(storagePath)
//	res, err := store.Scan(ctx, obj.Namespace, obj.Name, registry.Options{Image: obj.Spec.Image, ...})
//	snap, err := store.Open(ns, name) // then policy.Latest(snap.All()), snap.Err(), snap.Close()
//	d, err := registry.Digest(ctx, "ghcr.io/org/app:1.2.3", opts)
//	mux.Handle("/images/", registry.NewHandler(store, order))
//
// On disk, <root>/images/<namespace>/<name>/ holds tags (the tags in byte
// order, one a line, no repeats) and meta.json (the canonical image, the
// revision and the count). The revision is "sha256:" and the SHA-256 of
// the tags file, so it depends on the set of tags only, never on the
// order in which the registry listed them.
//
// Safety reasoning:
//   - Memory is bounded whatever the number of tags. The listing goes page
//     by page (the distribution spec's n parameter and Link header) and
//     each tag goes through to disk as it comes; the revision is hashed
//     on the way and only the 10 greatest tags are kept. A registry that
//     lists out of byte order is sorted on disk (runs of 10 000 tags,
//     merged). Reading (Each, Snapshot.All, the HTTP handler) streams the
//     file a line at a time.
//   - A registry cannot make a scan run or grow without end: the whole
//     scan is bounded by Options.Timeout, every response body by
//     MaxResponseBytes (an error beyond, not a cut), the number of listed
//     tags by Options.MaxTags (an error beyond, and nothing written), an
//     empty page that links to another is an error, and a tag must have
//     the distribution spec's form (so none can hold a line feed).
//   - An unchanged list costs one listing and no write: the incoming tags
//     are compared with the stored file line by line, and a temporary
//     file is only started at the first difference. A changed list
//     replaces the stored files by renames of synced files, under a lock
//     that readers take to open the two files together, so a reader never
//     sees a part of a list, nor a revision of another list. A failed scan
//     leaves the stored list as it was.
//   - Credentials: only the .dockerconfigjson entry of the repository's
//     registry host is used (internal/oci's keychain), go-containerregistry
//     sends it to that host and its token service only, and a redirected
//     request to another host or port loses its Authorization and Cookie
//     headers; a redirect from HTTPS to HTTP is refused. Plain HTTP needs
//     Options.Insecure, except to a loopback address. Error messages hold
//     no credential: the password, the tokens, the basic Authorization
//     value and the proxy's password are replaced by "***", and URLs lose
//     their userinfo and query (internal/redact).
//   - Errors are classified: *InvalidSpecError (terminal: the object or
//     its Secret must change), IsAuthError (401/403), IsNotFound (404, or
//     nothing stored), the rest transient.
//   - Paths on disk and in URLs are built only from a DNS-1123 namespace
//     and name, so no request can leave the store's folder.
package registry
