package ui

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// TestReconcileWithSource: the page of a Kustomization offers to reconcile
// it with its source, which asks both, source first; a source's page,
// which has no source of its own, does not offer it.
func TestReconcileWithSource(t *testing.T) {
	g := NewWithT(t)
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app"}}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app"},
		Spec: kustomizev1.KustomizationSpec{SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"}}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(repo, ks).Build()
	s := &Server{Reader: c, Kinds: kinds.All, Log: logr.Discard(), Actions: c}
	h := s.Handler()

	_, body := get(g, h, "/object/Kustomization/team-a/app")
	g.Expect(body).To(ContainSubstring(`<button type="submit" id="action-reconcile-with-source">reconcile with source</button>`))
	_, body = get(g, h, "/object/GitRepository/team-a/app")
	g.Expect(body).To(ContainSubstring(`id="action-reconcile"`))
	g.Expect(body).NotTo(ContainSubstring(`action-reconcile-with-source`))

	req := localRequest(http.MethodPost, "/object/Kustomization/team-a/app/reconcile-with-source", strings.NewReader("csrf="+s.csrf))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	g.Expect(rec.Code).To(Equal(http.StatusSeeOther), rec.Body.String())
	g.Expect(rec.Header().Get("Location")).To(Equal("/object/Kustomization/team-a/app?done=reconcile-with-source"))
	for _, obj := range []client.Object{&sourcev1.GitRepository{}, &kustomizev1.Kustomization{}} {
		g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: "team-a", Name: "app"}, obj)).To(Succeed())
		g.Expect(obj.GetAnnotations()).To(HaveKey(meta.ReconcileRequestAnnotation), "%T", obj)
	}
	_, body = get(g, h, "/object/Kustomization/team-a/app?done=reconcile-with-source")
	g.Expect(body).To(ContainSubstring(`<span id="done" class="muted">reconcile with source: done</span>`))
}
