// Package imageupdate rewrites the image references marked in the YAML files
// of a Git checkout, as ImageUpdateAutomation (image.toolkit.fluxcd.io/v1)
// does with the Setters strategy, and renders the commit message.
//
// # Markers
//
// A setter marker is a YAML line comment after a scalar value:
//
//	image: ghcr.io/org/app:1.0.0 # {"$imagepolicy": "apps:podinfo"}
//	tag: 1.0.0 # {"$imagepolicy": "apps:podinfo:tag"}
//
// The reference is "<namespace>:<policy>" and sets the full reference
// (name:tag, or name:tag@digest when the policy's latest ref has a digest);
// the suffixes ":name", ":tag" and ":digest" set that part only. Markers work
// in any YAML: workload images, list items, HelmRelease values, the images of
// a kustomization.yaml. White space around and inside the JSON is free; the
// JSON is strict (one object, the single key "$imagepolicy", a string value).
// A comment that stands alone on its line (a commented-out line) is no
// marker.
//
// # Safety
//
// ApplySetters (see its doc) replaces only the bytes of the marked scalar on
// the marked line. It finds them from the parser's node positions (yaml.v3),
// then proves they are the whole value by decoding them again and by finding
// the marker comment right after them; when that fails the marker is reported
// rather than guessed at. The written value keeps the old quoting style and
// is checked against the image reference grammar, so it needs no escaping.
// Everything else (comments, order, indentation, CRLF line ends) is kept.
//
// A marker that cannot be applied is never skipped silently: invalid JSON, a
// bad reference or suffix, a marker on a block scalar, flow collection, alias
// or key without value, a marker the parser attached to no value (an empty
// list item), a file holding a marker that is not valid YAML, and a selected
// policy whose latest ref lacks the part a marker asks for. ApplySetters reads
// and checks every file before writing any, and writes nothing when one
// marker fails (*MalformedMarkersError lists them all).
//
// The update path must be relative and stay inside the root; it may not go
// through a symbolic link. The walk follows no symbolic link (a link could
// lead out of the checkout or into another application's files), skips .git,
// and skips files over MaxFileSize. Files are opened without following a
// link and written through a temporary file renamed over the old one, which
// keeps their mode and never writes through a link.
//
// # Commit messages
//
// RenderMessage runs a text/template over TemplateData: .AutomationObject,
// .Changed (.FileChanges: file → object → []Change, .Objects: object →
// []Change) and .Values. The removed field .Updated fails before execution
// with ErrRemovedTemplateField. Output is cut at MaxMessageBytes.
package imageupdate
