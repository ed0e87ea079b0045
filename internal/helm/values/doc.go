// Package values composes the values of a HelmRelease: the documents that
// spec.valuesFrom names, in list order, then spec.values on top.
//
// # Composition
//
// Each spec.valuesFrom entry names a ConfigMap or a Secret in the
// HelmRelease's namespace and a data key in it (values.yaml by default).
//
//   - Without targetPath the key holds a YAML document that must decode to a
//     map (an empty document is an empty map). It is merged over what came
//     before: maps merge key by key, recursively; anything else (a scalar, a
//     list, null) in the later document replaces the earlier value.
//   - With targetPath the key holds one value, which is set at that path in
//     Helm's --set syntax (a.b[0].c, with "\." for a dot inside a key). The
//     whole value is set, commas, equal signs and braces included: it is never
//     split into several values or read as a {a,b} list. A value wrapped in
//     single or double quotes is set as the string inside the quotes;
//     otherwise it is typed as --set types it (true, false, null, and
//     integers without a leading zero), everything else staying a string.
//
// spec.values is merged last, the same way.
//
// A missing object or key fails with a *NotFoundError, which the controller
// may retry (the user may still create it), unless the entry is optional, in
// which case the entry is skipped. A document that is too large (more than
// MaxDocumentSize bytes), is not YAML, or does not decode to a map, and a
// targetPath that --set cannot use, fail with an *InvalidError, which no
// retry fixes. Other read failures are returned wrapped as they are.
//
// Errors name the kind, namespace, name and key of the entry, never its
// content: the parser's message is left out for a Secret's document, except
// the line number it points at.
//
// # Digest
//
// Digest returns "sha256:<hex>" of the values' JSON encoding. encoding/json
// writes map keys sorted, so equal values give equal digests whatever the
// order they were built in; this is the config digest of the release
// package, and of status.lastAttemptedConfigDigest.
package values
