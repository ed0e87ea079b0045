package source

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// countingRegistry is the in-process registry (with the referrers API)
// that counts the requests it serves by kind.
type countingRegistry struct {
	host string
	// manifestGets, manifestHeads and blobGets count the requests.
	manifestGets, manifestHeads, blobGets atomic.Int64
	// down, when set, makes the registry answer 503 to everything.
	down atomic.Bool
}

// startCountingRegistry starts a countingRegistry on loopback.
func startCountingRegistry(t *testing.T) *countingRegistry {
	t.Helper()
	r := &countingRegistry{}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		switch {
		case strings.Contains(req.URL.Path, "/manifests/") && req.Method == http.MethodGet:
			r.manifestGets.Add(1)
		case strings.Contains(req.URL.Path, "/manifests/") && req.Method == http.MethodHead:
			r.manifestHeads.Add(1)
		case strings.Contains(req.URL.Path, "/blobs/") && req.Method == http.MethodGet:
			r.blobGets.Add(1)
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// push pushes files as an artifact to host/repo:tag.
func push(t *testing.T, g *WithT, host, repoTag string, files map[string]string, revision string) oci.Pushed {
	t.Helper()
	ref, err := name.NewTag(host+"/"+repoTag, name.Insecure)
	g.Expect(err).NotTo(HaveOccurred())
	pushed, err := oci.Push(context.Background(), ref, oci.PushRequest{
		Dir: testutil.WriteTree(t, files), Source: "https://git.example.com/app", Revision: revision,
	}, oci.Options{Insecure: true})
	g.Expect(err).NotTo(HaveOccurred())
	return pushed
}

// newOCIRepository returns an OCIRepository of url with a long interval.
func newOCIRepository(ns, name, url string) *sourcev1.OCIRepository {
	return &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sourcev1.OCIRepositorySpec{
			URL:      url,
			Insecure: true,
			Interval: metav1.Duration{Duration: 10 * time.Minute},
		},
	}
}

// waitForOCI returns the OCIRepository once cond holds for it, with the
// status rules checked.
func waitForOCI(g *WithT, obj *sourcev1.OCIRepository, cond func(*sourcev1.OCIRepository) bool) *sourcev1.OCIRepository {
	return testutil.WaitFor(g, env.Client, obj, cond, ociRepositoryNegativeConditions...)
}

// ociReadyAt is a waitFor condition: Ready=True at revision for the
// current generation.
func ociReadyAt(revision string) func(*sourcev1.OCIRepository) bool {
	return func(o *sourcev1.OCIRepository) bool {
		return conditions.IsTrue(o, meta.ReadyCondition) && o.Status.ObservedGeneration == o.Generation &&
			o.Status.Artifact != nil && (revision == "" || o.Status.Artifact.Revision == revision)
	}
}

// ociCondition is a waitFor condition on one condition's status and
// reason.
func ociCondition(conditionType string, status metav1.ConditionStatus, reason string) func(*sourcev1.OCIRepository) bool {
	return func(o *sourcev1.OCIRepository) bool {
		c := conditions.Get(o, conditionType)
		return c != nil && c.Status == status && c.Reason == reason
	}
}

// artifactFiles downloads obj's artifact and returns its files.
func artifactFiles(t *testing.T, g *WithT, a *meta.Artifact) map[string]string {
	return testutil.ReadTree(t, testutil.Extract(t, g, testutil.Download(g, nil, a)))
}

func TestOCIRepositoryPullsTagsAndSkipsUnchangedDigests(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startCountingRegistry(t)
	v1 := push(t, g, reg.host, "app:v1", map[string]string{"deploy.yaml": "v: 1\n", "logo.png": "binary"}, "main@sha1:1111111111111111111111111111111111111111")

	obj := newOCIRepository(ns, "app", "oci://"+reg.host+"/app")
	obj.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: "v1"}
	fetches := fetchesOf(sourcev1.OCIRepositoryKind)
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	got := waitForOCI(g, obj, ociReadyAt("v1@"+v1.Digest.String()))
	expectFetched(g, sourcev1.OCIRepositoryKind, fetches, metrics.ResultSuccess)

	g.Expect(got.Status.Artifact.Metadata).To(HaveKeyWithValue(meta.OriginRevisionKey, "main@sha1:1111111111111111111111111111111111111111"))
	g.Expect(got.Status.Artifact.Metadata).To(HaveKeyWithValue(meta.OriginSourceKey, "https://git.example.com/app"))
	g.Expect(got.Status.URL).To(Equal(got.Status.Artifact.URL))
	g.Expect(got.Status.ObservedLayerSelector).To(Equal(&sourcev1.OCILayerSelector{Operation: sourcev1.OCILayerExtract}))
	g.Expect(artifactFiles(t, g, got.Status.Artifact)).To(Equal(map[string]string{"deploy.yaml": "v: 1\n"}),
		"the default ignore rules leave the image out")

	// A reconcile with the same digest behind the tag downloads nothing.
	gets, blobs, heads := reg.manifestGets.Load(), reg.blobGets.Load(), reg.manifestHeads.Load()
	testutil.RequestReconcile(g, env.Client, got, "same-digest")
	waitForOCI(g, obj, func(o *sourcev1.OCIRepository) bool { return o.Status.LastHandledReconcileAt == "same-digest" })
	g.Expect(reg.manifestHeads.Load()).To(BeNumerically(">", heads), "the tag is resolved with HEAD")
	g.Expect(reg.manifestGets.Load()).To(Equal(gets), "no manifest is downloaded")
	g.Expect(reg.blobGets.Load()).To(Equal(blobs), "no layer is downloaded")

	// The tag moves: the new digest is pulled.
	v2 := push(t, g, reg.host, "app:v1", map[string]string{"deploy.yaml": "v: 2\n"}, "main@sha1:2222222222222222222222222222222222222222")
	testutil.RequestReconcile(g, env.Client, got, "moved")
	got = waitForOCI(g, obj, ociReadyAt("v1@"+v2.Digest.String()))
	g.Expect(artifactFiles(t, g, got.Status.Artifact)).To(Equal(map[string]string{"deploy.yaml": "v: 2\n"}))
	// The new artifact is an event; the first, which the status told, was
	// not.
	g.Eventually(func() []string { return newArtifactEvents(g, got, sourcev1.OCIRepositoryKind) }, timeout, interval).
		Should(HaveExactElements(ContainSubstring("stored artifact with revision 'v1@" + v2.Digest.String())))
}

func TestOCIRepositoryReferences(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startCountingRegistry(t)
	for _, tag := range []string{"1.0.0", "1.2.0", "2.0.0-rc.1", "1.3.0-beta", "latest"} {
		push(t, g, reg.host, "app:"+tag, map[string]string{"tag.txt": tag}, "")
	}
	pinned := push(t, g, reg.host, "app:pinned", map[string]string{"tag.txt": "pinned"}, "")

	for _, tc := range []struct {
		name    string
		ref     *sourcev1.OCIRepositoryRef
		want    string
		content string
	}{
		{name: "default", want: "latest@", content: "latest"},
		{name: "semver", ref: &sourcev1.OCIRepositoryRef{SemVer: ">=1.0.0 <2.0.0", Tag: "latest"}, want: "1.2.0@", content: "1.2.0"},
		{name: "semver-filter", ref: &sourcev1.OCIRepositoryRef{SemVer: ">=1.0.0-0", SemverFilter: ".*-beta$"}, want: "1.3.0-beta@", content: "1.3.0-beta"},
		{name: "digest", ref: &sourcev1.OCIRepositoryRef{Digest: pinned.Digest.String(), SemVer: "*", Tag: "latest"}, want: pinned.Digest.String(), content: "pinned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := newOCIRepository(ns, tc.name, "oci://"+reg.host+"/app")
			obj.Spec.Reference = tc.ref
			obj.Spec.Ignore = ptrTo("")
			g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
			got := waitForOCI(g, obj, ociReadyAt(""))
			g.Expect(got.Status.Artifact.Revision).To(HavePrefix(tc.want))
			g.Expect(artifactFiles(t, g, got.Status.Artifact)).To(HaveKeyWithValue("tag.txt", tc.content))
		})
	}
}

func TestOCIRepositoryLayerCopy(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startCountingRegistry(t)
	pushed := push(t, g, reg.host, "app:v1", map[string]string{"a.yaml": "a: 1\n"}, "")
	obj := newOCIRepository(ns, "copy", "oci://"+reg.host+"/app:v1")
	obj.Spec.URL = "oci://" + reg.host + "/app"
	obj.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: "v1"}
	obj.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: string(oci.ContentMediaType), Operation: sourcev1.OCILayerCopy}
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	got := waitForOCI(g, obj, ociReadyAt("v1@"+pushed.Digest.String()))

	img, err := oci.Image(oci.PushRequest{Dir: testutil.WriteTree(t, map[string]string{"a.yaml": "a: 1\n"})})
	g.Expect(err).NotTo(HaveOccurred())
	layers, err := img.Layers()
	g.Expect(err).NotTo(HaveOccurred())
	layerDigest, err := layers[0].Digest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Status.Artifact.Digest).To(Equal(layerDigest.String()), "copy stores the layer unchanged")

	// A media type that no layer has is an error that names those there are.
	obj = got.DeepCopy()
	obj.Spec.LayerSelector.MediaType = "application/vnd.example.missing"
	g.Expect(env.Client.Update(context.Background(), obj)).To(Succeed())
	failed := waitForOCI(g, obj, ociCondition(sourcev1.FetchFailedCondition, metav1.ConditionTrue, sourcev1.OCILayerOperationFailedReason))
	g.Expect(conditions.Message(failed, sourcev1.FetchFailedCondition)).To(ContainSubstring(string(oci.ContentMediaType)))
	g.Expect(failed.Status.Artifact.Digest).To(Equal(layerDigest.String()), "the last artifact stays")
}

func TestOCIRepositoryInvalidSpecStalls(t *testing.T) {
	ns := env.CreateNamespace(t)
	for _, tc := range []struct {
		name   string
		mutate func(*sourcev1.OCIRepository)
		reason string
		msg    string
		// unserved: the value is not served, so not a request is sent.
		unserved bool
	}{
		{name: "cloud-provider", unserved: true, mutate: func(o *sourcev1.OCIRepository) { o.Spec.Provider = sourcev1.OCIProviderAWS },
			reason: meta.UnsupportedProviderReason, msg: "spec.provider 'aws' is not served by Windlass"},
		{name: "semver", mutate: func(o *sourcev1.OCIRepository) { o.Spec.Reference = &sourcev1.OCIRepositoryRef{SemVer: "not a range"} },
			reason: sourcev1.InvalidSemverReason, msg: "invalid ref.semver"},
		{name: "filter", mutate: func(o *sourcev1.OCIRepository) {
			o.Spec.Reference = &sourcev1.OCIRepositoryRef{SemVer: "*", SemverFilter: "(["}
		}, reason: sourcev1.InvalidSpecReason, msg: "invalid ref.semverFilter"},
		{name: "digest", mutate: func(o *sourcev1.OCIRepository) { o.Spec.Reference = &sourcev1.OCIRepositoryRef{Digest: "sha256:abc"} },
			reason: sourcev1.InvalidSpecReason, msg: "is not sha256:<64 hex digits>"},
		{name: "gcp", unserved: true, mutate: func(o *sourcev1.OCIRepository) { o.Spec.Provider = sourcev1.OCIProviderGCP },
			reason: meta.UnsupportedProviderReason, msg: "spec.provider 'gcp' is not served by Windlass"},
		{name: "notation", unserved: true, mutate: func(o *sourcev1.OCIRepository) {
			o.Spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: sourcev1.VerificationProviderNotation}
		}, reason: meta.UnsupportedVerificationProviderReason, msg: "spec.verify.provider 'notation' is not served by Windlass"},
		{name: "keyless-without-root", mutate: func(o *sourcev1.OCIRepository) {
			o.Spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: sourcev1.VerificationProviderCosign}
		}, reason: sourcev1.VerificationErrorReason, msg: "trustedRootSecretRef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			reg := startCountingRegistry(t)
			push(t, g, reg.host, "app:latest", map[string]string{"a.yaml": "a: 1\n"}, "")
			obj := newOCIRepository(ns, tc.name, "oci://"+reg.host+"/app")
			tc.mutate(obj)
			heads, gets := reg.manifestHeads.Load(), reg.manifestGets.Load()
			g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
			got := waitForOCI(g, obj, ociCondition(meta.StalledCondition, metav1.ConditionTrue, tc.reason))
			g.Expect(conditions.Message(got, meta.StalledCondition)).To(ContainSubstring(tc.msg))
			g.Expect(got.Status.Artifact).To(BeNil())
			g.Expect(reg.blobGets.Load()).To(BeZero(), "nothing is downloaded for a spec that cannot work")
			if tc.unserved {
				g.Expect([]int64{reg.manifestHeads.Load(), reg.manifestGets.Load()}).To(Equal([]int64{heads, gets}), "not a request reached the registry")
			}
		})
	}
}

// TestOCIRepositoryKeepsServingWhenTheRegistryFails covers a registry that
// goes down and an artifact whose layer is refused (security.md rows 1
// and 4 for layers): the last artifact stays in status and in storage.
func TestOCIRepositoryKeepsServingWhenTheRegistryFails(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startCountingRegistry(t)
	good := push(t, g, reg.host, "app:v1", map[string]string{"a.yaml": "a: 1\n"}, "")
	obj := newOCIRepository(ns, "faults", "oci://"+reg.host+"/app")
	obj.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: "v1"}
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	ready := waitForOCI(g, obj, ociReadyAt("v1@"+good.Digest.String()))
	last := ready.Status.Artifact

	reg.down.Store(true)
	fetches := fetchesOf(sourcev1.OCIRepositoryKind)
	testutil.RequestReconcile(g, env.Client, ready, "down")
	got := waitForOCI(g, obj, ociCondition(sourcev1.FetchFailedCondition, metav1.ConditionTrue, sourcev1.OCIPullFailedReason))
	expectFetched(g, sourcev1.OCIRepositoryKind, fetches, metrics.ResultFailure)
	g.Expect(got.Status.Artifact).To(Equal(last))
	testutil.Download(g, nil, got.Status.Artifact)
	reg.down.Store(false)

	for _, bad := range []struct {
		name  string
		layer func(t *testing.T) []byte
		msg   string
	}{
		{name: "tar slip", layer: func(t *testing.T) []byte { return tarGz(t, tarEntry{name: "../escape.yaml", body: "x"}) }, msg: "unsafe archive entry"},
		{name: "symlink", layer: func(t *testing.T) []byte {
			return tarGz(t, tarEntry{name: "link", link: "/etc/passwd"})
		}, msg: "unsafe archive entry"},
		{name: "bomb", layer: func(t *testing.T) []byte {
			return tarGz(t, tarEntry{name: "big.yaml", body: strings.Repeat("a", maxFetchSize+1)})
		}, msg: "maximum uncompressed size"},
	} {
		pushRawLayer(t, g, reg.host, "app:v1", bad.layer(t))
		fetches := fetchesOf(sourcev1.OCIRepositoryKind)
		testutil.RequestReconcile(g, env.Client, got, bad.name)
		got = waitForOCI(g, obj, func(o *sourcev1.OCIRepository) bool {
			return o.Status.LastHandledReconcileAt == bad.name && conditions.IsTrue(o, sourcev1.FetchFailedCondition)
		})
		expectFetched(g, sourcev1.OCIRepositoryKind, fetches, metrics.ResultFailure) // the download failed
		g.Expect(conditions.Reason(got, sourcev1.FetchFailedCondition)).To(Equal(sourcev1.OCILayerOperationFailedReason), bad.name)
		g.Expect(conditions.Message(got, sourcev1.FetchFailedCondition)).To(ContainSubstring(bad.msg), bad.name)
		g.Expect(got.Status.Artifact).To(Equal(last), bad.name)
		g.Expect(artifactFiles(t, g, got.Status.Artifact)).To(Equal(map[string]string{"a.yaml": "a: 1\n"}), bad.name)
	}
}

// newArtifactEvents returns the messages of the NewArtifact events about
// obj, of kind.
func newArtifactEvents(g Gomega, obj client.Object, kind string) []string {
	var out []string
	for _, msg := range testutil.EventMessages(g, env.Client, obj, kind) {
		if after, ok := strings.CutPrefix(msg, "NewArtifact: "); ok {
			out = append(out, after)
		}
	}
	return out
}
