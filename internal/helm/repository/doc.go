// Package repository is the domain logic of HelmRepository and of fetching
// charts from it, without controller plumbing.
//
// An HTTP chart repository serves index.yaml and packaged charts.
// FetchIndex downloads the index (size- and time-limited), ParseIndex reads
// it into an Index that keeps only what chart selection and download need
// (name, version, appVersion, deprecation, URLs and digest of every chart
// version, sorted newest first), Normalise writes that Index in a
// deterministic form (JSON, which is YAML) so that equal content gives an
// equal Revision, and Index.Get picks the highest version in a semver range.
// DownloadChart fetches one chart version's .tgz. An IndexCache shares one
// parsed Index among the many HelmCharts of a repository, bounded in
// entries and in bytes (Index.MemorySize, an estimate measured against the
// heap).
//
// Credentials go only to the origin (scheme, host and port) of the
// repository's URL: not to a chart URL on another host that the index
// names, and not to a host that a response redirects to, unless
// ClientOptions.PassCredentials is set. Error texts never hold a password
// or a URL's userinfo or query.
//
// OCI repositories (oci://) hold one chart per OCI repository, tagged with
// the chart's version ('+' written '_'); PullOCIChart selects a version by
// semver range and pulls its chart layer through internal/oci.
package repository
