// Package kustomize holds the Kustomization reconciler: the pipeline that
// keeps a cluster equal to what a source declares. In order: wait for the
// dependencies, fetch the source's artifact, generate a kustomization when
// the path has none, build, substitute variables, decrypt secrets, validate
// with a server-side dry run, apply in stages, prune what left the source,
// check health, and report.
package kustomize
