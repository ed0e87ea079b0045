package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/helm/chart"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/netguard"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// utf8BOM is the byte order mark some editors write first.
const utf8BOM = "\ufeff"

// chartFolder returns the files of a chart folder dir: Chart.yaml (with
// chartYAML appended), values.yaml and the default template, plus extra.
func chartFolder(dir, name, version, chartYAML string, extra map[string]string) map[string]string {
	files := map[string]string{
		dir + "/Chart.yaml":                      "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n" + chartYAML,
		dir + "/values.yaml":                     "greeting: hello\n",
		dir + "/" + helmtest.DefaultTemplateName: helmtest.DefaultTemplate,
	}
	maps.Copy(files, extra)
	return files
}

// readyGitSource commits files to a new repository, creates a
// GitRepository of it in ns and waits until it is Ready; it returns the
// repository and the commit.
func readyGitSource(t *testing.T, g *WithT, ns string, files map[string]string) (*gitserver.Repo, *sourcev1.GitRepository, string) {
	t.Helper()
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "charts.git", "main")
	sha := repo.MustCommit(t, "main", files, "charts")
	obj := newGitRepository(ns, "charts", base+"/charts.git")
	obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	return repo, waitFor(g, obj, readyAt("main@sha1:"+sha)), sha
}

// loadChartArtifact downloads a HelmChart's artifact and loads it.
func loadChartArtifact(g *WithT, obj *sourcev1.HelmChart) *helmChartView {
	ch, err := chart.LoadArchive(testutil.Download(g, nil, obj.Status.Artifact), chart.Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	v := &helmChartView{version: ch.Metadata.Version, values: ch.Values, templates: map[string]string{}}
	for _, d := range ch.Dependencies() {
		v.dependencies = append(v.dependencies, d.Name())
	}
	for _, f := range ch.Templates {
		v.templates[f.Name] = string(f.Data)
	}
	return v
}

// helmChartView is what the tests look at in a packaged chart.
type helmChartView struct {
	version      string
	values       map[string]any
	dependencies []string
	templates    map[string]string
}

// TestHelmChartFromGitRepository packages a chart folder of a
// GitRepository: its file:// dependency resolved, the values files merged
// in order (relative to the source root or to the chart), the version
// given the commit under the Revision strategy. A new commit rebuilds the
// chart at once, through the watch on the GitRepository.
func TestHelmChartFromGitRepository(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	files := chartFolder("charts/app", "app", "0.1.0",
		"dependencies:\n- name: lib\n  version: 0.2.0\n  repository: file://../lib\n",
		map[string]string{"charts/app/values-prod.yaml": "greeting: prod\n", "shared/replicas.yaml": "replicas: 3\n"})
	maps.Copy(files, chartFolder("charts/lib", "lib", "0.2.0", "", nil))
	repo, git, sha := readyGitSource(t, g, ns, files)

	byRevision := newHelmChart(ns, "by-revision", sourcev1.GitRepositoryKind, git.Name, "./charts/app")
	byRevision.Spec.ReconcileStrategy = sourcev1.ReconcileStrategyRevision
	byRevision.Spec.ValuesFiles = []string{"charts/app/values.yaml", "values-prod.yaml", "shared/replicas.yaml"}
	fetches := fetchesOf(sourcev1.HelmChartKind)
	g.Expect(env.Client.Create(context.Background(), byRevision)).To(Succeed())
	byVersion := newHelmChart(ns, "by-version", sourcev1.GitRepositoryKind, git.Name, "charts/app")
	g.Expect(env.Client.Create(context.Background(), byVersion)).To(Succeed())

	got := waitForChart(g, byRevision, chartReadyAt("0.1.0+"+sha[:12]))
	expectFetched(g, sourcev1.HelmChartKind, fetches, metrics.ResultSuccess) // built from the tree
	g.Expect(got.Status.Artifact.Path).To(Equal("helmchart/" + ns + "/by-revision/app-0.1.0+" + sha[:12] + ".tgz"))
	g.Expect(got.Status.ObservedSourceArtifactRevision).To(Equal("main@sha1:" + sha))
	g.Expect(got.Status.ObservedChartName).To(Equal("./charts/app"))
	view := loadChartArtifact(g, got)
	g.Expect(view.version).To(Equal("0.1.0+" + sha[:12]))
	g.Expect(view.values).To(HaveKeyWithValue("greeting", "prod"))
	g.Expect(view.values).To(HaveKeyWithValue("replicas", BeNumerically("==", 3)))
	g.Expect(view.dependencies).To(ConsistOf("lib"))
	got = waitForChart(g, byVersion, chartReadyAt("0.1.0"))
	g.Expect(loadChartArtifact(g, got).values).To(HaveKeyWithValue("greeting", "hello"))

	sha2 := repo.MustCommit(t, "main", map[string]string{"charts/app/values-prod.yaml": "greeting: newer\n"}, "newer")
	testutil.RequestReconcile(g, env.Client, git, "newer")
	got = waitForChart(g, byRevision, chartReadyAt("0.1.0+"+sha2[:12]))
	g.Expect(loadChartArtifact(g, got).values).To(HaveKeyWithValue("greeting", "newer"))
	g.Eventually(func() []string { return testutil.EventMessages(g, env.Client, byRevision, sourcev1.HelmChartKind) }, timeout, interval).
		Should(ContainElement("ChartPackageSucceeded: packaged 'app' chart with version '0.1.0+" + sha2[:12] + "'"))
	got = waitForChart(g, byVersion, func(o *sourcev1.HelmChart) bool {
		return chartReadyAt("0.1.0")(o) && o.Status.ObservedSourceArtifactRevision == "main@sha1:"+sha2
	})
	g.Expect(got.Status.Artifact.Path).To(HaveSuffix("/app-0.1.0.tgz"))
}

// TestHelmChartRefusesHostileFolders: a values file outside the source
// (security.md row 14) and an oversized file fail the build; a byte order
// mark is trimmed (row 16); a symbolic link out of the repository never
// reaches the chart, one inside it does.
func TestHelmChartRefusesHostileFolders(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	files := chartFolder("charts/plain", "plain", "1.0.0", "", nil)
	maps.Copy(files, chartFolder("charts/big", "big", "1.0.0", "", map[string]string{
		"charts/big/files/big.bin": strings.Repeat("x", maxHelmChartFile+1),
	}))
	maps.Copy(files, map[string]string{
		"charts/bom/Chart.yaml":                      utf8BOM + "apiVersion: v2\nname: bom\nversion: 1.0.0\n",
		"charts/bom/values.yaml":                     utf8BOM + "greeting: bom\n",
		"charts/bom/" + helmtest.DefaultTemplateName: utf8BOM + helmtest.DefaultTemplate,
		"other-app/values.yaml":                      "greeting: stolen\n",
		"shared/cm.yaml":                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n",
	})
	maps.Copy(files, chartFolder("charts/links", "links", "1.0.0", "", nil))
	repo, _, _ := readyGitSource(t, g, ns, files)
	_, err := repo.Symlink("main", "charts/links/templates/shared.yaml", "../../../shared/cm.yaml", "inside")
	g.Expect(err).NotTo(HaveOccurred())
	sha, err := repo.Symlink("main", "charts/links/templates/passwd.yaml", "/etc/passwd", "outside")
	g.Expect(err).NotTo(HaveOccurred())
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"}}, "links")
	waitFor(g, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"}}, readyAt("main@sha1:"+sha))

	for _, tc := range []struct {
		name, chart string
		valuesFiles []string
		msg         string // of BuildFailed; "" for Ready
	}{
		{name: "climbs-out", chart: "charts/plain", valuesFiles: []string{"../../../other-app/values.yaml"}, msg: "outside the source root"},
		{name: "absolute", chart: "charts/plain", valuesFiles: []string{"/etc/passwd"}, msg: "relative path"},
		{name: "oversized", chart: "charts/big", msg: "more than the limit"},
		{name: "chart-outside", chart: "../charts/plain", msg: "outside the source root"},
		{name: "bom", chart: "charts/bom"},
		{name: "links", chart: "charts/links"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			hc := newHelmChart(ns, tc.name, sourcev1.GitRepositoryKind, "charts", tc.chart)
			hc.Spec.ValuesFiles = tc.valuesFiles
			g.Expect(env.Client.Create(context.Background(), hc)).To(Succeed())
			if tc.msg != "" {
				got := waitForChart(g, hc, helmCondition[*sourcev1.HelmChart](sourcev1.BuildFailedCondition, metav1.ConditionTrue, sourcev1.ChartPackageFailedReason))
				g.Expect(conditions.Message(got, sourcev1.BuildFailedCondition)).To(ContainSubstring(tc.msg))
				g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
				g.Expect(got.Status.Artifact).To(BeNil())
				return
			}
			view := loadChartArtifact(g, waitForChart(g, hc, chartReadyAt("1.0.0")))
			if tc.name == "bom" {
				g.Expect(view.values).To(HaveKeyWithValue("greeting", "bom"))
				return
			}
			g.Expect(view.templates).To(HaveKeyWithValue("templates/shared.yaml", ContainSubstring("name: shared")))
			g.Expect(view.templates).NotTo(HaveKey("templates/passwd.yaml"))
			for _, body := range view.templates {
				g.Expect(body).NotTo(ContainSubstring("root:"), "no file from outside the repository")
			}
		})
	}
}

// security-2 risk 4: a chart whose file:// dependencies form a DAG (19
// charts, 9 levels, each chart depending on both charts of the next
// level: 1023 charts in the tree) fails its HelmChart with the chart tree
// limit named, while another chart of the same repository is built.
func TestHelmChartRefusesADependencyBomb(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	files := chartFolder("charts/plain", "plain", "1.0.0", "", nil)
	next := func(level int) string {
		if level > 9 {
			return ""
		}
		return fmt.Sprintf("dependencies:\n- name: l%[1]dc0\n  repository: file://../l%[1]dc0\n- name: l%[1]dc1\n  repository: file://../l%[1]dc1\n", level)
	}
	maps.Copy(files, chartFolder("bomb/app", "app", "1.0.0", next(1), nil))
	for level := 1; level <= 9; level++ {
		for i := range 2 {
			name := fmt.Sprintf("l%dc%d", level, i)
			maps.Copy(files, chartFolder("bomb/"+name, name, "1.0.0", next(level+1), nil))
		}
	}
	readyGitSource(t, g, ns, files)

	bomb := newHelmChart(ns, "bomb", sourcev1.GitRepositoryKind, "charts", "bomb/app")
	fetches := fetchesOf(sourcev1.HelmChartKind)
	g.Expect(env.Client.Create(context.Background(), bomb)).To(Succeed())
	plain := newHelmChart(ns, "plain", sourcev1.GitRepositoryKind, "charts", "charts/plain")
	g.Expect(env.Client.Create(context.Background(), plain)).To(Succeed())

	got := waitForChart(g, bomb, helmCondition[*sourcev1.HelmChart](sourcev1.BuildFailedCondition, metav1.ConditionTrue, sourcev1.ChartPackageFailedReason))
	expectFetched(g, sourcev1.HelmChartKind, fetches, metrics.ResultFailure) // the build from the tree failed
	g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(And(
		ContainSubstring("chart tree limit MaxCharts"),
		ContainSubstring(`at "app/charts/l1c0/charts/l2c0/`),
		ContainSubstring("hold more than 256 charts")))
	g.Expect(got.Status.Artifact).To(BeNil())
	waitForChart(g, plain, chartReadyAt("1.0.0"))
}

// TestHelmChartWaitsForItsSource: a HelmChart whose GitRepository does not
// exist yet waits (Ready=False, DependencyNotReady, not stalled, no
// failure); it is built once the source has an artifact. A Bucket serves
// as a source too.
func TestHelmChartWaitsForItsSource(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	hc := newHelmChart(ns, "early", sourcev1.GitRepositoryKind, "charts", "charts/app")
	g.Expect(env.Client.Create(context.Background(), hc)).To(Succeed())
	got := waitForChart(g, hc, helmCondition[*sourcev1.HelmChart](meta.ReadyCondition, metav1.ConditionFalse, meta.DependencyNotReadyReason))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("GitRepository '" + ns + "/charts' not found"))
	g.Expect(conditions.IsTrue(got, meta.ReconcilingCondition)).To(BeTrue())
	g.Expect(conditions.Has(got, meta.StalledCondition)).To(BeFalse())
	g.Expect(conditions.Has(got, sourcev1.FetchFailedCondition)).To(BeFalse())
	g.Expect(testutil.WarningReasons(g, env.Client, got, sourcev1.HelmChartKind)).To(BeEmpty(), "waiting is no failure")

	readyGitSource(t, g, ns, chartFolder("charts/app", "app", "0.3.0", "", nil))
	waitForChart(g, hc, chartReadyAt("0.3.0"))

	s3 := startS3Fixture(t, g, chartFolder("charts/app", "app", "0.4.0", "", nil))
	bucket := s3.newBucket(t, g, ns, "charts")
	g.Expect(env.Client.Create(context.Background(), bucket)).To(Succeed())
	fromBucket := newHelmChart(ns, "from-bucket", sourcev1.BucketKind, "charts", "charts/app")
	g.Expect(env.Client.Create(context.Background(), fromBucket)).To(Succeed())
	got = waitForChart(g, fromBucket, chartReadyAt("0.4.0"))
	g.Expect(got.Status.ObservedSourceArtifactRevision).To(Equal(waitForBucket(g, bucket, bucketReady).Status.Artifact.Revision))
}

// TestHelmChartFetchesRemoteDependencies: a dependency of a chart folder
// that is not vendored is pulled from its repository with the credentials
// of the namespace's HelmRepository of that URL; a repository alias is
// refused with a clear error.
func TestHelmChartFetchesRemoteDependencies(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	deps := helmtest.NewRepo(t, helmtest.WithBasicAuth("robot", "pass"))
	deps.Add(t, helmtest.Chart(t, "remote-lib", "1.2.0"))
	hr := newHelmRepository(ns, "deps", deps.URL())
	hr.Spec.SecretRef = createSecret(g, ns, "deps", map[string][]byte{"username": []byte("robot"), "password": []byte("pass")})
	g.Expect(env.Client.Create(context.Background(), hr)).To(Succeed())
	waitForHelmRepo(g, hr, helmRepoReady)
	files := chartFolder("charts/remote", "remote", "1.0.0",
		"dependencies:\n- name: remote-lib\n  version: ^1.0.0\n  repository: "+deps.URL()+"\n", nil)
	maps.Copy(files, chartFolder("charts/alias", "alias", "1.0.0",
		"dependencies:\n- name: lib\n  version: ^1.0.0\n  repository: \"@stable\"\n", nil))
	readyGitSource(t, g, ns, files)

	remote := newHelmChart(ns, "remote", sourcev1.GitRepositoryKind, "charts", "charts/remote")
	g.Expect(env.Client.Create(context.Background(), remote)).To(Succeed())
	g.Expect(loadChartArtifact(g, waitForChart(g, remote, chartReadyAt("1.0.0"))).dependencies).To(ConsistOf("remote-lib"))
	g.Expect(deps.Requests("/remote-lib-1.2.0.tgz")).To(Equal(1))

	alias := newHelmChart(ns, "alias", sourcev1.GitRepositoryKind, "charts", "charts/alias")
	g.Expect(env.Client.Create(context.Background(), alias)).To(Succeed())
	got := waitForChart(g, alias, helmCondition[*sourcev1.HelmChart](sourcev1.BuildFailedCondition, metav1.ConditionTrue, sourcev1.ChartPackageFailedReason))
	g.Expect(conditions.Message(got, sourcev1.BuildFailedCondition)).To(ContainSubstring("aliases are not"))
}

// security-2 risk 8, chart dependencies: a repository that no HelmRepository
// of the namespace declares is named by whoever pushes the chart, so it is
// reached only at public addresses: a private or metadata address fails the
// build with a message naming the class, before any request.
func TestHelmChartReachesUndeclaredDependenciesOnlyAtPublicAddresses(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	files := chartFolder("charts/internal", "internal", "1.0.0",
		"dependencies:\n- name: lib\n  version: ^1.0.0\n  repository: https://10.96.0.10/charts\n", nil)
	maps.Copy(files, chartFolder("charts/metadata", "metadata", "1.0.0",
		"dependencies:\n- name: lib\n  version: ^1.0.0\n  repository: oci://100.100.100.200/charts\n", nil))
	readyGitSource(t, g, ns, files)
	for name, want := range map[string]string{"internal": "private", "metadata": "cloud metadata endpoint"} {
		hc := newHelmChart(ns, name, sourcev1.GitRepositoryKind, "charts", "charts/"+name)
		g.Expect(env.Client.Create(context.Background(), hc)).To(Succeed())
		got := waitForChart(g, hc, helmCondition[*sourcev1.HelmChart](sourcev1.BuildFailedCondition, metav1.ConditionTrue, sourcev1.ChartPackageFailedReason))
		g.Expect(conditions.Message(got, sourcev1.BuildFailedCondition)).To(And(ContainSubstring(want),
			ContainSubstring("no HelmRepository in '"+ns+"' declares")), name)
	}
}

// The same for the controller's own host, which tests and `windlass dev`
// allow (AllowLoopback): without it, an undeclared repository on loopback
// is refused, HTTP and OCI alike, and the server sees no request; one that
// a HelmRepository declares is fetched.
func TestUndeclaredDependencyOnLoopbackIsRefused(t *testing.T) {
	g := NewWithT(t)
	deps := helmtest.NewRepo(t)
	deps.Add(t, helmtest.Chart(t, "remote-lib", "1.2.0"))
	obj := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "app"}}
	strict := &HelmChartReconciler{Client: fake.NewClientBuilder().WithScheme(scheme.New()).Build(), AllowInsecureHTTP: true}
	fetch := strict.dependencyFetcher(obj)
	for _, repoURL := range []string{deps.URL(), strings.Replace(deps.URL(), "127.0.0.1", "localhost", 1),
		"oci://" + strings.TrimPrefix(deps.URL(), "http://") + "/charts"} {
		_, err := fetch(context.Background(), repoURL, "remote-lib", "^1.0.0")
		g.Expect(errors.Is(err, netguard.ErrLoopback)).To(BeTrue(), "%s: %v", repoURL, err)
	}
	g.Expect(deps.Requests("/index.yaml")).To(BeZero())

	declared := newHelmRepository("tenant", "deps", deps.URL())
	trusting := &HelmChartReconciler{Client: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(declared).Build(),
		AllowInsecureHTTP: true}
	data, err := trusting.dependencyFetcher(obj)(context.Background(), deps.URL(), "remote-lib", "^1.0.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data).NotTo(BeEmpty())
}
