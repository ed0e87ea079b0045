// Package provenance says where what Windlass applies comes from: what a
// source fetches, the commit its artifact was made from and the automated
// image update that made that commit. The command line (`windlass trace`)
// and the web UI show the same facts.
package provenance

import (
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/imageupdate"
)

// Field is one labelled fact; an empty Value says nothing.
type Field struct {
	Label, Value string
}

// SourceFields returns what a source fetches, by its kind: its URL and
// reference, or endpoint and bucket, or chart and version.
func SourceFields(source client.Object) []Field {
	switch src := source.(type) {
	case *sourcev1.GitRepository:
		out := []Field{{"URL", src.Spec.URL}}
		if gr := src.Spec.Reference; gr != nil {
			out = append(out, Field{"Branch", gr.Branch}, Field{"Tag", gr.Tag}, Field{"SemVer", gr.SemVer},
				Field{"Commit", gr.Commit}, Field{"Ref", gr.Name})
		}
		return out
	case *sourcev1.OCIRepository:
		out := []Field{{"URL", src.Spec.URL}}
		if or := src.Spec.Reference; or != nil {
			out = append(out, Field{"Tag", or.Tag}, Field{"SemVer", or.SemVer}, Field{"Digest", or.Digest})
		}
		return append(out, Field{"Origin", src.Status.Artifact.OriginRevision()})
	case *sourcev1.Bucket:
		return []Field{{"Endpoint", src.Spec.Endpoint}, {"Bucket", src.Spec.BucketName}, {"Prefix", src.Spec.Prefix}}
	case *sourcev1.HelmRepository:
		return []Field{{"URL", src.Spec.URL}, {"Type", src.GetType()}}
	case *sourcev1.HelmChart:
		out := []Field{{"Chart", src.Spec.Chart}}
		if src.Spec.SourceRef.Kind == sourcev1.HelmRepositoryKind {
			out = append(out, Field{"Version", src.GetVersion()})
		}
		return append(out, Field{"Source", src.Spec.SourceRef.Kind + "/" + src.Spec.SourceRef.Name})
	}
	return nil
}

// CommitFields returns who wrote the commit a GitRepository's artifact was
// made from, when, and its subject; none for other sources, or an artifact
// made before Windlass recorded them.
func CommitFields(source client.Object) []Field {
	repo, ok := source.(*sourcev1.GitRepository)
	if !ok || repo.Status.Artifact == nil {
		return nil
	}
	info, ok := git.CommitInfoOf(repo.Status.Artifact.Metadata)
	if !ok {
		return nil
	}
	out := []Field{{"Author", info.Author}}
	if !info.When.IsZero() {
		out = append(out, Field{"Committed", info.When.Format(time.RFC3339)})
	}
	return append(out, Field{"Subject", info.Subject})
}

// ImageUpdateFields returns why a GitRepository's revision changed when an
// ImageUpdateAutomation made its commit: the commit's note, which the
// artifact's metadata keeps. None for other commits and sources.
func ImageUpdateFields(source client.Object) []Field {
	repo, ok := source.(*sourcev1.GitRepository)
	if !ok || repo.Status.Artifact == nil {
		return nil
	}
	note, ok := imageupdate.ParseNote(repo.Status.Artifact.Metadata[imageupdate.NoteMetadataKey])
	if !ok {
		return nil
	}
	out := []Field{{"Updated by", "ImageUpdateAutomation/" + note.Automation}}
	for _, p := range note.Policies {
		image := p.Image
		if p.Previous != "" {
			image = p.Previous + " -> " + p.Image
		}
		out = append(out, Field{"Policy", fmt.Sprintf("%s: %s (%s)", p.Name, image, p.Reason)})
	}
	for _, c := range note.Changes {
		where := c.File
		if c.Object != "" {
			where += " " + c.Object
		}
		out = append(out, Field{"Changed", fmt.Sprintf("%s: %s -> %s", where, c.OldValue, c.NewValue)})
	}
	return out
}
