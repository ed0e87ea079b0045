package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// A platform engineer serves charts from a private HTTPS repository (its
// own CA, basic auth) and deploys the chart app with a HelmRelease made by
// `windlass create helmrelease --export`, edited to retry a failed upgrade
// once (upgrade.remediation.retries: 1) and applied. The release is
// installed; `windlass build helmrelease` prints what is in the cluster and
// `windlass diff helmrelease` finds nothing to change. A new chart version
// is upgraded to by `windlass reconcile helmrelease --with-source`. A
// version with a template the API server refuses fails, is rolled back
// (both attempts), and the release stalls at the last good version until
// a fixed version is published. A hand edit of the ConfigMap the chart
// owns (kubectl edit) shows in `windlass diff` and is corrected by the
// next reconciliation (driftDetection enabled). Deleting the HelmRelease
// uninstalls the release: its objects and Helm's release records go.
func TestHelm_HTTPRepositoryLifecycle(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	start := time.Now()
	ns := env.CreateNamespace(t)
	const user, password = "charts-ci", "charts-pass-5b1d9"
	repo := helmtest.NewRepo(t, helmtest.WithTLS(), helmtest.WithBasicAuth(user, password))
	repo.Add(t, appChart(t, "1.0.0", "hello"))
	key := client.ObjectKey{Namespace: ns, Name: releaseName}

	deployFromHTTPSRepository(t, g, repo, ns, user, password)
	t.Logf("installed %.1fs after the start", time.Since(start).Seconds())

	upgradeToNewVersion(t, g, repo, ns, key)
	rollBackBrokenVersion(t, g, repo, ns, key)
	correctDrift(t, g, ns, key)

	step := time.Now()
	out := mustRunCLI(g, "delete", "helmrelease", releaseName, "-n", ns, "--silent", "--timeout", cliTimeout)
	t.Logf("`windlass delete helmrelease` took %s: %s", time.Since(step).Round(time.Millisecond), joinLines(out))
	g.Expect(apierrors.IsNotFound(env.Client.Get(context.Background(), key, &helmv2.HelmRelease{}))).To(BeTrue())
	g.Expect(settings(g, ns)).To(BeNil(), "the release's ConfigMap is uninstalled")
	g.Expect(releaseRecords(g, ns)).To(BeEmpty(), "Helm's release records are gone")
	chartKey := client.ObjectKey{Namespace: ns, Name: ns + "-" + releaseName}
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(context.Background(), chartKey, &sourcev1.HelmChart{}))
	}, timeout, interval).Should(BeTrue(), "the HelmChart made for the release is deleted")
	logStory(t, "HTTP repository story", time.Since(start).Seconds())
}

// deployFromHTTPSRepository creates, with the binary, the credentials of
// repo, the HelmRepository charts, and the HelmRelease app (exported,
// edited and applied), and waits until app 1.0.0 is deployed.
func deployFromHTTPSRepository(t *testing.T, g *WithT, repo *helmtest.Repo, ns, user, password string) {
	t.Helper()
	ca := writeFile(t, g, "ca.crt", repo.CAPEM())
	out, errOut, code := runCLIWithInput(g, password+"\n", "create", "secret", "helm", "charts-auth",
		"--username", user, "--password-stdin", "--ca-file", ca, "-n", ns)
	g.Expect(code).To(Equal(0), out+errOut)
	g.Expect(out + errOut).NotTo(ContainSubstring(password))
	out = mustRunCLI(g, "create", "source", "helm", "charts", "--url", repo.URL(), "--secret-ref", "charts-auth",
		"--cert-secret-ref", "charts-auth", "-n", ns, "--timeout", cliTimeout)
	g.Expect(out).To(ContainSubstring("HelmRepository " + ns + "/charts"))
	g.Expect(out).NotTo(ContainSubstring(password))

	// A long interval: only the user's requests reconcile, so that the
	// drift below is seen before a periodic run corrects it.
	hr := exportHelmRelease(g, ns, "--source", "HelmRepository/charts", "--chart", "app", "--drift-detection", "enabled",
		"--interval", "10m")
	g.Expect(hr.Spec.DriftDetection).NotTo(BeNil())
	g.Expect(hr.Spec.DriftDetection.Mode).To(Equal(helmv2.DriftDetectionEnabled))
	hr.Spec.Upgrade = &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: 1}}
	g.Expect(env.Client.Create(context.Background(), hr)).To(Succeed())
	got := waitHelmRelease(g, client.ObjectKeyFromObject(hr), deployedAt("1.0.0"))
	g.Expect(got.Status.History.Latest().Version).To(Equal(1))
	g.Expect(settings(g, ns)).To(Equal(map[string]string{"greeting": "hello", "chartVersion": "1.0.0"}))
	g.Expect(repo.LastHeader("/index.yaml").Get("Authorization")).NotTo(BeEmpty(), "the index was fetched with the credentials")

	row := tableRow(g, mustRunCLI(g, "get", "helmreleases", "-n", ns), releaseName)
	g.Expect(row).To(ContainElements("1.0.0", "True"), "row of %s", releaseName)
	tree := mustRunCLI(g, "tree", "helmrelease", releaseName, "-n", ns)
	g.Expect(tree).To(ContainSubstring("ConfigMap/" + ns + "/" + settingsConfigMap))
	g.Expect(expectBuildMatchesCluster(g, ns)).To(Equal([]string{"ConfigMap/" + settingsConfigMap}))
	expectNoDiff(g, ns)
}

// upgradeToNewVersion publishes app 1.1.0 and upgrades to it with
// `windlass reconcile helmrelease --with-source`.
func upgradeToNewVersion(t *testing.T, g *WithT, repo *helmtest.Repo, ns string, key client.ObjectKey) {
	t.Helper()
	repo.Add(t, appChart(t, "1.1.0", "bonjour"))
	step := time.Now()
	out := mustRunCLI(g, "reconcile", "helmrelease", releaseName, "--with-source", "-n", ns, "--timeout", cliTimeout)
	t.Logf("upgraded to 1.1.0 %s after `windlass reconcile helmrelease --with-source`: %s",
		time.Since(step).Round(time.Millisecond), joinLines(out))
	got := waitHelmRelease(g, key, deployedAt("1.1.0"))
	latest := got.Status.History.Latest()
	g.Expect(latest.Version).To(Equal(2))
	g.Expect(got.Status.LastAttemptedReleaseAction).To(Equal(helmv2.ReleaseActionUpgrade))
	g.Expect(conditions.Reason(got, helmv2.ReleasedCondition)).To(Equal(helmv2.UpgradeSucceededReason))
	g.Expect(settings(g, ns)).To(Equal(map[string]string{"greeting": "bonjour", "chartVersion": "1.1.0"}))
	g.Expect(tableRow(g, mustRunCLI(g, "get", "helmreleases", "-n", ns), releaseName)).To(ContainElement("1.1.0"))
	g.Expect(expectBuildMatchesCluster(g, ns)).To(Equal([]string{"ConfigMap/" + settingsConfigMap}))
	expectNoDiff(g, ns)
}

// rollBackBrokenVersion publishes app 1.2.0, whose second template the
// API server refuses: the upgrade fails and is rolled back, retried once,
// rolled back again, and the release stalls at 1.1.0. Publishing 1.2.1,
// which fixes it, upgrades again.
func rollBackBrokenVersion(t *testing.T, g *WithT, repo *helmtest.Repo, ns string, key client.ObjectKey) {
	t.Helper()
	repo.Add(t, appChart(t, "1.2.0", "hola", helmtest.WithTemplate("broken.yaml", brokenTemplate)))
	step := time.Now()
	out, errOut, code := runCLI(g, "reconcile", "helmrelease", releaseName, "--with-source", "-n", ns, "--timeout", cliTimeout)
	g.Expect(code).NotTo(Equal(0), out+errOut)
	g.Expect(errOut).To(ContainSubstring("HelmRelease " + ns + "/" + releaseName))
	t.Logf("the broken version fails `windlass reconcile helmrelease`: %s", joinLines(errOut))

	got := waitHelmRelease(g, key, func(g Gomega, hr *helmv2.HelmRelease) {
		g.Expect(conditions.Reason(hr, meta.ReadyCondition)).To(Equal(helmv2.RetriesExceededReason))
	})
	t.Logf("retries exhausted %s after the reconcile request: %s", time.Since(step).Round(time.Millisecond),
		conditions.Message(got, meta.ReadyCondition))
	g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
	g.Expect(conditions.IsTrue(got, meta.StalledCondition)).To(BeTrue(), "Stalled")
	g.Expect(got.Status.UpgradeFailures).To(Equal(int64(2)), "the first attempt and one retry")
	g.Expect(got.Status.LastAttemptedRevision).To(Equal("1.2.0"))
	g.Expect(conditions.Reason(got, helmv2.ReleasedCondition)).To(Equal(helmv2.UpgradeFailedReason))
	g.Expect(conditions.Message(got, helmv2.ReleasedCondition)).To(ContainSubstring("Not_A_Valid_Name"))
	g.Expect(conditions.IsTrue(got, helmv2.RemediatedCondition)).To(BeTrue())
	g.Expect(conditions.Reason(got, helmv2.RemediatedCondition)).To(Equal(helmv2.RollbackSucceededReason))
	latest := got.Status.History.Latest()
	g.Expect(latest.Status).To(Equal("deployed"))
	g.Expect(latest.ChartVersion).To(Equal("1.1.0"), "rolled back to the last good version")
	g.Expect(historyOf(got)).To(Equal([]string{"1.1.0 deployed", "1.2.0 failed", "1.1.0 superseded", "1.2.0 failed", "1.1.0 superseded"}),
		"two attempts, each rolled back (the newest 5 releases)")
	g.Expect(settings(g, ns)).To(Equal(map[string]string{"greeting": "bonjour", "chartVersion": "1.1.0"}))
	g.Expect(tableRow(g, mustRunCLI(g, "get", "helmreleases", "-n", ns), releaseName)).To(ContainElement("False"))

	repo.Add(t, appChart(t, "1.2.1", "hola"))
	mustRunCLI(g, "reconcile", "helmrelease", releaseName, "--with-source", "-n", ns, "--timeout", cliTimeout)
	got = waitHelmRelease(g, key, deployedAt("1.2.1"))
	g.Expect(got.Status.UpgradeFailures).To(BeZero(), "a new version starts the count afresh")
	g.Expect(conditions.Get(got, helmv2.RemediatedCondition)).To(BeNil())
	g.Expect(settings(g, ns)).To(Equal(map[string]string{"greeting": "hola", "chartVersion": "1.2.1"}))
	t.Logf("history after the fix: %v", historyOf(got))
}

// correctDrift edits the ConfigMap the release owns as kubectl edit does;
// `windlass diff helmrelease` shows it, the next reconciliation corrects
// it.
func correctDrift(t *testing.T, g *WithT, ns string, key client.ObjectKey) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: settingsConfigMap}, cm)).To(Succeed())
	cm.Data["greeting"] = "edited by hand"
	g.Expect(env.Client.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())

	out, errOut, code := runCLI(g, "diff", "helmrelease", releaseName, "-n", ns)
	g.Expect(code).To(Equal(1), out+errOut)
	g.Expect(out).To(ContainSubstring("► ConfigMap/" + ns + "/" + settingsConfigMap + " drifted"))
	g.Expect(out).To(ContainSubstring("-  greeting: edited by hand"))
	g.Expect(out).To(ContainSubstring("+  greeting: hola"))

	step := time.Now()
	mustRunCLI(g, "reconcile", "helmrelease", releaseName, "-n", ns, "--timeout", cliTimeout)
	g.Eventually(func(g Gomega) map[string]string { return settings(g, ns) }, changeBound, 100*time.Millisecond).
		Should(HaveKeyWithValue("greeting", "hola"))
	t.Logf("drift corrected %s after `windlass reconcile helmrelease`", time.Since(step).Round(time.Millisecond))
	got := waitHelmRelease(g, key, func(g Gomega, hr *helmv2.HelmRelease) {
		g.Expect(conditions.Reason(hr, helmv2.DriftedCondition)).To(Equal(helmv2.DriftCorrectedReason))
	})
	g.Expect(conditions.IsFalse(got, helmv2.DriftedCondition)).To(BeTrue())
	g.Expect(got.Status.History.Latest().ChartVersion).To(Equal("1.2.1"), "corrected without a new release")
	g.Expect(testutil.EventMessages(g, env.Client, got, helmv2.HelmReleaseKind)).
		To(ContainElement(ContainSubstring("Drift corrected")))
	expectNoDiff(g, ns)
}

// A release engineer pushes the chart app to a registry that wants a
// login, the way `helm push` does, and deploys it through an
// OCIRepository that selects the chart's layer (mediaType
// application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation copy)
// named in the HelmRelease's chartRef, all with `windlass create`. Pushing
// a new version and moving the OCIRepository's tag to it upgrades the
// release without a reconcile request for it: the new artifact wakes it.
func TestHelm_OCIChartUpgradesOnNewTag(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	start := time.Now()
	ns := env.CreateNamespace(t)
	reg := testservers.StartRegistry(t, testservers.RegistryOptions{Username: "ci", Password: "registry-pass-a41c"})
	auth := helmtest.WithRegistryAuth(reg.Username, reg.Password)
	helmtest.PushOCI(t, reg.Host, "charts/app", appChart(t, "1.0.0", "hello"), auth)
	key := client.ObjectKey{Namespace: ns, Name: releaseName}

	out, errOut, code := runCLIWithInput(g, reg.Password+"\n", "create", "secret", "oci", "registry-auth",
		"--url", reg.Host, "--username", reg.Username, "--password-stdin", "-n", ns)
	g.Expect(code).To(Equal(0), out+errOut)
	createChartSource(g, reg, ns, "1.0.0")
	out = mustRunCLI(g, "create", "helmrelease", releaseName, "--chart-ref", "OCIRepository/app-chart", "-n", ns, "--timeout", cliTimeout)
	g.Expect(out).To(ContainSubstring("HelmRelease " + ns + "/" + releaseName))
	v1 := digestVersion("1.0.0")
	got := waitHelmRelease(g, key, deployedMatching(v1))
	g.Expect(got.Status.HelmChart).To(BeEmpty(), "a chartRef makes no HelmChart")
	g.Expect(got.Status.LastAttemptedRevision).To(v1)
	first := got.Status.History.Latest().ChartVersion
	t.Logf("the release's chart version is %s", first)
	g.Expect(settings(g, ns)).To(SatisfyAll(HaveKeyWithValue("greeting", "hello"), HaveKeyWithValue("chartVersion", first)))
	row := tableRow(g, mustRunCLI(g, "get", "helmreleases", "-n", ns), releaseName)
	g.Expect(row).To(ContainElements(first, "True"), "row of %s", releaseName)
	g.Expect(expectBuildMatchesCluster(g, ns)).To(Equal([]string{"ConfigMap/" + settingsConfigMap}))
	expectNoDiff(g, ns)
	t.Logf("installed from the registry %.1fs after the start", time.Since(start).Seconds())

	helmtest.PushOCI(t, reg.Host, "charts/app", appChart(t, "1.1.0", "bonjour"), auth)
	step := time.Now()
	createChartSource(g, reg, ns, "1.1.0")
	g.Eventually(func(g Gomega) map[string]string { return settings(g, ns) }, changeBound, 100*time.Millisecond).
		Should(HaveKeyWithValue("chartVersion", digestVersion("1.1.0")))
	t.Logf("upgraded %s after the tag was moved", time.Since(step).Round(time.Millisecond))
	got = waitHelmRelease(g, key, deployedMatching(digestVersion("1.1.0")))
	g.Expect(got.Status.History.Latest().Version).To(Equal(2))
	g.Expect(conditions.Reason(got, helmv2.ReleasedCondition)).To(Equal(helmv2.UpgradeSucceededReason))
	g.Expect(settings(g, ns)).To(HaveKeyWithValue("greeting", "bonjour"))
	g.Expect(expectBuildMatchesCluster(g, ns)).To(Equal([]string{"ConfigMap/" + settingsConfigMap}))
	expectNoDiff(g, ns)
	logStory(t, "OCI story", time.Since(start).Seconds())
}

// digestVersion matches the version of a chart from an OCIRepository:
// the chart's version with the first 12 hex digits of a digest as build
// metadata (api.md, "Chart via reference").
func digestVersion(version string) types.GomegaMatcher {
	return MatchRegexp(`^` + regexp.QuoteMeta(version) + `\+[0-9a-f]{12}$`)
}

// createChartSource creates or updates, with `windlass create source oci`,
// the OCIRepository app-chart that selects the chart layer of
// charts/app:tag in reg, and checks that it is Ready at that tag.
func createChartSource(g *WithT, reg *testservers.Registry, ns, tag string) {
	g.THelper()
	out := mustRunCLI(g, "create", "source", "oci", "app-chart", "--url", "oci://"+reg.Host+"/charts/app", "--tag", tag,
		"--secret-ref", "registry-auth", "--layer-media-type", helmChartLayer, "--layer-operation", "copy",
		"--insecure", "-n", ns, "--timeout", cliTimeout)
	g.Expect(out).To(ContainSubstring("OCIRepository " + ns + "/app-chart"))
	g.Expect(out).NotTo(ContainSubstring(reg.Password))
	src := &sourcev1.OCIRepository{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app-chart"}, src)).To(Succeed())
	g.Expect(src.Spec.LayerSelector).NotTo(BeNil())
	g.Expect(src.Spec.LayerSelector.Operation).To(Equal(sourcev1.OCILayerCopy))
	g.Expect(src.Spec.LayerSelector.MediaType).To(Equal(string(helmtest.OCIChartMediaType)))
	g.Expect(src.Status.Artifact).NotTo(BeNil())
	g.Expect(src.Status.Artifact.Revision).To(HavePrefix(tag + "@sha256:"))
}

// The controller is killed (SIGKILL) while it installs a chart whose
// Deployment never becomes ready, with wait on and a long timeout: Helm's
// release record says pending-install, and nothing will ever finish it.
// The user turns the wait off (install.disableWait: true) and a new
// controller starts: it marks the interrupted release failed, replaces it
// and the release ends deployed, with no manual cleanup.
func TestHelm_KilledMidInstallRecovers(t *testing.T) {
	g := NewWithT(t)
	start := time.Now()
	sc := newHelmCrashScene(t, g, appChart(t, "1.0.0", "hello", helmtest.WithTemplate("web.yaml", neverReadyTemplate)))
	ns, proc, key := sc.ns, sc.proc, sc.key
	w := watchReleaseRecords(g, ns)
	g.Expect(env.Client.Create(context.Background(), sc.release(g))).To(Succeed())
	killOn(t, w, proc, "pending-install release record", func(ev watch.Event) bool {
		s, ok := ev.Object.(*corev1.Secret)
		return ok && s.Labels["status"] == "pending-install"
	})
	g.Expect(proc.Exited()).To(BeTrue(), "the controller was killed")
	killed := time.Now()
	t.Logf("killed %.1fs after the start, with the release pending-install", killed.Sub(start).Seconds())

	g.Consistently(func(g Gomega) map[string]string { return releaseRecords(g, ns) }, time.Second, interval).
		Should(Equal(map[string]string{"sh.helm.release.v1.app.v1": "pending-install"}), "nothing finishes the install")
	got := helmRelease(g, key)
	g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeFalse())

	// The user turns the wait off, as kubectl edit does.
	got.Spec.Install = &helmv2.Install{DisableWait: true}
	g.Expect(env.Client.Update(context.Background(), got, client.FieldOwner("kubectl-edit"))).To(Succeed())
	restarted := startShardController(t, g, sc.shard, sc.storage)
	got = waitHelmRelease(g, key, deployedAt("1.0.0"))
	t.Logf("deployed %.1fs after the restart", time.Since(killed).Seconds())
	g.Expect(releaseRecords(g, ns)).To(Equal(map[string]string{"sh.helm.release.v1.app.v1": "deployed"}),
		"the interrupted release was replaced, not left beside it")
	g.Expect(conditions.Reason(got, helmv2.ReleasedCondition)).To(Equal(helmv2.InstallSucceededReason))
	g.Expect(settings(g, ns)).To(Equal(map[string]string{"greeting": "hello", "chartVersion": "1.0.0"}))
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: releaseName + "-web"}, &appsv1.Deployment{})).
		To(Succeed(), "the Deployment is part of the release")
	expectPendingRecovered(g, got, restarted)
	g.Expect(tableRow(g, mustRunCLI(g, "get", "helmreleases", "-n", ns), releaseName)).To(ContainElements("1.0.0", "True"))
	logStory(t, "crash story", time.Since(start).Seconds())
}

// historyOf returns "chartVersion status" of each release of hr's
// history, newest first.
func historyOf(hr *helmv2.HelmRelease) []string {
	out := make([]string, 0, len(hr.Status.History))
	for _, s := range hr.Status.History {
		out = append(out, strings.TrimSpace(s.ChartVersion+" "+s.Status))
	}
	return out
}

// The controller is killed (SIGKILL) while it upgrades a deployed release
// to a chart version whose Deployment never becomes ready, with wait on
// and a long timeout: Helm's record of the upgrade says pending-upgrade.
// The user turns the upgrade's wait off and a new controller starts: it
// marks the interrupted upgrade failed and upgrades again, and the release
// ends deployed at the new version, the old records kept as Helm keeps
// them.
func TestHelm_KilledMidUpgradeRecovers(t *testing.T) {
	g := NewWithT(t)
	start := time.Now()
	sc := newHelmCrashScene(t, g, appChart(t, "1.0.0", "hello"))
	ns, proc, key := sc.ns, sc.proc, sc.key
	g.Expect(env.Client.Create(context.Background(), sc.release(g))).To(Succeed())
	waitHelmRelease(g, key, deployedAt("1.0.0"))

	w := watchReleaseRecords(g, ns)
	sc.repo.Add(t, appChart(t, "2.0.0", "bonjour", helmtest.WithTemplate("web.yaml", neverReadyTemplate)))
	mustRunCLI(g, "reconcile", "source", "helm", "charts", "-n", ns, "--timeout", cliTimeout)
	killOn(t, w, proc, "pending-upgrade release record", func(ev watch.Event) bool {
		s, ok := ev.Object.(*corev1.Secret)
		return ok && s.Labels["status"] == "pending-upgrade"
	})
	g.Expect(proc.Exited()).To(BeTrue(), "the controller was killed")
	killed := time.Now()
	t.Logf("killed %.1fs after the start, with the upgrade pending", killed.Sub(start).Seconds())
	g.Consistently(func(g Gomega) map[string]string { return releaseRecords(g, ns) }, time.Second, interval).
		Should(Equal(map[string]string{"sh.helm.release.v1.app.v1": "deployed", "sh.helm.release.v1.app.v2": "pending-upgrade"}),
			"nothing finishes the upgrade")

	got := helmRelease(g, key)
	got.Spec.Upgrade = &helmv2.Upgrade{DisableWait: true}
	g.Expect(env.Client.Update(context.Background(), got, client.FieldOwner("kubectl-edit"))).To(Succeed())
	restarted := startShardController(t, g, sc.shard, sc.storage)
	got = waitHelmRelease(g, key, deployedAt("2.0.0"))
	t.Logf("upgraded %.1fs after the restart", time.Since(killed).Seconds())
	g.Expect(releaseRecords(g, ns)).To(Equal(map[string]string{"sh.helm.release.v1.app.v1": "superseded",
		"sh.helm.release.v1.app.v2": "failed", "sh.helm.release.v1.app.v3": "deployed"}))
	g.Expect(historyOf(got)).To(Equal([]string{"2.0.0 deployed", "2.0.0 failed", "1.0.0 superseded"}))
	g.Expect(conditions.Reason(got, helmv2.ReleasedCondition)).To(Equal(helmv2.UpgradeSucceededReason))
	g.Expect(got.Status.UpgradeFailures).To(BeZero(), "the interrupted upgrade is no failure of the HelmRelease")
	g.Expect(settings(g, ns)).To(Equal(map[string]string{"greeting": "bonjour", "chartVersion": "2.0.0"}))
	expectPendingRecovered(g, got, restarted)
	logStory(t, "upgrade crash story", time.Since(start).Seconds())
}

// The controller is killed (SIGKILL) while it rolls back a failed upgrade
// and waits for the rolled-back Deployment, which never becomes ready:
// Helm's record of the rollback says pending-rollback. The user turns the
// rollback's wait off and a new controller starts: it marks the
// interrupted rollback failed, tries the upgrade again, and rolls it back
// to the last good chart, as the remediation says, with nothing left
// pending.
func TestHelm_KilledMidRollbackRecovers(t *testing.T) {
	g := NewWithT(t)
	start := time.Now()
	sc := newHelmCrashScene(t, g, appChart(t, "1.0.0", "hello", helmtest.WithTemplate("web.yaml", neverReadyTemplate)))
	ns, proc, key := sc.ns, sc.proc, sc.key
	hr := sc.release(g)
	hr.Spec.Install = &helmv2.Install{DisableWait: true}
	hr.Spec.Upgrade = &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{RemediateLastFailure: ptr.To(true)}}
	g.Expect(env.Client.Create(context.Background(), hr)).To(Succeed())
	waitHelmRelease(g, key, deployedAt("1.0.0"))

	w := watchReleaseRecords(g, ns)
	sc.repo.Add(t, appChart(t, "2.0.0", "bonjour", helmtest.WithTemplate("broken.yaml", brokenTemplate)))
	mustRunCLI(g, "reconcile", "source", "helm", "charts", "-n", ns, "--timeout", cliTimeout)
	killOn(t, w, proc, "pending-rollback release record", func(ev watch.Event) bool {
		s, ok := ev.Object.(*corev1.Secret)
		return ok && s.Labels["status"] == "pending-rollback"
	})
	g.Expect(proc.Exited()).To(BeTrue(), "the controller was killed")
	killed := time.Now()
	t.Logf("killed %.1fs after the start, with the rollback pending", killed.Sub(start).Seconds())
	g.Consistently(func(g Gomega) map[string]string { return releaseRecords(g, ns) }, time.Second, interval).
		Should(HaveKeyWithValue("sh.helm.release.v1.app.v3", "pending-rollback"), "nothing finishes the rollback")

	got := helmRelease(g, key)
	got.Spec.Rollback = &helmv2.Rollback{DisableWait: true}
	g.Expect(env.Client.Update(context.Background(), got, client.FieldOwner("kubectl-edit"))).To(Succeed())
	restarted := startShardController(t, g, sc.shard, sc.storage)
	got = waitHelmRelease(g, key, func(g Gomega, hr *helmv2.HelmRelease) {
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
		g.Expect(conditions.Reason(hr, meta.ReadyCondition)).To(Equal(helmv2.RetriesExceededReason))
		g.Expect(conditions.Reason(hr, helmv2.RemediatedCondition)).To(Equal(helmv2.RollbackSucceededReason))
	})
	t.Logf("rolled back %.1fs after the restart", time.Since(killed).Seconds())
	g.Expect(releaseRecords(g, ns)).To(Equal(map[string]string{"sh.helm.release.v1.app.v1": "superseded",
		"sh.helm.release.v1.app.v2": "failed", "sh.helm.release.v1.app.v3": "failed",
		"sh.helm.release.v1.app.v4": "failed", "sh.helm.release.v1.app.v5": "deployed"}),
		"the interrupted rollback is marked failed; the upgrade tried again is rolled back")
	g.Expect(historyOf(got)[0]).To(Equal("1.0.0 deployed"))
	g.Expect(settings(g, ns)).To(Equal(map[string]string{"greeting": "hello", "chartVersion": "1.0.0"}))
	expectPendingRecovered(g, got, restarted)
	logStory(t, "rollback crash story", time.Since(start).Seconds())
}

// The controller is stopped (SIGTERM, as Kubernetes stops a pod) while an
// install waits for a Deployment that never becomes ready: it ends the
// wait and exits at once, within the grace period, and Helm's record says
// failed, not pending, so that no later action finds an operation in
// progress. A new controller, the wait turned off, installs the release.
func TestHelm_TerminatedMidInstallLeavesNothingPending(t *testing.T) {
	g := NewWithT(t)
	start := time.Now()
	sc := newHelmCrashScene(t, g, appChart(t, "1.0.0", "hello", helmtest.WithTemplate("web.yaml", neverReadyTemplate)))
	ns, proc, key := sc.ns, sc.proc, sc.key
	w := watchReleaseRecords(g, ns)
	g.Expect(env.Client.Create(context.Background(), sc.release(g))).To(Succeed())
	waitOn(t, w, proc, "pending-install release record", func(ev watch.Event) bool {
		s, ok := ev.Object.(*corev1.Secret)
		return ok && s.Labels["status"] == "pending-install"
	})
	g.Expect(proc.Terminate(30*time.Second)).To(Succeed(), "the controller stops within the grace period")
	stopped := time.Now()
	t.Logf("stopped %.1fs after the start", stopped.Sub(start).Seconds())
	g.Expect(releaseRecords(g, ns)).To(Equal(map[string]string{"sh.helm.release.v1.app.v1": "failed"}),
		"the install that was stopped is failed, not pending")

	got := helmRelease(g, key)
	got.Spec.Install = &helmv2.Install{DisableWait: true}
	g.Expect(env.Client.Update(context.Background(), got, client.FieldOwner("kubectl-edit"))).To(Succeed())
	restarted := startShardController(t, g, sc.shard, sc.storage)
	waitHelmRelease(g, key, deployedAt("1.0.0"))
	t.Logf("deployed %.1fs after the restart", time.Since(stopped).Seconds())
	g.Expect(releaseRecords(g, ns)).To(Equal(map[string]string{"sh.helm.release.v1.app.v1": "deployed"}))
	expectNoOperationInProgress(g, restarted)
	logStory(t, "terminate story", time.Since(start).Seconds())
}
