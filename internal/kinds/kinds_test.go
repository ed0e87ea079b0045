package kinds_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// TestEveryRowIsWhole: each kind's types are in the scheme under its
// group, version and kind; its list holds its items; it has a controller,
// command-line words and, unless static, its last handled request.
func TestEveryRowIsWhole(t *testing.T) {
	s := scheme.New()
	names := map[string]string{}
	for _, k := range kinds.All {
		t.Run(k.Kind, func(t *testing.T) {
			g := NewWithT(t)
			gvks, _, err := s.ObjectKinds(k.New())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(gvks).To(ContainElement(k.GroupVersionKind()))
			listGVKs, _, err := s.ObjectKinds(k.NewList())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(listGVKs).To(ContainElement(k.GroupVersion.WithKind(k.Kind + "List")))
			g.Expect(k.Items(k.NewList())).To(BeEmpty())
			g.Expect(k.Controller).NotTo(BeEmpty())
			g.Expect(k.LastHandled == nil).To(Equal(!k.Reconciled()), "a kind its controller reconciles reports the requests it handled")
			g.Expect(!k.Reconciled() && k.WebhookTarget).To(BeFalse(), "a kind nothing reconciles is no webhook's target")
			g.Expect(!k.Reconciled() && !k.Produced && k.Gates != kinds.NoGates).To(BeFalse(), "a kind neither reconciled nor produced waits for nothing")
			g.Expect(k.Static && k.Produced).To(BeFalse(), "a kind without status has no producer writing it")
			if k.DependsOn != nil {
				g.Expect(k.Gates).To(Equal(kinds.ApplierGates), "what depends on others applies")
				g.Expect(k.DependsOn(k.New())).To(BeEmpty())
			}
			g.Expect(k.Words).NotTo(BeEmpty())
			for _, name := range append([]string{strings.Join(k.Words, " ")}, k.Aliases...) {
				g.Expect(names).NotTo(HaveKey(name), "the command-line name %q is taken", name)
				names[name] = k.Kind
			}
			got, ok := kinds.Named(k.Kind)
			g.Expect(ok).To(BeTrue())
			g.Expect(got.GroupVersion).To(Equal(k.GroupVersion))
		})
	}
}

// TestEveryCRDHasARow: the kinds of the CRDs Windlass installs are the
// kinds of the registry, each served at the registry's version; a CRD
// added without its row fails here.
func TestEveryCRDHasARow(t *testing.T) {
	g := NewWithT(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())
	var crdKinds []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(yaml.Unmarshal(data, crd)).To(Succeed(), f)
		kind := crd.Spec.Names.Kind
		crdKinds = append(crdKinds, kind)
		k, ok := kinds.Named(kind)
		g.Expect(ok).To(BeTrue(), "%s: the kind %s has no row in internal/kinds", f, kind)
		g.Expect(crd.Spec.Group).To(Equal(k.GroupVersion.Group), kind)
		var served []string
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
		}
		g.Expect(served).To(ContainElement(k.GroupVersion.Version), kind)
	}
	g.Expect(crdKinds).To(HaveLen(len(kinds.All)), "every row has its CRD")
}

// TestQueries: the registry's queries select by their field, in the
// order of All.
func TestQueries(t *testing.T) {
	g := NewWithT(t)
	names := func(ks []kinds.Kind) []string {
		var out []string
		for _, k := range ks {
			out = append(out, k.Kind)
		}
		return out
	}
	g.Expect(names(kinds.SourcesFor(kinds.KustomizationSource))).To(Equal([]string{"GitRepository", "OCIRepository", "Bucket", "ExternalArtifact"}))
	g.Expect(names(kinds.SourcesFor(kinds.ChartRef))).To(Equal([]string{"OCIRepository", "HelmChart", "ExternalArtifact"}))
	g.Expect(names(kinds.SourcesFor(kinds.HelmChartSource))).To(Equal([]string{"GitRepository", "Bucket", "HelmRepository"}))
	g.Expect(names(kinds.SourcesFor(kinds.GeneratorSource))).To(Equal([]string{"GitRepository", "OCIRepository", "Bucket", "HelmChart", "ExternalArtifact"}))
	g.Expect(names(kinds.WithDependsOn())).To(Equal([]string{"Kustomization", "HelmRelease"}))
	g.Expect(names(kinds.OfController(kinds.NotificationController))).To(Equal([]string{"Provider", "Alert", "Receiver"}))
	_, ok := kinds.Named("ArtifactGenerators")
	g.Expect(ok).To(BeFalse(), "a kind is named by its kind")
	ea, _ := kinds.Named("ExternalArtifact")
	g.Expect(ea.Reconciled()).To(BeFalse(), "its producer writes an ExternalArtifact")
	ag, _ := kinds.Named("ArtifactGenerator")
	g.Expect(string(ag.SuspendPatch(true))).To(Equal(`{"metadata":{"annotations":{"source.extensions.fluxcd.io/reconcile":"Disabled"}}}`))
	g.Expect(string(ag.SuspendPatch(false))).To(Equal(`{"metadata":{"annotations":{"source.extensions.fluxcd.io/reconcile":"Enabled"}}}`))
	ks, _ := kinds.Named("Kustomization")
	g.Expect(string(ks.SuspendPatch(true))).To(Equal(`{"spec":{"suspend":true}}`))
	var finalized []string
	for _, k := range kinds.All {
		if kinds.Finalized(k.Kind) {
			finalized = append(finalized, k.Kind)
		}
	}
	g.Expect(finalized).To(ConsistOf("Kustomization", "HelmRelease", "ArtifactGenerator"), "the kinds whose deletion does work in the cluster")
	g.Expect(kinds.Finalized("Kustomizations")).To(BeFalse())
}
