package oci

import (
	"context"
	"fmt"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Artifact describes one tag of a repository.
type Artifact struct {
	// Tag is the tag.
	Tag string `json:"tag"`
	// Digest is the digest of the manifest it points to.
	Digest string `json:"digest"`
	// URL is oci://HOST/REPO:TAG@sha256:HEX.
	URL string `json:"url"`
	// Revision, Source and Created are the manifest's annotations, empty
	// when it has none.
	Revision string `json:"revision,omitempty"`
	Source   string `json:"source,omitempty"`
	Created  string `json:"created,omitempty"`
}

// MaxListTags caps how many tags List describes: it fetches one manifest
// per tag.
const MaxListTags = 1000

// List describes the tags of repo, sorted by tag. A tag whose manifest is
// not an image manifest (an index, for instance) is listed with its digest
// and no annotations.
func List(ctx context.Context, repo name.Repository, o Options) ([]Artifact, error) {
	opts := o.remote(ctx)
	tags, err := ListTags(ctx, repo, o)
	if err != nil {
		return nil, o.registryError("listing the tags of "+URL(repo), err)
	}
	if len(tags) > MaxListTags {
		return nil, fmt.Errorf("%s has %d tags, more than the %d that can be listed", URL(repo), len(tags), MaxListTags)
	}
	sort.Strings(tags)
	arts := make([]Artifact, 0, len(tags))
	for _, tag := range tags {
		ref := repo.Tag(tag)
		desc, err := remote.Get(ref, opts...)
		if err != nil {
			return nil, o.registryError("reading "+URL(ref), err)
		}
		a := Artifact{Tag: tag, Digest: desc.Digest.String(), URL: URL(ref) + "@" + desc.Digest.String()}
		if desc.MediaType.IsImage() {
			img, err := desc.Image()
			if err != nil {
				return nil, o.registryError("reading "+URL(ref), err)
			}
			m, err := img.Manifest()
			if err != nil {
				return nil, o.registryError("reading the manifest of "+URL(ref), err)
			}
			a.Revision = m.Annotations[AnnotationRevision]
			a.Source = m.Annotations[AnnotationSource]
			a.Created = m.Annotations[AnnotationCreated]
		}
		arts = append(arts, a)
	}
	return arts, nil
}

// Tag points the tag newTag of ref's repository at the artifact ref, and
// returns the new tag's reference and the digest.
func Tag(ctx context.Context, ref name.Reference, newTag string, o Options) (Pushed, error) {
	opts := o.remote(ctx)
	target, err := name.NewTag(ref.Context().String()+":"+newTag, o.nameOptions()...)
	if err != nil {
		return Pushed{}, fmt.Errorf("--tag %q is not a valid tag: use letters, digits, '_', '.' and '-' (at most 128)", newTag)
	}
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return Pushed{}, o.registryError("reading "+URL(ref), err)
	}
	if err := remote.Tag(target, desc, opts...); err != nil {
		return Pushed{}, o.registryError("tagging "+URL(target), err)
	}
	return Pushed{Ref: target, Digest: desc.Digest}, nil
}
