// Package containerimage builds the Windlass container image without Docker, with
// go-containerregistry: an empty base (scratch) and one layer that holds
// the windlass binary at /usr/local/bin/windlass, the CA certificates, and
// an /etc/passwd that names the user 65532 the image runs as. An image is
// built per platform from a binary built for it, and the images are put in
// one OCI image index, which is written to an OCI image layout folder or
// pushed to a registry.
package containerimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths and identity inside the image.
const (
	// BinaryPath is where the windlass binary is.
	BinaryPath = "/usr/local/bin/windlass"
	// CACertificatesPath is where the CA bundle is, where Go looks first.
	CACertificatesPath = "/etc/ssl/certs/ca-certificates.crt"
	// User is the user and group the image runs as: distroless' nonroot.
	User = "65532:65532"
	// DefaultCACertificates is the build host's CA bundle (Debian, Ubuntu,
	// Alpine, Arch).
	DefaultCACertificates = "/etc/ssl/certs/ca-certificates.crt"
)

// OCI annotation keys used as labels.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelTitle    = "org.opencontainers.image.title"
	refNameKey    = "org.opencontainers.image.ref.name"
)

// Platform is one platform of the image and the binary built for it.
type Platform struct {
	// OS and Architecture name the platform ("linux", "amd64"); Variant
	// is optional ("v8" for arm64).
	OS, Architecture, Variant string
	// Binary is the path of the windlass binary built for it.
	Binary string
}

// ParsePlatform parses "os/arch[/variant]=binary".
func ParsePlatform(s string) (Platform, error) {
	spec, binary, ok := strings.Cut(s, "=")
	parts := strings.Split(spec, "/")
	if !ok || binary == "" || len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return Platform{}, fmt.Errorf("invalid platform %q: write os/arch=path-of-the-binary, e.g. linux/amd64=bin/windlass", s)
	}
	p := Platform{OS: parts[0], Architecture: parts[1], Binary: binary}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// String returns "os/arch[/variant]".
func (p Platform) String() string {
	return strings.TrimSuffix(p.OS+"/"+p.Architecture+"/"+p.Variant, "/")
}

// Options describe the image.
type Options struct {
	// Platforms are the platforms to build, one binary each.
	Platforms []Platform
	// CACertificates is the PEM bundle copied into the image
	// (DefaultCACertificates when empty).
	CACertificates string
	// Source, Version and Revision are the OCI labels: where the source
	// is, the version and the commit.
	Source, Version, Revision string
	// Created is the image's creation time; the Unix epoch when zero, so
	// that the same inputs make the same image.
	Created time.Time
}

// passwd and group name root and the nonroot user the image runs as.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// Build builds one image per platform and returns them in an OCI image
// index.
func Build(opts Options) (v1.ImageIndex, error) {
	if len(opts.Platforms) == 0 {
		return nil, errors.New("no platform to build: give at least one binary")
	}
	certs, err := readCACertificates(opts.CACertificates)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range opts.Platforms {
		img, err := buildImage(p, certs, opts)
		if err != nil {
			return nil, fmt.Errorf("building the %s image: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant},
		}})
	}
	return idx, nil
}

// readCACertificates reads the CA bundle at path, or says where to put
// one.
func readCACertificates(path string) ([]byte, error) {
	if path == "" {
		path = DefaultCACertificates
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no CA certificates at %s: install the ca-certificates package, or put a PEM bundle there (or give its path with -ca-certificates)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the CA certificates: %w", err)
	}
	if !bytes.Contains(data, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("%s holds no PEM certificate: give a CA bundle", path)
	}
	return data, nil
}

// buildImage builds the image of one platform.
func buildImage(p Platform, certs []byte, opts Options) (v1.Image, error) {
	binary, err := os.ReadFile(p.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the windlass binary: %w", err)
	}
	created := opts.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC()
	data, err := layerTar(binary, certs, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: created}
	cf.Author = "Windlass"
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{BinaryPath},
		Cmd:        []string{"controller"},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=" + CACertificatesPath},
		WorkingDir: "/",
		Labels:     labels(opts),
	}
	cf.History = []v1.History{{Created: v1.Time{Time: created}, CreatedBy: "windlass image build", Comment: "windlass binary, CA certificates, nonroot user"}}
	return mutate.ConfigFile(img, cf)
}

// labels returns the OCI labels of the image, without the empty ones.
func labels(opts Options) map[string]string {
	out := map[string]string{LabelTitle: "windlass"}
	for k, v := range map[string]string{LabelSource: opts.Source, LabelVersion: opts.Version, LabelRevision: opts.Revision} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// layerTar returns the image's only layer: the folders, passwd and group,
// the CA bundle and the binary, owned by root, with the times set to
// created.
func layerTar(binary, certs []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []struct {
		name string
		mode int64
		data []byte
		uid  int
	}{
		{name: "etc/", mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: strings.TrimPrefix(CACertificatesPath, "/"), mode: 0o644, data: certs},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: 65532},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
		{name: strings.TrimPrefix(BinaryPath, "/"), mode: 0o755, data: binary},
	}
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: e.mode, ModTime: created, Uid: e.uid, Gid: e.uid, Format: tar.FormatPAX}
		if strings.HasSuffix(e.name, "/") {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteLayout writes idx to a new OCI image layout in dir (replacing what
// was there), its index.json naming it tag.
func WriteLayout(dir, tag string, idx v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the image layout %s: %w", dir, err)
	}
	var opts []layout.Option
	if tag != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{refNameKey: tag}))
	}
	if err := p.AppendIndex(idx, opts...); err != nil {
		return fmt.Errorf("writing the image to %s: %w", dir, err)
	}
	return nil
}

// Push pushes idx to ref ("registry/repository:tag") with the credentials
// of the default keychain (the Docker config, credential helpers): the
// image itself when it has one platform, the index otherwise. It returns
// the reference with the pushed digest.
func Push(ctx context.Context, ref string, idx v1.ImageIndex) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("invalid image reference %q: %w", ref, err)
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return "", err
	}
	var digest v1.Hash
	if len(manifest.Manifests) == 1 {
		img, err := idx.Image(manifest.Manifests[0].Digest)
		if err != nil {
			return "", err
		}
		if err := remote.Write(r, img, opts...); err != nil {
			return "", fmt.Errorf("pushing %s: %w", ref, err)
		}
		digest, err = img.Digest()
		if err != nil {
			return "", err
		}
	} else {
		if err := remote.WriteIndex(r, idx, opts...); err != nil {
			return "", fmt.Errorf("pushing %s: %w", ref, err)
		}
		if digest, err = idx.Digest(); err != nil {
			return "", err
		}
	}
	return r.Context().Digest(digest.String()).String(), nil
}
