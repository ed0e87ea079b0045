package fetch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/api/meta"
)

func TestSourceTreesShareOneExtractionPerDigest(t *testing.T) {
	g := NewWithT(t)
	var trees TreeCache
	var fetches atomic.Int32
	extract := func(dir string) error {
		fetches.Add(1)
		return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: []\n"), 0o644)
	}

	var wg sync.WaitGroup
	dirs := make([]string, 8)
	releases := make([]func(), 8)
	errs := make([]error, 8)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dirs[i], releases[i], errs[i] = trees.Acquire(context.Background(), "sha256:a", extract)
		}()
	}
	wg.Wait()
	g.Expect(errors.Join(errs...)).NotTo(HaveOccurred())
	g.Expect(fetches.Load()).To(BeEquivalentTo(1), "one extraction for every build of the artifact")
	for _, d := range dirs {
		g.Expect(d).To(Equal(dirs[0]))
	}
	g.Expect(filepath.Join(dirs[0], "kustomization.yaml")).To(BeAnExistingFile())
	for _, release := range releases {
		release()
	}

	// A failed extraction is not kept: the next build tries again.
	_, _, err := trees.Acquire(context.Background(), "sha256:bad", func(string) error { return errors.New("gone") })
	g.Expect(err).To(MatchError("gone"))
	_, release, err := trees.Acquire(context.Background(), "sha256:bad", extract)
	g.Expect(err).NotTo(HaveOccurred())
	release()

	// Idle trees past the bound are removed, the least recently used first.
	for i := range maxIdleTrees {
		_, release, err := trees.Acquire(context.Background(), fmt.Sprintf("sha256:%d", i), extract)
		g.Expect(err).NotTo(HaveOccurred())
		release()
	}
	g.Expect(dirs[0]).NotTo(BeADirectory(), "the oldest idle tree is gone")
	g.Expect(trees.idle()).To(Equal(maxIdleTrees))
	g.Expect(TreeKey(&meta.Artifact{URL: "http://s/a.tar.gz", Revision: "main@sha1:1"})).To(Equal("url:http://s/a.tar.gz@main@sha1:1"),
		"an artifact without a digest is never shared with another")
	inUse, release, err := trees.Acquire(context.Background(), "sha256:in-use", extract)
	g.Expect(err).NotTo(HaveOccurred())
	trees.RemoveAll()
	g.Expect(inUse).To(BeADirectory(), "a tree in use is never removed")
	release()
	trees.RemoveAll()
	g.Expect(inUse).NotTo(BeADirectory())
}

// TestTreesArePrivateAndApart (row 15): every artifact is extracted into a
// folder of its own, which only the controller's user can enter, under a
// name no tenant can predict; releasing one tree leaves the others alone.
func TestTreesArePrivateAndApart(t *testing.T) {
	g := NewWithT(t)
	var trees TreeCache
	defer trees.RemoveAll()
	extract := func(dir string) error { return os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a: 1\n"), 0o600) }
	a, releaseA, err := trees.Acquire(context.Background(), "sha256:tenant-a", extract)
	g.Expect(err).NotTo(HaveOccurred())
	b, releaseB, err := trees.Acquire(context.Background(), "sha256:tenant-b", extract)
	g.Expect(err).NotTo(HaveOccurred())
	defer releaseB()

	g.Expect(a).NotTo(Equal(b))
	g.Expect(filepath.Dir(a)).To(Equal(filepath.Dir(b)), "both in the temporary folder")
	g.Expect(filepath.Base(a)).NotTo(ContainSubstring("tenant"), "the name does not come from the artifact")
	for _, dir := range []string{a, b} {
		info, err := os.Stat(dir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o700)), "only the controller's user may enter %s", dir)
	}
	g.Expect(strings.HasPrefix(a, b) || strings.HasPrefix(b, a)).To(BeFalse(), "neither tree is inside the other")

	releaseA()
	trees.RemoveAll()
	g.Expect(a).NotTo(BeADirectory(), "an idle tree is removed")
	g.Expect(filepath.Join(b, "a.yaml")).To(BeARegularFile(), "a tree in use stays")

	again, releaseAgain, err := trees.Acquire(context.Background(), "sha256:tenant-a", extract)
	g.Expect(err).NotTo(HaveOccurred())
	defer releaseAgain()
	g.Expect(again).NotTo(Equal(a), "a new extraction gets a new name")
}
