package git

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/sourceignore"
)

// BenchmarkCloneAndArchive clones a monorepo of 1,000 folders of four
// files and archives it, as a GitRepository run does: from the files
// written to the work directory, or from the commit's objects in memory.
func BenchmarkCloneAndArchive(b *testing.B) {
	r := newLocalRepo(b, "main")
	files := map[string]string{}
	for i := range 1000 {
		for _, name := range []string{"kustomization.yaml", "deployment.yaml", "service.yaml", "configmap.yaml"} {
			files[fmt.Sprintf("apps/app-%04d/%s", i, name)] = fmt.Sprintf("# app %d\nkind: %s\n", i, name)
		}
	}
	r.commit("main", files, "a monorepo")
	for _, inMemory := range []bool{false, true} {
		b.Run(map[bool]string{false: "disk", true: "memory"}[inMemory], func(b *testing.B) {
			for b.Loop() {
				dir := filepath.Join(b.TempDir(), "work")
				c, err := NewClient(dir, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Clone(context.Background(), r.url(), CheckoutOptions{Branch: "main", InMemory: inMemory}); err != nil {
					b.Fatal(err)
				}
				tree := archive.Tree(archive.Dir(dir))
				if files := c.Files(); files != nil {
					tree = files
				}
				filter, err := sourceignore.NewTreeFilter(tree, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := archive.BuildTree(io.Discard, tree, filter); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}
