package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/windlass-dev/windlass/config/crd"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// installDocs splits the YAML that install --export prints into documents.
func installDocs(g *WithT, out string) []string {
	g.Expect(out).To(HavePrefix("---\n"))
	return strings.Split(strings.TrimPrefix(out, "---\n"), "\n---\n")
}

// installElideCRDs replaces the spec of each CRD document with a note: the CRDs
// are config/crd/bases as generated (internal/install checks that), and
// the goldens would otherwise change with every generated CRD.
func installElideCRDs(g *WithT, out string) string {
	docs := installDocs(g, out)
	for i, doc := range docs {
		if !strings.Contains(doc, "\nkind: CustomResourceDefinition\n") {
			continue
		}
		head, _, found := strings.Cut(doc, "\nspec:\n")
		g.Expect(found).To(BeTrue())
		docs[i] = head + "\nspec: {} # as generated in config/crd/bases"
	}
	return "---\n" + strings.Join(docs, "\n---\n")
}

// installedObjects parses the YAML that install --export prints.
func installedObjects(g *WithT, out string) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	for _, doc := range installDocs(g, out) {
		obj := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		objs = append(objs, obj)
	}
	return objs
}

// installDeployments returns the Deployments of the export.
func installDeployments(g *WithT, out string) []*appsv1.Deployment {
	var out2 []*appsv1.Deployment
	for _, obj := range installedObjects(g, out) {
		if obj.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, d)).To(Succeed())
		out2 = append(out2, d)
	}
	return out2
}

func TestInstallExport(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
		deps   []string
	}{
		{golden: "install-export-default", deps: []string{"windlass"}},
		{golden: "install-export-split", args: []string{"--split"}, deps: []string{"gating-controller", "helm-controller", "image-automation-controller", "image-reflector-controller",
			"kustomize-controller", "notification-controller", "source-controller"}},
		{golden: "install-export-source", args: []string{"--components", "source", "--network-policy=false", "--version", "v0.1.0"}, deps: []string{"windlass"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(t, append([]string{"install", "--export"}, tt.args...)...)
			g.Expect(err).NotTo(HaveOccurred())
			objs := installedObjects(g, out)
			crds, err := crd.Objects()
			g.Expect(err).NotTo(HaveOccurred())
			for _, o := range objs[:len(crds)] {
				g.Expect(o.GetKind()).To(Equal("CustomResourceDefinition"))
			}
			g.Expect(objs[len(crds)].GetKind()).To(Equal("Namespace"))
			var names []string
			for _, d := range installDeployments(g, out) {
				names = append(names, d.Name)
			}
			g.Expect(names).To(Equal(tt.deps))
			expectGolden(t, g, tt.golden, installElideCRDs(g, out))
		})
	}
}

// TestInstallExportMeetsRestrictedPodSecurity checks each field that the
// "restricted" Pod Security Standard asks of every container, and the
// rest of what the controllers need: probes, storage, the runtime
// namespace, the advertised artifact address.
func TestInstallExportMeetsRestrictedPodSecurity(t *testing.T) {
	for _, args := range [][]string{nil, {"--split"}} {
		g := NewWithT(t)
		out, _, err := run(t, append([]string{"install", "--export"}, args...)...)
		g.Expect(err).NotTo(HaveOccurred())
		deployments := installDeployments(g, out)
		g.Expect(deployments).NotTo(BeEmpty())
		for _, d := range deployments {
			installCheckRestricted(g, d)
		}
	}
}

// installCheckRestricted checks the pod of d.
func installCheckRestricted(g *WithT, d *appsv1.Deployment) {
	pod := d.Spec.Template.Spec
	g.Expect(pod.SecurityContext).NotTo(BeNil())
	g.Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()), d.Name)
	g.Expect(pod.SecurityContext.SeccompProfile).To(HaveValue(HaveField("Type", corev1.SeccompProfileTypeRuntimeDefault)), d.Name)
	g.Expect(pod.HostNetwork || pod.HostPID || pod.HostIPC).To(BeFalse())
	g.Expect(pod.Containers).NotTo(BeEmpty())
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		sc := c.SecurityContext
		g.Expect(sc).NotTo(BeNil(), c.Name)
		g.Expect(sc.RunAsNonRoot).To(HaveValue(BeTrue()), c.Name)
		g.Expect(sc.RunAsUser).To(HaveValue(BeNumerically("==", 65532)), c.Name)
		g.Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()), c.Name)
		g.Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()), c.Name)
		g.Expect(sc.Privileged).To(Or(BeNil(), HaveValue(BeFalse())), c.Name)
		g.Expect(sc.Capabilities).NotTo(BeNil(), c.Name)
		g.Expect(sc.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}), c.Name)
		g.Expect(sc.Capabilities.Add).To(BeEmpty(), c.Name)
		g.Expect(sc.SeccompProfile).To(HaveValue(HaveField("Type", corev1.SeccompProfileTypeRuntimeDefault)), c.Name)

		g.Expect(c.LivenessProbe.HTTPGet).To(HaveValue(And(HaveField("Path", "/healthz"), HaveField("Port", intstr.FromString("healthz")))))
		g.Expect(c.ReadinessProbe.HTTPGet).To(HaveValue(And(HaveField("Path", "/readyz"), HaveField("Port", intstr.FromString("healthz")))))
		g.Expect(c.Ports).To(ContainElement(And(HaveField("Name", "healthz"), HaveField("ContainerPort", int32(9440)))))
		g.Expect(c.VolumeMounts).To(ContainElements(HaveField("MountPath", "/data"), HaveField("MountPath", "/tmp")))
		g.Expect(c.Env).To(ContainElement(And(HaveField("Name", "RUNTIME_NAMESPACE"),
			HaveField("ValueFrom.FieldRef.FieldPath", "metadata.namespace"))))
		if strings.Contains(strings.Join(c.Args, " "), "source") {
			g.Expect(c.Args).To(ContainElement("--storage-adv-addr=source-controller.$(RUNTIME_NAMESPACE).svc"))
		}
	}
	for _, v := range pod.Volumes {
		g.Expect(v.EmptyDir).NotTo(BeNil(), "volume %s of %s", v.Name, d.Name)
	}
}

// TestInstallExportPassesServerDryRun applies every exported object with a
// server-side dry run, CRDs first (the control plane already has them: the
// dry run checks that applying them again is accepted).
func TestInstallExportPassesServerDryRun(t *testing.T) {
	for _, args := range [][]string{nil, {"--split"}, {"--components", "kustomize", "--network-policy=false"}} {
		g := NewWithT(t)
		ns := env.CreateNamespace(t)
		out, _, err := run(t, append([]string{"install", "--export", "-n", ns}, args...)...)
		g.Expect(err).NotTo(HaveOccurred())
		ctx := context.Background()
		for _, obj := range installedObjects(g, out) {
			err := env.Client.Patch(ctx, obj, client.Apply, client.FieldOwner("windlass"), client.ForceOwnership, client.DryRunAll)
			g.Expect(err).NotTo(HaveOccurred(), "%s %s", obj.GetKind(), obj.GetName())
		}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "windlass-controller-" + ns}, &rbacv1.ClusterRole{})).NotTo(Succeed(), "a dry run creates nothing")
	}
}

func TestInstallRefusesBadFlags(t *testing.T) {
	g := NewWithT(t)
	_, _, err := run(t, "install", "--export", "--components", "image")
	g.Expect(err).To(MatchError(`unknown component "image": choose from source, kustomize, helm, gating, notification, image-reflector, image-automation`))
	_, _, err = run(t, "install", "--export", "--version", "v1 beta")
	g.Expect(err).To(MatchError(ContainSubstring(`invalid --version "v1 beta"`)))
}

// installTestTimeout is the --timeout of the tests' installs: it bounds the
// apply too, which takes seconds on a loaded machine.
const installTestTimeout = "20s"

// installForTest installs Windlass into a new namespace, with a timeout
// that the Deployment cannot meet (the control plane has no kubelet), and
// uninstalls it, CRDs kept, when the test ends. It returns the namespace
// and install's output.
func installForTest(t *testing.T, g *WithT, args ...string) (ns, out string, err error) {
	t.Helper()
	ns = env.CreateNamespace(t)
	t.Cleanup(func() { _, _, _ = run(t, "uninstall", "--silent", "--keep-crds", "--keep-namespace", "-n", ns) })
	out, _, err = run(t, append([]string{"install", "-n", ns, "--timeout", installTestTimeout}, args...)...)
	g.Expect(err).To(MatchError(ContainSubstring("is not Available")), "no Deployment becomes Available without a kubelet")
	return ns, out, err
}

func TestInstallIntoTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, out, err := installForTest(t, g)
	g.Expect(err.Error()).To(HavePrefix("after " + installTestTimeout + ", Deployment " + ns + "/windlass is not Available: "))
	g.Expect(err.Error()).To(ContainSubstring("(see kubectl -n " + ns + " describe deployment windlass)"))
	g.Expect(out).To(HavePrefix("► installing Windlass latest (source, kustomize, helm, gating, notification, image-reflector, image-automation) in namespace " + ns + "\n"))
	g.Expect(out).To(ContainSubstring("✔ Deployment/" + ns + "/windlass created\n"))
	g.Expect(out).To(ContainSubstring("✔ Service/" + ns + "/source-controller created\n"))
	g.Expect(out).To(ContainSubstring("✔ Service/" + ns + "/image-reflector-controller created\n"))
	g.Expect(out).To(ContainSubstring("✔ NetworkPolicy/" + ns + "/windlass created\n"))
	g.Expect(out).To(HaveSuffix("◎ waiting for the Deployments to be Available: windlass\n"))

	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "windlass"}, d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/windlass-dev/windlass:latest"))
	g.Expect(d.ManagedFields).To(ContainElement(HaveField("Manager", "windlass")))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "windlass-controller-" + ns}, &rbacv1.ClusterRoleBinding{})).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "windlass-leader-election"}, &rbacv1.Role{})).To(Succeed())

	// Again: nothing to change.
	out, _, err = run(t, "install", "-n", ns, "--timeout", installTestTimeout)
	g.Expect(err).To(MatchError(ContainSubstring("Deployment " + ns + "/windlass is not Available")))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	g.Expect(len(lines)).To(BeNumerically(">", 10))
	for _, line := range lines[1 : len(lines)-1] {
		g.Expect(line).To(HaveSuffix(" unchanged"))
	}

	out, _, err = run(t, "version", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("client: dev\ncontroller: latest\n"))
}

func TestVersion(t *testing.T) {
	g := NewWithT(t)
	out, _, err := run(t, "version", "-n", env.CreateNamespace(t))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("client: dev\ncontroller: not installed\n"))
	out, _, err = run(t, "version", "--client")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("client: dev\n"))
}
