package main

import (
	"context"
	"fmt"
	"path/filepath"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// The kinds of source a run can serve its applications from (-source).
const (
	// SourceGit serves them from a loopback git server, with
	// GitRepositories (in either layout).
	SourceGit = "git"
	// SourceOCI pushes each application as an artifact of its own to an
	// in-process OCI registry, with an OCIRepository each.
	SourceOCI = "oci"
	// SourceBucket puts each application under a prefix of one bucket of a
	// versitygw S3 server, with a Bucket each.
	SourceBucket = "bucket"
)

// sourceKit is the server of one kind of source and what a run needs of
// it: the source objects that point at it, the revision each serves, a
// change to application 0, and the number of content downloads it served.
type sourceKit interface {
	// Kind is the source kind: GitRepository, OCIRepository, Bucket or
	// HelmRepository.
	Kind() string
	// NewObject returns an empty object of the kind.
	NewObject() client.Object
	// NewList returns an empty list of the kind.
	NewList() client.ObjectList
	// Prepare creates in namespace ns the objects the sources need besides
	// themselves (their credentials); it is not measured.
	Prepare(ctx context.Context, c client.Client, ns string) error
	// Sources returns the source objects of the run in namespace ns,
	// sorted by name.
	Sources(ns string) []client.Object
	// SourceName is the name of the source of application i.
	SourceName(i int) string
	// AppPath is the folder of application i in its source's artifact.
	AppPath(i int) string
	// Heads returns the revision each source serves now, by source name:
	// the part of the artifact revision after its last colon (a commit or
	// a digest).
	Heads() (map[string]string, error)
	// Change writes revision 2 of application 0 to its source and returns
	// the revision (as Heads does) the source serves then.
	Change(ctx context.Context) (string, error)
	// Downloads returns the number of content downloads the server has
	// served so far, by what was downloaded (see the kits).
	Downloads() map[string]int64
	// Server describes the server, for the table.
	Server() string
	// Close stops the server.
	Close()
}

// startSources starts the server of cfg.Source in folder dir and writes
// the first revision of every application to it (for SourceHelm, the one
// chart every release installs).
func startSources(ctx context.Context, cfg Config, dir string) (sourceKit, error) {
	if cfg.Image {
		return startImageKit(ctx, cfg, filepath.Join(dir, "image"))
	}
	switch cfg.Source {
	case SourceOCI:
		return startOCIKit(ctx, cfg.N, filepath.Join(dir, "oci"))
	case SourceBucket:
		return startBucketKit(ctx, cfg.N, filepath.Join(dir, "s3"))
	case SourceHelm:
		return startHelmKit(filepath.Join(dir, "charts"))
	}
	return startGitKit(ctx, cfg, filepath.Join(dir, "git"))
}

// sum adds up counts.
func sum(counts map[string]int64) int64 {
	var n int64
	for _, v := range counts {
		n += v
	}
	return n
}

// countsDelta returns after minus before, for every key of after.
func countsDelta(before, after map[string]int64) map[string]int64 {
	d := make(map[string]int64, len(after))
	for k, v := range after {
		d[k] = v - before[k]
	}
	return d
}

// hasArtifact reports whether a source has an artifact.
func hasArtifact(obj client.Object) bool {
	a, ok := obj.(interface{ GetArtifact() *meta.Artifact })
	return ok && a.GetArtifact() != nil
}

// describeSource summarises a source's Ready condition and the last
// request it handled.
func describeSource(obj client.Object) string {
	s := "no Ready condition"
	if o, ok := obj.(interface{ GetConditions() []metav1.Condition }); ok {
		if c := apimeta.FindStatusCondition(o.GetConditions(), meta.ReadyCondition); c != nil {
			s = fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return s + ", handled " + lastHandled(obj)
}

// lastHandled returns the status.lastHandledReconcileAt of a source, a
// Kustomization or a HelmRelease.
func lastHandled(obj client.Object) string {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		return o.Status.LastHandledReconcileAt
	case *sourcev1.GitRepository:
		return o.Status.LastHandledReconcileAt
	case *sourcev1.OCIRepository:
		return o.Status.LastHandledReconcileAt
	case *sourcev1.Bucket:
		return o.Status.LastHandledReconcileAt
	case *sourcev1.HelmRepository:
		return o.Status.LastHandledReconcileAt
	case *helmv2.HelmRelease:
		return o.Status.LastHandledReconcileAt
	}
	return ""
}
