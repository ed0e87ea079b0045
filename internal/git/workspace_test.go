package git

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestWorkspace_OpenReturnsTheCheckout(t *testing.T) {
	g := NewWithT(t)
	p := newPushRemote(t, "http")
	w, commit := p.open(t, CheckoutOptions{Branch: "main", ShallowClone: true})
	g.Expect(commit.String()).To(Equal("main@sha1:" + p.head))
	g.Expect(w.Head()).To(Equal(p.head))
	g.Expect(listFiles(t, w.Dir())).To(Equal([]string{"deploy/app.yaml"}))
	g.Expect(readWorkFile(t, w, "deploy/app.yaml")).To(Equal("kind: ConfigMap"))
}

func TestWorkspace_OpenRefusesPartialCheckouts(t *testing.T) {
	p := newPushRemote(t, "http")
	tests := []struct {
		name    string
		opts    CheckoutOptions
		wantErr string
	}{
		{name: "submodules", opts: CheckoutOptions{Branch: "main", RecurseSubmodules: true}, wantErr: "submodules"},
		{name: "sparse", opts: CheckoutOptions{Branch: "main", SparseCheckoutDirectories: []string{"deploy"}},
			wantErr: "sparse"},
		{name: "last observed commit", opts: CheckoutOptions{Branch: "main", LastObservedCommit: "main@sha1:" + p.head},
			wantErr: "LastObservedCommit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, _ := newTestClient(t, p.auth, nil)
			before := p.srv.Requests()
			_, _, err := c.Open(context.Background(), p.url, tt.opts)
			var invalid *InvalidOptionsError
			g.Expect(errors.As(err, &invalid)).To(BeTrue(), "error %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
			g.Expect(p.srv.Requests()).To(Equal(before))
		})
	}
}

func TestWorkspace_CommitStagesEveryChange(t *testing.T) {
	g := NewWithT(t)
	p := newPushRemote(t, "http")
	p.repo.MustCommit(t, "main", map[string]string{
		"keep.txt": "keep", "dir/gone.txt": "gone", ".gitignore": "*.log\n"}, "more files")
	w, _ := p.open(t, CheckoutOptions{Branch: "main"})

	hash := editAndCommit(t, w, map[string]string{
		"deploy/app.yaml":  "kind: Deployment",
		"dir/gone.txt":     "",
		"new/nested/a.txt": "added",
		"debug.log":        "ignored",
	}, "update images")
	g.Expect(hash).To(MatchRegexp(`^[0-9a-f]{40}$`))
	g.Expect(w.Head()).To(Equal(hash))
	g.Expect(w.Push(context.Background(), PushOptions{})).To(Succeed())

	g.Expect(p.git(t, nil, "show", "--name-status", "--format=", "main")).To(Equal(
		"M\tdeploy/app.yaml\nD\tdir/gone.txt\nA\tnew/nested/a.txt"))
	g.Expect(p.git(t, nil, "log", "-1", "--format=%H|%an <%ae>|%cn <%ce>|%aI|%B", "main")).To(Equal(
		hash + "|Image Automation <automation@example.com>|Image Automation <automation@example.com>|" +
			"2024-05-06T07:08:09+00:00|update images"))
	g.Expect(p.git(t, nil, "fsck", "--strict")).NotTo(ContainSubstring("error"))
}

func TestWorkspace_NothingToCommit(t *testing.T) {
	g := NewWithT(t)
	p := newPushRemote(t, "http")
	w, _ := p.open(t, CheckoutOptions{Branch: "main"})

	_, err := w.Commit(CommitOptions{Message: "nothing", Author: automationAuthor})
	g.Expect(err).To(MatchError(ErrNothingToCommit))

	// A file changed and changed back is no change either.
	editFiles(t, w.Dir(), map[string]string{"deploy/app.yaml": "kind: Secret"})
	editFiles(t, w.Dir(), map[string]string{"deploy/app.yaml": "kind: ConfigMap"})
	_, err = w.Commit(CommitOptions{Message: "nothing", Author: automationAuthor})
	g.Expect(err).To(MatchError(ErrNothingToCommit))
	g.Expect(w.Head()).To(Equal(p.head))

	// Pushing what the remote has changes nothing.
	g.Expect(w.Push(context.Background(), PushOptions{})).To(Succeed())
	g.Expect(p.remoteRef(t, "refs/heads/main")).To(Equal(p.head))
	g.Expect(p.git(t, nil, "for-each-ref", "--format=%(refname)")).To(Equal("refs/heads/main"))
}

func TestWorkspace_CommitValidatesItsOptions(t *testing.T) {
	p := newPushRemote(t, "http")
	w, _ := p.open(t, CheckoutOptions{Branch: "main"})
	editFiles(t, w.Dir(), map[string]string{"deploy/app.yaml": "changed"})
	tests := []struct {
		name    string
		opts    CommitOptions
		wantErr string
	}{
		{name: "no message", opts: CommitOptions{Author: automationAuthor}, wantErr: "empty message"},
		{name: "no author email", opts: CommitOptions{Message: "m", Author: Signature{Name: "x"}},
			wantErr: "name and an email"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := w.Commit(tt.opts)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(w.Head()).To(Equal(p.head))
		})
	}
}

func TestWorkspace_RefreshDropsLocalState(t *testing.T) {
	g := NewWithT(t)
	p := newPushRemote(t, "http")
	w, _ := p.open(t, CheckoutOptions{Branch: "main"})
	editAndCommit(t, w, map[string]string{"deploy/app.yaml": "mine", "committed.txt": "c"}, "local")
	editFiles(t, w.Dir(), map[string]string{"untracked/file.txt": "u", "debug.log": "x"})
	theirs := p.repo.MustCommit(t, "main", map[string]string{"theirs.txt": "t"}, "theirs")

	g.Expect(w.Refresh(context.Background(), "")).To(Succeed())
	g.Expect(w.Head()).To(Equal(theirs))
	g.Expect(listFiles(t, w.Dir())).To(Equal([]string{"deploy/app.yaml", "theirs.txt"}))
	g.Expect(readWorkFile(t, w, "deploy/app.yaml")).To(Equal("kind: ConfigMap"))
	_, err := w.Commit(CommitOptions{Message: "nothing", Author: automationAuthor})
	g.Expect(err).To(MatchError(ErrNothingToCommit))
}

func TestWorkspace_RefreshOfAMissingBranchResetsToTheCheckout(t *testing.T) {
	g := NewWithT(t)
	p := newPushRemote(t, "http")
	w, _ := p.open(t, CheckoutOptions{Branch: "main"})
	editAndCommit(t, w, map[string]string{"deploy/app.yaml": "mine"}, "local")
	theirs := p.repo.MustCommit(t, "main", map[string]string{"theirs.txt": "t"}, "theirs")

	g.Expect(w.Refresh(context.Background(), "no-such-branch")).To(Succeed())
	g.Expect(w.Head()).To(Equal(theirs))
	g.Expect(readWorkFile(t, w, "deploy/app.yaml")).To(Equal("kind: ConfigMap"))
}

func TestWorkspace_RefreshOfACommitCheckout(t *testing.T) {
	g := NewWithT(t)
	p := newPushRemote(t, "http")
	w, _ := p.open(t, CheckoutOptions{Commit: p.head})
	editAndCommit(t, w, map[string]string{"deploy/app.yaml": "mine"}, "local")

	g.Expect(w.Refresh(context.Background(), "")).To(Succeed())
	g.Expect(w.Head()).To(Equal(p.head))
	g.Expect(readWorkFile(t, w, "deploy/app.yaml")).To(Equal("kind: ConfigMap"))
}

func TestWorkspace_ClientLifecycle(t *testing.T) {
	g := NewWithT(t)
	p := newPushRemote(t, "http")
	c, _ := newTestClient(t, p.auth, nil)
	w, _, err := c.Open(context.Background(), p.url, CheckoutOptions{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = c.Open(context.Background(), p.url, CheckoutOptions{Branch: "main"})
	g.Expect(err).To(MatchError(ContainSubstring("already cloned")), "a Client opens once")

	// Once the Client is closed, its Workspace fails.
	c.Close()
	_, err = w.Commit(CommitOptions{Message: "m", Author: automationAuthor})
	g.Expect(err).To(MatchError(ContainSubstring("closed")))
	g.Expect(w.Push(context.Background(), PushOptions{})).To(MatchError(ContainSubstring("closed")))
	g.Expect(w.Refresh(context.Background(), "")).To(MatchError(ContainSubstring("closed")))
	g.Expect(w.AddNote(p.head, "n")).To(MatchError(ContainSubstring("closed")))
	g.Expect(w.Head()).To(BeEmpty())
}
