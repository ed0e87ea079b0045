package helm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hchart "helm.sh/helm/v4/pkg/chart/v2"
	hrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// newRepository serves charts from an HTTP chart repository and creates
// its HelmRepository in ns.
func newRepository(t *testing.T, g *WithT, ns string, charts ...*hchart.Chart) *helmtest.Repo {
	t.Helper()
	repo := helmtest.NewRepo(t)
	for _, c := range charts {
		repo.Add(t, c)
	}
	hrepo := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"},
		Spec:       sourcev1.HelmRepositorySpec{URL: repo.URL(), Interval: metav1.Duration{Duration: time.Hour}},
	}
	g.Expect(env.Client.Create(context.Background(), hrepo)).To(Succeed())
	return repo
}

// newRelease creates a HelmRelease of chart name (any version) from the
// HelmRepository of newRepository.
func newRelease(g *WithT, ns, name, chart string, mutate ...func(*helmv2.HelmRelease)) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Hour},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: chart, Version: "*",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
			}},
			Timeout: &metav1.Duration{Duration: 30 * time.Second},
		},
	}
	for _, m := range mutate {
		m(hr)
	}
	g.Expect(env.Client.Create(context.Background(), hr)).To(Succeed())
	return hr
}

// valuesJSON returns a values document.
func valuesJSON(doc string) *apiextensionsv1.JSON {
	return &apiextensionsv1.JSON{Raw: []byte(doc)}
}

// configMap returns the ConfigMap ns/name, or fails.
func configMap(g Gomega, ns, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
	return cm
}

// refreshRepository asks the HelmRepository to fetch its index again.
func refreshRepository(g *WithT, ns, token string) {
	testutil.RequestReconcile(g, env.Client, &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"}}, token)
}

// TestInstallUpgradeUninstall: a chart from an HTTP repository installs
// with the release's values, upgrades when a new chart version appears,
// and is uninstalled, with its HelmChart, when the HelmRelease is deleted.
func TestInstallUpgradeUninstall(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	repo := newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0"))
	installs := helmActionsOf(helmv2.ReleaseActionInstall)
	hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) {
		hr.Spec.Values = valuesJSON(`{"greeting":"hi"}`)
	})
	key := client.ObjectKeyFromObject(hr)

	got := waitForHR(g, key, hrReady("1.0.0"))
	g.Expect(helmActionsOf(helmv2.ReleaseActionInstall).samples).To(BeNumerically(">", installs.samples), "the install's duration is observed")
	g.Expect(got.Status.HelmChart).To(Equal(ns + "/" + ns + "-app"))
	g.Expect(got.Status.LastAttemptedReleaseAction).To(Equal(helmv2.ReleaseActionInstall))
	g.Expect(got.Status.StorageNamespace).To(Equal(ns))
	g.Expect(got.Status.LastAttemptedConfigDigest).To(HavePrefix("sha256:"))
	g.Expect(got.Status.History).To(HaveLen(1))
	g.Expect(got.Status.History[0].Status).To(Equal("deployed"))
	g.Expect(got.Status.History[0].ConfigDigest).To(Equal(got.Status.LastAttemptedConfigDigest))
	g.Expect(got.Status.Inventory.Entries).To(ContainElement(HaveField("ID", ns+"_app-cm__ConfigMap")))
	cm := configMap(g, ns, "app-cm")
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hi"))
	g.Expect(cm.Labels).To(HaveKeyWithValue(helmv2.NameLabel, "app"))
	g.Expect(cm.Labels).To(HaveKeyWithValue(helmv2.NamespaceLabel, ns))
	g.Expect(conditions.IsTrue(got, helmv2.ReleasedCondition)).To(BeTrue())
	g.Expect(testutil.EventMessages(g, env.Client, got, helmv2.HelmReleaseKind)).To(ContainElement(ContainSubstring("Helm install succeeded")))

	// A new chart version upgrades the release.
	repo.Add(t, helmtest.Chart(t, "app", "1.1.0", helmtest.WithTemplate("extra.yaml",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\ndata: {}\n")))
	upgrades := helmActionsOf(helmv2.ReleaseActionUpgrade)
	refreshRepository(g, ns, "new-version")
	got = waitForHR(g, key, hrReady("1.1.0"))
	g.Expect(got.Status.LastAttemptedReleaseAction).To(Equal(helmv2.ReleaseActionUpgrade))
	g.Expect(helmActionsOf(helmv2.ReleaseActionUpgrade).samples).To(BeNumerically(">", upgrades.samples), "the upgrade's duration is observed")
	g.Expect(got.Status.History).To(HaveLen(2))
	g.Expect(got.Status.History[1].Status).To(Equal("superseded"))
	configMap(g, ns, "app-extra")

	// Deleting the HelmRelease uninstalls the release and deletes its HelmChart.
	uninstalls := helmActionsOf(actionUninstall)
	g.Expect(env.Client.Delete(context.Background(), hr)).To(Succeed())
	g.Eventually(func() bool {
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app-cm"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err)
	}, testutil.WaitTimeout).Should(BeTrue())
	g.Eventually(func() bool {
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ns + "-app"}, &sourcev1.HelmChart{})
		return apierrors.IsNotFound(err)
	}, testutil.WaitTimeout).Should(BeTrue())
	var secrets corev1.SecretList
	g.Expect(env.Client.List(context.Background(), &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})).To(Succeed())
	g.Expect(secrets.Items).To(BeEmpty())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(context.Background(), key, &helmv2.HelmRelease{}))
	}, testutil.WaitTimeout).Should(BeTrue(), "the finalizer is done")
	g.Expect(helmActionsOf(actionUninstall).samples).To(BeNumerically(">", uninstalls.samples), "the uninstall's duration is observed")
}

// TestNoOpTickWritesNothing: a reconcile of a release that is current
// installs nothing new and writes no release record.
func TestNoOpTickWritesNothing(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0"))
	hr := newRelease(g, ns, "quiet", "app")
	key := client.ObjectKeyFromObject(hr)
	before := waitForHR(g, key, hrReady("1.0.0"))

	testutil.RequestReconcile(g, env.Client, hr, "tick")
	got := waitForHR(g, key, func(hr *helmv2.HelmRelease) bool { return hr.Status.LastHandledReconcileAt == "tick" })
	g.Expect(got.Status.History).To(HaveLen(1))
	g.Expect(got.Status.History[0].Digest).To(Equal(before.Status.History[0].Digest))
	var secrets corev1.SecretList
	g.Expect(env.Client.List(context.Background(), &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})).To(Succeed())
	g.Expect(secrets.Items).To(HaveLen(1))
	g.Expect(secrets.Items[0].ResourceVersion).To(Equal(releaseSecretVersion(g, ns, "quiet", 1)))
}

// secretLists counts the lists of Secrets that the controllers send (the
// Helm SDK's reads of release records), by namespace.
var secretLists = &testutil.RequestCounter{Match: func(r *http.Request) bool {
	return r.Method == http.MethodGet && !r.URL.Query().Has("watch") && strings.HasSuffix(r.URL.Path, "/secrets")
}}

// TestQuietRunReadsNoRelease: once the watch of release Secrets holds a
// release's record, a run with nothing new lists no release Secret; new
// values still upgrade the release, and the run after reads the new
// version.
func TestQuietRunReadsNoRelease(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0"))
	hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) {
		hr.Spec.Values = valuesJSON(`{"greeting":"one"}`)
	})
	key := client.ObjectKeyFromObject(hr)
	waitForHR(g, key, hrReady("1.0.0"))
	quietRun := func(prefix string) {
		runs := 0
		g.Eventually(func() int {
			before := secretLists.In(ns)
			runs++
			reconcileAndWait(g, hr, fmt.Sprintf("%s-%d", prefix, runs))
			return secretLists.In(ns) - before
		}, testutil.WaitTimeout).Should(BeZero())
	}
	quietRun("quiet")

	g.Expect(env.Client.Get(context.Background(), key, hr)).To(Succeed())
	hr.Spec.Values = valuesJSON(`{"greeting":"two"}`)
	g.Expect(env.Client.Update(context.Background(), hr)).To(Succeed())
	got := waitForHR(g, key, func(hr *helmv2.HelmRelease) bool {
		return hrReady("1.0.0")(hr) && len(hr.Status.History) == 2
	})
	g.Expect(got.Status.History[0].Version).To(Equal(2))
	g.Expect(configMap(g, ns, "app-cm").Data).To(HaveKeyWithValue("greeting", "two"))
	quietRun("after")
	got = waitForHR(g, key, hrReady("1.0.0"))
	g.Expect(got.Status.History[0].Version).To(Equal(2), "the new version, not the remembered one")
	g.Expect(got.Status.History[0].Status).To(Equal("deployed"))
}

// TestFirstInstallReadsNoHistory: the first install of a name records the
// one release it made as the history, without reading the records back;
// the history is the one Helm's storage holds.
func TestFirstInstallReadsNoHistory(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0"))
	hr := newRelease(g, ns, "first", "app")
	got := waitForHR(g, client.ObjectKeyFromObject(hr), hrReady("1.0.0"))
	g.Expect(secretLists.In(ns)).To(Equal(firstInstallLists),
		"the one list of an install: the recovery of a pending release, which also answers Helm's check that the name is free")

	stored, err := storedHistory(ns, "first")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Status.History).To(HaveLen(1))
	// As the API server keeps it: times to the second.
	data, err := json.Marshal(snapshots(stored, 0))
	g.Expect(err).NotTo(HaveOccurred())
	var want helmv2.Snapshots
	g.Expect(json.Unmarshal(data, &want)).To(Succeed())
	g.Expect(got.Status.History).To(Equal(want))
}

// storedHistory reads the records of the release name from Helm's storage
// in ns.
func storedHistory(ns, name string) ([]*hrelease.Release, error) {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	found, err := driver.NewSecrets(cs.CoreV1().Secrets(ns)).Query(map[string]string{"name": name, "owner": "helm"})
	if err != nil {
		return nil, err
	}
	out := make([]*hrelease.Release, 0, len(found))
	for _, r := range found {
		out = append(out, r.(*hrelease.Release))
	}
	return out, nil
}

// firstInstallLists is what the first install of a release lists.
const firstInstallLists = 1

// releaseSecretVersion returns the resourceVersion of a release record.
func releaseSecretVersion(g *WithT, ns, name string, version int) string {
	s := &corev1.Secret{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns,
		Name: "sh.helm.release.v1." + name + ".v" + strconv.Itoa(version)}, s)).To(Succeed())
	return s.ResourceVersion
}

// TestForceAndReset: forceAt upgrades a current release once; resetAt is
// recorded.
func TestForceAndReset(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0"))
	hr := newRelease(g, ns, "forced", "app")
	key := client.ObjectKeyFromObject(hr)
	waitForHR(g, key, hrReady("1.0.0"))

	patch := []byte(`{"metadata":{"annotations":{"` + meta.ReconcileRequestAnnotation + `":"f1","` +
		meta.ForceRequestAnnotation + `":"f1","` + meta.ResetRequestAnnotation + `":"r1"}}}`)
	g.Expect(env.Client.Patch(context.Background(), hr, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
	got := waitForHR(g, key, func(hr *helmv2.HelmRelease) bool {
		return hr.Status.LastHandledForceAt == "f1" && hrReady("1.0.0")(hr)
	})
	g.Expect(got.Status.LastHandledResetAt).To(Equal("r1"))
	g.Expect(got.Status.History).To(HaveLen(2))
	g.Expect(got.Status.History.Latest().Version).To(Equal(2))
}
