package repository

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/windlass-dev/windlass/internal/oci"
)

// Media types of a Helm chart in an OCI registry.
const (
	// OCIConfigMediaType is the media type of the config blob, the chart's
	// metadata as JSON.
	OCIConfigMediaType = "application/vnd.cncf.helm.config.v1+json"
	// OCIChartMediaType is the media type of the layer that holds the
	// packaged chart.
	OCIChartMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// OCIChart is a version of a chart in an OCI repository, resolved to the
// digest of its manifest.
type OCIChart struct {
	// Version is the chart's version (with '+', which tags write '_').
	Version string
	// Digest is the manifest's, "sha256:<hex>".
	Digest string
	ref    name.Digest
}

// ResolveOCIChart resolves chart name of the OCI repository at repoURL
// (oci://host/path; the chart is at oci://host/path/name) to the digest of
// the highest version whose tag satisfies versionRange ("" means "*"), or,
// for an exact version, of its tag without listing the tags. It downloads
// nothing: a HEAD request resolves the tag.
func ResolveOCIChart(ctx context.Context, repoURL, name, versionRange string, o oci.Options) (OCIChart, error) {
	repo, err := oci.ParseRepository(strings.TrimSuffix(repoURL, "/")+"/"+name, o)
	if err != nil {
		return OCIChart{}, err
	}
	tag, err := chartTag(ctx, repo, versionRange, o)
	if err != nil {
		return OCIChart{}, err
	}
	hash, err := oci.Resolve(ctx, repo.Tag(tag), o)
	if err != nil {
		return OCIChart{}, err
	}
	return OCIChart{Version: tagVersion(tag), Digest: hash.String(), ref: repo.Digest(hash.String())}, nil
}

// Ref is the reference of the chart's manifest, by digest.
func (c OCIChart) Ref() name.Digest { return c.ref }

// Pull downloads the chart c names: its manifest, then its chart layer,
// read verified against its digest and at most maxSize bytes (zero or
// less: DefaultMaxChartSize).
func (c OCIChart) Pull(ctx context.Context, o oci.Options, maxSize int64) ([]byte, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxChartSize
	}
	m, err := oci.GetManifest(ctx, c.ref, o)
	if err != nil {
		return nil, err
	}
	layer, err := oci.SelectLayer(m, OCIChartMediaType)
	if err != nil {
		return nil, fmt.Errorf("%s is not a Helm chart: %w", oci.URL(c.ref), err)
	}
	return readLayer(ctx, c.ref.Context(), layer, maxSize, o)
}

// PullOCIChart resolves chart name (see ResolveOCIChart) and pulls it
// (see OCIChart.Pull); version is the chart version with '+', digest the
// manifest's, "sha256:<hex>".
func PullOCIChart(ctx context.Context, repoURL, name, versionRange string, o oci.Options,
	maxSize int64) (data []byte, version, digest string, err error) {
	c, err := ResolveOCIChart(ctx, repoURL, name, versionRange, o)
	if err != nil {
		return nil, "", "", err
	}
	if data, err = c.Pull(ctx, o, maxSize); err != nil {
		return nil, "", "", err
	}
	return data, c.Version, c.Digest, nil
}

// readLayer reads a whole layer, verified.
func readLayer(ctx context.Context, repo name.Repository, layer v1.Descriptor, maxSize int64, o oci.Options) ([]byte, error) {
	rc, err := oci.OpenLayer(ctx, repo, layer, maxSize, o)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(int(layer.Size))
	_, readErr := io.Copy(&buf, rc)
	if err := rc.Close(); err != nil {
		return nil, err
	}
	if readErr != nil {
		return nil, readErr
	}
	return buf.Bytes(), nil
}

// chartTag returns the tag to pull: the exact version's, or the highest
// tag in versionRange.
func chartTag(ctx context.Context, repo name.Repository, versionRange string, o oci.Options) (string, error) {
	r := strings.TrimSpace(versionRange)
	if _, err := semver.StrictNewVersion(r); err == nil {
		return strings.ReplaceAll(r, "+", "_"), nil
	}
	if r == "" {
		r = "*"
	}
	tags, err := listTags(ctx, repo, o)
	if err != nil {
		return "", err
	}
	versions := make([]string, len(tags))
	for i, t := range tags {
		versions[i] = tagVersion(t)
	}
	v, err := oci.SelectSemverTag(versions, r, "")
	if err != nil {
		return "", fmt.Errorf("%w: chart %s: %s", ErrVersionNotFound, oci.URL(repo), err)
	}
	return strings.ReplaceAll(v, "+", "_"), nil
}

// listTags lists the tags of repo.
func listTags(ctx context.Context, repo name.Repository, o oci.Options) ([]string, error) {
	tags, err := oci.ListTags(ctx, repo, o)
	if err == nil {
		return tags, nil
	}
	msg := fmt.Sprintf("listing the tags of %s: %s", oci.URL(repo), firstLine(err))
	msg = ClientOptions{Password: o.Password}.scrub(msg)
	var terr *transport.Error
	if errors.As(err, &terr) && (terr.StatusCode == 401 || terr.StatusCode == 403) {
		return nil, &scrubbedError{msg: msg + ": check the credentials", cause: oci.ErrAccessDenied}
	}
	return nil, errors.New(msg)
}

// tagVersion returns the chart version of a tag: '_' back to '+'.
func tagVersion(tag string) string { return strings.ReplaceAll(tag, "_", "+") }
