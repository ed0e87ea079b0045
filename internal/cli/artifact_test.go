package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// startArtifactRegistry starts an in-process registry (see
// testutil.StartRegistry), with the docker config pointed at an empty
// folder, so that the user's is not read.
func startArtifactRegistry(t *testing.T, user, pass string) string {
	t.Helper()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	return testutil.StartRegistry(t, user, pass)
}

// runArtifact runs the root command with args; the artifact commands need
// no cluster.
func runArtifact(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// digestPattern matches a sha256 digest.
var digestPattern = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// normaliseDigests replaces each distinct digest of s by sha256:00…0n (of
// the same length, so that tables stay aligned), n counting in the order
// they first appear, so that goldens do not depend on the gzip encoder's
// exact bytes.
func normaliseDigests(s string) string {
	seen := map[string]string{}
	return digestPattern.ReplaceAllStringFunc(s, func(d string) string {
		if _, ok := seen[d]; !ok {
			seen[d] = fmt.Sprintf("sha256:%064d", len(seen)+1)
		}
		return seen[d]
	})
}

func TestArtifactPushListPullTag(t *testing.T) {
	g := NewWithT(t)
	host := startArtifactRegistry(t, "", "")
	files := map[string]string{"apps/deploy.yaml": "kind: Deployment\n", "kustomization.yaml": "resources: [apps]\n",
		"docs/notes.md": "left out\n", ".git/HEAD": "ref: refs/heads/main\n"}
	src := testutil.WriteTree(t, files)
	url := "oci://" + host + "/org/app"

	out, _, err := runArtifact(t, "push", "artifact", url+":v1", "--path", src, "--source", "https://git.example/app",
		"--revision", "main@sha1:0123abc", "--reproducible", "--ignore-paths", "docs/", "-a", "team=platform", "--insecure-registry")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`^✔ pushed oci://%s/org/app:v1@sha256:[0-9a-f]{64}\n$`, regexp.QuoteMeta(host)))
	digest := digestPattern.FindString(out)

	// The same folder gives the same digest, and json says so.
	out, _, err = runArtifact(t, "push", "artifact", url+":v1-again", "--path", src, "--source", "https://git.example/app",
		"--revision", "main@sha1:0123abc", "--reproducible", "--ignore-paths", "docs/", "-a", "team=platform", "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var res map[string]string
	g.Expect(json.Unmarshal([]byte(out), &res)).To(Succeed())
	g.Expect(res).To(Equal(map[string]string{"repository": host + "/org/app", "tag": "v1-again", "digest": digest,
		"url": url + ":v1-again@" + digest}))

	// The annotations are on the manifest.
	v1ref, err := name.ParseReference(host + "/org/app:v1")
	g.Expect(err).NotTo(HaveOccurred())
	img, err := remote.Image(v1ref)
	g.Expect(err).NotTo(HaveOccurred())
	m, err := img.Manifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Annotations).To(Equal(map[string]string{oci.AnnotationSource: "https://git.example/app",
		oci.AnnotationRevision: "main@sha1:0123abc", oci.AnnotationCreated: "1970-01-01T00:00:00Z", "team": "platform"}))
	g.Expect(m.Layers[0].MediaType).To(Equal(oci.ContentMediaType))

	out, _, err = runArtifact(t, "tag", "artifact", url+":v1", "--tag", "latest", "--tag", "production")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(fmt.Sprintf("✔ tagged %[1]s:latest@%[2]s\n✔ tagged %[1]s:production@%[2]s\n", url, digest)))

	// Another revision, created now: its created time is not in the golden.
	g.Expect(os.WriteFile(filepath.Join(src, "kustomization.yaml"), []byte("resources: []\n"), 0o644)).To(Succeed())
	_, _, err = runArtifact(t, "push", "artifact", url+":v2", "--path", src, "--source", "https://git.example/app",
		"--revision", "main@sha1:4567def", "-a", "org.opencontainers.image.created=2026-01-02T03:04:05Z")
	g.Expect(err).NotTo(HaveOccurred())

	out, _, err = runArtifact(t, "list", "artifacts", url)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring(digest))
	expectGolden(t, g, "artifact-list", normaliseDigests(out))
	out, _, err = runArtifact(t, "list", "artifacts", url, "-o", "yaml")
	g.Expect(err).NotTo(HaveOccurred())
	expectGolden(t, g, "artifact-list-yaml", normaliseDigests(strings.ReplaceAll(out, host, "HOST")))

	dest := filepath.Join(t.TempDir(), "pulled")
	out, _, err = runArtifact(t, "pull", "artifact", url+":production", "--output", dest)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(fmt.Sprintf("✔ pulled %s:production@%s into %s\n  revision main@sha1:0123abc from https://git.example/app\n",
		url, digest, dest)))
	g.Expect(testutil.ReadTree(t, dest)).To(Equal(map[string]string{
		"apps/deploy.yaml": "kind: Deployment\n", "kustomization.yaml": "resources: [apps]\n"}))
}

func TestArtifactCredentials(t *testing.T) {
	g := NewWithT(t)
	host := startArtifactRegistry(t, "alice", "s3cret-pass")
	src := testutil.WriteTree(t, map[string]string{"a.yaml": "a: 1\n"})
	push := []string{"push", "artifact", "oci://" + host + "/app:v1", "--path", src, "--source", "s", "--revision", "r"}

	_, _, err := runArtifact(t, push...)
	g.Expect(err).To(MatchError(ContainSubstring("refused the credentials (401 Unauthorized): check --creds or run docker login")))

	_, stderr, err := runArtifact(t, append(push, "--creds", "alice:wrong-s3cret")...)
	g.Expect(err).To(MatchError(ContainSubstring("check --creds")))
	g.Expect(err.Error() + stderr).NotTo(ContainSubstring("wrong-s3cret"))
	g.Expect(err.Error()).NotTo(ContainSubstring("\n"))

	out, _, err := runArtifact(t, append(push, "--creds", "alice:s3cret-pass")...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("✔ pushed"))

	// docker login's config.
	cfg := t.TempDir()
	auth := fmt.Sprintf(`{"auths":{%q:{"username":"alice","password":"s3cret-pass"}}}`, host)
	g.Expect(os.WriteFile(filepath.Join(cfg, "config.json"), []byte(auth), 0o600)).To(Succeed())
	t.Setenv("DOCKER_CONFIG", cfg)
	out, _, err = runArtifact(t, "list", "artifacts", "oci://"+host+"/app", "--no-header")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("v1 "))
}

// pushEvilLayer pushes a tar.gz holding one good file and then hdr (with
// content) to ref, with go-containerregistry alone.
func pushEvilLayer(t *testing.T, ref string, hdr tar.Header, content []byte) {
	t.Helper()
	var buf bytes.Buffer
	gw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(gw)
	for _, e := range []struct {
		hdr     tar.Header
		content []byte
	}{{tar.Header{Typeflag: tar.TypeReg, Name: "ok.yaml", Mode: 0o644, Size: 3}, []byte("ok\n")}, {hdr, content}} {
		if err := tw.WriteHeader(&e.hdr); err != nil {
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
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1),
		mutate.Addendum{Layer: static.NewLayer(buf.Bytes(), oci.ContentMediaType), MediaType: oci.ContentMediaType})
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, mutate.ConfigMediaType(img, oci.ConfigMediaType)); err != nil {
		t.Fatal(err)
	}
}

func TestArtifactPullRefusesMaliciousLayers(t *testing.T) {
	host := startArtifactRegistry(t, "", "")
	big := bytes.Repeat([]byte("0"), 2<<20)
	cases := map[string]struct {
		hdr     tar.Header
		content []byte
		want    string
	}{
		"slip":     {hdr: tar.Header{Typeflag: tar.TypeReg, Name: "../x", Mode: 0o644, Size: 1}, content: []byte("x"), want: `"../x" contains a '..' element`},
		"absolute": {hdr: tar.Header{Typeflag: tar.TypeReg, Name: "/x", Mode: 0o644, Size: 1}, content: []byte("x"), want: `"/x" is absolute`},
		"symlink":  {hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "x", Linkname: "../x"}, want: `"x" is a link`},
		"huge": {hdr: tar.Header{Typeflag: tar.TypeReg, Name: "x", Mode: 0o644, Size: int64(len(big))}, content: big,
			want: "archive exceeds the maximum uncompressed size"},
	}
	for title, c := range cases {
		t.Run(title, func(t *testing.T) {
			g := NewWithT(t)
			ref := host + "/evil:" + title
			pushEvilLayer(t, ref, c.hdr, c.content)
			parent := t.TempDir()
			dest := filepath.Join(parent, "dest")
			out, _, err := runArtifact(t, "pull", "artifact", "oci://"+ref, "--output", dest, "--max-size", "1Mi")
			g.Expect(out).To(BeEmpty())
			g.Expect(err).To(MatchError(And(HavePrefix("refusing oci://"+ref+"@sha256:"), ContainSubstring(c.want),
				HaveSuffix("; nothing was written to "+dest))))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			entries, err := os.ReadDir(parent)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(entries).To(BeEmpty())
		})
	}
}

func TestArtifactBadFlags(t *testing.T) {
	host := startArtifactRegistry(t, "", "")
	src := testutil.WriteTree(t, map[string]string{"a.yaml": "a: 1\n"})
	full := t.TempDir()
	g := NewWithT(t)
	g.Expect(os.WriteFile(filepath.Join(full, "keep"), nil, 0o644)).To(Succeed())
	ok := "oci://" + host + "/app:v1"
	push := func(args ...string) []string {
		return append([]string{"push", "artifact"}, args...)
	}
	cases := []struct {
		args []string
		want string
	}{
		{push(ok, "--source", "s", "--revision", "r"), "--path is required"},
		{push(ok, "--path", src, "--revision", "r"), "--source is required"},
		{push(ok, "--path", src, "--source", "s"), "--revision is required"},
		{push("ghcr.io/app:v1", "--path", src, "--source", "s", "--revision", "r"), "does not start with oci://"},
		{push("oci://"+host+"/app", "--path", src, "--source", "s", "--revision", "r"), "is not an artifact URL with a tag"},
		{push(ok, "--path", filepath.Join(src, "a.yaml"), "--source", "s", "--revision", "r"), "is not a folder"},
		{push(ok, "--path", filepath.Join(src, "none"), "--source", "s", "--revision", "r"), "none cannot be read: no such file or directory"},
		{push(ok, "--path", src, "--source", "s", "--revision", "r", "-a", "novalue"), `--annotations "novalue" is not KEY=VALUE`},
		{push(ok, "--path", src, "--source", "s", "--revision", "r", "-a", oci.AnnotationSource+"=x"), "use --source"},
		{push(ok, "--path", src, "--source", "s", "--revision", "r", "-o", "table"), `--output "table" is not a format`},
		{push(ok, "--path", src, "--source", "s", "--revision", "r", "--creds", "alice"), "--creds must be USER:PASSWORD"},
		{push(ok, "--path", src, "--source", "s", "--revision", "r", "--timeout", "0s"), "--timeout must be positive"},
		{[]string{"push", "image", ok}, `unknown kind "image" for "windlass push"`},
		{[]string{"pull", "artifact", ok}, "--output is required"},
		{[]string{"pull", "artifact", ok, "-o", full}, "is not empty: choose a new or empty folder"},
		{[]string{"pull", "artifact", ok, "-o", t.TempDir(), "--max-size", "lots"}, `--max-size "lots" is not a size`},
		{[]string{"pull", "artifact", "oci://" + host + "/missing:v1", "-o", t.TempDir()}, "not found (404)"},
		{[]string{"tag", "artifact", ok}, "--tag is required"},
		{[]string{"tag", "artifact", ok, "--tag", "a/b"}, `--tag "a/b" is not a valid tag`},
		{[]string{"list", "artifacts", ok}, "without a tag"},
		{[]string{"list", "artifacts", "oci://" + host + "/app", "-o", "xml"}, `--output "xml" is not a format`},
	}
	for _, c := range cases {
		_, _, err := runArtifact(t, c.args...)
		g.Expect(err).To(MatchError(ContainSubstring(c.want)), strings.Join(c.args, " "))
		g.Expect(err.Error()).NotTo(ContainSubstring("\n"), strings.Join(c.args, " "))
	}
}
