package containerimage

import (
	"archive/tar"
	"context"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"
)

// fakeBinary writes a small file that stands for the windlass binary.
func fakeBinary(t *testing.T, content string) string {
	p := filepath.Join(t.TempDir(), "windlass")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// testOptions are the options of the tests' images: two platforms.
func testOptions(t *testing.T) Options {
	return Options{
		Platforms: []Platform{
			{OS: "linux", Architecture: "amd64", Binary: fakeBinary(t, "amd64 binary")},
			{OS: "linux", Architecture: "arm64", Binary: fakeBinary(t, "arm64 binary")},
		},
		Source: "https://github.com/windlass-dev/windlass", Version: "v0.1.0", Revision: "0123abc",
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// files reads the only layer of img: each file's mode, owner and content.
func files(g *WithT, img v1.Image) map[string]*tar.Header {
	layers, err := img.Layers()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(layers).To(HaveLen(1))
	mt, err := layers[0].MediaType()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mt).To(Equal(types.OCILayer))
	rc, err := layers[0].Uncompressed()
	g.Expect(err).NotTo(HaveOccurred())
	defer rc.Close()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		g.Expect(err).NotTo(HaveOccurred())
		data, err := io.ReadAll(tr)
		g.Expect(err).NotTo(HaveOccurred())
		hdr.PAXRecords = map[string]string{"content": string(data)}
		out["/"+strings.TrimSuffix(hdr.Name, "/")] = hdr
	}
}

// content returns what files read for name.
func content(h *tar.Header) string { return h.PAXRecords["content"] }

// checkImage checks the config and the layer of the image of one platform.
func checkImage(g *WithT, img v1.Image, arch, binary string) {
	cf, err := img.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cf.OS).To(Equal("linux"))
	g.Expect(cf.Architecture).To(Equal(arch))
	g.Expect(cf.Config.User).To(Equal("65532:65532"))
	g.Expect(cf.Config.Entrypoint).To(Equal([]string{"/usr/local/bin/windlass"}))
	g.Expect(cf.Config.Cmd).To(Equal([]string{"controller"}))
	g.Expect(cf.Config.Labels).To(Equal(map[string]string{
		LabelSource: "https://github.com/windlass-dev/windlass", LabelVersion: "v0.1.0", LabelRevision: "0123abc", LabelTitle: "windlass",
	}))
	g.Expect(cf.Created.Time).To(Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	mt, err := img.MediaType()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mt).To(Equal(types.OCIManifestSchema1))

	fsys := files(g, img)
	bin := fsys["/usr/local/bin/windlass"]
	g.Expect(bin).NotTo(BeNil())
	g.Expect(bin.FileInfo().Mode()).To(Equal(fs.FileMode(0o755)))
	g.Expect(content(bin)).To(Equal(binary))
	g.Expect(content(fsys["/etc/passwd"])).To(ContainSubstring("nonroot:x:65532:65532:"))
	g.Expect(fsys["/etc/passwd"].FileInfo().Mode()).To(Equal(fs.FileMode(0o644)))
	hostCerts, err := os.ReadFile(DefaultCACertificates)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(content(fsys["/etc/ssl/certs/ca-certificates.crt"])).To(Equal(string(hostCerts)))
	g.Expect(fsys["/tmp"].FileInfo().Mode() & fs.ModeSticky).NotTo(BeZero())
}

func TestBuildWritesAnOCILayout(t *testing.T) {
	g := NewWithT(t)
	idx, err := Build(testOptions(t))
	g.Expect(err).NotTo(HaveOccurred())
	dir := filepath.Join(t.TempDir(), "image")
	g.Expect(WriteLayout(dir, "v0.1.0", idx)).To(Succeed())

	p, err := layout.FromPath(dir)
	g.Expect(err).NotTo(HaveOccurred())
	top, err := p.ImageIndex()
	g.Expect(err).NotTo(HaveOccurred())
	topManifest, err := top.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(topManifest.Manifests).To(HaveLen(1))
	g.Expect(topManifest.Manifests[0].Annotations).To(HaveKeyWithValue("org.opencontainers.image.ref.name", "v0.1.0"))
	g.Expect(topManifest.Manifests[0].MediaType).To(Equal(types.OCIImageIndex))

	read, err := top.ImageIndex(topManifest.Manifests[0].Digest)
	g.Expect(err).NotTo(HaveOccurred())
	manifest, err := read.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest.Manifests).To(HaveLen(2))
	for i, arch := range []string{"amd64", "arm64"} {
		desc := manifest.Manifests[i]
		g.Expect(desc.Platform).To(Equal(&v1.Platform{OS: "linux", Architecture: arch}))
		img, err := read.Image(desc.Digest)
		g.Expect(err).NotTo(HaveOccurred())
		checkImage(g, img, arch, arch+" binary")
	}

	// The same inputs make the same image.
	again, err := Build(testOptions(t))
	g.Expect(err).NotTo(HaveOccurred())
	d1, err := idx.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	d2, err := again.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d1).To(Equal(d2))
}

func TestPushAndPull(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()

	opts := testOptions(t)
	opts.Platforms = opts.Platforms[:1]
	idx, err := Build(opts)
	g.Expect(err).NotTo(HaveOccurred())
	pushed, err := Push(ctx, host+"/windlass-dev/windlass:v0.1.0", idx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pushed).To(HavePrefix(host + "/windlass-dev/windlass@sha256:"))

	ref, err := name.ParseReference(host + "/windlass-dev/windlass:v0.1.0")
	g.Expect(err).NotTo(HaveOccurred())
	img, err := remote.Image(ref, remote.WithContext(ctx))
	g.Expect(err).NotTo(HaveOccurred())
	checkImage(g, img, "amd64", "amd64 binary")
	digest, err := img.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pushed).To(HaveSuffix(digest.String()))

	// Two platforms are pushed as an index.
	idx, err = Build(testOptions(t))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Push(ctx, host+"/windlass-dev/windlass:multi", idx)
	g.Expect(err).NotTo(HaveOccurred())
	ref, err = name.ParseReference(host + "/windlass-dev/windlass:multi")
	g.Expect(err).NotTo(HaveOccurred())
	pulled, err := remote.Index(ref, remote.WithContext(ctx))
	g.Expect(err).NotTo(HaveOccurred())
	manifest, err := pulled.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest.Manifests).To(HaveLen(2))
	arm, err := pulled.Image(manifest.Manifests[1].Digest)
	g.Expect(err).NotTo(HaveOccurred())
	checkImage(g, arm, "arm64", "arm64 binary")
}

func TestBuildErrors(t *testing.T) {
	g := NewWithT(t)
	opts := testOptions(t)
	opts.CACertificates = filepath.Join(t.TempDir(), "missing.crt")
	_, err := Build(opts)
	g.Expect(err).To(MatchError(ContainSubstring("no CA certificates at " + opts.CACertificates + ": install the ca-certificates package")))

	_, err = Build(Options{})
	g.Expect(err).To(MatchError(ContainSubstring("no platform to build")))

	_, err = ParsePlatform("linux-amd64")
	g.Expect(err).To(MatchError(ContainSubstring("write os/arch=path-of-the-binary")))
	p, err := ParsePlatform("linux/arm64/v8=bin/windlass-arm64")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(Equal(Platform{OS: "linux", Architecture: "arm64", Variant: "v8", Binary: "bin/windlass-arm64"}))
	g.Expect(p.String()).To(Equal("linux/arm64/v8"))
}
