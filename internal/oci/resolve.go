package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// MaxManifestSize caps the size of a manifest that GetManifest (and
// Resolve, when it falls back to GET) reads: an artifact's manifest is a
// few hundred bytes.
const MaxManifestSize = 4 << 20

// manifestAccept is the Accept header of manifest requests: the image
// manifests and the indexes, so that an index is recognised and refused
// rather than mistaken for a missing manifest.
var manifestAccept = strings.Join([]string{
	string(types.OCIManifestSchema1), string(types.DockerManifestSchema2),
	string(types.OCIImageIndex), string(types.DockerManifestList),
}, ",")

// Resolve returns the digest of the manifest that ref (a tag or a digest)
// points to, with a HEAD request that downloads no manifest and no blob.
// When the registry answers HEAD with a status that says little (404, 405
// and the like, HEAD responses have no body) or without a digest, it asks
// again with a GET, size-limited, and returns the sha256 of the manifest.
func Resolve(ctx context.Context, ref name.Reference, o Options) (v1.Hash, error) {
	o, err := o.withAuth(ctx, ref.Context())
	if err != nil {
		return v1.Hash{}, err
	}
	desc, headErr := remote.Head(ref, o.remote(ctx)...)
	if headErr == nil {
		return desc.Digest, nil
	}
	what := "resolving " + URL(ref)
	if !worthGet(ctx, headErr) {
		return v1.Hash{}, o.registryError(what, headErr)
	}
	raw, err := o.fetchManifest(ctx, ref, what)
	if err != nil {
		return v1.Hash{}, err
	}
	return raw.digest, nil
}

// worthGet tells whether a failed HEAD request may succeed, or fail with a
// more useful message, as a GET: not after a refusal of the credentials, a
// rate limit, a server error or a network failure.
func worthGet(ctx context.Context, err error) bool {
	var uerr *url.Error
	if ctx.Err() != nil || errors.As(err, &uerr) {
		return false
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests:
			return false
		}
		return terr.StatusCode < http.StatusInternalServerError
	}
	return true
}

// GetManifest returns the image manifest at ref, read with a GET of at
// most MaxManifestSize bytes whose sha256 must be ref's digest. It refuses
// an image index (an artifact is one image manifest) and the Docker schema
// 1 format.
func GetManifest(ctx context.Context, ref name.Digest, o Options) (*v1.Manifest, error) {
	o, err := o.withAuth(ctx, ref.Context())
	if err != nil {
		return nil, err
	}
	raw, err := o.fetchManifest(ctx, ref, "reading the manifest of "+URL(ref))
	if err != nil {
		return nil, err
	}
	return raw.imageManifest(URL(ref))
}

// rawManifest is a manifest as the registry sent it.
type rawManifest struct {
	body      []byte
	mediaType types.MediaType
	digest    v1.Hash
	// hasManifests is set when the body has a "manifests" list, as an
	// index has.
	hasManifests bool
}

// fetchManifest GETs the manifest ref points to; what says what failed in
// the errors. When ref is a digest, the body must hash to it.
func (o Options) fetchManifest(ctx context.Context, ref name.Reference, what string) (rawManifest, error) {
	client, err := o.client(ctx, ref.Context())
	if err != nil {
		return rawManifest{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint(ref.Context(), "manifests", ref.Identifier()), nil)
	if err != nil {
		return rawManifest{}, o.registryError(what, err)
	}
	req.Header.Set("Accept", manifestAccept)
	resp, err := client.Do(req)
	if err != nil {
		return rawManifest{}, o.registryError(what, err)
	}
	defer resp.Body.Close()
	if err := transport.CheckError(resp, http.StatusOK); err != nil {
		return rawManifest{}, o.registryError(what, err)
	}
	body, err := readManifest(resp)
	if err != nil {
		return rawManifest{}, fmt.Errorf("%s: %w", what, err)
	}
	raw := parseRawManifest(body, resp.Header.Get("Content-Type"))
	if d, ok := ref.(name.Digest); ok && raw.digest.String() != d.DigestStr() {
		return rawManifest{}, fmt.Errorf("%s: the registry sent a manifest of digest %s: %w", what, raw.digest, ErrDigestMismatch)
	}
	return raw, nil
}

// readManifest reads a manifest body of at most MaxManifestSize bytes.
func readManifest(resp *http.Response) ([]byte, error) {
	tooLarge := fmt.Errorf("the manifest is %w of %d bytes", ErrTooLarge, MaxManifestSize)
	if resp.ContentLength > MaxManifestSize {
		return nil, tooLarge
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxManifestSize+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("the manifest could not be read: %s", redact(firstLine(err)))
	case len(body) > MaxManifestSize:
		return nil, tooLarge
	}
	return body, nil
}

// parseRawManifest returns the digest and media type of body: the media
// type it declares, else the Content-Type the registry sent.
func parseRawManifest(body []byte, contentType string) rawManifest {
	sum := sha256.Sum256(body)
	raw := rawManifest{body: body, digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}}
	var head struct {
		MediaType types.MediaType `json:"mediaType"`
		Manifests json.RawMessage `json:"manifests"`
	}
	_ = json.Unmarshal(body, &head) // an invalid body is refused by imageManifest
	raw.mediaType, raw.hasManifests = head.MediaType, head.Manifests != nil
	if raw.mediaType == "" {
		mt, _, _ := mime.ParseMediaType(contentType)
		raw.mediaType = types.MediaType(mt)
	}
	return raw
}

// imageManifest parses raw as an image manifest, refusing an index and
// the schema 1 format; url names the artifact in errors.
func (raw rawManifest) imageManifest(url string) (*v1.Manifest, error) {
	switch {
	case raw.mediaType.IsIndex() || raw.hasManifests:
		return nil, fmt.Errorf("%s is an image index, not an artifact: give the digest of an artifact's manifest "+
			"(one pushed with windlass push, for instance)", url)
	case raw.mediaType.IsSchema1():
		return nil, fmt.Errorf("%s is a Docker schema 1 image, not an artifact: push it again as an OCI artifact", url)
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw.body))
	if err != nil {
		return nil, fmt.Errorf("the manifest of %s is not a valid image manifest: %s", url, firstLine(err))
	}
	return m, nil
}

// LatestSemverTag lists the tags of repo and returns the one that
// SelectSemverTag selects for constraint and filter.
func LatestSemverTag(ctx context.Context, repo name.Repository, constraint, filter string, o Options) (string, error) {
	sel, err := newSemverSelector(constraint, filter)
	if err != nil {
		return "", err
	}
	o, err = o.withAuth(ctx, repo)
	if err != nil {
		return "", err
	}
	tags, err := ListTags(ctx, repo, o)
	if err != nil {
		return "", o.registryError("listing the tags of "+URL(repo), err)
	}
	tag, err := sel.pick(tags)
	if err != nil {
		return "", fmt.Errorf("%s: %w", URL(repo), err)
	}
	return tag, nil
}

// SelectSemverTag returns the highest of tags that parses as a semantic
// version (a leading "v" is allowed), satisfies the semver constraint (such
// as ">=1.0.0 <2.0.0"; pre-releases only match a constraint that names
// one) and, when filter is not empty, matches the regular expression
// filter. Of equal versions ("1.0.0" and "v1.0.0"), the first in byte
// order wins.
func SelectSemverTag(tags []string, constraint, filter string) (string, error) {
	sel, err := newSemverSelector(constraint, filter)
	if err != nil {
		return "", err
	}
	return sel.pick(tags)
}

// semverSelector selects a tag by semver constraint and tag filter.
type semverSelector struct {
	constraint string
	filter     string
	versions   *semver.Constraints
	pattern    *regexp.Regexp
}

// newSemverSelector parses constraint and filter.
func newSemverSelector(constraint, filter string) (*semverSelector, error) {
	if strings.TrimSpace(constraint) == "" {
		return nil, errors.New(`the semver constraint is empty: write a range such as ">=1.0.0 <2.0.0"`)
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return nil, fmt.Errorf("semver constraint %q is not valid (%s): write a range such as \">=1.0.0 <2.0.0\"",
			constraint, firstLine(err))
	}
	s := &semverSelector{constraint: constraint, filter: filter, versions: c}
	if filter != "" {
		if s.pattern, err = regexp.Compile(filter); err != nil {
			return nil, fmt.Errorf("tag filter %q is not a valid regular expression: %s", filter, firstLine(err))
		}
	}
	return s, nil
}

// pick returns the highest matching tag.
func (s *semverSelector) pick(tags []string) (string, error) {
	var best *semver.Version
	var bestTag string
	for _, tag := range tags {
		if s.pattern != nil && !s.pattern.MatchString(tag) {
			continue
		}
		v, err := semver.NewVersion(tag)
		if err != nil || !s.versions.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(best) || (v.Equal(best) && tag < bestTag) {
			best, bestTag = v, tag
		}
	}
	if best == nil {
		return "", s.noMatch(len(tags))
	}
	return bestTag, nil
}

// noMatch is the error of a selection that found no tag.
func (s *semverSelector) noMatch(count int) error {
	filter := ""
	if s.filter != "" {
		filter = fmt.Sprintf(" and the filter %q", s.filter)
	}
	return fmt.Errorf("no tag matches the semver constraint %q%s (among %d tags)", s.constraint, filter, count)
}

// firstLine returns the first line of err's message.
func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}
