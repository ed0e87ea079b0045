package ui

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// TestPolicyPagePinsAndUnpins pins an ImagePolicy from its page, as
// `windlass image set` does, refuses what is no tag, and unpins it.
func TestPolicyPagePinsAndUnpins(t *testing.T) {
	g := NewWithT(t)
	policy := &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "podinfo", Generation: 1}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(policy).Build()
	s := gateServer(c)
	h := s.Handler()
	_, body := get(g, h, "/object/ImagePolicy/apps/podinfo")
	g.Expect(body).To(And(ContainSubstring("Not pinned"), ContainSubstring(`id="action-pin"`)))
	g.Expect(body).NotTo(ContainSubstring(`id="action-unpin"`))

	post := func(action, form string) int {
		req := localRequest(http.MethodPost, "/object/ImagePolicy/apps/podinfo/"+action, strings.NewReader("csrf="+s.csrf+"&"+form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	annotations := func() map[string]string {
		got := &imagev1.ImagePolicy{}
		g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(policy), got)).To(Succeed())
		return got.Annotations
	}
	for _, bad := range []string{"", "-x", "a b", strings.Repeat("x", 129)} {
		g.Expect(post("pin", "tag="+bad)).To(Equal(http.StatusBadRequest), bad)
	}
	g.Expect(annotations()).NotTo(HaveKey(imagev1.PinAnnotation))
	g.Expect(post("pin", "tag=6.5.0")).To(Equal(http.StatusSeeOther))
	g.Expect(annotations()).To(And(HaveKeyWithValue(imagev1.PinAnnotation, "6.5.0"), HaveKey(meta.ReconcileRequestAnnotation)))
	_, body = get(g, h, "/object/ImagePolicy/apps/podinfo")
	g.Expect(body).To(And(ContainSubstring("Pinned to <strong>6.5.0</strong>"), ContainSubstring(`id="action-unpin"`)))
	g.Expect(post("unpin", "")).To(Equal(http.StatusSeeOther))
	g.Expect(annotations()).NotTo(HaveKey(imagev1.PinAnnotation))
}
