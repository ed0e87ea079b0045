package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
)

// TestTree shows the inventory of a Kustomization that the controller
// applied from git, with the Kustomization it applied and that one's
// inventory nested below it.
func TestTree(t *testing.T) {
	g := NewWithT(t)
	ns, _, _ := appliedScenario(t, g)

	out, _, err := run(t, "tree", "kustomization", "apps", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	expectGolden(t, g, "tree-kustomization", strings.ReplaceAll(out, ns, "NS"))

	for _, format := range []string{"json", "yaml"} {
		t.Run("-o "+format, func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(t, "tree", "ks", "apps", "-n", ns, "-o", format)
			g.Expect(err).NotTo(HaveOccurred())
			var root treeNode
			if format == "json" {
				g.Expect(json.Unmarshal([]byte(out), &root)).To(Succeed())
			} else {
				g.Expect(yaml.UnmarshalStrict([]byte(out), &root)).To(Succeed())
			}
			g.Expect(root.subject()).To(Equal("Kustomization/" + ns + "/apps"))
			g.Expect(root.Children).To(HaveLen(3))
			db := root.Children[1]
			g.Expect(db.Group).To(Equal(kustomizev1.GroupVersion.Group))
			g.Expect(db.Children).To(HaveLen(1))
			g.Expect(db.Children[0].subject()).To(Equal("ConfigMap/" + ns + "/db-settings"))
			expectGolden(t, g, "tree-kustomization-"+format, strings.ReplaceAll(out, ns, "NS"))
		})
	}
}

// TestTreeCycle checks that Kustomizations whose inventories name each
// other print once each, and that cluster-scoped entries print without a
// namespace.
func TestTreeCycle(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	for _, pair := range [][2]string{{"a", "b"}, {"b", "a"}} {
		ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pair[0]},
			Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour},
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "app"}}}
		createWithStatus(g, ks, func() {
			ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
				{ID: "_" + ns + "__Namespace", Version: "v1"},
				{ID: ns + "_" + pair[1] + "_kustomize.toolkit.fluxcd.io_Kustomization", Version: "v1"},
			}}
		})
	}
	out, _, err := run(t, "tree", "ks", "a", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.ReplaceAll(out, ns, "NS")).To(Equal(`Kustomization/NS/a
├── Namespace/NS
└── Kustomization/NS/b
    ├── Namespace/NS
    └── Kustomization/NS/a
`))
}

func TestTreeBadInput(t *testing.T) {
	ns := env.CreateNamespace(t)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "a Kustomization that does not exist", args: []string{"tree", "ks", "nothing", "-n", ns},
			wantErr: "Kustomization " + ns + "/nothing not found: check its name and -n"},
		{name: "an unknown format", args: []string{"tree", "ks", "nothing", "-n", ns, "-o", "xml"},
			wantErr: `-o "xml" is not a format of tree: use yaml or json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, _, err := run(t, tt.args...)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

// TestTreeArtifactGenerator: the tree of a generator shows its
// ExternalArtifacts, below each the Kustomizations that use it, and what
// they applied.
func TestTreeArtifactGenerator(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	gen := &sourceextv1beta1.ArtifactGenerator{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"},
		Spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources: []sourceextv1beta1.SourceReference{{Alias: "m", Kind: "GitRepository", Name: "mono"}},
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{
				{Name: "app-a", Copy: []sourceextv1beta1.CopyOperation{{From: "@m/a/**", To: "@artifact/"}}},
				{Name: "app-b", Copy: []sourceextv1beta1.CopyOperation{{From: "@m/b/**", To: "@artifact/"}}},
			}}}
	createWithStatus(g, gen, func() {
		for _, name := range []string{"app-a", "app-b"} {
			gen.Status.Inventory = append(gen.Status.Inventory, sourceextv1beta1.ExternalArtifactReference{
				Name: name, Namespace: ns, Digest: "sha256:1", Filename: "1.tar.gz"})
		}
	})
	for _, app := range []string{"a", "b"} {
		ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
			Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour},
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "ExternalArtifact", Name: "app-" + app}}}
		createWithStatus(g, ks, func() {
			ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
				{ID: ns + "_" + app + "-settings__ConfigMap", Version: "v1"},
			}}
		})
	}
	out, _, err := run(t, "tree", "artifactgenerator", "apps", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.ReplaceAll(out, ns, "NS")).To(Equal(`ArtifactGenerator/NS/apps
├── ExternalArtifact/NS/app-a
│   └── Kustomization/NS/a
│       └── ConfigMap/NS/a-settings
└── ExternalArtifact/NS/app-b
    └── Kustomization/NS/b
        └── ConfigMap/NS/b-settings
`))
	_, _, err = run(t, "tree", "ag", "missing", "-n", ns)
	g.Expect(err).To(MatchError(ContainSubstring("ArtifactGenerator " + ns + "/missing not found")))
}
