package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/config/crd"
	"github.com/windlass-dev/windlass/internal/monitoring"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// render renders opts and returns the objects.
func render(g *WithT, opts Options) []*unstructured.Unstructured {
	m, err := Render(opts)
	g.Expect(err).NotTo(HaveOccurred())
	objs, err := m.Objects()
	g.Expect(err).NotTo(HaveOccurred())
	return objs
}

// find returns the object kind/name of objs, or nil.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// kinds returns the kinds of objs, in order.
func kinds(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetKind())
	}
	return out
}

// containerArgs returns the arguments of the first container of the
// Deployment d.
func containerArgs(g *WithT, d *unstructured.Unstructured) []string {
	g.Expect(d).NotTo(BeNil())
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	g.Expect(containers).NotTo(BeEmpty())
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

func TestRenderDefault(t *testing.T) {
	g := NewWithT(t)
	objs := render(g, Options{Version: "v1.2.3"})
	ks := kinds(objs)
	crds, err := crd.Objects()
	g.Expect(err).NotTo(HaveOccurred())
	n := len(crds)
	g.Expect(ks[:n]).To(HaveEach("CustomResourceDefinition"), "the CRDs come first")
	g.Expect(ks[n]).To(Equal("Namespace"))
	g.Expect(objs[n].GetName()).To(Equal(DefaultNamespace))

	d := find(objs, "Deployment", AllInOneDeployment)
	g.Expect(containerArgs(g, d)).To(ContainElements("controller", "--controllers=source,kustomize,helm,gating,notification,image-reflector,image-automation",
		"--storage-path=/data", "--storage-adv-addr=source-controller.$(RUNTIME_NAMESPACE).svc", "--image-tags-addr=:9095"))
	g.Expect(strings.Join(containerArgs(g, d), " ")).NotTo(ContainSubstring("--events"), "one process hands its events over in process")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	g.Expect(containers[0].(map[string]any)["image"]).To(Equal("ghcr.io/windlass-dev/windlass:v1.2.3"))

	svc := find(objs, "Service", ServiceName)
	g.Expect(svc).NotTo(BeNil())
	selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	g.Expect(selector).To(Equal(map[string]string{"app": AllInOneDeployment}))
	receiver := find(objs, "Service", ReceiverServiceName)
	g.Expect(receiver).NotTo(BeNil())
	selector, _, _ = unstructured.NestedStringMap(receiver.Object, "spec", "selector")
	g.Expect(selector).To(Equal(map[string]string{"app": AllInOneDeployment}))
	g.Expect(find(objs, "Service", EventsServiceName)).To(BeNil(), "no event endpoint in one process")
	g.Expect(find(objs, "NetworkPolicy", "windlass")).To(BeNil(), "no NetworkPolicy unless asked")
	g.Expect(find(objs, "Service", UIServiceName)).To(BeNil(), "no UI unless asked")
	g.Expect(find(objs, "ClusterRole", "windlass-ui-flux-system")).To(BeNil(), "no role of the UI unless asked")
	g.Expect(strings.Join(containerArgs(g, d), " ")).NotTo(ContainSubstring("--ui"))

	for _, o := range objs {
		g.Expect(o.GetLabels()).To(HaveKeyWithValue(NamespaceLabel, DefaultNamespace), o.GetKind())
		g.Expect(o.GetLabels()).To(HaveKeyWithValue(VersionLabel, "v1.2.3"), o.GetKind())
	}
	g.Expect(find(objs, "ClusterRole", "windlass-controller-flux-system")).NotTo(BeNil())
	binding := find(objs, "ClusterRoleBinding", "windlass-controller-flux-system")
	g.Expect(binding).NotTo(BeNil())
	roleRef, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name")
	g.Expect(roleRef).To(Equal("windlass-controller-flux-system"))
}

func TestRenderSplitNamespaceRegistry(t *testing.T) {
	g := NewWithT(t)
	m, err := Render(Options{Version: "v2", Namespace: "gitops", Registry: "registry.example.com/team/", Split: true, NetworkPolicy: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.DeploymentNames()).To(ConsistOf("source-controller", "kustomize-controller", "helm-controller", "gating-controller", "notification-controller",
		"image-reflector-controller", "image-automation-controller"))
	objs, err := m.Objects()
	g.Expect(err).NotTo(HaveOccurred())

	src := find(objs, "Deployment", "source-controller")
	g.Expect(containerArgs(g, src)).To(ContainElements("--controllers=source", "--storage-path=/data"))
	ks := find(objs, "Deployment", "kustomize-controller")
	g.Expect(containerArgs(g, ks)).To(ContainElement("--controllers=kustomize"))
	g.Expect(strings.Join(containerArgs(g, ks), " ")).NotTo(ContainSubstring("--storage"), "only the source controller serves artifacts")
	g.Expect(containerArgs(g, ks)).To(ContainElement("--events-addr=http://notification-controller.$(RUNTIME_NAMESPACE).svc./"))
	notification := find(objs, "Deployment", "notification-controller")
	g.Expect(containerArgs(g, notification)).To(ContainElements("--controllers=notification", "--events-listen-addr=:9090"))
	for _, name := range []string{ReceiverServiceName, EventsServiceName} {
		selector, _, _ := unstructured.NestedStringMap(find(objs, "Service", name).Object, "spec", "selector")
		g.Expect(selector).To(Equal(map[string]string{"app": "notification-controller"}), name)
	}
	containers, _, _ := unstructured.NestedSlice(ks.Object, "spec", "template", "spec", "containers")
	g.Expect(containers[0].(map[string]any)["image"]).To(Equal("registry.example.com/team/windlass:v2"))

	selector, _, _ := unstructured.NestedStringMap(find(objs, "Service", ServiceName).Object, "spec", "selector")
	g.Expect(selector).To(Equal(map[string]string{"app": "source-controller"}))
	g.Expect(find(objs, "NetworkPolicy", "windlass")).NotTo(BeNil())

	binding := find(objs, "ClusterRoleBinding", "windlass-controller-gitops")
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	g.Expect(subjects).To(ConsistOf(HaveKeyWithValue("namespace", "gitops")))
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" && o.GetKind() != "Namespace" && !strings.HasPrefix(o.GetKind(), "Cluster") {
			g.Expect(o.GetNamespace()).To(Equal("gitops"), o.GetKind())
		}
	}
}

// TestRenderUI installs the web UI: in the first Deployment, with sign-in,
// behind its Service, with the RBAC sign-in needs, open to the ingress.
func TestRenderUI(t *testing.T) {
	g := NewWithT(t)
	objs := render(g, Options{Version: "v1", Namespace: "gitops", Split: true, NetworkPolicy: true, UI: true})
	src := find(objs, "Deployment", "source-controller")
	g.Expect(containerArgs(g, src)).To(ContainElements("--ui-addr=:9880", "--ui-signin=token"))
	ports, _, _ := unstructured.NestedSlice(src.Object, "spec", "template", "spec", "containers")
	g.Expect(ports[0].(map[string]any)["ports"]).To(ContainElement(HaveKeyWithValue("name", UIPortName)))
	g.Expect(strings.Join(containerArgs(g, find(objs, "Deployment", "kustomize-controller")), " ")).NotTo(ContainSubstring("--ui"), "one UI")

	selector, _, _ := unstructured.NestedStringMap(find(objs, "Service", UIServiceName).Object, "spec", "selector")
	g.Expect(selector).To(Equal(map[string]string{"app": "source-controller"}))
	role := find(objs, "ClusterRole", "windlass-ui-gitops")
	g.Expect(role).NotTo(BeNil())
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	g.Expect(rules).To(ContainElement(And(HaveKeyWithValue("verbs", ConsistOf("impersonate")),
		HaveKeyWithValue("resources", ConsistOf("users", "groups", "serviceaccounts")))))
	binding := find(objs, "ClusterRoleBinding", "windlass-ui-gitops")
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	g.Expect(subjects).To(ConsistOf(HaveKeyWithValue("namespace", "gitops")))
	roleRef, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name")
	g.Expect(roleRef).To(Equal("windlass-ui-gitops"))

	ingress, _, _ := unstructured.NestedSlice(find(objs, "NetworkPolicy", "windlass").Object, "spec", "ingress")
	g.Expect(ingress).To(ContainElement(HaveKeyWithValue("ports", ConsistOf(HaveKeyWithValue("port", int64(UIPort))))))
}

func TestRenderMonitoring(t *testing.T) {
	g := NewWithT(t)
	objs := render(g, Options{Version: "v1", Namespace: "gitops", Split: true, NetworkPolicy: true, Monitoring: true})
	podMonitor := find(objs, monitoring.PodMonitorKind, "windlass")
	g.Expect(podMonitor).NotTo(BeNil())
	g.Expect(podMonitor.GetNamespace()).To(Equal("gitops"))
	g.Expect(podMonitor.GetLabels()).To(HaveKeyWithValue(NamespaceLabel, "gitops"), "uninstall finds it")
	endpoints, _, _ := unstructured.NestedSlice(podMonitor.Object, "spec", "podMetricsEndpoints")
	g.Expect(endpoints).To(ConsistOf(HaveKeyWithValue("port", monitoring.MetricsPort)))
	for _, name := range []string{"source-controller", "helm-controller"} {
		ports, _, _ := unstructured.NestedSlice(find(objs, "Deployment", name).Object, "spec", "template", "spec", "containers")
		g.Expect(ports[0].(map[string]any)["ports"]).To(ContainElement(And(HaveKeyWithValue("name", monitoring.MetricsPort),
			HaveKeyWithValue("containerPort", int64(MetricsPort)))), "every Deployment's pods are scraped")
		labels, _, _ := unstructured.NestedStringMap(find(objs, "Deployment", name).Object, "spec", "template", "metadata", "labels")
		g.Expect(labels).To(HaveKeyWithValue(monitoring.PodLabel, monitoring.PodLabelValue))
	}
	rule := find(objs, monitoring.PrometheusRuleKind, "windlass")
	g.Expect(rule).NotTo(BeNil())
	alerts, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	g.Expect(alerts).To(HaveLen(1))
	dashboard := find(objs, "ConfigMap", "windlass-dashboard")
	g.Expect(dashboard.GetLabels()).To(HaveKeyWithValue(monitoring.DashboardLabel, "1"))
	data, _, _ := unstructured.NestedString(dashboard.Object, "data", monitoring.DashboardFile)
	var d map[string]any
	g.Expect(json.Unmarshal([]byte(data), &d)).To(Succeed())
	g.Expect(d).To(HaveKeyWithValue("uid", monitoring.DashboardUID))

	ingress, _, _ := unstructured.NestedSlice(find(objs, "NetworkPolicy", "windlass").Object, "spec", "ingress")
	g.Expect(ingress).To(ContainElement(And(HaveKeyWithValue("ports", ConsistOf(HaveKeyWithValue("port", int64(MetricsPort)))),
		Not(HaveKey("from")))), "Prometheus scrapes from its own namespace")
	g.Expect(find(render(g, Options{Version: "v1"}), monitoring.PodMonitorKind, "windlass")).To(BeNil(), "only with Monitoring")
}

func TestRenderComponents(t *testing.T) {
	g := NewWithT(t)
	objs := render(g, Options{Version: "v1", Components: []string{"kustomize-controller"}})
	d := find(objs, "Deployment", AllInOneDeployment)
	g.Expect(containerArgs(g, d)).To(ContainElement("--controllers=kustomize"))
	g.Expect(find(objs, "Service", ServiceName)).To(BeNil(), "no artifact Service without the source controller")
	g.Expect(find(objs, "Service", ReceiverServiceName)).To(BeNil(), "no webhook receiver without the notification controller")
	g.Expect(find(objs, "Service", ImageTagsServiceName)).To(BeNil(), "no image tags Service without the image reflector")
	g.Expect(containerPorts(g, d)).NotTo(HaveKey(ImageTagsPortName))
}

func TestRenderRefusesBadOptions(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{Version: "v1", Components: []string{"image"}}, `unknown component "image": choose from source, kustomize, helm, gating, notification, image-reflector, image-automation`},
		{Options{Version: "not a tag"}, `invalid --version "not a tag"`},
		{Options{Version: ""}, `invalid --version ""`},
		{Options{Version: "v1", Registry: "https://ghcr.io/x"}, `invalid --registry "https://ghcr.io/x"`},
		{Options{Version: "v1", Namespace: "Flux_System"}, `invalid namespace "Flux_System"`},
	} {
		g := NewWithT(t)
		_, err := Render(tt.opts)
		g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
	}
}

// TestCRDKustomizationListsEveryBase: a CRD that `make generate` adds must
// be listed in config/crd/kustomization.yaml, or install would miss it.
func TestCRDKustomizationListsEveryBase(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Join(testenv.RepoRoot(), "config", "crd")
	files, err := filepath.Glob(filepath.Join(root, "bases", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())
	data, err := os.ReadFile(filepath.Join(root, "kustomization.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var k struct {
		Resources []string `json:"resources"`
	}
	g.Expect(yaml.Unmarshal(data, &k)).To(Succeed())
	want := make([]string, 0, len(files))
	for _, f := range files {
		want = append(want, "bases/"+filepath.Base(f))
	}
	g.Expect(k.Resources).To(ConsistOf(want))
}

// TestCRDsAreTheGeneratedOnes: install applies the CRDs of
// config/crd/bases as they are, labels aside.
func TestCRDsAreTheGeneratedOnes(t *testing.T) {
	g := NewWithT(t)
	crds, err := CRDs()
	g.Expect(err).NotTo(HaveOccurred())
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crds).To(HaveLen(len(files)))
	for _, f := range files {
		data, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		want := map[string]any{}
		g.Expect(yaml.Unmarshal(data, &want)).To(Succeed())
		name := want["metadata"].(map[string]any)["name"].(string)
		i := slices.IndexFunc(crds, func(c *unstructured.Unstructured) bool { return c.GetName() == name })
		g.Expect(i).NotTo(Equal(-1), name)
		got, err := json.Marshal(crds[i].Object["spec"])
		g.Expect(err).NotTo(HaveOccurred())
		wantJSON, err := json.Marshal(want["spec"])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(got)).To(Equal(string(wantJSON)), name)
	}
}

// TestUninstallKnowsEveryKind: every kind that install renders is one
// that uninstall deletes.
func TestUninstallKnowsEveryKind(t *testing.T) {
	g := NewWithT(t)
	objs := render(g, Options{Version: "v1", Split: true, NetworkPolicy: true})
	known := []string{"CustomResourceDefinition", "Namespace", deploymentKind.Kind}
	for _, gvk := range installedKinds {
		known = append(known, gvk.Kind)
	}
	for _, o := range objs {
		g.Expect(known).To(ContainElement(o.GetKind()))
	}
}

func TestImageTag(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ImageTag("ghcr.io/windlass-dev/windlass:v1.2.0")).To(Equal("v1.2.0"))
	g.Expect(ImageTag("localhost:5000/windlass")).To(Equal("latest"))
	g.Expect(ImageTag("localhost:5000/windlass@sha256:abc")).To(Equal("sha256:abc"))
	g.Expect(DefaultVersion("dev")).To(Equal("latest"))
	g.Expect(DefaultVersion("v0.3.0")).To(Equal("v0.3.0"))
}

// TestRenderReplicas runs several pods per Deployment that share the
// objects, their artifacts' URLs naming the Service in front of them all,
// each publishing its own address ($POD_IP) to the others.
func TestRenderReplicas(t *testing.T) {
	g := NewWithT(t)
	objs := render(g, Options{Version: "v1", Replicas: 3})
	d := find(objs, "Deployment", AllInOneDeployment)
	replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	g.Expect(replicas).To(BeEquivalentTo(3))
	args := containerArgs(g, d)
	g.Expect(args).To(ContainElements("--shards=auto", "--storage-adv-addr=source-controller.$(RUNTIME_NAMESPACE).svc"))
	g.Expect(args).NotTo(ContainElement("--enable-leader-election"), "every replica reconciles its share")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	env := containers[0].(map[string]any)["env"].([]any)
	g.Expect(env).To(ContainElement(HaveKeyWithValue("name", "POD_IP")))

	one := find(render(g, Options{Version: "v1"}), "Deployment", AllInOneDeployment)
	replicas, _, _ = unstructured.NestedInt64(one.Object, "spec", "replicas")
	g.Expect(replicas).To(BeEquivalentTo(1))
	g.Expect(containerArgs(g, one)).To(ContainElement("--enable-leader-election"))

	_, err := Render(Options{Version: "v1", Replicas: -1})
	g.Expect(err).To(MatchError(ContainSubstring("invalid --replicas -1")))
}
