// Package source holds the reconcilers of the source.toolkit.fluxcd.io kinds:
// each fetches what its object declares, checks that it is authentic,
// packages it as a tar.gz artifact in storage and reports through status
// conditions and events.
package source
