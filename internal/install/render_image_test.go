package install

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// container returns the first container of the Deployment d.
func container(g *WithT, d *unstructured.Unstructured) map[string]any {
	g.Expect(d).NotTo(BeNil())
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	g.Expect(containers).NotTo(BeEmpty())
	return containers[0].(map[string]any)
}

// containerPorts returns the named ports of the first container of d.
func containerPorts(g *WithT, d *unstructured.Unstructured) map[string]int64 {
	ports, _, _ := unstructured.NestedSlice(container(g, d), "ports")
	out := map[string]int64{}
	for _, p := range ports {
		name, _, _ := unstructured.NestedString(p.(map[string]any), "name")
		port, _, _ := unstructured.NestedInt64(p.(map[string]any), "containerPort")
		out[name] = port
	}
	return out
}

// mountedVolume returns the volume of d that its first container mounts
// at path, or nil.
func mountedVolume(g *WithT, d *unstructured.Unstructured, path string) map[string]any {
	mounts, _, _ := unstructured.NestedSlice(container(g, d), "volumeMounts")
	volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	for _, m := range mounts {
		if m.(map[string]any)["mountPath"] != path {
			continue
		}
		for _, v := range volumes {
			if v.(map[string]any)["name"] == m.(map[string]any)["name"] {
				return v.(map[string]any)
			}
		}
	}
	return nil
}

// TestRenderImageControllers: the Deployment that runs the image
// reflector keeps its tags in a writable /data and exposes the tags port,
// which the image-reflector-controller Service selects; the one that runs
// the image automation has a writable /tmp to clone into, of a bounded
// size, the root file system being read-only.
func TestRenderImageControllers(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		opts                 Options
		reflector, automator string
		// others are Deployments that run neither image controller.
		others []string
	}{
		{name: "all in one", opts: Options{Version: "v1"}, reflector: AllInOneDeployment, automator: AllInOneDeployment},
		{name: "split", opts: Options{Version: "v1", Split: true},
			reflector: "image-reflector-controller", automator: "image-automation-controller",
			others: []string{"source-controller", "kustomize-controller", "notification-controller"}},
		{name: "the image reflector alone", opts: Options{Version: "v1", Components: []string{"image-reflector"}}, reflector: AllInOneDeployment},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objs := render(g, tt.opts)

			reflector := find(objs, "Deployment", tt.reflector)
			g.Expect(containerArgs(g, reflector)).To(ContainElements("--storage-path=/data", "--image-tags-addr=:9095"))
			g.Expect(containerPorts(g, reflector)).To(HaveKeyWithValue(ImageTagsPortName, int64(ImageTagsPort)))
			g.Expect(mountedVolume(g, reflector, "/data")).To(HaveKey("emptyDir"), "the tags are written under /data")

			svc := find(objs, "Service", ImageTagsServiceName)
			g.Expect(svc).NotTo(BeNil())
			selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
			g.Expect(selector).To(Equal(map[string]string{"app": tt.reflector}))
			ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			g.Expect(ports).To(ConsistOf(And(HaveKeyWithValue("name", "http"), HaveKeyWithValue("port", int64(80)),
				HaveKeyWithValue("targetPort", ImageTagsPortName))))

			if tt.automator != "" {
				automator := find(objs, "Deployment", tt.automator)
				readOnly, _, _ := unstructured.NestedBool(container(g, automator), "securityContext", "readOnlyRootFilesystem")
				g.Expect(readOnly).To(BeTrue())
				g.Expect(mountedVolume(g, automator, "/tmp")).To(HaveKeyWithValue("emptyDir", HaveKeyWithValue("sizeLimit", "4Gi")),
					"the clones are written under /tmp, bounded")
			}
			for _, name := range tt.others {
				d := find(objs, "Deployment", name)
				g.Expect(containerPorts(g, d)).NotTo(HaveKey(ImageTagsPortName), name)
				g.Expect(strings.Join(containerArgs(g, d), " ")).NotTo(ContainSubstring("--image-tags-addr"), name)
			}
			if len(tt.others) > 0 {
				g.Expect(containerArgs(g, find(objs, "Deployment", "kustomize-controller"))).NotTo(ContainElement("--storage-path=/data"))
				g.Expect(containerArgs(g, find(objs, "Deployment", tt.automator))).To(
					ContainElement("--events-addr=http://notification-controller.$(RUNTIME_NAMESPACE).svc./"))
			}
		})
	}
}

// TestRenderNetworkPolicyAdmitsTheTagsPort: the pods of the namespace
// reach the image tags port as they reach the artifact port; it is not
// open to the world as the webhook receiver is.
func TestRenderNetworkPolicyAdmitsTheTagsPort(t *testing.T) {
	for _, split := range []bool{false, true} {
		g := NewWithT(t)
		objs := render(g, Options{Version: "v1", Split: split, NetworkPolicy: true})
		np := find(objs, "NetworkPolicy", "windlass")
		g.Expect(np).NotTo(BeNil())
		selector, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
		reflector := find(objs, "Deployment", map[bool]string{false: AllInOneDeployment, true: "image-reflector-controller"}[split])
		podLabels, _, _ := unstructured.NestedStringMap(reflector.Object, "spec", "template", "metadata", "labels")
		for k, v := range selector {
			g.Expect(podLabels).To(HaveKeyWithValue(k, v), "the policy selects the image reflector's pods")
		}

		rules, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
		inNamespace, open := map[int64]bool{}, map[int64]bool{}
		for _, r := range rules {
			rule := r.(map[string]any)
			ports, _, _ := unstructured.NestedSlice(rule, "ports")
			for _, p := range ports {
				port, _, _ := unstructured.NestedInt64(p.(map[string]any), "port")
				if _, restricted := rule["from"]; restricted {
					inNamespace[port] = true
				} else {
					open[port] = true
				}
			}
		}
		g.Expect(inNamespace).To(And(HaveKey(int64(9090)), HaveKey(int64(ImageTagsPort))))
		g.Expect(open).NotTo(HaveKey(int64(ImageTagsPort)))
	}
}
