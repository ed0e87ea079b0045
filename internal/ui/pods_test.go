package ui

import (
	"net/http"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// TestPodsPage: the health of a Deployment a Kustomization applied links
// to its pods; their page shows each pod the Deployment's selector picks,
// with the end of each container's log, or why there is none (a pod on no
// node); only a workload of the inventory has one.
func TestPodsPage(t *testing.T) {
	g := NewWithT(t)
	objs := testObjects()
	ks := objs[0].(*kustomizev1.Kustomization)
	ks.Status.Inventory.Entries = append(ks.Status.Inventory.Entries, kustomizev1.ResourceRef{ID: "team-a_web_apps_Deployment", Version: "v1"})
	cached := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, Labels: map[string]string{"app": "web"}},
			Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	other := pod("db-0", "node-1")
	other.Labels = map[string]string{"app": "db"}
	live := fake.NewClientBuilder().WithScheme(scheme.New()).WithRESTMapper(schemeMapper(scheme.New())).WithObjects(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		pod("web-1", "node-1"), pod("web-2", ""), other).Build()
	h := (&Server{Reader: cached, Kinds: kinds.All, Log: logr.Discard(), Live: live, Pods: kubefake.NewClientset().CoreV1()}).Handler()

	_, body := get(g, h, "/object/Kustomization/team-a/app/inventory")
	g.Expect(section(body, "inventory-health")).To(ContainSubstring(`<a href="/object/Kustomization/team-a/app/pods?workload=team-a_web_apps_Deployment">pods and logs</a>`))
	g.Expect(section(body, "inventory-health")).NotTo(ContainSubstring(`workload=team-a_web__ConfigMap`))

	code, body := get(g, h, "/object/Kustomization/team-a/app/pods?workload=team-a_web_apps_Deployment")
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(MatchRegexp(`(?s)<h2>web-1 <span class="muted">Running · on node-1</span></h2>\s*<h3>web</h3>\s*<pre class="log">fake logs</pre>`))
	g.Expect(body).To(MatchRegexp(`(?s)<h2>web-2 .*the pod is on no node yet, so it has no log`))
	g.Expect(body).NotTo(ContainSubstring("db-0"))
	g.Expect(body).NotTo(ContainSubstring("live.js"))

	for _, workload := range []string{"team-a_web__ConfigMap", "team-b_web_apps_Deployment", ""} {
		code, _ := get(g, h, "/object/Kustomization/team-a/app/pods?workload="+workload)
		g.Expect(code).To(Equal(http.StatusNotFound), workload)
	}
}
