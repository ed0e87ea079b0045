package install

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/ssa"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// env is the package's own control plane, with kube-controller-manager
// running, so that Deployments get a status and namespaces are deleted.
// Its CRDs are the package's own to delete.
var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, testenv.ControllerManager))
}

// install renders and applies an installation into a new namespace and
// returns the manifests.
func install(t *testing.T, g *WithT, opts Options) *Manifests {
	t.Helper()
	opts.Namespace = env.CreateNamespace(t)
	m, err := Render(opts)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Apply(context.Background(), env.Client, m, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	return m
}

func TestApplyIsIdempotentAndWaitSaysWhy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := install(t, g, Options{Version: "v0.0.1-test", NetworkPolicy: true})
	ns := m.Options.Namespace

	for _, crd := range []string{"gitrepositories.source.toolkit.fluxcd.io", "kustomizations.kustomize.toolkit.fluxcd.io"} {
		live := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: crd}, live)).To(Succeed())
		g.Expect(live.Labels).To(HaveKeyWithValue(PartOfLabel, "windlass"))
	}
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: AllInOneDeployment}, d)).To(Succeed())
	g.Expect(d.ManagedFields).To(ContainElement(HaveField("Manager", FieldManager)))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ServiceName}, &corev1.Service{})).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "windlass-controller-" + ns}, &rbacv1.ClusterRoleBinding{})).To(Succeed())

	// No kubelet: the pods never run, and the error says so.
	err := WaitAvailable(ctx, env.Client, ns, m.DeploymentNames(), 3*time.Second, nil)
	t.Log(err)
	var notAvailable *NotAvailableError
	g.Expect(errors.As(err, &notAvailable)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("Deployment " + ns + "/windlass is not Available"))
	g.Expect(err.Error()).To(Or(ContainSubstring("MinimumReplicasUnavailable"), ContainSubstring("not scheduled")))
	g.Expect(err.Error()).To(ContainSubstring("kubectl -n " + ns + " describe deployment windlass"))

	cs, err := Apply(ctx, env.Client, m, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs.Changed()).To(BeFalse(), cs.String())
	for _, e := range cs.Entries {
		g.Expect(e.Action).To(Equal(ssa.ActionUnchanged), e.String())
	}
}

func TestChecks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := install(t, g, Options{Version: "v0.0.1-test", Split: true})
	ns := m.Options.Namespace

	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	info, err := dc.ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(VersionCheck(info).OK).To(BeTrue(), VersionCheck(info).String())
	g.Expect(Passed(AccessChecks(ctx, env.Client, ns))).To(BeTrue())

	crds, err := CRDChecks(ctx, env.Client, ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Passed(crds)).To(BeTrue())
	g.Expect(crds[0].String()).To(MatchRegexp(`^✔ CustomResourceDefinition \S+ Established, serving (v1, v1beta1|v1, v1beta2|v1alpha1|v1beta2, v1beta3|v1)$`))

	deployments := DeploymentChecks(ctx, env.Client, ns)
	g.Expect(deployments).To(HaveLen(7))
	g.Expect(Passed(deployments)).To(BeFalse())
	g.Expect(deployments[0].String()).To(HavePrefix("✗ Deployment " + ns + "/gating-controller is not Available: "))
	g.Expect(deployments[0].String()).To(HaveSuffix(": see kubectl -n " + ns + " describe deployment gating-controller"))

	empty := DeploymentChecks(ctx, env.Client, env.CreateNamespace(t))
	g.Expect(empty).To(HaveLen(1))
	g.Expect(empty[0].String()).To(MatchRegexp(`^✗ no Windlass Deployment in namespace \S+: run windlass install -n \S+$`))
}

func TestVersionCheck(t *testing.T) {
	g := NewWithT(t)
	g.Expect(VersionCheck(&version.Info{GitVersion: "v1.31.4"}).String()).To(Equal(
		"✗ Kubernetes 1.31.4 is older than 1.32.0: upgrade the cluster to Kubernetes 1.32.0 or later"))
	g.Expect(VersionCheck(&version.Info{GitVersion: "v1.33.1+k3s1"}).String()).To(Equal("✔ Kubernetes 1.33.1 >= 1.32.0"))
	g.Expect(VersionCheck(&version.Info{GitVersion: "v0.0.0-master+$Format:%H$", Major: "1", Minor: "36+"}).OK).To(BeTrue())
}

// appliedConfigMap creates a ConfigMap in a namespace of its own, and a
// Kustomization in ns that holds the Windlass finalizer and lists the
// ConfigMap in its inventory, as if it had applied it.
func appliedConfigMap(t *testing.T, g *WithT, ns string) (*corev1.ConfigMap, *kustomizev1.Kustomization) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.CreateNamespace(t), Name: "app",
		Labels: map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": ns}}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps", Finalizers: []string{meta.Finalizer}},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "apps"}},
	}
	g.Expect(env.Client.Create(ctx, ks)).To(Succeed())
	ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{{ID: cm.Namespace + "_app__ConfigMap", Version: "v1"}}}
	g.Expect(env.Client.Status().Update(ctx, ks)).To(Succeed())
	return cm, ks
}

// TestUninstallEverything deletes the CRDs of this package's control
// plane: the tests that install after it apply them again.
func TestUninstallEverything(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := install(t, g, Options{Version: "v0.0.1-test", NetworkPolicy: true})
	ns := m.Options.Namespace
	cm, _ := appliedConfigMap(t, g, ns)
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps", Finalizers: []string{meta.Finalizer}},
		Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/apps.git", Interval: metav1.Duration{Duration: time.Hour}}}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())

	var lines []string
	err := Uninstall(ctx, env.Client, UninstallOptions{Namespace: ns, Timeout: time.Minute, Progress: func(l string) { lines = append(lines, l) }})
	g.Expect(err).NotTo(HaveOccurred())
	out := strings.Join(lines, "\n")
	g.Expect(out).To(ContainSubstring("✔ Deployment " + ns + "/windlass deleted"))
	g.Expect(out).To(ContainSubstring("✔ finalizer removed from Kustomization " + ns + "/apps"))
	g.Expect(out).To(ContainSubstring("✔ finalizer removed from GitRepository " + ns + "/apps"))
	g.Expect(out).To(ContainSubstring("✔ CustomResourceDefinition kustomizations.kustomize.toolkit.fluxcd.io deleted"))
	g.Expect(out).To(HaveSuffix("✔ Namespace " + ns + " deleted"))
	// The Deployments go before the finalizers, so that no controller puts
	// one back.
	g.Expect(strings.Index(out, "Deployment")).To(BeNumerically("<", strings.Index(out, "finalizer removed")))

	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})).To(Succeed(), "what the Kustomization applied stays")
	for _, obj := range []client.Object{
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "kustomizations.kustomize.toolkit.fluxcd.io"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "windlass-controller-" + ns}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "windlass-controller-" + ns}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: AllInOneDeployment}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ServiceName}},
	} {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s: %v", obj, obj.GetName(), err)
	}
	g.Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err)
	}, time.Minute, time.Second).Should(BeTrue(), "the namespace is deleted")
}

func TestUninstallDryRunChangesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := install(t, g, Options{Version: "v0.0.1-test"})
	ns := m.Options.Namespace
	_, ks := appliedConfigMap(t, g, ns)
	t.Cleanup(func() { removeFinalizers(ks) })
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Finalizers: []string{meta.Finalizer}},
		Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
			ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "app"}}}
	g.Expect(env.Client.Create(ctx, hr)).To(Succeed())
	t.Cleanup(func() { removeFinalizers(hr) })

	var lines []string
	g.Expect(Uninstall(ctx, env.Client, UninstallOptions{Namespace: ns, DryRun: true, DeleteApplied: true,
		Progress: func(l string) { lines = append(lines, l) }})).To(Succeed())
	g.Expect(lines).To(ContainElements(
		"► would delete Kustomization "+ns+"/apps and what it applied",
		"► would delete HelmRelease "+ns+"/app and its Helm release",
		"► would delete Deployment "+ns+"/windlass",
		"► would delete ClusterRole windlass-controller-"+ns,
		"► would delete CustomResourceDefinition gitrepositories.source.toolkit.fluxcd.io",
		"► would delete Namespace "+ns,
	))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: AllInOneDeployment}, &appsv1.Deployment{})).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), ks)).To(Succeed())
	g.Expect(ks.Finalizers).To(ContainElement(meta.Finalizer))
}

func TestUninstallDeleteAppliedWaitsForTheController(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := install(t, g, Options{Version: "v0.0.1-test"})
	ns := m.Options.Namespace
	_, ks := appliedConfigMap(t, g, ns)
	t.Cleanup(func() { removeFinalizers(ks) })

	err := Uninstall(ctx, env.Client, UninstallOptions{Namespace: ns, DeleteApplied: true, KeepCRDs: true, KeepNamespace: true, Timeout: 2 * time.Second})
	g.Expect(err).To(MatchError(ContainSubstring("Kustomization " + ns + "/apps still holds its finalizer after 2s: is its controller running?")))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: AllInOneDeployment}, &appsv1.Deployment{})).To(Succeed(),
		"nothing else is deleted while the Kustomizations wait")
}

// removeFinalizers lets a test's Kustomization or HelmRelease go.
func removeFinalizers(obj client.Object) {
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return
	}
	obj.SetFinalizers(nil)
	_ = env.Client.Update(ctx, obj)
}

func TestUninstallRefusesANamespaceWithoutWindlass(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	install(t, g, Options{Version: "v0.0.1-test"}) // elsewhere: the CRDs are there
	ns := env.CreateNamespace(t)
	err := Uninstall(ctx, env.Client, UninstallOptions{Namespace: ns, Timeout: 5 * time.Second})
	g.Expect(err).To(MatchError("Windlass is not installed in namespace " + ns + ": nothing was uninstalled (name the namespace it was installed in with -n)"))
	live := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, live)).To(Succeed())
	g.Expect(live.DeletionTimestamp).To(BeNil())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "kustomizations.kustomize.toolkit.fluxcd.io"}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed())
}
