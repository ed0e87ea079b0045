package git

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	. "github.com/onsi/gomega"
)

// TestWriteTree_AsCheckout: a Clone (which writes the tree) and a
// Workspace (a go-git checkout with its index) leave the same files, modes
// and links.
func TestWriteTree_AsCheckout(t *testing.T) {
	g := NewWithT(t)
	r := newLocalRepo(t, "main")
	r.commit("main", map[string]string{
		"apps/a/kustomization.yaml": "resources: [app.yaml]\n",
		"apps/a/app.yaml":           "kind: ConfigMap\n",
		"apps/b/deep/er/file.txt":   "deep\n",
		"README.md":                 "# repo\n",
		"bin/run.sh":                "#!/bin/sh\n",
	}, "files")
	g.Expect(os.Chmod(filepath.Join(r.dir, "bin/run.sh"), 0o755)).To(Succeed())
	g.Expect(os.Symlink("apps/a", filepath.Join(r.dir, "current"))).To(Succeed())
	r.git("add", "-A")
	// A submodule entry, without its .gitmodules: an empty folder.
	r.git("update-index", "--add", "--cacheinfo", "160000,"+r.git("rev-parse", "HEAD")+",vendor/sub")
	r.git("commit", "-q", "-m", "modes, a link and a submodule")

	written, dir := newTestClient(t, nil, nil)
	_, err := written.Clone(context.Background(), r.url(), CheckoutOptions{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	checkedOut, wsDir := newTestClient(t, nil, nil)
	_, _, err = checkedOut.Open(context.Background(), r.url(), CheckoutOptions{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())

	want := describeTree(t, wsDir)
	g.Expect(want).To(HaveKeyWithValue("bin/run.sh", HavePrefix("-rwxr-xr-x")), "the workspace is the reference")
	g.Expect(want).To(HaveKeyWithValue("current", "link apps/a"))
	g.Expect(want).To(HaveKeyWithValue("vendor/sub", HavePrefix("drwx")))
	g.Expect(describeTree(t, dir)).To(Equal(want))
}

// describeTree returns every path under dir but .git with its mode and
// content digest, or its link target.
func describeTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ".git" {
			return filepath.SkipDir
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[rel] = "link " + target
			return err
		case info.IsDir():
			out[rel] = info.Mode().String()
		default:
			data, err := os.ReadFile(p)
			out[rel] = fmt.Sprintf("%s %x", info.Mode(), sha256.Sum256(data))
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWriteTree_RefusesEntries: a crafted tree whose entries git would not
// check out fails, and nothing is written outside the work directory.
func TestWriteTree_RefusesEntries(t *testing.T) {
	tests := []struct {
		name    string
		entries []object.TreeEntry
		// target is the links' target; a folder outside when empty.
		target string
		// want is the error: errInvalidEntry (refused before anything is
		// written for the entry) when nil.
		want error
	}{
		{name: "dot dot", entries: []object.TreeEntry{{Name: "..", Mode: filemode.Dir}}},
		{name: "dot", entries: []object.TreeEntry{{Name: ".", Mode: filemode.Regular}}},
		{name: ".git", entries: []object.TreeEntry{{Name: ".git", Mode: filemode.Dir}}},
		{name: ".GIT in another case", entries: []object.TreeEntry{{Name: ".GIT", Mode: filemode.Regular}}},
		{name: "git~1", entries: []object.TreeEntry{{Name: "GIT~1", Mode: filemode.Dir}}},
		{name: "a separator", entries: []object.TreeEntry{{Name: "../escape", Mode: filemode.Regular}}},
		{name: "a backslash", entries: []object.TreeEntry{{Name: `..\escape`, Mode: filemode.Regular}}},
		{name: "a control character", entries: []object.TreeEntry{{Name: "a\x01", Mode: filemode.Regular}}},
		{name: "empty", want: object.ErrMalformedTree, entries: []object.TreeEntry{{Name: "", Mode: filemode.Regular}}},
		{name: "a name twice", want: fs.ErrExist, entries: []object.TreeEntry{{Name: "f", Mode: filemode.Regular}, {Name: "f", Mode: filemode.Regular}}},
		{name: "a link target longer than a path", target: strings.Repeat("a/", 2049),
			entries: []object.TreeEntry{{Name: "long", Mode: filemode.Symlink}}},
		{name: "a link, then a folder of the same name", want: fs.ErrExist, entries: []object.TreeEntry{
			{Name: "evil", Mode: filemode.Symlink, Hash: plumbing.ZeroHash},
			{Name: "evil", Mode: filemode.Dir, Hash: plumbing.ZeroHash},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			outside := t.TempDir()
			target := tt.target
			if target == "" {
				target = outside
			}
			repo, commit := craftedCommit(t, target, tt.entries)
			root := filepath.Join(t.TempDir(), "work")
			g.Expect(os.Mkdir(root, 0o755)).To(Succeed())

			want := tt.want
			if want == nil {
				want = errInvalidEntry
			}
			g.Expect(writeTree(repo, commit, root, nil, nil)).To(MatchError(want))
			g.Expect(os.ReadDir(outside)).To(BeEmpty(), "nothing is written outside the work directory")
			g.Expect(os.ReadDir(filepath.Dir(root))).To(HaveLen(1), "nothing is written beside it")
		})
	}
}

// craftedCommit stores a commit of a tree of entries in a repository in
// memory. Entries with the zero hash get, by mode, a blob "data", a link
// to linkTarget or a tree holding a file.
func craftedCommit(t *testing.T, linkTarget string, entries []object.TreeEntry) (*gogit.Repository, plumbing.Hash) {
	t.Helper()
	g := NewWithT(t)
	repo, err := gogit.Init(memory.NewStorage(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	store := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) plumbing.Hash {
		obj := repo.Storer.NewEncodedObject()
		g.Expect(o.Encode(obj)).To(Succeed())
		h, err := repo.Storer.SetEncodedObject(obj)
		g.Expect(err).NotTo(HaveOccurred())
		return h
	}
	blob := func(content string) plumbing.Hash {
		obj := repo.Storer.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		w, err := obj.Writer()
		g.Expect(err).NotTo(HaveOccurred())
		_, err = w.Write([]byte(content))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(w.Close()).To(Succeed())
		h, err := repo.Storer.SetEncodedObject(obj)
		g.Expect(err).NotTo(HaveOccurred())
		return h
	}
	fileInEmpty := store(&object.Tree{Entries: []object.TreeEntry{{Name: "pwned", Mode: filemode.Regular, Hash: blob("pwned")}}})
	for i := range entries {
		e := &entries[i]
		if !e.Hash.IsZero() {
			continue
		}
		switch e.Mode {
		case filemode.Symlink:
			e.Hash = blob(linkTarget)
		case filemode.Dir:
			e.Hash = fileInEmpty
		default:
			e.Hash = blob("data")
		}
	}
	tree := store(&object.Tree{Entries: entries})
	commit := store(&object.Commit{TreeHash: tree, Message: "crafted"})
	return repo, commit
}
