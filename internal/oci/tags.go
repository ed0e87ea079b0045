package oci

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/windlass-dev/windlass/internal/httptransport"
)

// Bounds of a tag list that is searched for a version.
const (
	// MaxTags is the most tags a repository may list.
	MaxTags = 100_000
	// MaxTagPage is the most bytes one page of the list may hold.
	MaxTagPage = 16 << 20
)

// ListTags lists the tags of repo, a page at a time: a registry that lists
// more than MaxTags tags, or sends a page larger than MaxTagPage bytes
// (one that streams forever, say), fails the list instead of filling the
// memory.
func ListTags(ctx context.Context, repo name.Repository, o Options) ([]string, error) {
	base := o.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	o.Transport = &tagPageLimit{next: base, limit: MaxTagPage}
	puller, err := remote.NewPuller(o.remote(ctx)...)
	if err != nil {
		return nil, err
	}
	lister, err := puller.Lister(ctx, repo)
	if err != nil {
		return nil, err
	}
	var tags []string
	for lister.HasNext() {
		page, err := lister.Next(ctx)
		if err != nil {
			return nil, err
		}
		if len(page.Tags) == 0 && page.Next != "" {
			return nil, fmt.Errorf("%s sent an empty page of tags that links to a next one", repo.RegistryStr())
		}
		if err := CheckNextPage(repo, page.Next); err != nil {
			return nil, err
		}
		if len(tags)+len(page.Tags) > MaxTags {
			return nil, fmt.Errorf("%s lists more than %d tags, the most that are searched", URL(repo), MaxTags)
		}
		tags = append(tags, page.Tags...)
	}
	return tags, nil
}

// CheckNextPage refuses a next page that is not on repo's registry (by
// scheme and host): go-containerregistry checks the one of a Link header,
// but follows a "next" in the page's body as it is.
func CheckNextPage(repo name.Repository, next string) error {
	if next == "" {
		return nil
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != repo.Scheme() || u.Host != repo.RegistryStr() {
		return fmt.Errorf("%s sent a page of tags that links to a next one off the registry", repo.RegistryStr())
	}
	return nil
}

// tagPageLimit bounds the body of each answer the tag listing gets: a
// next page may be at any path of the registry, not only .../tags/list.
type tagPageLimit struct {
	next  http.RoundTripper
	limit int64
}

// RoundTrip implements http.RoundTripper.
func (t *tagPageLimit) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if err := httptransport.LimitBody(resp, t.limit); err != nil {
		return nil, err
	}
	return resp, nil
}
