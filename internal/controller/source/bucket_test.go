package source

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// s3Fixture is versitygw behind a reverse proxy on loopback that counts
// the object downloads and can play dead.
type s3Fixture struct {
	s3    *testservers.S3
	admin *minio.Client
	// endpoint is the proxy's host:port, what Buckets name.
	endpoint string
	// gets counts the GETs of objects (not listings).
	gets atomic.Int64
	// requests counts every request.
	requests atomic.Int64
	// down, when set, makes the proxy answer 503 to everything.
	down atomic.Bool
}

// startS3Fixture starts versitygw and the proxy, and puts files into the
// bucket.
func startS3Fixture(t *testing.T, g *WithT, files map[string]string) *s3Fixture {
	t.Helper()
	f := &s3Fixture{s3: testservers.StartS3(t, testservers.S3Options{})}
	var err error
	f.admin, err = minio.New(f.s3.Endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(f.s3.AccessKey, f.s3.SecretKey, ""), Region: f.s3.Region,
	})
	g.Expect(err).NotTo(HaveOccurred())
	target, err := url.Parse(f.s3.URL())
	g.Expect(err).NotTo(HaveOccurred())
	proxy := httputil.NewSingleHostReverseProxy(target)
	rewrite := proxy.Director
	proxy.Director = func(r *http.Request) {
		host := r.Host // SigV4 signs the Host header the client sent
		rewrite(r)
		r.Host = host
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if f.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 {
			f.gets.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.endpoint = strings.TrimPrefix(srv.URL, "http://")
	for k, v := range files {
		f.put(t, g, k, v)
	}
	return f
}

// put writes one object.
func (f *s3Fixture) put(t *testing.T, g *WithT, key, content string) {
	t.Helper()
	_, err := f.admin.PutObject(context.Background(), f.s3.Bucket, key, strings.NewReader(content), int64(len(content)), minio.PutObjectOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}

// newBucket returns a Bucket of the fixture with its credentials in a new
// Secret.
func (f *s3Fixture) newBucket(t *testing.T, g *WithT, ns, name string) *sourcev1.Bucket {
	t.Helper()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-creds"},
		StringData: map[string]string{bucketAccessKey: f.s3.AccessKey, bucketSecretKey: f.s3.SecretKey},
	}
	g.Expect(env.Client.Create(context.Background(), secret)).To(Succeed())
	return &sourcev1.Bucket{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.BucketSpec{
			BucketName: f.s3.Bucket, Endpoint: f.endpoint, Region: f.s3.Region, Insecure: true,
			SecretRef: &meta.LocalObjectReference{Name: secret.Name},
			Interval:  metav1.Duration{Duration: 10 * time.Minute},
		},
	}
}

// waitForBucket returns the Bucket once cond holds for it, with the status
// rules checked.
func waitForBucket(g *WithT, obj *sourcev1.Bucket, cond func(*sourcev1.Bucket) bool) *sourcev1.Bucket {
	return testutil.WaitFor(g, env.Client, obj, cond, bucketNegativeConditions...)
}

// bucketReady is a waitFor condition: Ready=True with an artifact, for the
// current generation.
func bucketReady(o *sourcev1.Bucket) bool {
	return conditions.IsTrue(o, meta.ReadyCondition) && o.Status.ObservedGeneration == o.Generation && o.Status.Artifact != nil
}

func TestBucketStoresObjectsAndSkipsUnchangedListings(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	f := startS3Fixture(t, g, map[string]string{
		"apps/app.yaml":      "kind: ConfigMap\n",
		"apps/logo.png":      "binary",
		"docs/readme.md":     "# docs\n",
		"docs/.sourceignore": "*.md\n",
		"other/skip.yaml":    "out of the prefix? no: no prefix set\n",
	})
	obj := f.newBucket(t, g, ns, "objects")
	fetches := fetchesOf(sourcev1.BucketKind)
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	got := waitForBucket(g, obj, bucketReady)
	expectFetched(g, sourcev1.BucketKind, fetches, metrics.ResultSuccess)
	g.Expect(got.Status.Artifact.Revision).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
	g.Expect(got.Status.URL).To(Equal(got.Status.Artifact.URL))
	g.Expect(artifactFiles(t, g, got.Status.Artifact)).To(Equal(map[string]string{
		"apps/app.yaml":      "kind: ConfigMap\n",
		"docs/.sourceignore": "*.md\n",
		"other/skip.yaml":    "out of the prefix? no: no prefix set\n",
	}), "the default rules drop the image, the bucket's .sourceignore the markdown")

	// An unchanged listing downloads nothing.
	gets := f.gets.Load()
	testutil.RequestReconcile(g, env.Client, got, "unchanged")
	again := waitForBucket(g, obj, func(o *sourcev1.Bucket) bool { return o.Status.LastHandledReconcileAt == "unchanged" })
	g.Expect(again.Status.Artifact).To(Equal(got.Status.Artifact))
	g.Expect(f.gets.Load()).To(Equal(gets), "no object is downloaded")

	// A changed object is a new revision.
	f.put(t, g, "apps/app.yaml", "kind: Secret\n")
	testutil.RequestReconcile(g, env.Client, got, "changed")
	changed := waitForBucket(g, obj, func(o *sourcev1.Bucket) bool {
		return bucketReady(o) && o.Status.Artifact.Revision != got.Status.Artifact.Revision
	})
	g.Expect(artifactFiles(t, g, changed.Status.Artifact)).To(HaveKeyWithValue("apps/app.yaml", "kind: Secret\n"))
	// The new artifact is an event; the first, which the status told, was
	// not.
	g.Eventually(func() []string { return newArtifactEvents(g, got, sourcev1.BucketKind) }, timeout, interval).
		Should(HaveExactElements(ContainSubstring("stored artifact with")))

	// A prefix selects objects on the server.
	prefixed := f.newBucket(t, g, ns, "prefixed")
	prefixed.Spec.Prefix = "apps/"
	g.Expect(env.Client.Create(context.Background(), prefixed)).To(Succeed())
	p := waitForBucket(g, prefixed, bucketReady)
	g.Expect(artifactFiles(t, g, p.Status.Artifact)).To(Equal(map[string]string{"apps/app.yaml": "kind: Secret\n"}))
}

// TestBucketFaults covers refused credentials (no secret key in any
// status, event or log: security.md row 19), a server that goes down and
// a bucket over the size limit: the last artifact stays served.
func TestBucketFaults(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	f := startS3Fixture(t, g, map[string]string{"app.yaml": "a: 1\n"})
	obj := f.newBucket(t, g, ns, "faults")
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	ready := waitForBucket(g, obj, bucketReady)
	last := ready.Status.Artifact

	f.down.Store(true)
	fetches := fetchesOf(sourcev1.BucketKind)
	testutil.RequestReconcile(g, env.Client, ready, "down")
	got := waitForBucket(g, obj, func(o *sourcev1.Bucket) bool {
		return o.Status.LastHandledReconcileAt == "down" && conditions.IsTrue(o, sourcev1.FetchFailedCondition)
	})
	expectFetched(g, sourcev1.BucketKind, fetches, metrics.ResultFailure)
	g.Expect(conditions.Reason(got, sourcev1.FetchFailedCondition)).To(Equal(sourcev1.BucketOperationFailedReason))
	g.Expect(got.Status.Artifact).To(Equal(last))
	testutil.Download(g, nil, got.Status.Artifact)
	f.down.Store(false)

	f.put(t, g, "big.yaml", strings.Repeat("a", maxFetchSize+1))
	testutil.RequestReconcile(g, env.Client, got, "big")
	got = waitForBucket(g, obj, func(o *sourcev1.Bucket) bool {
		return o.Status.LastHandledReconcileAt == "big" && conditions.IsTrue(o, sourcev1.FetchFailedCondition)
	})
	g.Expect(conditions.Message(got, sourcev1.FetchFailedCondition)).To(ContainSubstring("big.yaml"))
	g.Expect(got.Status.Artifact).To(Equal(last))

	wrong := f.newBucket(t, g, ns, "wrong")
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "wrong-creds"}, secret)).To(Succeed())
	const leaked = "Wr0ngSecretKeyThatMustNeverShow"
	secret.Data[bucketSecretKey] = []byte(leaked)
	g.Expect(env.Client.Update(context.Background(), secret)).To(Succeed())
	g.Expect(env.Client.Create(context.Background(), wrong)).To(Succeed())
	denied := waitForBucket(g, wrong, func(o *sourcev1.Bucket) bool {
		return conditions.Reason(o, sourcev1.FetchFailedCondition) == sourcev1.AuthenticationFailedReason
	})
	g.Expect(conditions.Message(denied, sourcev1.FetchFailedCondition)).To(ContainSubstring("refused the credentials"))
	for _, c := range denied.Status.Conditions {
		g.Expect(c.Message).NotTo(ContainSubstring(leaked))
	}
	for _, m := range testutil.EventMessages(g, env.Client, denied, sourcev1.BucketKind) {
		g.Expect(m).NotTo(ContainSubstring(leaked))
	}
	g.Expect(logs.Contains(leaked)).To(BeFalse(), "the secret key is in the logs")
}

func TestBucketInvalidSpecStalls(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	f := startS3Fixture(t, g, map[string]string{"app.yaml": "a: 1\n"})
	for _, tc := range []struct {
		name   string
		mutate func(*sourcev1.Bucket)
		reason string
		msg    string
		// unserved: the value is not served, so not a request is sent.
		unserved bool
	}{
		{name: "provider", mutate: func(b *sourcev1.Bucket) { b.Spec.Provider = sourcev1.BucketProviderGoogle },
			reason: meta.UnsupportedProviderReason, msg: "spec.provider 'gcp' is not served by Windlass", unserved: true},
		{name: "provider-aws", mutate: func(b *sourcev1.Bucket) { b.Spec.Provider = sourcev1.BucketProviderAWS },
			reason: meta.UnsupportedProviderReason, msg: "spec.provider 'aws' is not served by Windlass", unserved: true},
		{name: "endpoint", mutate: func(b *sourcev1.Bucket) { b.Spec.Endpoint = "http://" + b.Spec.Endpoint },
			reason: sourcev1.InvalidSpecReason, msg: "endpoint"},
		{name: "secret", mutate: func(b *sourcev1.Bucket) { b.Spec.SecretRef = &meta.LocalObjectReference{Name: "tls-only"} },
			reason: sourcev1.AuthenticationFailedReason, msg: "needs both 'accesskey' and 'secretkey'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(client.IgnoreAlreadyExists(env.Client.Create(context.Background(), &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tls-only"}, StringData: map[string]string{"accesskey": "AK"},
			}))).To(Succeed())
			obj := f.newBucket(t, g, ns, tc.name)
			tc.mutate(obj)
			before := f.requests.Load()
			g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
			got := waitForBucket(g, obj, func(o *sourcev1.Bucket) bool {
				return conditions.IsTrue(o, meta.StalledCondition)
			})
			g.Expect(conditions.Reason(got, meta.StalledCondition)).To(Equal(tc.reason))
			g.Expect(conditions.Message(got, meta.StalledCondition)).To(ContainSubstring(tc.msg))
			if tc.unserved {
				g.Expect(f.requests.Load()).To(Equal(before), "no request reached the bucket")
			}
		})
	}
}
