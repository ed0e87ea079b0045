package source

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/helm/chart"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// TestHelmChartFromHTTPRepository: the highest version in spec.version is
// pulled and stored as it is (<chart>-<version>.tgz, revision the
// version); an unchanged index downloads nothing; a new version in the
// repository is pulled as soon as the HelmRepository has the new index.
func TestHelmChartFromHTTPRepository(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	repo := helmtest.NewRepo(t)
	repo.Add(t, helmtest.Chart(t, "podinfo", "1.0.0"), helmtest.Chart(t, "podinfo", "1.1.0"), helmtest.Chart(t, "podinfo", "2.0.0"))
	hr := newHelmRepository(ns, "podinfo", repo.URL())
	g.Expect(env.Client.Create(context.Background(), hr)).To(Succeed())
	index := waitForHelmRepo(g, hr, helmRepoReady).Status.Artifact

	hc := newHelmChart(ns, "podinfo", sourcev1.HelmRepositoryKind, "podinfo", "podinfo")
	hc.Spec.Version = "1.x"
	fetches := fetchesOf(sourcev1.HelmChartKind)
	g.Expect(env.Client.Create(context.Background(), hc)).To(Succeed())
	got := waitForChart(g, hc, chartReadyAt("1.1.0"))
	expectFetched(g, sourcev1.HelmChartKind, fetches, metrics.ResultSuccess)
	g.Expect(got.Status.Artifact.Path).To(Equal("helmchart/" + ns + "/podinfo/podinfo-1.1.0.tgz"))
	g.Expect(got.Status.URL).To(Equal(got.Status.Artifact.URL))
	g.Expect(got.Status.ObservedChartName).To(Equal("podinfo"))
	g.Expect(got.Status.ObservedSourceArtifactRevision).To(Equal(index.Revision))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(Equal("stored artifact for revision '1.1.0'"))
	g.Expect(testutil.Download(g, nil, got.Status.Artifact)).To(Equal(helmtest.Archive(t, helmtest.Chart(t, "podinfo", "1.1.0"))),
		"the package is stored as it was pulled")

	testutil.RequestReconcile(g, env.Client, hc, "unchanged")
	waitForChart(g, hc, func(o *sourcev1.HelmChart) bool { return o.Status.LastHandledReconcileAt == "unchanged" })
	g.Expect(repo.Requests("/podinfo-1.1.0.tgz")).To(Equal(1), "the stored version is not downloaded again")

	repo.Add(t, helmtest.Chart(t, "podinfo", "1.2.0"))
	testutil.RequestReconcile(g, env.Client, hr, "new-version")
	got = waitForChart(g, hc, chartReadyAt("1.2.0"))
	g.Expect(got.Status.Artifact.Path).To(Equal("helmchart/" + ns + "/podinfo/podinfo-1.2.0.tgz"))
	g.Expect(got.Status.ObservedSourceArtifactRevision).NotTo(Equal(index.Revision))
	// A new version pulled is an event; the first, which the status told,
	// was not.
	g.Eventually(func() []string { return testutil.EventMessages(g, env.Client, hc, sourcev1.HelmChartKind) }, timeout, interval).
		Should(ContainElement("ChartPullSucceeded: pulled 'podinfo' chart with version '1.2.0'"))
	g.Expect(testutil.EventMessages(g, env.Client, hc, sourcev1.HelmChartKind)).NotTo(ContainElement(ContainSubstring("'1.1.0'")))
}

// TestHelmChartValuesFilesAndFaults: values files of a pulled chart are
// merged in order into its values (the package is rebuilt); a values file
// outside the chart, a version the index lacks and a chart the repository
// fails to serve fail with the matching condition, the last artifact kept.
func TestHelmChartValuesFilesAndFaults(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	repo := helmtest.NewRepo(t)
	repo.Add(t, helmtest.Chart(t, "podinfo", "1.0.0",
		helmtest.WithValues(map[string]any{"greeting": "hello", "replicas": 1}),
		helmtest.WithFile("values-prod.yaml", []byte("greeting: prod\n"))))
	hr := newHelmRepository(ns, "podinfo", repo.URL())
	g.Expect(env.Client.Create(context.Background(), hr)).To(Succeed())
	waitForHelmRepo(g, hr, helmRepoReady)

	merged := newHelmChart(ns, "merged", sourcev1.HelmRepositoryKind, "podinfo", "podinfo")
	merged.Spec.ValuesFiles = []string{"values.yaml", "values-prod.yaml", "missing.yaml"}
	merged.Spec.IgnoreMissingValuesFiles = true
	g.Expect(env.Client.Create(context.Background(), merged)).To(Succeed())
	got := waitForChart(g, merged, chartReadyAt("1.0.0"))
	g.Expect(got.Status.ObservedValuesFiles).To(Equal(merged.Spec.ValuesFiles))
	ch, err := chart.LoadArchive(testutil.Download(g, nil, got.Status.Artifact), chart.Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Values).To(HaveKeyWithValue("greeting", "prod"))
	g.Expect(ch.Values).To(HaveKeyWithValue("replicas", BeNumerically("==", 1)))

	for _, tc := range []struct {
		name, version string
		valuesFiles   []string
		condition     string
		reason, msg   string
	}{
		{name: "escape", valuesFiles: []string{"../../other/values.yaml"},
			condition: sourcev1.BuildFailedCondition, reason: sourcev1.ChartPackageFailedReason, msg: "values file"},
		{name: "missing", valuesFiles: []string{"values-dev.yaml"},
			condition: sourcev1.BuildFailedCondition, reason: sourcev1.ChartPackageFailedReason, msg: "not found"},
		{name: "no-version", version: ">=5.0.0",
			condition: sourcev1.FetchFailedCondition, reason: sourcev1.ChartPullFailedReason, msg: "no version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			hc := newHelmChart(ns, tc.name, sourcev1.HelmRepositoryKind, "podinfo", "podinfo")
			hc.Spec.Version, hc.Spec.ValuesFiles = tc.version, tc.valuesFiles
			g.Expect(env.Client.Create(context.Background(), hc)).To(Succeed())
			got := waitForChart(g, hc, helmCondition[*sourcev1.HelmChart](tc.condition, metav1.ConditionTrue, tc.reason))
			g.Expect(conditions.Message(got, tc.condition)).To(ContainSubstring(tc.msg))
			g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
			g.Expect(got.Status.Artifact).To(BeNil())
		})
	}

	// A repository that fails to serve a new version keeps the last one.
	latest := newHelmChart(ns, "latest", sourcev1.HelmRepositoryKind, "podinfo", "podinfo")
	g.Expect(env.Client.Create(context.Background(), latest)).To(Succeed())
	last := waitForChart(g, latest, chartReadyAt("1.0.0")).Status.Artifact
	repo.Add(t, helmtest.Chart(t, "podinfo", "2.0.0"))
	repo.Handle("/podinfo-2.0.0.tgz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	fetches := fetchesOf(sourcev1.HelmChartKind)
	testutil.RequestReconcile(g, env.Client, hr, "v2")
	got = waitForChart(g, latest, helmCondition[*sourcev1.HelmChart](sourcev1.FetchFailedCondition, metav1.ConditionTrue, sourcev1.ChartPullFailedReason))
	expectFetched(g, sourcev1.HelmChartKind, fetches, metrics.ResultFailure)
	g.Expect(conditions.Message(got, sourcev1.FetchFailedCondition)).To(ContainSubstring("503"))
	g.Expect(got.Status.Artifact).To(Equal(last))
	testutil.Download(g, nil, got.Status.Artifact)
}

// TestHelmChartFromOCIRepository pulls charts from a registry with basic
// auth, given as username and password or as a registry configuration: a
// semver range lists the tags, an exact version does not. A wrong password
// is AuthenticationFailed and is shown nowhere (security.md row 19).
func TestHelmChartFromOCIRepository(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	const password = "S3cretChartRegistryPassw0rd"
	host := testutil.StartRegistry(t, "robot", password)
	v100 := helmtest.PushOCI(t, host, "charts/podinfo", helmtest.Chart(t, "podinfo", "1.0.0"), helmtest.WithRegistryAuth("robot", password))
	v110 := helmtest.PushOCI(t, host, "charts/podinfo", helmtest.Chart(t, "podinfo", "1.1.0"), helmtest.WithRegistryAuth("robot", password))
	basic := createSecret(g, ns, "basic", map[string][]byte{"username": []byte("robot"), "password": []byte(password)})
	config := createTypedSecret(g, ns, "config", corev1.SecretTypeDockerConfigJson,
		dockerConfigSecret(ns, "config", host, "robot", password).Data)
	wrong := createSecret(g, ns, "wrong", map[string][]byte{"username": []byte("robot"), "password": []byte("Wr0ng" + password)})

	for _, tc := range []struct {
		name, version, want, digest string
		secret                      *meta.LocalObjectReference
	}{
		{name: "range", version: "1.x", want: "1.1.0", digest: v110, secret: basic},
		{name: "exact", version: "1.0.0", want: "1.0.0", digest: v100, secret: config},
		{name: "wrong", version: "1.x", secret: wrong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			hr := newHelmRepository(ns, tc.name, "oci://"+host+"/charts")
			hr.Spec.Type, hr.Spec.Insecure, hr.Spec.SecretRef = sourcev1.HelmRepositoryTypeOCI, true, tc.secret
			g.Expect(env.Client.Create(context.Background(), hr)).To(Succeed())
			hc := newHelmChart(ns, tc.name, sourcev1.HelmRepositoryKind, tc.name, "podinfo")
			hc.Spec.Version = tc.version
			g.Expect(env.Client.Create(context.Background(), hc)).To(Succeed())
			if tc.want == "" {
				got := waitForChart(g, hc, helmCondition[*sourcev1.HelmChart](sourcev1.FetchFailedCondition, metav1.ConditionTrue, sourcev1.AuthenticationFailedReason))
				for _, c := range got.Status.Conditions {
					g.Expect(c.Message).NotTo(ContainSubstring(password))
				}
				g.Expect(logs.Contains(password)).To(BeFalse(), "a registry password is in the logs")
				return
			}
			got := waitForChart(g, hc, chartReadyAt(tc.want))
			g.Expect(got.Status.ObservedSourceArtifactRevision).To(Equal(tc.want + "@" + tc.digest))
			g.Expect(got.Status.Artifact.Path).To(HaveSuffix("/podinfo-" + tc.want + ".tgz"))
			g.Expect(testutil.Download(g, nil, got.Status.Artifact)).To(Equal(helmtest.Archive(t, helmtest.Chart(t, "podinfo", tc.want))))
		})
	}
}

// TestHelmChartFromOCIRepositorySkipsUnchangedDigests: an OCI chart whose
// tag still names the stored digest is resolved with a HEAD request and
// not downloaded again; a tag that moved to other content is pulled.
func TestHelmChartFromOCIRepositorySkipsUnchangedDigests(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startCountingRegistry(t)
	first := helmtest.PushOCI(t, reg.host, "charts/podinfo", helmtest.Chart(t, "podinfo", "1.0.0"))
	hr := newHelmRepository(ns, "charts", "oci://"+reg.host+"/charts")
	hr.Spec.Type, hr.Spec.Insecure = sourcev1.HelmRepositoryTypeOCI, true
	g.Expect(env.Client.Create(context.Background(), hr)).To(Succeed())
	hc := newHelmChart(ns, "podinfo", sourcev1.HelmRepositoryKind, "charts", "podinfo")
	hc.Spec.Version = "1.0.0"
	g.Expect(env.Client.Create(context.Background(), hc)).To(Succeed())
	got := waitForChart(g, hc, chartReadyAt("1.0.0"))
	g.Expect(got.Status.ObservedSourceArtifactRevision).To(Equal("1.0.0@" + first))

	gets, blobs, heads := reg.manifestGets.Load(), reg.blobGets.Load(), reg.manifestHeads.Load()
	testutil.RequestReconcile(g, env.Client, got, "same-digest")
	again := waitForChart(g, hc, func(o *sourcev1.HelmChart) bool { return o.Status.LastHandledReconcileAt == "same-digest" })
	g.Expect(reg.manifestHeads.Load()).To(BeNumerically(">", heads), "the tag is resolved with HEAD")
	g.Expect(reg.manifestGets.Load()).To(Equal(gets), "no manifest is downloaded")
	g.Expect(reg.blobGets.Load()).To(Equal(blobs), "no chart is downloaded")
	g.Expect(again.Status.Artifact).To(Equal(got.Status.Artifact))

	moved := helmtest.PushOCI(t, reg.host, "charts/podinfo", helmtest.Chart(t, "podinfo", "1.0.0", helmtest.WithAppVersion("2.0.0")))
	g.Expect(moved).NotTo(Equal(first))
	testutil.RequestReconcile(g, env.Client, got, "moved")
	pulled := waitForChart(g, hc, func(o *sourcev1.HelmChart) bool {
		return o.Status.ObservedSourceArtifactRevision == "1.0.0@"+moved && chartReadyAt("1.0.0")(o)
	})
	g.Expect(reg.blobGets.Load()).To(BeNumerically(">", blobs), "the moved tag's chart is downloaded")
	g.Expect(testutil.Download(g, nil, pulled.Status.Artifact)).To(Equal(
		helmtest.Archive(t, helmtest.Chart(t, "podinfo", "1.0.0", helmtest.WithAppVersion("2.0.0")))))
}

// TestHelmChartVerifiesCosignSignatures signs an OCI chart with the real
// cosign CLI: it is stored with SourceVerified=True; an unsigned one is
// not stored, and SourceVerified=False says why.
func TestHelmChartVerifiesCosignSignatures(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startCountingRegistry(t)
	keys, pub := testservers.GenerateKeyPair(t)
	signed := helmtest.PushOCI(t, reg.host, "charts/signed", helmtest.Chart(t, "signed", "1.0.0"))
	testservers.SignWithKey(t, keys, reg.host+"/charts/signed@"+signed, false)
	helmtest.PushOCI(t, reg.host, "charts/unsigned", helmtest.Chart(t, "unsigned", "1.0.0"))
	g.Expect(env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cosign-pub"},
		Data:       map[string][]byte{"cosign.pub": pub},
	})).To(Succeed())
	hr := newHelmRepository(ns, "charts", "oci://"+reg.host+"/charts")
	hr.Spec.Type, hr.Spec.Insecure = sourcev1.HelmRepositoryTypeOCI, true
	g.Expect(env.Client.Create(context.Background(), hr)).To(Succeed())

	verify := &sourcev1.OCIRepositoryVerification{
		Provider: sourcev1.VerificationProviderCosign, SecretRef: &meta.LocalObjectReference{Name: "cosign-pub"},
	}
	ok := newHelmChart(ns, "signed", sourcev1.HelmRepositoryKind, "charts", "signed")
	ok.Spec.Verify = verify
	g.Expect(env.Client.Create(context.Background(), ok)).To(Succeed())
	got := waitForChart(g, ok, chartReadyAt("1.0.0"))
	g.Expect(conditions.IsTrue(got, sourcev1.SourceVerifiedCondition)).To(BeTrue())
	g.Expect(conditions.Message(got, sourcev1.SourceVerifiedCondition)).To(ContainSubstring("cosign.pub"))

	bad := newHelmChart(ns, "unsigned", sourcev1.HelmRepositoryKind, "charts", "unsigned")
	bad.Spec.Verify = verify
	g.Expect(env.Client.Create(context.Background(), bad)).To(Succeed())
	got = waitForChart(g, bad, helmCondition[*sourcev1.HelmChart](sourcev1.SourceVerifiedCondition, metav1.ConditionFalse, sourcev1.VerificationErrorReason))
	g.Expect(conditions.Message(got, sourcev1.SourceVerifiedCondition)).To(ContainSubstring("no cosign signature found"))
	g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
	g.Expect(got.Status.Artifact).To(BeNil(), "an unverified chart is never stored")
	g.Expect(testutil.WarningReasons(g, env.Client, got, sourcev1.HelmChartKind)).To(ContainElement(sourcev1.VerificationErrorReason))
}
