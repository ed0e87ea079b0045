package git

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestClone_SymlinksStayInTheWorkDir(t *testing.T) {
	g := NewWithT(t)
	outside := t.TempDir()
	r := newLocalRepo(t, "main")
	r.commit("main", map[string]string{"deploy/app.yaml": "a"}, "files")
	for link, target := range map[string]string{
		"abs":    filepath.Join(outside, "target"),
		"rel":    "../../outside",
		"inside": "deploy/app.yaml",
	} {
		g.Expect(os.Symlink(target, filepath.Join(r.dir, link))).To(Succeed())
	}
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "links")

	// A crafted tree that holds "evil" both as a symlink to a folder outside
	// and as a folder with a file, so a naive checkout would write through
	// the link.
	sym := r.gitStdin(outside, "hash-object", "-w", "--stdin")
	file := r.gitStdin("pwned", "hash-object", "-w", "--stdin")
	sub := r.gitStdin("100644 blob "+file+"\tpwned.txt\n", "mktree")
	tree := r.gitStdin("120000 blob "+sym+"\tevil\n040000 tree "+sub+"\tevil\n", "mktree", "--missing")
	crafted := r.git("commit-tree", tree, "-m", "crafted")
	r.git("update-ref", "refs/heads/crafted", crafted)

	tests := []struct {
		name   string
		branch string
		check  func(g *WithT, dir string)
	}{
		{name: "links are written as links", branch: "main", check: func(g *WithT, dir string) {
			for link, target := range map[string]string{
				"abs": filepath.Join(outside, "target"), "rel": "../../outside", "inside": "deploy/app.yaml",
			} {
				got, err := os.Readlink(filepath.Join(dir, link))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(target))
			}
		}},
		{name: "crafted tree", branch: "crafted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, dir := newTestClient(t, nil, nil)
			_, err := c.Clone(context.Background(), r.url(), CheckoutOptions{Branch: tt.branch})
			if tt.check != nil {
				g.Expect(err).NotTo(HaveOccurred())
				tt.check(g, dir)
			}
			t.Logf("clone error: %v", err)
			entries, readErr := os.ReadDir(outside)
			g.Expect(readErr).NotTo(HaveOccurred())
			g.Expect(entries).To(BeEmpty(), "clone error: %v", err)
		})
	}
}
