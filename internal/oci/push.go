package oci

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/windlass-dev/windlass/internal/archive"
)

// ReproducibleCreated is the creation time written by a reproducible push:
// the same folder then gives the same digest every time.
var ReproducibleCreated = time.Unix(0, 0).UTC()

// MaxPushSize caps the compressed size of the tarball Push builds, which
// it holds in memory.
const MaxPushSize = 256 << 20

// PushRequest is what Push stores.
type PushRequest struct {
	// Dir is the folder packed as the artifact's layer.
	Dir string
	// Filter leaves paths out of the layer; nil keeps every path.
	Filter archive.Filter
	// Source and Revision become AnnotationSource and AnnotationRevision.
	Source, Revision string
	// Created becomes AnnotationCreated; the zero time means now. Use
	// ReproducibleCreated for reproducible digests.
	Created time.Time
	// Annotations are added to the manifest; they may set
	// AnnotationCreated, but not the source or the revision.
	Annotations map[string]string
}

// Pushed describes a pushed artifact.
type Pushed struct {
	// Ref is the tag the artifact was pushed to.
	Ref name.Tag
	// Digest is the digest of its manifest.
	Digest v1.Hash
}

// DigestURL returns oci://HOST/REPO:TAG@sha256:HEX.
func (p Pushed) DigestURL() string {
	return URL(p.Ref) + "@" + p.Digest.String()
}

// Push packs req.Dir as a reproducible tar.gz and pushes it to ref as an
// artifact, and returns its digest.
func Push(ctx context.Context, ref name.Tag, req PushRequest, o Options) (Pushed, error) {
	img, err := Image(req)
	if err != nil {
		return Pushed{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return Pushed{}, fmt.Errorf("computing the artifact digest: %w", err)
	}
	if err := remote.Write(ref, img, o.remote(ctx)...); err != nil {
		return Pushed{}, o.registryError("pushing "+URL(ref), err)
	}
	return Pushed{Ref: ref, Digest: digest}, nil
}

// Image builds the artifact of req without pushing it.
func Image(req PushRequest) (v1.Image, error) {
	if err := checkAnnotations(req.Annotations); err != nil {
		return nil, err
	}
	fi, err := os.Stat(req.Dir)
	if err != nil {
		return nil, fmt.Errorf("reading --path: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("--path %s is not a folder: give the folder to push", req.Dir)
	}
	var buf bytes.Buffer
	if err := archive.Build(&limitWriter{w: &buf, remaining: MaxPushSize}, req.Dir, req.Filter); err != nil {
		return nil, fmt.Errorf("packing %s: %w", req.Dir, err)
	}
	layer := static.NewLayer(buf.Bytes(), ContentMediaType)
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer: layer, MediaType: ContentMediaType,
	})
	if err != nil {
		return nil, fmt.Errorf("building the artifact: %w", err)
	}
	img = mutate.ConfigMediaType(img, ConfigMediaType)
	return mutate.Annotations(img, annotations(req)).(v1.Image), nil
}

// annotations returns the manifest annotations of req.
func annotations(req PushRequest) map[string]string {
	created := req.Created
	if created.IsZero() {
		created = time.Now()
	}
	a := map[string]string{
		AnnotationCreated:  created.UTC().Format(time.RFC3339),
		AnnotationSource:   req.Source,
		AnnotationRevision: req.Revision,
	}
	maps.Copy(a, req.Annotations)
	return a
}

// checkAnnotations refuses annotations that would contradict the source
// and revision.
func checkAnnotations(a map[string]string) error {
	for k := range a {
		switch {
		case k == AnnotationSource:
			return fmt.Errorf("--annotations may not set %s: use --source", k)
		case k == AnnotationRevision:
			return fmt.Errorf("--annotations may not set %s: use --revision", k)
		case k == "" || strings.ContainsAny(k, " \t\n"):
			return fmt.Errorf("annotation key %q is not valid: write KEY=VALUE", k)
		}
	}
	return nil
}

// errPushTooLarge is returned when the packed folder exceeds MaxPushSize.
var errPushTooLarge = fmt.Errorf("the packed folder exceeds %d MiB: leave large files out with --ignore-paths", MaxPushSize>>20)

// limitWriter fails once more than its budget is written.
type limitWriter struct {
	w         *bytes.Buffer
	remaining int64
}

// Write implements io.Writer.
func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.remaining {
		return 0, errPushTooLarge
	}
	l.remaining -= int64(len(p))
	return l.w.Write(p)
}
