package git

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// submoduleFixture is a parent repository with two submodules, one of which
// has a submodule of its own, pinned to a commit behind its branch tip.
type submoduleFixture struct {
	parent, sub, leaf *localRepo
	subPinned         string
}

func newSubmoduleFixture(t *testing.T) *submoduleFixture {
	f := &submoduleFixture{
		parent: newLocalRepo(t, "main"),
		sub:    newLocalRepo(t, "main"),
		leaf:   newLocalRepo(t, "main"),
	}
	f.leaf.commit("main", map[string]string{"deep.txt": "deep"}, "leaf")
	f.sub.commit("main", map[string]string{"lib.txt": "pinned"}, "sub one")
	f.sub.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", f.leaf.url(), "nested")
	f.sub.git("commit", "-q", "-m", "add nested")
	f.subPinned = f.sub.git("rev-parse", "HEAD")
	f.sub.commit("main", map[string]string{"lib.txt": "tip"}, "sub two")

	f.parent.commit("main", map[string]string{"app.txt": "app"}, "parent")
	f.parent.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", f.sub.url(), "libs/sub")
	f.parent.git("-C", "libs/sub", "checkout", "-q", f.subPinned)
	f.parent.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", "../"+filepath.Base(f.leaf.dir),
		"vendor/leaf")
	f.parent.git("add", "-A")
	f.parent.git("commit", "-q", "-m", "add submodules")
	return f
}

func TestClone_Submodules(t *testing.T) {
	f := newSubmoduleFixture(t)
	tests := []struct {
		name    string
		opts    CheckoutOptions
		want    []string
		wantLib string
	}{
		{name: "without recursion the submodules stay empty", opts: CheckoutOptions{Branch: "main"},
			want: []string{".gitmodules", "app.txt"}},
		{name: "recursive, pinned commit, relative URL", opts: CheckoutOptions{Branch: "main", RecurseSubmodules: true},
			want: []string{".gitmodules", "app.txt", "libs/sub/.gitmodules", "libs/sub/lib.txt",
				"libs/sub/nested/deep.txt", "vendor/leaf/deep.txt"}, wantLib: "pinned"},
		{name: "shallow parent", opts: CheckoutOptions{Branch: "main", ShallowClone: true, RecurseSubmodules: true},
			want: []string{".gitmodules", "app.txt", "libs/sub/.gitmodules", "libs/sub/lib.txt",
				"libs/sub/nested/deep.txt", "vendor/leaf/deep.txt"}, wantLib: "pinned"},
		{name: "sparse skips submodules outside", opts: CheckoutOptions{Branch: "main", RecurseSubmodules: true,
			SparseCheckoutDirectories: []string{"libs"}},
			want: []string{"libs/sub/.gitmodules", "libs/sub/lib.txt", "libs/sub/nested/deep.txt"}, wantLib: "pinned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, dir := newTestClient(t, nil, nil)
			_, err := c.Clone(context.Background(), f.parent.url(), tt.opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(listFiles(t, dir)).To(Equal(tt.want))
			if tt.wantLib != "" {
				lib, err := os.ReadFile(filepath.Join(dir, "libs", "sub", "lib.txt"))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(lib)).To(Equal(tt.wantLib))
			}
			if len(tt.opts.SparseCheckoutDirectories) > 0 {
				g.Expect(filepath.Join(dir, "vendor", "leaf", ".git")).NotTo(BeAnExistingFile())
			}
		})
	}
}
