package cli

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// TestHelmCreateExport prints the HelmRepositories, HelmCharts,
// HelmReleases and Secrets that create makes with --export, and compares
// them with their golden files.
func TestHelmCreateExport(t *testing.T) {
	g := NewWithT(t)
	values := writeTestFile(t, g, "values.yaml", []byte("replicaCount: 2\nimage:\n  tag: \"6.5.0\"\n  pullPolicy: IfNotPresent\nmaxBytes: 1234567890123456789\n"))
	prod := writeTestFile(t, g, "prod.yaml", []byte("image:\n  pullPolicy: Always\nresources: {limits: {cpu: 100m}}\n"))
	tests := []struct {
		golden string
		stdin  string
		args   []string
	}{
		{golden: "helm-create-source", args: []string{"create", "source", "helm", "podinfo", "--url", "https://stefanprodan.github.io/podinfo",
			"--secret-ref", "charts-auth", "--cert-secret-ref", "charts-ca", "--pass-credentials", "--interval", "30m", "--fetch-timeout", "2m",
			"--label", "team=apps"}},
		{golden: "helm-create-source-oci", args: []string{"create", "source", "helmrepository", "bitnami", "-n", "apps",
			"--url", "oci://registry.example.com:5000/charts", "--insecure", "--provider", "generic", "--secret-ref", "registry-auth"}},
		{golden: "helm-create-chart", args: []string{"create", "source", "chart", "podinfo", "--source", "HelmRepository/podinfo",
			"--chart", "podinfo", "--chart-version", ">=6.0.0 <7.0.0", "--values-files", "values.yaml,values-prod.yaml", "--interval", "5m"}},
		{golden: "helm-create-chart-git", args: []string{"create", "source", "hc", "app", "--source", "gitrepository/fleet",
			"--chart", "./charts/app", "--reconcile-strategy", "Revision", "--ignore-missing-values-files", "--values-files", "charts/app/values-prod.yaml"}},
		{golden: "helm-create-release", args: []string{"create", "helmrelease", "podinfo", "--source", "HelmRepository/podinfo.flux-system",
			"--chart", "podinfo", "--chart-version", "6.x", "--release-name", "web-podinfo", "--target-namespace", "web", "--create-target-namespace",
			"--storage-namespace", "helm-records", "--depends-on", "redis,Kustomization/flux-system/infra,HelmRelease/data/postgres",
			"--values", values + "," + prod, "--values-from", "ConfigMap/podinfo-values,Secret/podinfo-secrets", "--service-account", "deployer",
			"--drift-detection", "enabled", "--interval", "10m", "--release-timeout", "3m", "--label", "team=apps"}},
		{golden: "helm-create-release-chart-ref", args: []string{"create", "hr", "app", "-n", "apps", "--chart-ref", "OCIRepository/charts/app-chart",
			"--depends-on", "db"}},
		{golden: "helm-create-secret", stdin: "s3cr3t-token\n", args: []string{"create", "secret", "helm", "charts-auth",
			"--username", "ci", "--password-stdin", "--label", "team=apps"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			g := NewWithT(t)
			out, errOut, err := runWithInput(t, tt.stdin, true, tt.args...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(errOut).To(BeEmpty())
			g.Expect(out).NotTo(ContainSubstring("s3cr3t"), "secrets are exported in base64 only")
			expectGolden(t, g, tt.golden, out)
		})
	}

	t.Run("the TLS Secret holds the files given", func(t *testing.T) {
		g := NewWithT(t)
		certPEM, keyPEM := fixedKeyPair(g)
		certFile, keyFile := writeTestFile(t, g, "tls.crt", certPEM), writeTestFile(t, g, "tls.key", keyPEM)
		out, _, err := runWithInput(t, "", true, "create", "secret", "helm", "charts-tls", "--ca-file", certFile, "--cert-file", certFile, "--key-file", keyFile)
		g.Expect(err).NotTo(HaveOccurred())
		var secret corev1.Secret
		g.Expect(yaml.UnmarshalStrict([]byte(out), &secret)).To(Succeed())
		g.Expect(secret.Data).To(Equal(map[string][]byte{"ca.crt": certPEM, "tls.crt": certPEM, "tls.key": keyPEM}))
	})
}

// fixedKeyPair returns a self-signed certificate and its private key, the
// same on every run (ed25519 signs deterministically).
func fixedKeyPair(g *WithT) (certPEM, keyPEM []byte) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "charts.example.com"},
		NotBefore: at, NotAfter: at.AddDate(10, 0, 0), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, key.Public(), key)
	g.Expect(err).NotTo(HaveOccurred())
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	g.Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
}

// TestHelmCreateBadFlags checks that wrong flags of the Helm kinds are
// refused in one line that names the flag, before anything reaches the
// cluster, and that no error echoes a secret.
func TestHelmCreateBadFlags(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	list := writeTestFile(t, g, "list.yaml", []byte("- a\n- b\n"))
	broken := writeTestFile(t, g, "broken.yaml", []byte("a: [\n"))
	notCert := writeTestFile(t, g, "not.crt", []byte("s3cr3t\n"))
	repo := []string{"create", "source", "helm", "app", "-n", ns}
	oci := slices.Clip(append(slices.Clone(repo), "--url", "oci://ghcr.io/org/charts"))
	https := slices.Clip(append(slices.Clone(repo), "--url", "https://charts.example.com"))
	chart := []string{"create", "source", "chart", "app", "-n", ns}
	fromRepo := slices.Clip(append(slices.Clone(chart), "--source", "HelmRepository/charts"))
	secret := []string{"create", "secret", "helm", "app-auth", "-n", ns}
	hr := []string{"create", "hr", "app", "-n", ns}
	withChart := slices.Clip(append(slices.Clone(hr), "--source", "HelmRepository/charts", "--chart", "app"))
	tests := []refusedFlags{
		{"repo: missing --url", repo, "--url is required"},
		{"repo: another scheme", append(repo, "--url", "ftp://charts.example.com"), `--url scheme "ftp" is not supported: use https, http or oci`},
		{"repo: a relative URL", append(repo, "--url", "charts.example.com/x"), "--url is not an absolute URL"},
		{"repo: an https URL with credentials", append(repo, "--url", "https://me:s3cr3t@charts.example.com"), "--url must not carry credentials"},
		{"repo: an oci URL with credentials", append(repo, "--url", "oci://me:s3cr3t@ghcr.io/org/charts"), "--url must not carry credentials"},
		{"repo: an oci URL with a tag", append(repo, "--url", "oci://ghcr.io/org/charts/app:1.0.0"), "--url names a tag or a digest"},
		{"repo: an oci URL in capitals", append(repo, "--url", "oci://ghcr.io/Org/Charts"), "--url is not a repository"},
		{"repo: --insecure over https", append(https, "--insecure"), "--insecure is for oci:// URLs"},
		{"repo: --provider over https", append(https, "--provider", "aws"), "--provider is for oci:// URLs"},
		{"repo: --pass-credentials for oci", append(oci, "--pass-credentials", "--secret-ref", "auth"), "--pass-credentials is for http(s) repositories"},
		{"repo: --pass-credentials alone", append(https, "--pass-credentials"), "--pass-credentials needs --secret-ref"},
		{"repo: a cloud provider", append(oci, "--provider", "gcp", "--secret-ref", "auth"), "--provider gcp is not served by Windlass"},
		{"repo: another provider", append(oci, "--provider", "oracle"), `--provider "oracle" is not a provider: use generic`},
		{"repo: a bad cert secret name", append(https, "--cert-secret-ref", "CA_1"), `--cert-secret-ref "CA_1" is not an object name`},
		{"repo: a zero interval", append(https, "--interval", "0s"), "--interval must be a positive duration"},
		{"chart: missing --source", append(chart, "--chart", "app"), "--source is required: Kind/NAME"},
		{"chart: a source without a kind", append(chart, "--source", "charts", "--chart", "app"), `--source "charts" is not Kind/NAME`},
		{"chart: a source of another kind", append(chart, "--source", "OCIRepository/charts", "--chart", "app"), `--source kind "OCIRepository" is not one of HelmRepository, GitRepository, Bucket`},
		{"chart: a source in another namespace", append(chart, "--source", "HelmRepository/flux-system/charts", "--chart", "app"), "is not Kind/NAME"},
		{"chart: missing --chart", fromRepo, "--chart is required"},
		{"chart: a chart outside the source", append(fromRepo, "--chart", "../app"), `--chart "../app" leaves the source's root`},
		{"chart: a version of a git chart", append(chart, "--source", "GitRepository/fleet", "--chart", "./app", "--chart-version", "1.x"),
			"--chart-version is for a HelmRepository: the chart of a GitRepository is the one in its folder"},
		{"chart: a version that is no range", append(fromRepo, "--chart", "app", "--chart-version", "one"), `--chart-version "one" is not a semver range`},
		{"chart: another strategy", append(fromRepo, "--chart", "app", "--reconcile-strategy", "Always"), `--reconcile-strategy "Always" is not supported`},
		{"chart: an absolute values file", append(fromRepo, "--chart", "app", "--values-files", "/etc/passwd"), `--values-files "/etc/passwd" leaves the source's root`},
		{"chart: a values file of another app", append(fromRepo, "--chart", "app", "--values-files", "values.yaml,../../other-app/values.yaml"),
			`--values-files "../../other-app/values.yaml" leaves the source's root`},
		{"secret: nothing to put in it", secret, "pass --username and --password, --ca-file, or --cert-file and --key-file"},
		{"secret: a user without a password", append(secret, "-u", "ci"), "--username and --password go together"},
		{"secret: a certificate without its key", append(secret, "--cert-file", notCert), "--cert-file and --key-file go together"},
		{"secret: a key pair that is none", append(secret, "--cert-file", notCert, "--key-file", notCert), "--cert-file and --key-file are not a PEM certificate and its private key"},
		{"secret: a CA that is none", append(secret, "--ca-file", notCert), "holds no PEM certificate"},
		{"secret: both passwords", append(secret, "-u", "ci", "-p", "s3cr3t", "--password-stdin"), "--password and --password-stdin: choose one"},
		{"hr: no chart", hr, "--source with --chart, or --chart-ref, is required"},
		{"hr: --source and --chart-ref", append(withChart, "--chart-ref", "HelmChart/app"), "--source and --chart-ref: choose one"},
		{"hr: --chart with --chart-ref", append(hr, "--chart-ref", "HelmChart/app", "--chart", "app"), "--chart and --chart-version go with --source"},
		{"hr: --source without --chart", append(hr, "--source", "HelmRepository/charts"), "--chart is required"},
		{"hr: a chart ref of another kind", append(hr, "--chart-ref", "HelmRepository/charts"), `--chart-ref kind "HelmRepository" is not one of OCIRepository, HelmChart`},
		{"hr: a source namespace that is none", append(hr, "--source", "HelmRepository/charts.Flux_System", "--chart", "app"), `--source namespace "Flux_System" is not a namespace name`},
		{"hr: a release name too long", append(withChart, "--release-name", strings.Repeat("a", 54)), "is longer than Helm allows: at most 53 characters"},
		{"hr: a bad target namespace", append(withChart, "--target-namespace", "Web"), `--target-namespace "Web" is not a namespace name`},
		{"hr: creating no target namespace", append(withChart, "--create-target-namespace"), "--create-target-namespace needs --target-namespace"},
		{"hr: a dependency of another kind", append(withChart, "--depends-on", "GitRepository/app"), `the kind "GitRepository" is not HelmRelease or Kustomization`},
		{"hr: a dependency with too many parts", append(withChart, "--depends-on", "Kustomization/a/b/c"), "has too many parts"},
		{"hr: a values file that is missing", append(withChart, "--values", "missing.yaml"), "reading --values: open missing.yaml"},
		{"hr: a values file that is a list", append(withChart, "--values", list), "is not a map of values"},
		{"hr: a values file that is no YAML", append(withChart, "--values", broken), "is not YAML"},
		{"hr: values from another kind", append(withChart, "--values-from", "Deployment/app"), `--values-from kind "Deployment" is not one of ConfigMap, Secret`},
		{"hr: another drift mode", append(withChart, "--drift-detection", "auto"), `--drift-detection "auto" is not a mode: choose disabled, warn or enabled`},
		{"hr: a zero interval", append(withChart, "--interval", "0s"), "--interval must be a positive duration"},
		{"hr: a negative release timeout", append(withChart, "--release-timeout=-1m"), "--release-timeout must be a positive duration"},
	}
	expectRefused(t, tests)
	t.Run("nothing reached the cluster", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		for _, list := range []client.ObjectList{&sourcev1.HelmRepositoryList{}, &sourcev1.HelmChartList{}, &helmv2.HelmReleaseList{}} {
			g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(apimeta.LenList(list)).To(BeZero(), "%T", list)
		}
		var secrets corev1.SecretList
		g.Expect(env.Client.List(ctx, &secrets, client.InNamespace(ns))).To(Succeed())
		g.Expect(secretNames(secrets.Items)).NotTo(ContainElement("app-auth"))
	})
}

// TestHelmCreateAgainstTheCluster applies what create makes to the real
// API server, whose schema accepts it: a HelmRepository, a HelmChart and a
// HelmRelease are applied, then waited for, and since no controller of
// their kinds runs here, the wait ends at --timeout; a Secret is applied.
func TestHelmCreateAgainstTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	values := writeTestFile(t, g, "values.yaml", []byte("replicaCount: 2\n"))

	out, _, err := runWithInput(t, "s3cr3t-token\n", false, "create", "secret", "helm", "charts-auth", "-n", ns, "-u", "ci", "--password-stdin")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✚ Secret " + ns + "/charts-auth applied\n"))
	var secret corev1.Secret
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "charts-auth"}, &secret)).To(Succeed())
	g.Expect(secret.Data).To(Equal(map[string][]byte{"username": []byte("ci"), "password": []byte("s3cr3t-token")}))

	for _, tt := range []struct {
		kind, name string
		args       []string
	}{
		{sourcev1.HelmRepositoryKind, "charts", []string{"create", "source", "helm", "charts", "--url", "https://charts.example.com", "--secret-ref", "charts-auth"}},
		{sourcev1.HelmChartKind, "app", []string{"create", "source", "chart", "app", "--source", "HelmRepository/charts", "--chart", "app", "--chart-version", "1.x"}},
		{helmv2.HelmReleaseKind, "app", []string{"create", "hr", "app", "--chart-ref", "HelmChart/app", "--values", values, "--depends-on", "Kustomization/infra"}},
	} {
		out, _, err := run(t, append(tt.args, "-n", ns, "--timeout", "2s")...)
		g.Expect(err).To(MatchError(ContainSubstring(tt.kind + " " + ns + "/" + tt.name + " was not reconciled within 2s")))
		g.Expect(out).To(HavePrefix("✚ " + tt.kind + " " + ns + "/" + tt.name + " applied\n"))
	}
	var repo sourcev1.HelmRepository
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "charts"}, &repo)).To(Succeed())
	g.Expect(repo.Spec.SecretRef).To(Equal(&meta.LocalObjectReference{Name: "charts-auth"}))
	g.Expect(repo.ManagedFields).To(ContainElement(HaveField("Manager", fieldOwner)))
	var chart sourcev1.HelmChart
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &chart)).To(Succeed())
	g.Expect(chart.Spec.SourceRef).To(Equal(sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}))
	var hr helmv2.HelmRelease
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &hr)).To(Succeed())
	g.Expect(hr.Spec.ChartRef).To(Equal(&helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "app"}))
	g.Expect(string(hr.Spec.Values.Raw)).To(Equal(`{"replicaCount":2}`))
	g.Expect(hr.Spec.DependsOn).To(Equal([]meta.DependencyReference{{Kind: kustomizev1.KustomizationKind, Name: "infra"}}))
}

// seedHelmObjects creates, in a new namespace, a Ready HelmRepository, a
// HelmChart of it and an OCI HelmRepository that has no artifact; a
// HelmRelease that installed a chart, whose HelmChart (status.helmChart)
// is the one created; one whose only install failed; and a suspended one.
func seedHelmObjects(t *testing.T, g *WithT) string {
	ns := env.CreateNamespace(t)
	ctx := context.Background()
	interval := metav1.Duration{Duration: time.Minute}
	artifact := func(revision string) *meta.Artifact {
		return &meta.Artifact{Revision: revision, Path: "p", URL: "http://x/p", Digest: "sha256:0", LastUpdateTime: metav1.Now()}
	}
	repo := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
		Spec: sourcev1.HelmRepositorySpec{URL: "https://stefanprodan.github.io/podinfo", Interval: interval}}
	createWithStatus(g, repo, func() {
		repo.Status.Artifact = artifact("sha256:5f1b2e8c9a0d")
		conditions.MarkTrue(repo, meta.ReadyCondition, meta.SucceededReason, "stored artifact: revision 'sha256:5f1b2e8c9a0d'")
	})
	g.Expect(env.Client.Create(ctx, &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bitnami"},
		Spec: sourcev1.HelmRepositorySpec{URL: "oci://registry-1.docker.io/bitnamicharts", Type: sourcev1.HelmRepositoryTypeOCI, Interval: interval}})).To(Succeed())
	chart := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps-podinfo"},
		Spec: sourcev1.HelmChartSpec{Chart: "podinfo", Version: "6.x", Interval: interval,
			SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"}}}
	createWithStatus(g, chart, func() {
		chart.Status.Artifact = artifact("6.5.4")
		conditions.MarkTrue(chart, meta.ReadyCondition, meta.SucceededReason, "pulled 'podinfo' chart with version '6.5.4'")
	})
	fromRepo := &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "podinfo", Version: "6.x",
		SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"}}}
	installed := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
		Spec: helmv2.HelmReleaseSpec{Interval: interval, Chart: fromRepo, TargetNamespace: "web"}}
	createWithStatus(g, installed, func() {
		installed.Status.HelmChart = ns + "/apps-podinfo"
		installed.Status.LastAttemptedRevision = "6.5.4"
		installed.Status.History = helmv2.Snapshots{
			{Name: "web-podinfo", Namespace: "web", Version: 2, Status: "deployed", ChartName: "podinfo", ChartVersion: "6.5.4",
				Digest: "sha256:2", ConfigDigest: "sha256:c", FirstDeployed: metav1.Now(), LastDeployed: metav1.Now()},
			{Name: "web-podinfo", Namespace: "web", Version: 1, Status: "superseded", ChartName: "podinfo", ChartVersion: "6.5.3",
				Digest: "sha256:1", ConfigDigest: "sha256:c", FirstDeployed: metav1.Now(), LastDeployed: metav1.Now()},
		}
		conditions.MarkTrue(installed, meta.ReadyCondition, "UpgradeSucceeded", "Helm upgrade succeeded for release web/web-podinfo.v2 with chart podinfo@6.5.4")
	})
	failed := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis", Labels: map[string]string{"tier": "data"}},
		Spec: helmv2.HelmReleaseSpec{Interval: interval, ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "redis"}}}
	createWithStatus(g, failed, func() {
		failed.Status.LastAttemptedRevision = "19.0.1"
		conditions.MarkFalse(failed, meta.ReadyCondition, "InstallFailed", "Helm install failed for release redis/redis: timed out\nsecond line")
	})
	g.Expect(env.Client.Create(ctx, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"},
		Spec: helmv2.HelmReleaseSpec{Interval: interval, Chart: fromRepo, Suspend: true}})).To(Succeed())
	return ns
}

// TestHelmGetKinds lists the Helm kinds with get: each alone, and among
// every source and every object.
func TestHelmGetKinds(t *testing.T) {
	g := NewWithT(t)
	ns := seedHelmObjects(t, g)
	tests := []struct {
		args   []string
		golden string
	}{
		{args: []string{"get", "sources", "helm"}, golden: "helm-get-sources-helm"},
		{args: []string{"get", "sources", "helmrepo"}, golden: "helm-get-sources-helm"},
		{args: []string{"get", "sources", "chart"}, golden: "helm-get-sources-chart"},
		{args: []string{"get", "sources", "hc"}, golden: "helm-get-sources-chart"},
		{args: []string{"get", "helmreleases"}, golden: "helm-get-helmreleases"},
		{args: []string{"get", "hr", "--status-selector", "ready=false"}, golden: "helm-get-helmreleases-not-ready"},
		{args: []string{"get", "hr", "-l", "tier=data"}, golden: "helm-get-helmreleases-not-ready"},
		{args: []string{"get", "sources", "all"}, golden: "helm-get-sources-all"},
		{args: []string{"get", "all"}, golden: "helm-get-all"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(t, append(tt.args, "-n", ns)...)
			g.Expect(err).NotTo(HaveOccurred())
			expectGolden(t, g, tt.golden, strings.ReplaceAll(out, ns, "NS"))
		})
	}
	t.Run("as YAML", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "get", "hr", "-n", ns, "-o", "yaml", "--status-selector", "ready=true")
		g.Expect(err).NotTo(HaveOccurred())
		var list struct{ Items []helmv2.HelmRelease }
		g.Expect(yaml.Unmarshal([]byte(out), &list)).To(Succeed(), out)
		g.Expect(list.Items).To(HaveLen(1))
		g.Expect(list.Items[0].Kind).To(Equal(helmv2.HelmReleaseKind))
		g.Expect(list.Items[0].Status.History.Latest().ChartVersion).To(Equal("6.5.4"))
	})
}

// standIn answers reconcile requests in place of the helm and source
// controllers, which do not run in these tests.
type standIn struct {
	mu sync.Mutex
	// order lists "Kind/name" of the requests answered, in order.
	order []string
}

// answerRequests stands in for the controllers of the objects refs until
// the test ends: it records each new reconcile request as handled, marks
// the object Ready for its generation, and notes the order.
func answerRequests(t *testing.T, refs ...kindRef) *standIn {
	s := &standIn{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for _, ref := range refs {
				s.answer(ctx, ref)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return s
}

// answer handles the pending reconcile request of ref, if any.
func (s *standIn) answer(ctx context.Context, ref kindRef) {
	k, _ := kindOfRef(ref)
	obj := k.new()
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ref.namespace, Name: ref.name}, obj); err != nil {
		return
	}
	token := obj.GetAnnotations()[meta.ReconcileRequestAnnotation]
	if token == "" || k.lastHandled(obj) == token || obj.IsSuspended() {
		return
	}
	obj.(interface{ SetLastHandledReconcileRequest(string) }).SetLastHandledReconcileRequest(token)
	conditions.MarkTrue(obj.(conditions.Setter), meta.ReadyCondition, meta.SucceededReason, "handled by the stand-in")
	// Noted before the update, so that whoever sees the request handled
	// finds it in the order; taken back when the update fails.
	s.mu.Lock()
	s.order = append(s.order, ref.kind+"/"+ref.name)
	s.mu.Unlock()
	if env.Client.Status().Update(ctx, obj) != nil {
		s.mu.Lock()
		s.order = s.order[:len(s.order)-1]
		s.mu.Unlock()
	}
}

// answered returns the order in which requests were answered.
func (s *standIn) answered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}

// TestHelmReconcile reconciles a HelmRelease with --force and --reset,
// which set their annotations with the token of the request, and with
// --with-source, which reconciles the HelmRepository, then the HelmChart,
// then the release; reconcile refuses a suspended release.
func TestHelmReconcile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := seedHelmObjects(t, g)
	chart := kindRef{kind: sourcev1.HelmChartKind, namespace: ns, name: "apps-podinfo"}
	standIn := answerRequests(t, kindRef{kind: sourcev1.HelmRepositoryKind, namespace: ns, name: "podinfo"}, chart,
		kindRef{kind: helmv2.HelmReleaseKind, namespace: ns, name: "podinfo"})

	out, _, err := run(t, "reconcile", "hr", "podinfo", "-n", ns, "--force", "--reset", "--timeout", "30s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(HaveSuffix("✔ HelmRelease " + ns + "/podinfo reconciled: handled by the stand-in\n"))
	var hr helmv2.HelmRelease
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, &hr)).To(Succeed())
	token := hr.Annotations[meta.ReconcileRequestAnnotation]
	g.Expect(token).NotTo(BeEmpty())
	g.Expect(hr.Annotations).To(HaveKeyWithValue(meta.ForceRequestAnnotation, token))
	g.Expect(hr.Annotations).To(HaveKeyWithValue(meta.ResetRequestAnnotation, token))
	g.Expect(standIn.answered()).To(Equal([]string{"HelmRelease/podinfo"}))

	out, _, err = run(t, "reconcile", "helmrelease", "podinfo", "-n", ns, "--with-source", "--timeout", "30s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(standIn.answered()).To(Equal([]string{"HelmRelease/podinfo", "HelmRepository/podinfo", "HelmChart/apps-podinfo", "HelmRelease/podinfo"}))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, &hr)).To(Succeed())
	g.Expect(hr.Annotations[meta.ForceRequestAnnotation]).To(Equal(token), "without --force, forceAt keeps its last token")
	g.Expect(hr.Annotations[meta.ReconcileRequestAnnotation]).NotTo(Equal(token))

	out, _, err = run(t, "reconcile", "source", "chart", "apps-podinfo", "-n", ns, "--timeout", "30s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(HaveSuffix("✔ HelmChart " + ns + "/apps-podinfo reconciled: handled by the stand-in\n"))

	_, _, err = run(t, "reconcile", "hr", "held", "-n", ns)
	g.Expect(err).To(MatchError(ContainSubstring("is suspended: resume it with `windlass resume helmrelease held`")))
	_, _, err = run(t, "reconcile", "hr", "redis", "-n", ns, "--with-source", "--timeout", "5s")
	g.Expect(err).To(MatchError(ContainSubstring("reading OCIRepository " + ns + "/redis, the chart source of HelmRelease " + ns + "/redis")))
}

// TestHelmResumeAllFollowsDependenciesAndExport: suspend and resume --all
// of HelmReleases, which resume takes in dependency order (across kinds),
// and their export (golden). TestVerbsOverTheRegistry drives every verb
// of every kind.
func TestHelmResumeAllFollowsDependenciesAndExport(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	fromRepo := &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "app",
		SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}}}
	// "a" depends on the Kustomization "b"; the HelmRelease "b" depends on
	// "a": resume must take "a" first.
	for name, dep := range map[string]meta.DependencyReference{"a": {Kind: kustomizev1.KustomizationKind, Name: "b"}, "b": {Name: "a"}} {
		g.Expect(env.Client.Create(ctx, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour}, Chart: fromRepo,
				DependsOn: []meta.DependencyReference{dep}}})).To(Succeed())
	}
	standIn := answerRequests(t, kindRef{kind: helmv2.HelmReleaseKind, namespace: ns, name: "a"}, kindRef{kind: helmv2.HelmReleaseKind, namespace: ns, name: "b"})

	out, _, err := run(t, "suspend", "hr", "--all", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✔ HelmRelease " + ns + "/a suspended\n✔ HelmRelease " + ns + "/b suspended\n"))
	var hr helmv2.HelmRelease
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b"}, &hr)).To(Succeed())
	g.Expect(hr.Spec.Suspend).To(BeTrue())

	out, _, err = run(t, "resume", "helmreleases", "--all", "-n", ns, "--timeout", "30s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(standIn.answered()).To(Equal([]string{"HelmRelease/a", "HelmRelease/b"}))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b"}, &hr)).To(Succeed())
	g.Expect(hr.Spec.Suspend).To(BeFalse())

	out, _, err = run(t, "export", "helmrelease", "--all", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).NotTo(ContainSubstring("reconcile.fluxcd.io"), "the request annotations are left out")
	expectGolden(t, g, "helm-export-helmreleases", strings.ReplaceAll(out, ns, "NS"))

}

// TestHelmTree shows the objects of a release, with a Kustomization and a
// HelmRelease of the release and their own inventories below them; and a
// Kustomization with the inventory of the HelmRelease it applied.
func TestHelmTree(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	interval := metav1.Duration{Duration: time.Hour}
	ref := func(name, group, kind string) kustomizev1.ResourceRef {
		return kustomizev1.ResourceRef{ID: ns + "_" + name + "_" + group + "_" + kind, Version: "v1"}
	}
	chartRef := &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "platform"}
	for name, entries := range map[string][]kustomizev1.ResourceRef{
		"platform": {ref("platform", "", "ServiceAccount"), ref("addons", "kustomize.toolkit.fluxcd.io", "Kustomization"),
			ref("redis", "helm.toolkit.fluxcd.io", "HelmRelease"), ref("web", "apps", "Deployment")},
		"redis": {ref("redis", "apps", "StatefulSet"), ref("redis", "", "Service")},
	} {
		hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: helmv2.HelmReleaseSpec{Interval: interval, ChartRef: chartRef}}
		createWithStatus(g, hr, func() { hr.Status.Inventory = &kustomizev1.ResourceInventory{Entries: entries} })
	}
	addons := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "addons"}, Spec: kustomizev1.KustomizationSpec{
		Interval: interval, SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "app"}}}
	createWithStatus(g, addons, func() {
		addons.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{ref("addons", "", "ConfigMap"),
			ref("redis", "helm.toolkit.fluxcd.io", "HelmRelease")}}
	})

	for _, args := range [][]string{{"tree", "helmrelease", "platform"}, {"tree", "hr", "platform"}} {
		out, _, err := run(t, append(args, "-n", ns)...)
		g.Expect(err).NotTo(HaveOccurred())
		expectGolden(t, g, "helm-tree-helmrelease", strings.ReplaceAll(out, ns, "NS"))
	}
	out, _, err := run(t, "tree", "hr", "platform", "-n", ns, "-o", "yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var root treeNode
	g.Expect(yaml.UnmarshalStrict([]byte(out), &root)).To(Succeed())
	g.Expect(root.subject()).To(Equal("HelmRelease/" + ns + "/platform"))
	g.Expect(root.Children[2].Group).To(Equal(helmv2.GroupVersion.Group))
	g.Expect(root.Children[2].Children).To(HaveLen(2))

	out, _, err = run(t, "tree", "ks", "addons", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.ReplaceAll(out, ns, "NS")).To(Equal(`Kustomization/NS/addons
├── ConfigMap/NS/addons
└── HelmRelease/NS/redis
    ├── StatefulSet/NS/redis
    └── Service/NS/redis
`), "a Kustomization shows the release it applied")
	_, _, err = run(t, "tree", "hr", "nothing", "-n", ns)
	g.Expect(err).To(MatchError("HelmRelease " + ns + "/nothing not found: check its name and -n"))
}

// TestHelmTrace traces a ConfigMap of a release to its HelmRelease, the
// HelmChart the controller made, and the HelmRepository; and one of a
// release whose chart is an OCIRepository's.
func TestHelmTrace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := seedHelmObjects(t, g)
	for name, release := range map[string]string{"podinfo-settings": "podinfo", "redis-settings": "redis"} {
		g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{helmv2.NameLabel: release, helmv2.NamespaceLabel: ns}}})).To(Succeed())
	}
	out, _, err := run(t, "trace", "configmap", "podinfo-settings", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	expectGolden(t, g, "helm-trace-configmap", strings.ReplaceAll(out, ns, "NS"))

	redisRepo := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis"},
		Spec: sourcev1.OCIRepositorySpec{URL: "oci://registry-1.docker.io/bitnamicharts/redis", Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.OCIRepositoryRef{SemVer: "19.x"}}}
	g.Expect(env.Client.Create(ctx, redisRepo)).To(Succeed())
	out, _, err = run(t, "trace", "cm/redis-settings", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("HelmRelease:    redis\n"))
	g.Expect(out).To(ContainSubstring("Revision:       19.0.1\nReady:          False\nMessage:        Helm install failed for release redis/redis: timed out\n"))
	g.Expect(out).To(HaveSuffix("---\nOCIRepository:  redis\nNamespace:      " + ns + "\nURL:            oci://registry-1.docker.io/bitnamicharts/redis\n" +
		"SemVer:         19.x\nReady:          Unknown\n"))
}

func TestParseKindRef(t *testing.T) {
	kinds := []string{"HelmRepository", "GitRepository"}
	tests := []struct {
		value          string
		crossNamespace bool
		want           kindRef
		wantErr        string
	}{
		{value: "HelmRepository/podinfo", want: kindRef{kind: "HelmRepository", name: "podinfo"}},
		{value: "gitrepository/fleet", want: kindRef{kind: "GitRepository", name: "fleet"}},
		{value: "HelmRepository/charts.example", want: kindRef{kind: "HelmRepository", name: "charts.example"}},
		{value: "HelmRepository/podinfo.flux-system", crossNamespace: true, want: kindRef{kind: "HelmRepository", namespace: "flux-system", name: "podinfo"}},
		{value: "HelmRepository/flux-system/charts.example", crossNamespace: true, want: kindRef{kind: "HelmRepository", namespace: "flux-system", name: "charts.example"}},
		{value: "HelmRepository/a.b.c", crossNamespace: true, want: kindRef{kind: "HelmRepository", namespace: "c", name: "a.b"}},
		{value: "", wantErr: "--source is required: Kind/NAME, Kind one of HelmRepository, GitRepository"},
		{value: "podinfo", wantErr: `--source "podinfo" is not Kind/NAME`},
		{value: "HelmRepository/ns/podinfo", wantErr: `--source "HelmRepository/ns/podinfo" is not Kind/NAME`},
		{value: "Bucket/x", crossNamespace: true, wantErr: `--source kind "Bucket" is not one of HelmRepository, GitRepository`},
		{value: "HelmRepository/Flux/podinfo", crossNamespace: true, wantErr: `--source namespace "Flux" is not a namespace name`},
		{value: "HelmRepository/Pod_Info", wantErr: `--source "Pod_Info" is not an object name`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			g := NewWithT(t)
			got, err := parseKindRef("--source", tt.value, kinds, tt.crossNamespace)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// TestParseKindedDependsOn: --depends-on names objects of the dependent's
// own kind without a kind, and the other kind with it.
func TestParseKindedDependsOn(t *testing.T) {
	tests := []struct {
		own     string
		value   string
		want    meta.DependencyReference
		wantErr string
	}{
		{value: "redis", want: meta.DependencyReference{Name: "redis"}},
		{value: "data/redis", want: meta.DependencyReference{Namespace: "data", Name: "redis"}},
		{value: "HelmRelease/data/redis", want: meta.DependencyReference{Namespace: "data", Name: "redis"}},
		{value: "helmrelease/redis", want: meta.DependencyReference{Name: "redis"}},
		{value: "Kustomization/infra", want: meta.DependencyReference{Kind: "Kustomization", Name: "infra"}},
		{value: "kustomization/flux-system/infra", want: meta.DependencyReference{Kind: "Kustomization", Namespace: "flux-system", Name: "infra"}},
		{value: "helmrelease", want: meta.DependencyReference{Name: "helmrelease"}},
		{value: "Bucket/x", wantErr: `the kind "Bucket" is not HelmRelease or Kustomization`},
		{value: "a/b/c", wantErr: `the kind "a" is not HelmRelease or Kustomization`},
		{value: "Kustomization/a/b/c", wantErr: "has too many parts"},
		{value: "Data_NS/redis", wantErr: `the kind "Data_NS" is not`},
		{own: "Kustomization", value: "Kustomization/infra", want: meta.DependencyReference{Name: "infra"}},
		{own: "Kustomization", value: "HelmRelease/data/redis", want: meta.DependencyReference{Kind: "HelmRelease", Namespace: "data", Name: "redis"}},
		{own: "Kustomization", value: "db/postgres", want: meta.DependencyReference{Namespace: "db", Name: "postgres"}},
	}
	for _, tt := range tests {
		if tt.own == "" {
			tt.own = helmv2.HelmReleaseKind
		}
		t.Run(tt.own+" "+tt.value, func(t *testing.T) {
			g := NewWithT(t)
			got, err := parseKindedDependsOn(tt.own, []string{tt.value})
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal([]meta.DependencyReference{tt.want}))
		})
	}
}

func TestDependenciesOfKind(t *testing.T) {
	deps := []meta.DependencyReference{{Name: "own"}, {Kind: "HelmRelease", Name: "hr"}, {Kind: "Kustomization", Name: "ks"}}
	tests := []struct {
		kind string
		want []string
	}{
		{kind: helmv2.HelmReleaseKind, want: []string{"own", "hr"}},
		{kind: kustomizev1.KustomizationKind, want: []string{"own", "ks"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			g := NewWithT(t)
			var names []string
			for _, d := range dependenciesOfKind(tt.kind, deps) {
				names = append(names, d.Name)
			}
			g.Expect(names).To(Equal(tt.want))
		})
	}
}

func TestReleaseRevisionAndChartSource(t *testing.T) {
	snapshot := func(version string) *helmv2.Snapshot { return &helmv2.Snapshot{ChartVersion: version} }
	template := &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "app",
		SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts", Namespace: "shared"}}}
	tests := []struct {
		name         string
		spec         helmv2.HelmReleaseSpec
		status       helmv2.HelmReleaseStatus
		wantRevision string
		wantSource   kindRef
	}{
		{name: "the latest snapshot", spec: helmv2.HelmReleaseSpec{Chart: template},
			status:       helmv2.HelmReleaseStatus{History: helmv2.Snapshots{snapshot("2.0.0"), snapshot("1.0.0")}, LastAttemptedRevision: "2.1.0", HelmChart: "shared/apps-app"},
			wantRevision: "2.0.0", wantSource: kindRef{kind: "HelmChart", namespace: "shared", name: "apps-app"}},
		{name: "no history yet, no HelmChart yet", spec: helmv2.HelmReleaseSpec{Chart: template},
			status:       helmv2.HelmReleaseStatus{LastAttemptedRevision: "2.1.0"},
			wantRevision: "2.1.0", wantSource: kindRef{kind: "HelmChart", namespace: "shared", name: "apps-app"}},
		{name: "a chart reference", spec: helmv2.HelmReleaseSpec{ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "app"}},
			wantSource: kindRef{kind: "OCIRepository", namespace: "apps", name: "app"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: tt.spec, Status: tt.status}
			g.Expect(releaseRevision(hr)).To(Equal(tt.wantRevision))
			g.Expect(releaseChartSource(hr)).To(Equal(tt.wantSource))
		})
	}
}

func TestReadValuesFiles(t *testing.T) {
	g := NewWithT(t)
	base := writeTestFile(t, g, "base.yaml", []byte("image: {repository: app, tag: \"1.0\"}\nports: [80]\nbig: 1234567890123456789\n"))
	prod := writeTestFile(t, g, "prod.yaml", []byte("image: {tag: \"2.0\"}\nports: [443]\nextra: null\n"))
	empty := writeTestFile(t, g, "empty.yaml", nil)
	large := writeTestFile(t, g, "large.yaml", []byte("a: \""+strings.Repeat("x", maxValuesBytes)+"\"\n"))
	tests := []struct {
		name    string
		files   []string
		want    string
		wantErr string
	}{
		{name: "one file, numbers kept", files: []string{base}, want: `{"big":1234567890123456789,"image":{"repository":"app","tag":"1.0"},"ports":[80]}`},
		{name: "maps merged, lists replaced", files: []string{base, prod}, want: `{"big":1234567890123456789,"extra":null,"image":{"repository":"app","tag":"2.0"},"ports":[443]}`},
		{name: "an empty file adds nothing", files: []string{empty}},
		{name: "a file too large", files: []string{large}, wantErr: "is larger than 1024 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := readValuesFiles(tt.files)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want == "" {
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(string(got.Raw)).To(Equal(tt.want))
		})
	}
}
