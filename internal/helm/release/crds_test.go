package release

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// crdManifest is a namespaced CRD of kind Widget (plural widgets) in group
// with the given short names.
func crdManifest(group string, shortNames ...string) string {
	short := ""
	if len(shortNames) > 0 {
		short = "\n    shortNames: [" + strings.Join(shortNames, ", ") + "]"
	}
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.` + group + `
spec:
  group: ` + group + `
  scope: Namespaced
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget` + short + `
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`
}

// widgetTemplate is a Widget of group.
func widgetTemplate(group string) string {
	return `apiVersion: ` + group + `/v1
kind: Widget
metadata:
  name: {{ .Release.Name }}-widget
spec:
  size: 1
`
}

// crdChart is a chart with the Widget CRD of group in crds/ (with
// shortNames) and, when withWidget is set, a Widget in its templates.
func crdChart(t *testing.T, group string, withWidget bool, shortNames ...string) []helmtest.ChartOption {
	t.Helper()
	opts := []helmtest.ChartOption{helmtest.WithFile("crds/widgets.yaml", []byte(crdManifest(group, shortNames...)))}
	if withWidget {
		opts = append(opts, helmtest.WithTemplate("widget.yaml", widgetTemplate(group)))
	}
	return opts
}

// shortNamesOf returns the short names of the Widget CRD of group, or nil
// when it does not exist.
func shortNamesOf(t *testing.T, group string) []string {
	t.Helper()
	crd, err := getter(t).dynamic.Resource(crdGVR).Get(context.Background(), "widgets."+group, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading CRD widgets.%s: %v", group, err)
	}
	names, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "shortNames")
	return append([]string{}, names...)
}

// deleteCRD deletes the Widget CRD of group when the test ends.
func deleteCRD(t *testing.T, group string) {
	t.Cleanup(func() {
		_ = getter(t).dynamic.Resource(crdGVR).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
	})
}

// widgetGVR is the resource of the Widgets of group.
func widgetGVR(group string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
}

func TestCRDPolicies(t *testing.T) {
	tests := []struct {
		name string
		// installCRDs is the policy of the first install, of a chart whose
		// CRD has the short name "wdg1"; with upgrade, it is followed by an
		// upgrade (policy upgradeCRDs) to a chart whose CRD has "wdg2".
		installCRDs string
		upgrade     bool
		upgradeCRDs string
		// widget puts a Widget in the templates of the last chart.
		widget bool
		want   []string
	}{
		{name: "install creates the CRD (default)", widget: true, want: []string{"wdg1"}},
		{name: "install with Create", installCRDs: helmv2.CRDsCreate, widget: true, want: []string{"wdg1"}},
		{name: "install with Skip leaves it out", installCRDs: helmv2.CRDsSkip, want: nil},
		{name: "upgrade leaves a CRD alone (default Skip)", upgrade: true, want: []string{"wdg1"}},
		{name: "upgrade with Create keeps a CRD that exists", upgrade: true, upgradeCRDs: helmv2.CRDsCreate, want: []string{"wdg1"}},
		{name: "upgrade with CreateReplace replaces a changed CRD", upgrade: true, upgradeCRDs: helmv2.CRDsCreateReplace, widget: true, want: []string{"wdg2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			group := f.target + ".windlass.test"
			deleteCRD(t, group)

			_, err := f.runner.Install(context.Background(), basicChart(t, "1.0.0", crdChart(t, group, tt.widget && !tt.upgrade, "wdg1")...), nil,
				InstallOptions{ReleaseName: "app", Namespace: f.target, ServerSideApply: true, CRDs: tt.installCRDs})
			g.Expect(err).NotTo(HaveOccurred())
			if tt.upgrade {
				_, err = f.runner.Upgrade(context.Background(), basicChart(t, "2.0.0", crdChart(t, group, tt.widget, "wdg2")...), nil,
					UpgradeOptions{ReleaseName: "app", CRDs: tt.upgradeCRDs})
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(shortNamesOf(t, group)).To(Equal(tt.want))
			if tt.widget {
				// The chart's Widget was applied: the new kind was discovered.
				widget, err := getter(t).dynamic.Resource(widgetGVR(group)).Namespace(f.target).
					Get(context.Background(), "app-widget", metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(widget.GetAnnotations()).To(HaveKeyWithValue("meta.helm.sh/release-name", "app"))
			}
		})
	}
}

func TestCRDsThatAreNotCRDsAreRefused(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	ch := basicChart(t, "1.0.0", helmtest.WithFile("crds/sneaky.yaml", []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: sneaky
  namespace: kube-system
`)))
	_, err := f.runner.Install(context.Background(), ch, nil, InstallOptions{ReleaseName: "app", Namespace: f.target})
	g.Expect(err).To(MatchError(ContainSubstring("not an apiextensions.k8s.io/v1 CustomResourceDefinition")))
	last, err := f.runner.Last("app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(last).To(BeNil(), "nothing was installed")
}
