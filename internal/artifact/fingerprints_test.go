package artifact

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/api/meta"
)

// TestPathChanged archives three revisions of a tree for one object and
// asks which folders changed between them.
func TestPathChanged(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	archiveRevision := func(rev string, change map[string]string) meta.Artifact {
		root := sourceTree(t)
		writeTree(t, root, change)
		a := s.NewArtifactFor("GitRepository", obj("default", "mono"), "main@sha1:"+rev, rev+".tar.gz")
		g.Expect(s.Archive(&a, root, nil)).To(Succeed())
		return a
	}
	first := archiveRevision("1", nil)
	second := archiveRevision("2", map[string]string{"apps/base/service.yaml": "kind: Service\nspec: {}\n"})

	tests := []struct {
		path    string
		changed bool
	}{
		{"./apps/base", true},
		{"apps", true},
		{"./", true},
		{"", true},
		{"./infra", false},
		{"infra/", false},
		{"./missing", false},
	}
	for _, tt := range tests {
		changed, known := s.PathChanged(first, second, tt.path)
		g.Expect(known).To(BeTrue(), tt.path)
		g.Expect(changed).To(Equal(tt.changed), tt.path)
	}

	// The fingerprints of the last two trees are kept: the first is gone
	// once a third is archived.
	third := archiveRevision("3", map[string]string{"infra/ns.yaml": "kind: Namespace\nmetadata: {}\n"})
	changed, known := s.PathChanged(second, third, "infra")
	g.Expect(known && changed).To(BeTrue())
	_, known = s.PathChanged(first, third, "infra")
	g.Expect(known).To(BeFalse(), "the first tree's fingerprints were dropped")

	// Artifacts this storage did not archive, and objects removed, are
	// unknown.
	other := third
	other.Digest = "sha256:0000"
	_, known = s.PathChanged(second, other, "infra")
	g.Expect(known).To(BeFalse())
	_, err := s.RemoveAll(third)
	g.Expect(err).NotTo(HaveOccurred())
	_, known = s.PathChanged(second, third, "infra")
	g.Expect(known).To(BeFalse(), "RemoveAll drops the fingerprints")

	fourth := archiveRevision("4", nil)
	fifth := archiveRevision("5", map[string]string{"infra/ns.yaml": "kind: Namespace\nmetadata: {name: x}\n"})
	changed, known = s.PathChanged(fourth, fifth, "infra")
	g.Expect(known && changed).To(BeTrue())
	s.ForgetTrees("GitRepository", "default", "mono")
	_, known = s.PathChanged(fourth, fifth, "infra")
	g.Expect(known).To(BeFalse(), "ForgetTrees drops the fingerprints")
}
