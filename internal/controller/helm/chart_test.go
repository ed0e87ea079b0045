package helm

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// TestSetTemplateMeta: the HelmChart of a release's template carries the
// owner labels, the template's labels and annotations, and the release's
// shard label unless the template sets its own.
func TestSetTemplateMeta(t *testing.T) {
	tests := []struct {
		name         string
		labels       map[string]string
		template     *helmv2.HelmChartTemplateObjectMeta
		wantLabels   map[string]string
		wantAnnotate map[string]string
	}{
		{name: "owner labels only",
			wantLabels: map[string]string{templateOwnerName: "app", templateOwnerNamespace: "apps"}},
		{name: "the template's labels and annotations",
			template:   &helmv2.HelmChartTemplateObjectMeta{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}},
			wantLabels: map[string]string{templateOwnerName: "app", templateOwnerNamespace: "apps", "team": "a"}, wantAnnotate: map[string]string{"note": "x"}},
		{name: "the release's shard, not its other labels", labels: map[string]string{shardLabel: "shard1", "team": "b"},
			wantLabels: map[string]string{templateOwnerName: "app", templateOwnerNamespace: "apps", shardLabel: "shard1"}},
		{name: "the template's shard wins", labels: map[string]string{shardLabel: "shard1"},
			template:   &helmv2.HelmChartTemplateObjectMeta{Labels: map[string]string{shardLabel: "shard2"}},
			wantLabels: map[string]string{templateOwnerName: "app", templateOwnerNamespace: "apps", shardLabel: "shard2"}},
		{name: "the template cannot name another owner",
			template:   &helmv2.HelmChartTemplateObjectMeta{Labels: map[string]string{templateOwnerName: "web", templateOwnerNamespace: "other"}},
			wantLabels: map[string]string{templateOwnerName: "app", templateOwnerNamespace: "apps"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app", Labels: tt.labels},
				Spec: helmv2.HelmReleaseSpec{Chart: &helmv2.HelmChartTemplate{ObjectMeta: tt.template}}}
			hc := &sourcev1.HelmChart{}
			setTemplateMeta(hc, hr)
			g.Expect(hc.Labels).To(Equal(tt.wantLabels))
			g.Expect(hc.Annotations).To(Equal(tt.wantAnnotate))
			g.Expect(templateMetaCurrent(hc, hr)).To(BeTrue())
		})
	}
}

// TestDeleteChartTemplateDeletesOnlyItsOwn: the HelmChart recorded in
// status.helmChart is deleted when it is the release's, and left when its
// owner labels name another release.
// TestChartTemplateIsCreatedAndWaitedFor: the HelmChart of a chart
// template is created (with no finalizer: a source carries none) and
// waited for quietly (the run that made it writes no status: the cache may
// not even hold it yet).
func TestChartTemplateIsCreatedAndWaitedFor(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := stepClient(nil)
	r := &HelmReleaseReconciler{Client: c}
	obj := stepHR()

	err := r.reconcileChartTemplate(ctx, obj)
	g.Expect(outcome.QuietWait(err)).NotTo(BeNil(), "the HelmChart just made is waited for quietly: %v", err)
	g.Expect(err).To(MatchError("source HelmChart 'apps/apps-app' has no artifact yet"))
	g.Expect(obj.Status.HelmChart).To(Equal("apps/apps-app"))
	hc := &sourcev1.HelmChart{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "apps-app"}, hc)).To(Succeed())
	g.Expect(hc.Finalizers).To(BeEmpty())
	g.Expect(hc.Labels).To(HaveKeyWithValue(templateOwnerName, "app"))

	// Deleted with the release even before the release's status names it.
	obj.Status.HelmChart = ""
	g.Expect(r.deleteChartTemplate(ctx, obj)).To(Succeed())
	err = c.Get(ctx, client.ObjectKeyFromObject(hc), &sourcev1.HelmChart{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "deleted, and gone at once: %v", err)
}

func TestDeleteChartTemplateDeletesOnlyItsOwn(t *testing.T) {
	for _, tc := range []struct {
		name        string
		owner       map[string]string
		wantDeleted bool
	}{
		{"its own", map[string]string{templateOwnerName: "app", templateOwnerNamespace: "apps"}, true},
		{"another release's", map[string]string{templateOwnerName: "app", templateOwnerNamespace: "other"}, false},
		{"no release's", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			hc := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "apps-app", Labels: tc.owner}}
			c := stepClient(nil, hc)
			r := &HelmReleaseReconciler{Client: c}
			obj := stepHR(func(hr *helmv2.HelmRelease) { hr.Status.HelmChart = "apps/apps-app" })

			g.Expect(r.deleteChartTemplate(ctx, obj)).To(Succeed())
			g.Expect(obj.Status.HelmChart).To(BeEmpty())
			err := c.Get(ctx, client.ObjectKeyFromObject(hc), &sourcev1.HelmChart{})
			g.Expect(apierrors.IsNotFound(err)).To(Equal(tc.wantDeleted), "deleted: %v", err)
		})
	}
}
