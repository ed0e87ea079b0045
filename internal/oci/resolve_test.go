package oci

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil"
)

// pushFolder pushes a folder of files to url (oci://HOST/REPO:TAG) and
// returns what was pushed.
func pushFolder(t *testing.T, url string, files map[string]string, o Options) Pushed {
	t.Helper()
	ref, err := ParseTag(url, o)
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := Push(context.Background(), ref, PushRequest{Dir: testutil.WriteTree(t, files), Source: "s", Revision: "r"}, o)
	if err != nil {
		t.Fatal(err)
	}
	return pushed
}

// mustParse parses a reference.
func mustParse(t *testing.T, s string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestResolveUsesHead(t *testing.T) {
	g := NewWithT(t)
	host, requests := startLoggedRegistry(t)
	pushed := pushFolder(t, "oci://"+host+"/org/app:v1", map[string]string{"a.yaml": "a: 1\n"}, anonymous)
	ctx := context.Background()

	requests.reset()
	digest, err := Resolve(ctx, pushed.Ref, anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(digest).To(Equal(pushed.Digest))
	g.Expect(requests.matching(http.MethodHead, "/v2/org/app/manifests/v1")).To(HaveLen(1))
	g.Expect(requests.matching(http.MethodGet, "/manifests/")).To(BeEmpty())
	g.Expect(requests.matching("", "/blobs/")).To(BeEmpty())

	// A digest resolves to itself, once the registry says it is there.
	byDigest := pushed.Ref.Context().Digest(pushed.Digest.String())
	digest, err = Resolve(ctx, byDigest, anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(digest).To(Equal(pushed.Digest))

	// A missing tag: HEAD says 404 without a body, GET says why.
	requests.reset()
	missing := pushed.Ref.Context().Tag("v9")
	_, err = Resolve(ctx, missing, anonymous)
	g.Expect(err).To(MatchError("resolving oci://" + host + "/org/app:v9: not found (404): check the repository and the tag"))
	g.Expect(requests.matching(http.MethodGet, "/manifests/v9")).To(HaveLen(1))
}

func TestResolveFallsBackToGet(t *testing.T) {
	manifest := artifactManifest(t, v1.Descriptor{MediaType: ContentMediaType, Size: 3, Digest: sha256Of([]byte("abc"))})
	cases := map[string]struct {
		head    func(w http.ResponseWriter)
		wantGet bool
		want    string
	}{
		"HEAD not allowed": {head: func(w http.ResponseWriter) { w.WriteHeader(http.StatusMethodNotAllowed) }, wantGet: true},
		"HEAD without a digest": {wantGet: true, head: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", string(types.OCIManifestSchema1))
			w.Header().Set("Content-Length", "10")
		}},
		"HEAD refused": {want: "refused the credentials", head: func(w http.ResponseWriter) {
			w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
			w.WriteHeader(http.StatusUnauthorized)
		}},
	}
	for title, c := range cases {
		t.Run(title, func(t *testing.T) {
			g := NewWithT(t)
			reg := &hostileRegistry{manifest: manifest}
			host := serve(t, logged(&reg.log, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodHead {
					c.head(w)
					return
				}
				reg.ServeHTTP(w, r)
			})))
			digest, err := Resolve(context.Background(), mustParse(t, host+"/app:v1"), anonymous)
			g.Expect(reg.log.matching(http.MethodGet, "/manifests/v1")).To(HaveLen(map[bool]int{true: 1}[c.wantGet]))
			if c.want != "" {
				g.Expect(err).To(MatchError(ContainSubstring(c.want)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(digest).To(Equal(sha256Of(manifest)))
		})
	}
}

func TestResolveDistributionRegistry(t *testing.T) {
	g := NewWithT(t)
	const password = "dist-Pa55word-7f3e"
	reg, o := distribution(t, password)
	pushed := pushFolder(t, "oci://"+reg.Host+"/team/app:1.0.0", map[string]string{"a.yaml": "a: 1\n"}, o)
	ctx := context.Background()
	digest, err := Resolve(ctx, pushed.Ref, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(digest).To(Equal(pushed.Digest))

	// Without the private CA, and with a wrong password.
	_, err = Resolve(ctx, pushed.Ref, Options{Username: o.Username, Password: password})
	g.Expect(err).To(MatchError(And(HavePrefix("resolving oci://"+reg.Host+"/team/app:1.0.0: "), ContainSubstring("certificate"))))
	g.Expect(err.Error()).NotTo(ContainSubstring(password))
	wrong := o
	wrong.Password = "Wr0ng-" + password
	_, err = Resolve(ctx, pushed.Ref, wrong)
	g.Expect(err).To(MatchError(HavePrefix("resolving oci://" + reg.Host + "/team/app:1.0.0: ")))
	g.Expect(err.Error()).To(ContainSubstring("refused the credentials"))
	g.Expect(err.Error()).NotTo(ContainSubstring(password))
}

func TestSelectSemverTag(t *testing.T) {
	tags := []string{"latest", "v1.0.0", "1.2.0", "v1.2.0", "1.10.1", "2.0.0-rc.1", "2.0.0", "v3.0.0-beta", "main-abc", "1.10.1-dev"}
	cases := map[string]struct {
		tags       []string
		constraint string
		filter     string
		want       string
		wantErr    string
	}{
		"highest":               {constraint: "*", want: "2.0.0"},
		"range":                 {constraint: ">=1.0.0 <2.0.0", want: "1.10.1"},
		"caret":                 {constraint: "^1.0", want: "1.10.1"},
		"tilde":                 {constraint: "~1.2", want: "1.2.0"},
		"equal versions":        {constraint: "1.2.0", want: "1.2.0"},
		"pre-release asked for": {constraint: ">=2.0.0-0", want: "v3.0.0-beta"},
		"filter":                {constraint: "*", filter: `^v`, want: "v1.2.0"},
		"filter and range":      {constraint: "<3.0.0-0", filter: `-`, want: "2.0.0-rc.1"},
		"no match":              {constraint: ">=4.0.0", wantErr: `no tag matches the semver constraint ">=4.0.0" (among 10 tags)`},
		"no match with filter": {constraint: "*", filter: "^release-",
			wantErr: `no tag matches the semver constraint "*" and the filter "^release-" (among 10 tags)`},
		"no tags":            {tags: []string{}, constraint: "*", wantErr: "(among 0 tags)"},
		"invalid constraint": {constraint: ">=one", wantErr: `semver constraint ">=one" is not valid`},
		"empty constraint":   {constraint: " ", wantErr: "the semver constraint is empty"},
		"invalid filter":     {constraint: "*", filter: "(", wantErr: `tag filter "(" is not a valid regular expression`},
	}
	for title, c := range cases {
		t.Run(title, func(t *testing.T) {
			g := NewWithT(t)
			in := tags
			if c.tags != nil {
				in = c.tags
			}
			got, err := SelectSemverTag(in, c.constraint, c.filter)
			if c.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(c.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(c.want))
		})
	}
}

func TestLatestSemverTag(t *testing.T) {
	g := NewWithT(t)
	host := testutil.StartRegistry(t, "", "")
	for _, tag := range []string{"v1.0.0", "v1.4.2", "v2.0.0-rc.1", "latest"} {
		pushFolder(t, "oci://"+host+"/app:"+tag, map[string]string{"a": tag}, anonymous)
	}
	repo, err := ParseRepository("oci://"+host+"/app", anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	tag, err := LatestSemverTag(ctx, repo, ">=1.0.0", "", anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tag).To(Equal("v1.4.2"))
	tag, err = LatestSemverTag(ctx, repo, ">=2.0.0-0", "", anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tag).To(Equal("v2.0.0-rc.1"))
	_, err = LatestSemverTag(ctx, repo, "^3", "", anonymous)
	g.Expect(err).To(MatchError(`oci://` + host + `/app: no tag matches the semver constraint "^3" (among 4 tags)`))

	missing, _ := ParseRepository("oci://"+host+"/missing", anonymous)
	_, err = LatestSemverTag(ctx, missing, "*", "", anonymous)
	g.Expect(err).To(MatchError(HavePrefix("listing the tags of oci://" + host + "/missing: ")))
}

func TestGetManifest(t *testing.T) {
	g := NewWithT(t)
	host := testutil.StartRegistry(t, "", "")
	ctx := context.Background()
	pushed := pushFolder(t, "oci://"+host+"/app:v1", map[string]string{"a": "a"}, anonymous)
	m, err := GetManifest(ctx, pushed.Ref.Context().Digest(pushed.Digest.String()), anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Config.MediaType).To(Equal(ConfigMediaType))
	g.Expect(m.Layers).To(HaveLen(1))
	g.Expect(m.Layers[0].MediaType).To(Equal(ContentMediaType))
	g.Expect(m.Annotations).To(HaveKeyWithValue(AnnotationRevision, "r"))

	// An index of the artifact is refused.
	img, err := remote.Image(pushed.Ref)
	g.Expect(err).NotTo(HaveOccurred())
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img})
	idxRef := pushed.Ref.Context().Tag("index")
	g.Expect(remote.WriteIndex(idxRef, idx)).To(Succeed())
	idxDigest, err := Resolve(ctx, idxRef, anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	byDigest := idxRef.Context().Digest(idxDigest.String())
	_, err = GetManifest(ctx, byDigest, anonymous)
	g.Expect(err).To(MatchError(HavePrefix(URL(byDigest) + " is an image index, not an artifact: ")))

	// A digest that is not there.
	absent := pushed.Ref.Context().Digest(sha256Of([]byte("absent")).String())
	_, err = GetManifest(ctx, absent, anonymous)
	g.Expect(err).To(MatchError("reading the manifest of " + URL(absent) + ": not found (404): check the repository and the tag"))
}

func TestGetManifestHostile(t *testing.T) {
	layer := v1.Descriptor{MediaType: ContentMediaType, Size: 3, Digest: sha256Of([]byte("abc"))}
	good := artifactManifest(t, layer)
	huge := artifactManifest(t, v1.Descriptor{MediaType: ContentMediaType, Size: 3, Digest: sha256Of([]byte("abc")),
		Annotations: map[string]string{"pad": strings.Repeat("x", MaxManifestSize)}})
	cases := map[string]struct {
		serve    []byte
		noLength bool
		digest   v1.Hash
		want     error
		text     string
	}{
		"too large": {serve: huge, digest: sha256Of(huge), want: ErrTooLarge, text: "the manifest is larger than the limit"},
		"too large, streamed": {serve: huge, noLength: true, digest: sha256Of(huge), want: ErrTooLarge,
			text: "the manifest is larger than the limit"},
		"not the digest": {serve: good, digest: sha256Of([]byte("other")), want: ErrDigestMismatch, text: "the registry sent a manifest of digest"},
		"not json":       {serve: []byte("<html>"), digest: sha256Of([]byte("<html>")), text: "is not a valid image manifest"},
		"index in disguise": {serve: []byte(`{"schemaVersion":2,"manifests":[]}`), digest: sha256Of([]byte(`{"schemaVersion":2,"manifests":[]}`)),
			text: "is an image index, not an artifact"},
	}
	for title, c := range cases {
		t.Run(title, func(t *testing.T) {
			g := NewWithT(t)
			host := (&hostileRegistry{manifest: c.serve, noLength: c.noLength}).start(t)
			ref := mustParse(t, host+"/app@"+c.digest.String()).(name.Digest)
			_, err := GetManifest(context.Background(), ref, anonymous)
			g.Expect(err).To(MatchError(ContainSubstring(c.text)))
			if c.want != nil {
				g.Expect(err).To(MatchError(c.want))
			}
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
		})
	}
}
