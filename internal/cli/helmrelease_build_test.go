package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hchart "helm.sh/helm/v4/pkg/chart/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	apimeta "github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/helm/drift"
	"github.com/windlass-dev/windlass/internal/helm/release"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// The templates of the tests' chart: a ConfigMap of values and of the
// chart's version, a Secret of the value password, and a hook.
const (
	hrConfigMapTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  greeting: {{ .Values.greeting | quote }}
  color: {{ .Values.color | quote }}
  chart: {{ .Chart.Version | quote }}
`
	hrSecretTemplate = `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-secret
data:
  password: {{ .Values.password | b64enc }}
`
	hrHookTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-hook
  annotations:
    helm.sh/hook: post-install,post-upgrade
data: {ran: "yes"}
`
	hrExtraTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-extra
data: {}
`
)

// hrChart builds the tests' chart "app" at version, changed by opts.
func hrChart(t *testing.T, version string, opts ...helmtest.ChartOption) *hchart.Chart {
	t.Helper()
	return helmtest.Chart(t, "app", version, append([]helmtest.ChartOption{
		helmtest.WithTemplate(helmtest.DefaultTemplateName, hrConfigMapTemplate),
		helmtest.WithTemplate("secret.yaml", hrSecretTemplate),
		helmtest.WithTemplate("hook.yaml", hrHookTemplate),
		helmtest.WithValues(map[string]any{"greeting": "hello", "color": "blue", "password": "default-pw"}),
	}, opts...)...)
}

// hrManifest is the tests' HelmRelease "web" of namespace %[1]s: release
// "site" of chart app from the HelmRepository "charts", values from a
// ConfigMap and the spec, common metadata and a post-renderer.
const hrManifest = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: %[1]s}
spec:
  interval: 1h
  timeout: 1m
  releaseName: site
  chart:
    metadata: {labels: {windlass.test/controlled: "true"}}
    spec: {chart: app, version: "*", sourceRef: {kind: HelmRepository, name: charts}}
  valuesFrom:
  - {kind: ConfigMap, name: web-values}
  values: {greeting: hi, password: t0p-secret}
  commonMetadata: {labels: {team: web}}
  postRenderers:
  - kustomize:
      patches:
      - target: {kind: ConfigMap, name: site-cm}
        patch: |
          - op: add
            path: /data/patched
            value: "yes"
`

// installedRelease serves the chart, and creates in a new namespace the
// HelmRepository "charts", the ConfigMap of the release's valuesFrom and
// the HelmRelease of hrManifest; it returns once the controller installed
// the release.
func installedRelease(t *testing.T, g *WithT) (ns string, hr *helmv2.HelmRelease) {
	t.Helper()
	ns = env.CreateNamespace(t)
	repo := helmtest.NewRepo(t)
	repo.Add(t, hrChart(t, "1.0.0"))
	createFromYAML(g, &sourcev1.HelmRepository{}, fmt.Sprintf(`
metadata: {name: charts, namespace: %s}
spec: {interval: 1h, url: %s}
`, ns, repo.URL()))
	g.Expect(env.Client.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-values"},
		Data: map[string]string{"values.yaml": "color: green\n"}})).To(Succeed())
	createFromYAML(g, &helmv2.HelmRelease{}, fmt.Sprintf(hrManifest, ns))
	hr = testutil.WaitFor(g, env.Client, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}},
		func(hr *helmv2.HelmRelease) bool {
			return conditions.IsTrue(hr, apimeta.ReadyCondition) && hr.Status.ObservedGeneration == hr.Generation &&
				hr.Status.History.Latest() != nil && hr.Status.Inventory != nil
		})
	return ns, hr
}

// storedRelease returns what the controller applied for release name of
// ns, from the release record in Helm storage: the objects of its
// manifest with the metadata Helm adds, in ns, Secrets masked, printed as
// build prints them.
func storedRelease(g *WithT, ns, name string) string {
	getter, err := release.NewGetter(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	runner, err := release.New(getter, ns)
	g.Expect(err).NotTo(HaveOccurred())
	rel, err := runner.Last(name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel).NotTo(BeNil())
	objs, err := release.ObjectsOf(rel.Manifest)
	g.Expect(err).NotTo(HaveOccurred())
	drift.SetReleaseMetadata(objs, name, ns)
	for _, o := range objs {
		o.SetNamespace(ns)
		maskSecret(o)
	}
	var out bytes.Buffer
	g.Expect(printYAML(&out, objs)).To(Succeed())
	return out.String()
}

// TestBuildHelmRelease: build prints what the controller applied: the
// objects of the release record, equal to the live objects, with the values
// of valuesFrom and spec.values, the post-renderer, the common metadata and
// the owner labels; the Secret's values are masked and the hook left out.
func TestBuildHelmRelease(t *testing.T) {
	g := NewWithT(t)
	ns, _ := installedRelease(t, g)

	out, errOut, err := run(t, "build", "helmrelease", "web", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(errOut).To(BeEmpty())
	g.Expect(out).To(Equal(storedRelease(g, ns, "site")), "the objects of the release the controller installed")
	g.Expect(out).NotTo(ContainSubstring("t0p-secret"))
	g.Expect(out).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte("t0p-secret"))))
	g.Expect(out).To(ContainSubstring("password: '***'"))
	g.Expect(out).NotTo(ContainSubstring("site-hook"), "hooks are left out")
	expectGolden(t, g, "helmrelease-build", strings.ReplaceAll(out, ns, "NS"))

	live := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "site-cm"}, live)).To(Succeed())
	g.Expect(live.Data).To(Equal(map[string]string{"greeting": "hi", "color": "green", "chart": "1.0.0", "patched": "yes"}))
	for k, v := range map[string]string{"team": "web", helmv2.NameLabel: "web", helmv2.NamespaceLabel: ns, "app.kubernetes.io/managed-by": "Helm"} {
		g.Expect(live.Labels).To(HaveKeyWithValue(k, v))
		g.Expect(out).To(ContainSubstring(k + ": " + v))
	}

	t.Run("by its alias, with the spec of --helmrelease-file", func(t *testing.T) {
		g := NewWithT(t)
		file := filepath.Join(t.TempDir(), "hr.yaml")
		edited := strings.Replace(fmt.Sprintf(hrManifest, ns), "greeting: hi", "greeting: from-file", 1)
		g.Expect(os.WriteFile(file, []byte(edited), 0o644)).To(Succeed())
		out, _, err := run(t, "build", "hr", "web", "-n", ns, "--helmrelease-file", file)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring(`greeting: from-file`))
		g.Expect(out).To(ContainSubstring(`color: green`), "valuesFrom still read from the cluster")
	})
}

// TestBuildHelmReleaseLocal: --path renders a local chart folder in place
// of the artifact, --values local files in place of valuesFrom, merged in
// order under spec.values.
func TestBuildHelmReleaseLocal(t *testing.T) {
	g := NewWithT(t)
	ns, _ := installedRelease(t, g)
	chartDir := helmtest.WriteDir(t, hrChart(t, "1.0.0"), t.TempDir())

	t.Run("the same chart as a folder renders the same objects", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "build", "hr", "web", "-n", ns, "--path", chartDir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(Equal(storedRelease(g, ns, "site")))
	})
	t.Run("a changed chart folder", func(t *testing.T) {
		g := NewWithT(t)
		dir := helmtest.WriteDir(t, hrChart(t, "1.1.0", helmtest.WithTemplate("extra.yaml", hrExtraTemplate)), t.TempDir())
		out, _, err := run(t, "build", "hr", "web", "-n", ns, "--path", dir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring(`chart: 1.1.0`))
		g.Expect(out).To(ContainSubstring("name: site-extra\n  namespace: " + ns + "\n"))
	})
	t.Run("--values files replace valuesFrom, under spec.values", func(t *testing.T) {
		g := NewWithT(t)
		dir := t.TempDir()
		first, second := filepath.Join(dir, "first.yaml"), filepath.Join(dir, "second.yaml")
		g.Expect(os.WriteFile(first, []byte("color: red\ngreeting: from-file\n"), 0o644)).To(Succeed())
		g.Expect(os.WriteFile(second, []byte("color: purple\n"), 0o644)).To(Succeed())
		out, _, err := run(t, "build", "hr", "web", "-n", ns, "--values", first, "--values", second)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring(`color: purple`), "the later file wins")
		g.Expect(out).To(ContainSubstring(`greeting: hi`), "spec.values wins over the files")
		g.Expect(out).NotTo(ContainSubstring("green"), "valuesFrom is not read")
	})
}

// TestDiffHelmRelease: diff finds nothing right after the install; after an
// edit of the values of the suspended release it shows the changed
// ConfigMap and Secret (masked) and exits 1; a local chart that drops the
// Secret and adds a ConfigMap shows them deleted and created.
func TestDiffHelmRelease(t *testing.T) {
	g := NewWithT(t)
	ns, hr := installedRelease(t, g)

	out, _, err := run(t, "diff", "helmrelease", "web", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(BeEmpty())

	patch := []byte(`{"spec":{"suspend":true,"values":{"greeting":"hey","password":"n3w-secret"}}}`)
	g.Expect(env.Client.Patch(context.Background(), hr, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())

	out, _, err = run(t, "diff", "hr", "web", "-n", ns)
	expectExitCode(g, err, diffDiffers)
	g.Expect(out).To(ContainSubstring("► ConfigMap/" + ns + "/site-cm drifted\n"))
	g.Expect(out).To(ContainSubstring("-  greeting: hi\n+  greeting: hey\n"))
	g.Expect(out).To(ContainSubstring("► Secret/" + ns + "/site-secret drifted\n"))
	g.Expect(out).To(ContainSubstring("+  password: '*** (changed)'"))
	for _, secret := range []string{"n3w-secret", "t0p-secret"} {
		g.Expect(out).NotTo(ContainSubstring(secret))
		g.Expect(out).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(secret))))
	}
	expectGolden(t, g, "helmrelease-diff", strings.ReplaceAll(out, ns, "NS"))

	built, _, err := run(t, "build", "hr", "web", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(built).To(ContainSubstring(`greeting: hey`))
	g.Expect(built).NotTo(ContainSubstring("n3w-secret"))

	t.Run("objects no longer rendered, and new ones", func(t *testing.T) {
		g := NewWithT(t)
		dir := helmtest.WriteDir(t, hrChart(t, "1.0.0", helmtest.WithTemplate("secret.yaml", hrExtraTemplate)), t.TempDir())
		out, _, err := run(t, "diff", "hr", "web", "-n", ns, "--path", dir, "--helmrelease-file", hrFile(t, ns))
		expectExitCode(g, err, diffDiffers)
		g.Expect(out).To(Equal("► ConfigMap/" + ns + "/site-extra created\n► Secret/" + ns + "/site-secret deleted\n"))
	})
	t.Run("an object kept by its resource policy is not deleted", func(t *testing.T) {
		g := NewWithT(t)
		secret := &corev1.Secret{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "site-secret"}, secret)).To(Succeed())
		secret.Annotations["helm.sh/resource-policy"] = "keep"
		g.Expect(env.Client.Update(context.Background(), secret)).To(Succeed())
		dir := helmtest.WriteDir(t, hrChart(t, "1.0.0", helmtest.WithTemplate("secret.yaml", hrExtraTemplate)), t.TempDir())
		out, _, err := run(t, "diff", "hr", "web", "-n", ns, "--path", dir, "--helmrelease-file", hrFile(t, ns))
		expectExitCode(g, err, diffDiffers)
		g.Expect(out).To(Equal("► ConfigMap/" + ns + "/site-extra created\n"))
	})
}

// hrFile writes the HelmRelease of hrManifest in ns to a file.
func hrFile(t *testing.T, ns string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "hr.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(hrManifest, ns)), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// expectExitCode expects err to be an *ExitError with code.
func expectExitCode(g *WithT, err error, code int) {
	var exit *ExitError
	g.Expect(errors.As(err, &exit)).To(BeTrue(), "an *ExitError, got %v", err)
	g.Expect(exit.Code).To(Equal(code), "exit code; error: %v", exit.Err)
}

// TestBuildHelmReleaseDryRun renders without a cluster: the kubeconfig
// does not exist; the HelmRelease comes from --helmrelease-file, the chart
// from --path and valuesFrom from --values.
func TestBuildHelmReleaseDryRun(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing-kubeconfig")
	chartDir := helmtest.WriteDir(t, hrChart(t, "1.0.0"), t.TempDir())
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("color: orange\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := hrFile(t, "apps")
	build := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		root := NewRootCommand(&out, &errOut)
		root.SetArgs(append([]string{"build", "hr", "web", "-n", "apps", "--dry-run", "--kubeconfig", missing}, args...))
		err := root.Execute()
		return out.String(), errOut.String(), err
	}
	tests := []struct {
		name    string
		args    []string
		golden  string
		wantErr string
	}{
		{name: "with every input local", args: []string{"--helmrelease-file", file, "--path", chartDir, "--values", values},
			golden: "helmrelease-build-dry-run"},
		{name: "valuesFrom without --values", args: []string{"--helmrelease-file", file, "--path", chartDir},
			wantErr: "without a cluster (--dry-run), spec.valuesFrom[0] (ConfigMap apps/web-values) cannot be read: pass the values with --values FILE"},
		{name: "without --path", args: []string{"--helmrelease-file", file, "--values", values},
			wantErr: "--dry-run reads no cluster: pass the HelmRelease with --helmrelease-file and its chart with --path"},
		{name: "without --helmrelease-file", args: []string{"--path", chartDir},
			wantErr: "--dry-run reads no cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, errOut, err := build(tt.args...)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(out).To(BeEmpty())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(errOut).To(BeEmpty())
			g.Expect(out).To(ContainSubstring("color: orange"))
			g.Expect(out).To(ContainSubstring("namespace: apps"))
			expectGolden(t, g, tt.golden, out)
		})
	}
}

// TestBuildHelmReleaseFromRepository: when the artifact URL of the
// HelmChart cannot be reached, the chart is fetched from its HelmRepository
// with the credentials of its Secret, at the version of the artifact.
func TestBuildHelmReleaseFromRepository(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	repo := helmtest.NewRepo(t, helmtest.WithBasicAuth("reader", "pa55"))
	repo.Add(t, hrChart(t, "1.0.0"), hrChart(t, "2.0.0"))
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo-auth"},
		Data: map[string][]byte{"username": []byte("reader"), "password": []byte("pa55")}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"},
		Spec: sourcev1.HelmRepositorySpec{URL: repo.URL(), SecretRef: &apimeta.LocalObjectReference{Name: "repo-auth"}}})).To(Succeed())
	hc := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns + "-web"}, Spec: sourcev1.HelmChartSpec{
		Chart: "app", Version: "*", SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
		Interval: metav1.Duration{Duration: time.Hour}}}
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-values"},
		Data: map[string]string{"values.yaml": "color: green\n"}})).To(Succeed())
	createWithStatus(g, hc, func() {
		hc.Status.Artifact = &apimeta.Artifact{Revision: "1.0.0", Path: "helmchart/app-1.0.0.tgz", URL: "http://127.0.0.1:1/app-1.0.0.tgz",
			Digest: "sha256:0", LastUpdateTime: metav1.Now()}
	})

	out, errOut, err := run(t, "build", "hr", "web", "-n", ns, "--helmrelease-file", hrFile(t, ns))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(errOut).To(HavePrefix("note: the artifact of HelmChart " + ns + "/" + ns + "-web cannot be downloaded"))
	g.Expect(errOut).NotTo(ContainSubstring("pa55"))
	g.Expect(out).To(ContainSubstring(`chart: 1.0.0`), "the version of the artifact, not the latest")
	g.Expect(repo.Requests("/index.yaml")).To(BeNumerically(">", 0))

	t.Run("without credentials the repository refuses", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo-auth"}})).To(Succeed())
		_, _, err := run(t, "build", "hr", "web", "-n", ns, "--helmrelease-file", hrFile(t, ns))
		g.Expect(err).To(MatchError(ContainSubstring("fetching the chart of HelmChart " + ns + "/" + ns + "-web from its repository")))
	})
}

// TestBuildHelmReleaseBadInput: wrong input fails with one line, and diff
// with exit code 2.
func TestBuildHelmReleaseBadInput(t *testing.T) {
	ns := env.CreateNamespace(t)
	dir := t.TempDir()
	chartDir := helmtest.WriteDir(t, hrChart(t, "1.0.0"), t.TempDir())
	list, ok := filepath.Join(dir, "list.yaml"), filepath.Join(dir, "ok.yaml")
	for path, data := range map[string]string{list: "- a\n- b\n", ok: "color: red\n"} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "a HelmRelease that does not exist", args: []string{"build", "hr", "nothing", "-n", ns},
			wantErr: "HelmRelease " + ns + "/nothing not found: check its name and -n, or pass --helmrelease-file"},
		{name: "a file for --path", args: []string{"build", "hr", "web", "-n", ns, "--path", list},
			wantErr: "is not a folder: pass --path the folder that holds Chart.yaml"},
		{name: "a folder without a chart", args: []string{"build", "hr", "web", "-n", ns, "--path", dir, "--helmrelease-file", hrFile(t, ns),
			"--values", ok},
			wantErr: "loading the chart in " + dir},
		{name: "a values file that is not a map", args: []string{"build", "hr", "web", "-n", ns, "--path", chartDir,
			"--helmrelease-file", hrFile(t, ns), "--values", list}, wantErr: "invalid values in --values " + list + ": the document is a list, not a map"},
		{name: "a missing values file", args: []string{"build", "hr", "web", "-n", ns, "--helmrelease-file", hrFile(t, ns),
			"--values", filepath.Join(dir, "missing.yaml")}, wantErr: "reading --values"},
		{name: "a HelmRelease file without it", args: []string{"build", "hr", "api", "-n", ns, "--helmrelease-file", hrFile(t, ns)},
			wantErr: `holds no HelmRelease "api" (it holds web): check the name`},
		{name: "diff of a HelmRelease that does not exist", args: []string{"diff", "hr", "nothing", "-n", ns},
			wantErr: "HelmRelease " + ns + "/nothing not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, _, err := run(t, tt.args...)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			var exit *ExitError
			if tt.args[0] == "diff" {
				expectExitCode(g, err, diffFailed)
			} else {
				g.Expect(errors.As(err, &exit)).To(BeFalse())
			}
		})
	}
}

// TestComposeValuesFiles: local values documents merge as valuesFrom
// documents do, and errors name the file.
func TestComposeValuesFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	base := write("base.yaml", "image: {repo: web, tag: v1}\nreplicas: 2\n")
	over := write("over.yaml", "image: {tag: v2}\nlist: [a]\n")
	list := write("list.yaml", "- a\n")
	broken := write("broken.yaml", "a: [\n")
	tests := []struct {
		name    string
		files   []string
		spec    string
		want    map[string]any
		wantErr string
	}{
		{name: "maps merge key by key, later files win", files: []string{base, over},
			want: map[string]any{"image": map[string]any{"repo": "web", "tag": "v2"}, "replicas": float64(2), "list": []any{"a"}}},
		{name: "spec.values win over the files", files: []string{base}, spec: `{"replicas": 5}`,
			want: map[string]any{"image": map[string]any{"repo": "web", "tag": "v1"}, "replicas": float64(5)}},
		{name: "a list is refused, naming the file", files: []string{base, list},
			wantErr: "invalid values in --values " + list + ": the document is a list, not a map"},
		{name: "invalid YAML names the file", files: []string{broken}, wantErr: "invalid values in --values " + broken + ": not valid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}}
			if tt.spec != "" {
				hr.Spec.Values = valuesDoc(tt.spec)
			}
			got, err := composeValuesFiles(context.Background(), hr, tt.files)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// valuesDoc returns a spec.values document.
func valuesDoc(doc string) *apiextensionsv1.JSON {
	return &apiextensionsv1.JSON{Raw: []byte(doc)}
}

// TestNamespaced: the scope of a kind comes from the mapper, else from the
// built-in schema; unknown kinds are namespaced.
func TestNamespaced(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	mapper.Add(widget, meta.RESTScopeRoot)
	tests := []struct {
		name   string
		gvk    schema.GroupVersionKind
		mapper meta.RESTMapper
		want   bool
	}{
		{name: "a cluster-scoped kind of the mapper", gvk: widget, mapper: mapper, want: false},
		{name: "a built-in namespaced kind", gvk: corev1.SchemeGroupVersion.WithKind("ConfigMap"), want: true},
		{name: "a built-in cluster-scoped kind", gvk: schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}},
		{name: "a kind no one knows", gvk: widget, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(namespaced(tt.gvk, tt.mapper)).To(Equal(tt.want))
		})
	}
	g := NewWithT(t)
	objs := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "b", "namespace": "other"}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "c"}}},
	}
	setNamespaces(objs, "apps", nil)
	g.Expect([]string{objs[0].GetNamespace(), objs[1].GetNamespace(), objs[2].GetNamespace()}).To(Equal([]string{"apps", "other", ""}))
}
