package source

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/helm/repository"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// TestHelmRepositoryStoresIndexAndSkipsUnchanged: the index is stored
// normalised as index-<hex>.yaml with revision sha256:<hex> (the digest of
// the file) and shared, parsed, in the index cache. An unchanged index is
// fetched again but nothing is written and no chart is downloaded; a new
// chart version makes a new artifact.
func TestHelmRepositoryStoresIndexAndSkipsUnchanged(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	repo := helmtest.NewRepo(t)
	repo.Add(t, helmtest.Chart(t, "podinfo", "1.0.0"))

	obj := newHelmRepository(ns, "podinfo", repo.URL())
	fetched := fetchesOf(sourcev1.HelmRepositoryKind)
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	got := waitForHelmRepo(g, obj, helmRepoReady)
	expectFetched(g, sourcev1.HelmRepositoryKind, fetched, metrics.ResultSuccess)
	a := got.Status.Artifact
	hex := strings.TrimPrefix(a.Revision, "sha256:")
	g.Expect(a.Revision).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
	g.Expect(a.Digest).To(Equal(a.Revision), "the revision is the digest of the stored, normalised index")
	g.Expect(a.Path).To(Equal("helmrepository/" + ns + "/podinfo/index-" + hex + ".yaml"))
	g.Expect(got.Status.URL).To(Equal(a.URL))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(Equal("stored artifact for revision '" + a.Revision + "'"))
	idx, err := repository.ParseIndex(testutil.Download(g, nil, a))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(idx.Get("podinfo", "*")).To(HaveField("Version", "1.0.0"))
	cached, ok := helmIndexes.Get(a.Digest)
	g.Expect(ok).To(BeTrue(), "the parsed index is shared through the cache")
	g.Expect(cached.Entries).To(HaveKey("podinfo"))

	info, err := os.Stat(storage.LocalPath(*a))
	g.Expect(err).NotTo(HaveOccurred())
	fetches := repo.Requests("/index.yaml")
	testutil.RequestReconcile(g, env.Client, obj, "unchanged")
	got = waitForHelmRepo(g, obj, func(o *sourcev1.HelmRepository) bool { return o.Status.LastHandledReconcileAt == "unchanged" })
	g.Expect(repo.Requests("/index.yaml")).To(Equal(fetches+1), "the index is fetched again")
	g.Expect(got.Status.Artifact).To(Equal(a))
	after, err := os.Stat(storage.LocalPath(*a))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.ModTime()).To(Equal(info.ModTime()), "an unchanged index is not written again")
	g.Expect(repo.Requests("/podinfo-1.0.0.tgz")).To(BeZero(), "a HelmRepository downloads no chart")

	repo.Add(t, helmtest.Chart(t, "podinfo", "1.1.0"))
	testutil.RequestReconcile(g, env.Client, obj, "new-version")
	got = waitForHelmRepo(g, obj, func(o *sourcev1.HelmRepository) bool {
		return helmRepoReady(o) && o.Status.LastHandledReconcileAt == "new-version"
	})
	g.Expect(got.Status.Artifact.Revision).NotTo(Equal(a.Revision))
	idx, err = repository.ParseIndex(testutil.Download(g, nil, got.Status.Artifact))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(idx.Get("podinfo", "*")).To(HaveField("Version", "1.1.0"))
	g.Eventually(func() []string { return testutil.EventMessages(g, env.Client, obj, sourcev1.HelmRepositoryKind) }, timeout, interval).
		Should(ContainElement(ContainSubstring("NewArtifact: stored fetched index of 1 charts")))
}

// TestHelmRepositoryCredentials fetches from a repository with basic auth
// and a private CA, given in certSecretRef or, deprecated, in secretRef. A
// wrong password is AuthenticationFailed and shows up in no condition,
// event or log (security.md row 19); a CA that is not trusted fails.
func TestHelmRepositoryCredentials(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	const password = "S3cretHelmPassw0rd"
	repo := helmtest.NewRepo(t, helmtest.WithTLS(), helmtest.WithBasicAuth("robot", password))
	repo.Add(t, helmtest.Chart(t, "podinfo", "1.0.0"))
	auth := createSecret(g, ns, "auth", map[string][]byte{"username": []byte("robot"), "password": []byte(password)})
	wrong := createSecret(g, ns, "wrong", map[string][]byte{"username": []byte("robot"), "password": []byte("Wr0ng" + password)})
	ca := createSecret(g, ns, "ca", map[string][]byte{"ca.crt": repo.CAPEM()})
	legacy := createSecret(g, ns, "legacy", map[string][]byte{
		"username": []byte("robot"), "password": []byte(password), "caFile": repo.CAPEM(),
	})

	for _, tc := range []struct {
		name         string
		secret, cert *meta.LocalObjectReference
		reason, msg  string // of FetchFailed; "" for Ready
	}{
		{name: "basic-auth-and-ca", secret: auth, cert: ca},
		{name: "deprecated-tls-keys", secret: legacy},
		{name: "wrong-password", secret: wrong, cert: ca, reason: sourcev1.AuthenticationFailedReason, msg: "401"},
		{name: "untrusted", secret: auth, reason: sourcev1.IndexationFailedReason, msg: "certificate"},
		{name: "no-credentials", cert: ca, reason: sourcev1.AuthenticationFailedReason, msg: "401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := newHelmRepository(ns, tc.name, repo.URL())
			obj.Spec.SecretRef, obj.Spec.CertSecretRef = tc.secret, tc.cert
			g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
			if tc.reason == "" {
				waitForHelmRepo(g, obj, helmRepoReady)
				return
			}
			got := waitForHelmRepo(g, obj, helmCondition[*sourcev1.HelmRepository](sourcev1.FetchFailedCondition, metav1.ConditionTrue, tc.reason))
			g.Expect(conditions.Message(got, sourcev1.FetchFailedCondition)).To(ContainSubstring(tc.msg))
			g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
			for _, c := range got.Status.Conditions {
				g.Expect(c.Message).NotTo(ContainSubstring(password))
			}
			for _, m := range testutil.EventMessages(g, env.Client, got, sourcev1.HelmRepositoryKind) {
				g.Expect(m).NotTo(ContainSubstring(password))
			}
		})
	}
	g.Expect(logs.Contains(password)).To(BeFalse(), "a repository password is in the logs")
}

// TestHelmRepositoryRedirectKeepsCredentials: an index that redirects to
// another host gets no credentials there unless spec.passCredentials
// (security.md row 28).
func TestHelmRepositoryRedirectKeepsCredentials(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	other := helmtest.NewRepo(t, helmtest.WithBasicAuth("robot", "pass"))
	other.Add(t, helmtest.Chart(t, "podinfo", "1.0.0"))
	front := helmtest.NewRepo(t)
	front.Handle("/index.yaml", http.RedirectHandler(other.URL()+"/index.yaml", http.StatusFound))
	auth := createSecret(g, ns, "auth", map[string][]byte{"username": []byte("robot"), "password": []byte("pass")})

	kept := newHelmRepository(ns, "kept", front.URL())
	kept.Spec.SecretRef = auth
	g.Expect(env.Client.Create(context.Background(), kept)).To(Succeed())
	waitForHelmRepo(g, kept, helmCondition[*sourcev1.HelmRepository](sourcev1.FetchFailedCondition, metav1.ConditionTrue, sourcev1.AuthenticationFailedReason))
	g.Expect(front.LastHeader("/index.yaml").Get("Authorization")).NotTo(BeEmpty(), "the repository's own host gets the credentials")
	g.Expect(other.Requests("/index.yaml")).To(BeNumerically(">", 0))
	g.Expect(other.LastHeader("/index.yaml").Get("Authorization")).To(BeEmpty(), "another host gets no credentials")

	passed := newHelmRepository(ns, "passed", front.URL())
	passed.Spec.SecretRef, passed.Spec.PassCredentials = auth, true
	g.Expect(env.Client.Create(context.Background(), passed)).To(Succeed())
	waitForHelmRepo(g, passed, helmRepoReady)
}

// TestHelmRepositoryFaultsKeepTheLastArtifact: a repository that is down,
// an index over the size limit and an index that never ends (security.md
// row 27) fail with FetchFailed, and the last artifact stays in status and
// served; an unusable URL stalls.
func TestHelmRepositoryFaultsKeepTheLastArtifact(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	repo := helmtest.NewRepo(t)
	repo.Add(t, helmtest.Chart(t, "podinfo", "1.0.0"))
	obj := newHelmRepository(ns, "podinfo", repo.URL())
	obj.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Second}
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	last := waitForHelmRepo(g, obj, helmRepoReady).Status.Artifact

	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		msg     string
	}{
		{name: "down", msg: "503", handler: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		}},
		{name: "huge", msg: "limit", handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("apiVersion: v1\nentries: {}\n# " + strings.Repeat("x", 2*maxHelmIndexSize)))
		}},
		{name: "endless", msg: "limit", handler: func(w http.ResponseWriter, r *http.Request) {
			line := []byte("# " + strings.Repeat("y", 1024) + "\n")
			for r.Context().Err() == nil {
				if _, err := w.Write(line); err != nil {
					return
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			repo.Handle("/index.yaml", tc.handler)
			fetches := fetchesOf(sourcev1.HelmRepositoryKind)
			testutil.RequestReconcile(g, env.Client, obj, tc.name)
			got := waitForHelmRepo(g, obj, func(o *sourcev1.HelmRepository) bool {
				return o.Status.LastHandledReconcileAt == tc.name && conditions.IsTrue(o, sourcev1.FetchFailedCondition)
			})
			expectFetched(g, sourcev1.HelmRepositoryKind, fetches, metrics.ResultFailure)
			g.Expect(conditions.Reason(got, sourcev1.FetchFailedCondition)).To(Equal(sourcev1.IndexationFailedReason))
			g.Expect(conditions.Message(got, sourcev1.FetchFailedCondition)).To(ContainSubstring(tc.msg))
			g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
			g.Expect(got.Status.Artifact).To(Equal(last), "the last artifact is kept")
			testutil.Download(g, nil, got.Status.Artifact)
		})
	}

	repo.Handle("/index.yaml", nil)
	testutil.RequestReconcile(g, env.Client, obj, "back")
	waitForHelmRepo(g, obj, func(o *sourcev1.HelmRepository) bool {
		return helmRepoReady(o) && o.Status.LastHandledReconcileAt == "back"
	})

	for name, url := range map[string]string{"no-host": "https://", "oci-without-type": "oci://ghcr.io/charts"} {
		bad := newHelmRepository(ns, name, url)
		g.Expect(env.Client.Create(context.Background(), bad)).To(Succeed())
		got := waitForHelmRepo(g, bad, helmCondition[*sourcev1.HelmRepository](meta.StalledCondition, metav1.ConditionTrue, sourcev1.URLInvalidReason))
		g.Expect(got.Status.Artifact).To(BeNil())
	}
}

// TestHelmRepositoryOCI: a HelmRepository of type oci is Ready without an
// artifact; one that turns from type default to oci loses its artifact,
// from status and from storage.
func TestHelmRepositoryOCI(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	host := testutil.StartRegistry(t, "", "")
	obj := newHelmRepository(ns, "charts", "oci://"+host+"/charts")
	obj.Spec.Type, obj.Spec.Insecure = sourcev1.HelmRepositoryTypeOCI, true
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	got := waitForHelmRepo(g, obj, func(o *sourcev1.HelmRepository) bool {
		return conditions.IsTrue(o, meta.ReadyCondition) && o.Status.ObservedGeneration == o.Generation
	})
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(Equal(helmOCIRepositoryMessage))
	g.Expect(got.Status.Artifact).To(BeNil())

	repo := helmtest.NewRepo(t)
	repo.Add(t, helmtest.Chart(t, "podinfo", "1.0.0"))
	former := newHelmRepository(ns, "former", repo.URL())
	g.Expect(env.Client.Create(context.Background(), former)).To(Succeed())
	a := waitForHelmRepo(g, former, helmRepoReady).Status.Artifact
	g.Expect(storage.LocalPath(*a)).To(BeAnExistingFile())
	g.Expect(env.Client.Patch(context.Background(), former, client.RawPatch("application/merge-patch+json",
		[]byte(`{"spec":{"type":"oci","insecure":true,"url":"oci://`+host+`/charts"}}`)))).To(Succeed())
	got = waitForHelmRepo(g, former, func(o *sourcev1.HelmRepository) bool {
		return conditions.IsTrue(o, meta.ReadyCondition) && o.Status.ObservedGeneration == o.Generation
	})
	g.Expect(got.Status.Artifact).To(BeNil())
	g.Expect(got.Status.URL).To(BeEmpty())
	g.Expect(conditions.Has(got, sourcev1.ArtifactInStorageCondition)).To(BeFalse())
	g.Expect(storage.LocalPath(*a)).NotTo(BeAnExistingFile(), "the artifact of type default is removed")
}

// TestHelmRepositoryAndChartWaitBehindGates: behind a closed gate neither
// the index nor a chart is fetched; the gate opening fetches them at once.
func TestHelmRepositoryAndChartWaitBehindGates(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	setGate(g, ns, "freeze", false)
	gates := []meta.NamespacedObjectReference{{Name: "freeze"}}
	repo := helmtest.NewRepo(t)
	repo.Add(t, helmtest.Chart(t, "podinfo", "1.0.0"))

	gated := newHelmRepository(ns, "gated", repo.URL())
	gated.Spec.Gates = gates
	g.Expect(env.Client.Create(context.Background(), gated)).To(Succeed())
	open := newHelmRepository(ns, "open", repo.URL())
	g.Expect(env.Client.Create(context.Background(), open)).To(Succeed())
	waitForHelmRepo(g, open, helmRepoReady)
	fetches := repo.Requests("/index.yaml")
	hc := newHelmChart(ns, "gated", sourcev1.HelmRepositoryKind, "open", "podinfo")
	hc.Spec.Gates = gates
	g.Expect(env.Client.Create(context.Background(), hc)).To(Succeed())

	held := waitForHelmRepo(g, gated, func(o *sourcev1.HelmRepository) bool { return conditions.IsTrue(o, meta.BlockedCondition) })
	g.Expect(conditions.Reason(held, meta.BlockedCondition)).To(Equal(meta.GateClosedReason))
	g.Expect(held.Status.Artifact).To(BeNil())
	heldChart := waitForChart(g, hc, func(o *sourcev1.HelmChart) bool { return conditions.IsTrue(o, meta.BlockedCondition) })
	g.Expect(heldChart.Status.Artifact).To(BeNil())
	g.Expect(repo.Requests("/index.yaml")).To(Equal(fetches), "the gated repository fetches no index")
	g.Expect(repo.Requests("/podinfo-1.0.0.tgz")).To(BeZero(), "no chart is downloaded")

	setGate(g, ns, "freeze", true)
	waitForHelmRepo(g, gated, helmRepoReady)
	waitForChart(g, hc, chartReadyAt("1.0.0"))
	g.Expect(repo.Requests("/podinfo-1.0.0.tgz")).To(Equal(1))
}

// createTypedSecret is createSecret for a Secret of type typ.
func createTypedSecret(g *WithT, ns, name string, typ corev1.SecretType, data map[string][]byte) *meta.LocalObjectReference {
	g.Expect(env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ, Data: data,
	})).To(Succeed())
	return &meta.LocalObjectReference{Name: name}
}
