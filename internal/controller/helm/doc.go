// Package helm holds the helm controller: the reconciler of HelmRelease.
// A run finds the release's chart (from the HelmChart it makes out of
// spec.chart, or the source named by spec.chartRef), waits for its
// dependencies, composes the values, then installs, upgrades, tests and
// remediates the Helm release with the Helm SDK, and finally detects and
// corrects drift between the release manifest and the cluster.
package helm
