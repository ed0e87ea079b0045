// Package artifact stores the artifacts that sources produce and serves them
// read-only over HTTP.
//
// An artifact is a file at <kind>/<namespace>/<name>/<file> under the storage
// base path, kind lowercased, described by a meta.Artifact whose URL points
// at this package's HTTP handler. Files are written atomically (a temporary
// file in the same directory, synced and renamed into place), so a reader
// never sees a partial artifact under its final name, and their sha256 digest
// is recorded so that consumers and the storage itself can detect tampering.
//
// Concurrency: Storage methods do not lock. A controller that writes or
// deletes an object's artifacts holds Lock for that object's directory
// around the operation; the lock is in-process only, which suffices because
// a single leader-elected controller process owns the storage.
package artifact
