package helm

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// TestHealthCheckExprs: custom resources of the release are judged by
// spec.healthCheckExprs: one still in progress keeps the release
// progressing, one that failed fails it, and a healthy one makes it Ready.
func TestHealthCheckExprs(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	widget := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {{ .Release.Name }}-widget\nspec:\n  phase: {{ .Values.phase | quote }}\n"
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0", helmtest.WithFile("crds/widget.yaml", []byte(widgetCRD)),
		helmtest.WithTemplate("widget.yaml", widget)))
	hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) {
		hr.Spec.Values = valuesJSON(`{"phase":"starting"}`)
		hr.Spec.HealthCheckExprs = []kustomizev1.CustomHealthCheck{{
			APIVersion: "example.com/v1", Kind: "Widget",
			Current: "spec.phase == 'ready'", InProgress: "spec.phase == 'starting'", Failed: "spec.phase == 'broken'",
		}}
	})
	key := client.ObjectKeyFromObject(hr)
	got := waitForHR(g, key, hrReason(meta.ReconcilingCondition, "True", meta.ProgressingReason))
	g.Expect(conditions.Get(got, meta.ReconcilingCondition).Message).To(ContainSubstring("app-widget"))

	set := func(phase string) {
		g.Expect(env.Client.Get(context.Background(), key, hr)).To(Succeed())
		hr.Spec.Values = valuesJSON(`{"phase":"` + phase + `"}`)
		g.Expect(env.Client.Update(context.Background(), hr)).To(Succeed())
	}
	set("broken")
	got = waitForHR(g, key, hrReason(meta.ReadyCondition, "False", helmv2.HealthCheckFailedReason))
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring("health check failed"))
	set("ready")
	waitForHR(g, key, hrReady("1.0.0"))
}
