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
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/artifact"
)

func TestSourceTreesShareOneExtractionPerDigest(t *testing.T) {
	g := NewWithT(t)
	var trees TreeCache
	var fetches atomic.Int32
	extract := fetchFunc(func(dir string) error {
		fetches.Add(1)
		return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: []\n"), 0o644)
	})

	var wg sync.WaitGroup
	dirs := make([]string, 8)
	releases := make([]func(), 8)
	errs := make([]error, 8)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dirs[i], releases[i], errs[i] = trees.AcquireArtifact(context.Background(), art("sha256:a"), extract)
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
	_, _, err := trees.AcquireArtifact(context.Background(), art("sha256:bad"), fetchFunc(func(string) error { return errors.New("gone") }))
	g.Expect(err).To(MatchError("gone"))
	_, release, err := trees.AcquireArtifact(context.Background(), art("sha256:bad"), extract)
	g.Expect(err).NotTo(HaveOccurred())
	release()

	// Idle trees past the bound are removed, the least recently used first.
	for i := range maxIdleTrees {
		_, release, err := trees.AcquireArtifact(context.Background(), art(fmt.Sprintf("sha256:%d", i)), extract)
		g.Expect(err).NotTo(HaveOccurred())
		release()
	}
	g.Expect(dirs[0]).NotTo(BeADirectory(), "the oldest idle tree is gone")
	g.Expect(trees.idle()).To(Equal(maxIdleTrees))
	g.Expect(treeKey(&meta.Artifact{URL: "http://s/a.tar.gz", Revision: "main@sha1:1"})).To(Equal("url:http://s/a.tar.gz@main@sha1:1@"),
		"an artifact without a digest is never shared with another")
	g.Expect(treeKey(&meta.Artifact{URL: "http://p/a.tar.gz", Revision: "v1", Digest: "sha256:1"})).To(Equal("url:http://p/a.tar.gz@v1@sha256:1"),
		"nor one reached by its URL only, whatever digest it claims")
	g.Expect(treeKey(&meta.Artifact{Path: "gitrepository/ns/r/1.tar.gz", URL: "http://s/x", Digest: "sha256:1"})).To(Equal("sha256:1"),
		"artifacts of this storage share trees by digest")
	inUse, release, err := trees.AcquireArtifact(context.Background(), art("sha256:in-use"), extract)
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
	extract := fetchFunc(func(dir string) error { return os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a: 1\n"), 0o600) })
	a, releaseA, err := trees.AcquireArtifact(context.Background(), art("sha256:tenant-a"), extract)
	g.Expect(err).NotTo(HaveOccurred())
	b, releaseB, err := trees.AcquireArtifact(context.Background(), art("sha256:tenant-b"), extract)
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

	again, releaseAgain, err := trees.AcquireArtifact(context.Background(), art("sha256:tenant-a"), extract)
	g.Expect(err).NotTo(HaveOccurred())
	defer releaseAgain()
	g.Expect(again).NotTo(Equal(a), "a new extraction gets a new name")
}

// fetchFunc is a Fetcher that unpacks every artifact with itself.
type fetchFunc func(dir string) error

func (f fetchFunc) Fetch(_ context.Context, _ meta.Artifact, dir string) error { return f(dir) }

// art is an artifact with digest.
func art(digest string) meta.Artifact { return meta.Artifact{Digest: digest} }

// TestTreesOfANewRevisionArePatched: the idle tree of a source's earlier
// artifact becomes the tree of its new one by rewriting only the folders
// that changed; a tree in use, a tree of another source, and a tree whose
// change the storage cannot tell are never patched.
func TestTreesOfANewRevisionArePatched(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	storage, err := artifact.New(t.TempDir(), "storage.example", time.Minute, 3)
	g.Expect(err).NotTo(HaveOccurred())
	local := &Local{Storage: storage}
	src := t.TempDir()
	archive := func(name, revision string, files map[string]string) meta.Artifact {
		for p, content := range files {
			g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755)).To(Succeed())
			g.Expect(os.WriteFile(filepath.Join(src, p), []byte(content), 0o644)).To(Succeed())
		}
		a := storage.NewArtifactFor("GitRepository", &metav1.ObjectMeta{Name: name, Namespace: "default"}, revision, revision+".tar.gz")
		g.Expect(storage.Archive(&a, src, nil)).To(Succeed())
		return a
	}
	var trees TreeCache
	defer trees.RemoveAll()
	acquired := func(a meta.Artifact) (string, func()) {
		dir, release, err := trees.AcquireArtifact(ctx, a, local)
		g.Expect(err).NotTo(HaveOccurred())
		return dir, release
	}

	first := archive("monorepo", "one", map[string]string{"apps/a/app.yaml": "a: 1\n", "apps/b/app.yaml": "b: 1\n"})
	dir, release := acquired(first)
	release()
	untouched := filepath.Join(dir, "apps/b/app.yaml")
	longAgo := time.Date(2001, time.January, 1, 0, 0, 0, 0, time.UTC)
	g.Expect(os.Chtimes(untouched, longAgo, longAgo)).To(Succeed())

	second := archive("monorepo", "two", map[string]string{"apps/a/app.yaml": "a: 2\n"})
	patched, releasePatched := acquired(second)
	g.Expect(patched).To(Equal(dir), "the idle tree of the earlier revision is patched")
	g.Expect(os.ReadFile(filepath.Join(patched, "apps/a/app.yaml"))).To(Equal([]byte("a: 2\n")))
	fi, err := os.Stat(untouched)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.ModTime()).To(BeTemporally("==", longAgo), "the folder the commit did not touch is not written")

	third := archive("monorepo", "three", map[string]string{"apps/b/app.yaml": "b: 3\n"})
	fresh, releaseFresh := acquired(third)
	g.Expect(fresh).NotTo(Equal(patched), "a tree in use is not patched")
	g.Expect(os.ReadFile(filepath.Join(patched, "apps/a/app.yaml"))).To(Equal([]byte("a: 2\n")), "and stays as its builds read it")
	releasePatched()
	releaseFresh()

	other := archive("other", "one", map[string]string{"apps/c/app.yaml": "c: 1\n"})
	otherDir, releaseOther := acquired(other)
	g.Expect(otherDir).NotTo(BeElementOf(patched, fresh), "a tree of another source is not patched")
	releaseOther()

	storage.ForgetTrees("GitRepository", "default", "monorepo")
	fourth := archive("monorepo", "four", map[string]string{"apps/a/app.yaml": "a: 4\n"})
	unknown, releaseUnknown := acquired(fourth)
	defer releaseUnknown()
	g.Expect(unknown).NotTo(BeElementOf(patched, fresh), "without the fingerprints of both trees, the tree is extracted anew")
	g.Expect(fresh).NotTo(BeADirectory(), "and the tree that could not be patched is removed")
	g.Expect(os.ReadFile(filepath.Join(unknown, "apps/b/app.yaml"))).To(Equal([]byte("b: 3\n")))
}

// TestTreeWaiterFetchesItsOwnAfterASharedFailure: two sources with the same
// content share one fetch; when the one fetched from another address fails
// (its storage gone), the build that waited for it fetches its own artifact
// instead of failing. A waiter of the same address gets the failure.
func TestTreeWaiterFetchesItsOwnAfterASharedFailure(t *testing.T) {
	tests := []struct {
		name        string
		waiterURL   string
		wantErr     bool
		wantFetches int32
	}{
		{name: "another address", waiterURL: "http://live/b.tar.gz", wantFetches: 2},
		{name: "the same address", waiterURL: "http://gone/a.tar.gz", wantErr: true, wantFetches: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var trees TreeCache
			defer trees.RemoveAll()
			var fetches atomic.Int32
			unblock := make(chan struct{})
			f := urlFetch(func(a meta.Artifact, dir string) error {
				fetches.Add(1)
				if strings.HasPrefix(a.URL, "http://gone/") {
					<-unblock
					return errors.New("connection refused")
				}
				return os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a: 1\n"), 0o600)
			})
			first := meta.Artifact{Digest: "sha256:same", URL: "http://gone/a.tar.gz", Path: "gitrepository/ns/a/1.tar.gz"}
			waiter := meta.Artifact{Digest: "sha256:same", URL: tt.waiterURL, Path: "gitrepository/ns/b/1.tar.gz"}
			firstErr := make(chan error, 1)
			go func() {
				_, _, err := trees.AcquireArtifact(context.Background(), first, f)
				firstErr <- err
			}()
			g.Eventually(func() int { return trees.usersOf(treeKey(&first)) }).Should(Equal(1))
			waited := make(chan error, 1)
			go func() {
				_, release, err := trees.AcquireArtifact(context.Background(), waiter, f)
				if err == nil {
					release()
				}
				waited <- err
			}()
			g.Eventually(func() int { return trees.usersOf(treeKey(&first)) }).Should(Equal(2), "the second build waits for the first's fetch")
			close(unblock)
			g.Expect(<-firstErr).To(MatchError("connection refused"))
			if tt.wantErr {
				g.Expect(<-waited).To(MatchError("connection refused"))
			} else {
				g.Expect(<-waited).NotTo(HaveOccurred())
			}
			g.Expect(fetches.Load()).To(Equal(tt.wantFetches))
		})
	}
}

// urlFetch is a Fetcher that unpacks every artifact with itself, told
// which artifact.
type urlFetch func(a meta.Artifact, dir string) error

func (f urlFetch) Fetch(_ context.Context, a meta.Artifact, dir string) error { return f(a, dir) }

// usersOf is how many builds use or wait for the tree of key.
func (s *TreeCache) usersOf(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.trees[key]; ok {
		return t.users
	}
	return 0
}
