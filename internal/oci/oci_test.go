package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// anonymous are options that send no credentials.
var anonymous = Options{Keychain: authn.NewMultiKeychain()}

func TestPushPullRoundtrip(t *testing.T) {
	g := NewWithT(t)
	host := testutil.StartRegistry(t, "", "")
	files := map[string]string{"apps/deploy.yaml": "kind: Deployment\n", "kustomization.yaml": "resources: [apps]\n"}
	src := testutil.WriteTree(t, files)
	ref, err := ParseTag("oci://"+host+"/org/app:v1", anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	pushed, err := Push(ctx, ref, PushRequest{Dir: src, Source: "https://git.example/app", Revision: "main@sha1:abc"}, anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pushed.DigestURL()).To(Equal("oci://" + host + "/org/app:v1@" + pushed.Digest.String()))

	// The wire format of the GitOps Toolkit.
	img, err := remote.Image(ref)
	g.Expect(err).NotTo(HaveOccurred())
	m, err := img.Manifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.MediaType).To(Equal(types.OCIManifestSchema1))
	g.Expect(m.Config.MediaType).To(Equal(ConfigMediaType))
	g.Expect(m.Layers).To(HaveLen(1))
	g.Expect(m.Layers[0].MediaType).To(Equal(ContentMediaType))
	g.Expect(m.Annotations).To(HaveKeyWithValue(AnnotationSource, "https://git.example/app"))
	g.Expect(m.Annotations).To(HaveKeyWithValue(AnnotationRevision, "main@sha1:abc"))
	created, err := time.Parse(time.RFC3339, m.Annotations[AnnotationCreated])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTemporally("~", time.Now(), time.Minute))

	out := filepath.Join(t.TempDir(), "out")
	pulled, err := Pull(ctx, ref, out, 0, anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pulled.Digest).To(Equal(pushed.Digest))
	g.Expect(pulled.Annotations).To(HaveKeyWithValue(AnnotationRevision, "main@sha1:abc"))
	g.Expect(testutil.ReadTree(t, out)).To(Equal(files))

	// By digest too, and into an existing empty folder.
	byDigest, err := ParseReference("oci://"+host+"/org/app@"+pushed.Digest.String(), anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	empty := t.TempDir()
	pulled, err = Pull(ctx, byDigest, empty, 0, anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pulled.DigestURL()).To(Equal("oci://" + host + "/org/app@" + pushed.Digest.String()))
	g.Expect(testutil.ReadTree(t, empty)).To(Equal(files))

	// A folder that is not empty is refused.
	_, err = Pull(ctx, ref, out, 0, anonymous)
	g.Expect(err).To(MatchError(ContainSubstring("is not empty")))
}

func TestPushReproducible(t *testing.T) {
	g := NewWithT(t)
	host := testutil.StartRegistry(t, "", "")
	src := testutil.WriteTree(t, map[string]string{"a.yaml": "a: 1\n", "b/c.yaml": "c: 1\n"})
	ctx := context.Background()
	req := PushRequest{Dir: src, Source: "s", Revision: "r", Created: ReproducibleCreated,
		Annotations: map[string]string{"team": "platform"}}
	ref1, _ := ParseTag("oci://"+host+"/app:one", anonymous)
	ref2, _ := ParseTag("oci://"+host+"/app:two", anonymous)
	first, err := Push(ctx, ref1, req, anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	// New modification times must not change the digest.
	later := time.Now().Add(time.Hour)
	g.Expect(os.Chtimes(filepath.Join(src, "a.yaml"), later, later)).To(Succeed())
	second, err := Push(ctx, ref2, req, anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Digest).To(Equal(first.Digest))

	img, err := remote.Image(ref2)
	g.Expect(err).NotTo(HaveOccurred())
	m, err := img.Manifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Annotations).To(HaveKeyWithValue(AnnotationCreated, "1970-01-01T00:00:00Z"))
	g.Expect(m.Annotations).To(HaveKeyWithValue("team", "platform"))

	// A changed file changes it.
	g.Expect(os.WriteFile(filepath.Join(src, "a.yaml"), []byte("a: 2\n"), 0o644)).To(Succeed())
	third, err := Push(ctx, ref2, req, anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(third.Digest).NotTo(Equal(first.Digest))
}

func TestPushRefusesAnnotations(t *testing.T) {
	g := NewWithT(t)
	src := testutil.WriteTree(t, map[string]string{"a": "a"})
	for key, want := range map[string]string{AnnotationSource: "use --source", AnnotationRevision: "use --revision", "a b": "not valid"} {
		_, err := Image(PushRequest{Dir: src, Annotations: map[string]string{key: "x"}})
		g.Expect(err).To(MatchError(ContainSubstring(want)))
	}
	_, err := Image(PushRequest{Dir: filepath.Join(src, "a")})
	g.Expect(err).To(MatchError(ContainSubstring("is not a folder")))
}

func TestListAndTag(t *testing.T) {
	g := NewWithT(t)
	host := testutil.StartRegistry(t, "", "")
	ctx := context.Background()
	src := testutil.WriteTree(t, map[string]string{"a.yaml": "a: 1\n"})
	ref, _ := ParseTag("oci://"+host+"/app:v1", anonymous)
	pushed, err := Push(ctx, ref, PushRequest{Dir: src, Source: "https://git.example/app", Revision: "v1@sha1:abc",
		Created: ReproducibleCreated}, anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	tagged, err := Tag(ctx, ref, "latest", anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tagged.Digest).To(Equal(pushed.Digest))
	g.Expect(tagged.DigestURL()).To(Equal("oci://" + host + "/app:latest@" + pushed.Digest.String()))
	_, err = Tag(ctx, ref, "not/valid", anonymous)
	g.Expect(err).To(MatchError(ContainSubstring("is not a valid tag")))

	repo, err := ParseRepository("oci://"+host+"/app", anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	arts, err := List(ctx, repo, anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(arts).To(HaveLen(2))
	g.Expect(arts[0].Tag).To(Equal("latest"))
	g.Expect(arts[1]).To(Equal(Artifact{Tag: "v1", Digest: pushed.Digest.String(), URL: pushed.DigestURL(),
		Revision: "v1@sha1:abc", Source: "https://git.example/app", Created: "1970-01-01T00:00:00Z"}))
}

func TestParse(t *testing.T) {
	g := NewWithT(t)
	for _, bad := range []string{"ghcr.io/org/app:v1", "oci://ghcr.io/org/app", "oci://", "oci://ghcr.io/Org/app:v1"} {
		_, err := ParseTag(bad, anonymous)
		g.Expect(err).To(HaveOccurred(), bad)
		g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
	}
	_, err := ParseRepository("oci://ghcr.io/org/app:v1", anonymous)
	g.Expect(err).To(MatchError(ContainSubstring("without a tag")))
	_, err = ParseRepository("oci://ghcr.io", anonymous)
	g.Expect(err).To(HaveOccurred())
	ref, err := ParseReference("oci://ghcr.io/org/app@sha256:"+strings.Repeat("a", 64), anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ref).To(BeAssignableToTypeOf(name.Digest{}))
	g.Expect(new(Options).ParseCredentials("user")).To(MatchError(ContainSubstring("USER:PASSWORD")))
}

func TestCredentials(t *testing.T) {
	g := NewWithT(t)
	host := testutil.StartRegistry(t, "alice", "s3cret-pass")
	ctx := context.Background()
	src := testutil.WriteTree(t, map[string]string{"a.yaml": "a: 1\n"})
	ref, _ := ParseTag("oci://"+host+"/app:v1", anonymous)

	_, err := Push(ctx, ref, PushRequest{Dir: src}, anonymous)
	g.Expect(err).To(MatchError(ContainSubstring("refused the credentials")))

	wrong := Options{}
	g.Expect(wrong.ParseCredentials("alice:wrong-pass")).To(Succeed())
	_, err = Push(ctx, ref, PushRequest{Dir: src}, wrong)
	g.Expect(err).To(MatchError(ContainSubstring("check --creds")))
	g.Expect(err.Error()).NotTo(ContainSubstring("wrong-pass"))

	right := Options{}
	g.Expect(right.ParseCredentials("alice:s3cret-pass")).To(Succeed())
	_, err = Push(ctx, ref, PushRequest{Dir: src}, right)
	g.Expect(err).NotTo(HaveOccurred())

	// The docker config of the user.
	cfg := t.TempDir()
	auth := `{"auths":{"` + host + `":{"username":"alice","password":"s3cret-pass"}}}`
	g.Expect(os.WriteFile(filepath.Join(cfg, "config.json"), []byte(auth), 0o600)).To(Succeed())
	t.Setenv("DOCKER_CONFIG", cfg)
	repo, _ := ParseRepository("oci://"+host+"/app", Options{})
	arts, err := List(ctx, repo, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(arts).To(HaveLen(1))
}

// tarEntry is one entry of a crafted layer.
type tarEntry struct {
	hdr     tar.Header
	content []byte
}

// craftLayer returns a tar.gz of entries, written as they are.
func craftLayer(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(gw)
	for _, e := range entries {
		hdr := e.hdr
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.content))
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
		}
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.content); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pushRaw pushes layer as the content layer of an artifact to ref with
// go-containerregistry alone, and returns the digest.
func pushRaw(t *testing.T, ref name.Reference, layer []byte) v1.Hash {
	t.Helper()
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1),
		mutate.Addendum{Layer: static.NewLayer(layer, ContentMediaType), MediaType: ContentMediaType})
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.ConfigMediaType(img, ConfigMediaType)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func file(name, content string) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name}, content: []byte(content)}
}

func TestPullRefusesMaliciousLayers(t *testing.T) {
	host := testutil.StartRegistry(t, "", "")
	good := file("ok.yaml", "ok: true\n")
	cases := map[string]struct {
		layer   []tarEntry
		maxSize int64
		want    error
	}{
		"tar slip":      {layer: []tarEntry{good, file("../x", "escaped")}, want: archive.ErrUnsafeEntry},
		"nested slip":   {layer: []tarEntry{good, file("a/../../x", "escaped")}, want: archive.ErrUnsafeEntry},
		"absolute path": {layer: []tarEntry{good, file("/tmp/x", "escaped")}, want: archive.ErrUnsafeEntry},
		"symlink": {layer: []tarEntry{good, {hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "x", Linkname: "/etc/passwd"}}},
			want: archive.ErrUnsafeEntry},
		"hard link": {layer: []tarEntry{good, {hdr: tar.Header{Typeflag: tar.TypeLink, Name: "x", Linkname: "../x"}}},
			want: archive.ErrUnsafeEntry},
		"device": {layer: []tarEntry{good, {hdr: tar.Header{Typeflag: tar.TypeChar, Name: "x", Devmajor: 1, Devminor: 3}}},
			want: archive.ErrUnsafeEntry},
		"over the limit": {layer: []tarEntry{good, file("big", strings.Repeat("0", 2<<20))}, maxSize: 1 << 20,
			want: archive.ErrTooLarge},
		"over the default limit": {layer: []tarEntry{good, file("big", strings.Repeat("0", int(archive.DefaultMaxSize)+1))},
			want: archive.ErrTooLarge},
	}
	for title, c := range cases {
		t.Run(title, func(t *testing.T) {
			g := NewWithT(t)
			ref, _ := ParseTag("oci://"+host+"/evil:"+strings.ReplaceAll(title, " ", "-"), anonymous)
			pushRaw(t, ref, craftLayer(t, c.layer...))
			parent := t.TempDir()
			out := filepath.Join(parent, "out", "dir")
			_, err := Pull(context.Background(), ref, out, c.maxSize, anonymous)
			g.Expect(err).To(MatchError(c.want))
			g.Expect(err.Error()).To(ContainSubstring("nothing was written to " + out))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			g.Expect(out).NotTo(BeAnExistingFile())
			g.Expect(filepath.Join(parent, "x")).NotTo(BeAnExistingFile())
			g.Expect(filepath.Join(parent, "out", "x")).NotTo(BeAnExistingFile())
			leftovers, err := os.ReadDir(filepath.Join(parent, "out"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(leftovers).To(BeEmpty())
		})
	}
}

func TestPullLayerLargerThanLimit(t *testing.T) {
	g := NewWithT(t)
	host := testutil.StartRegistry(t, "", "")
	ref, _ := ParseTag("oci://"+host+"/big:v1", anonymous)
	pushRaw(t, ref, craftLayer(t, file("a", strings.Repeat("x", 4096))))
	_, err := Pull(context.Background(), ref, t.TempDir(), 10, anonymous)
	g.Expect(err).To(MatchError(ContainSubstring("more than the limit of 10")))
}
