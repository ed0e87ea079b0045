package ui

import (
	"net/http"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// TestInventoryPage: the object page links to the health of what it
// applied; that page reads each object, uncached, and says its health
// (kstatus), a missing object NotFound; it is no live page. A UI that
// cannot read live offers no link.
func TestInventoryPage(t *testing.T) {
	g := NewWithT(t)
	objs := testObjects()
	ks := objs[0].(*kustomizev1.Kustomization)
	ks.Status.Inventory.Entries = append(ks.Status.Inventory.Entries, kustomizev1.ResourceRef{ID: "team-a_gone__ConfigMap", Version: "v1"})
	cached := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	live := fake.NewClientBuilder().WithScheme(scheme.New()).WithRESTMapper(schemeMapper(scheme.New())).WithObjects(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}).Build()
	h := (&Server{Reader: cached, Kinds: kinds.All, Log: logr.Discard(), Live: live}).Handler()

	_, body := get(g, h, "/object/Kustomization/team-a/app")
	g.Expect(body).To(ContainSubstring(`<a id="inventory-link" href="/object/Kustomization/team-a/app/inventory">The health of each of the 2 objects</a>`))
	code, body := get(g, h, "/object/Kustomization/team-a/app/inventory")
	g.Expect(code).To(Equal(http.StatusOK), body)
	rows := section(body, "inventory-health")
	g.Expect(rows).To(MatchRegexp(`<td>ConfigMap/team-a/web</td><td class="health-Current">Current</td>`))
	g.Expect(rows).To(MatchRegexp(`<td>ConfigMap/team-a/gone</td><td class="health-NotFound">NotFound</td><td class="message">object not found</td>`))
	g.Expect(body).NotTo(ContainSubstring("live.js"))

	_, body = get(g, testServer(testObjects()...), "/object/Kustomization/team-a/app")
	g.Expect(body).NotTo(ContainSubstring("inventory-link"))
	code, _ = get(g, testServer(testObjects()...), "/object/Kustomization/team-a/app/inventory")
	g.Expect(code).To(Equal(http.StatusNotFound))
}
