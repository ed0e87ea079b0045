package git

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrNothingToCommit is returned by Workspace.Commit when the work tree
// holds no change: no commit is made.
var ErrNothingToCommit = errors.New("nothing to commit: the work tree is unchanged")

// errClosed is returned by the methods of a Workspace whose Client is
// closed.
var errClosed = errors.New("git client is closed")

// Workspace is a checkout that can commit and push: image update
// automation opens one per run, lets its setters edit the files in Dir,
// commits and pushes. Like its Client, it is not safe for concurrent use.
//
// Its objects and references are in memory and its files in the Client's
// work directory, as for Clone. Every operation that reaches the remote
// (Open, Push, Refresh) has its own context and connections (see
// operation.go) and is sent the Client's credentials only; all of them
// count against the byte limits given to Open, which bound the Workspace as
// a whole.
type Workspace struct {
	c   *Client
	url string
	// repo holds the objects, the index and the work tree.
	repo *gogit.Repository
	// ref is the reference checked out by Open ("refs/heads/main",
	// "refs/tags/v1"...), "" for a bare commit; opened is its commit.
	ref    string
	opened plumbing.Hash
	// depth is the depth of the fetches: 1 for a shallow workspace.
	depth int
}

// CommitOptions describe a commit made by Workspace.Commit.
type CommitOptions struct {
	// Message is the commit message; a final newline is added when
	// missing, as git does.
	Message string
	// Author is the author and committer (Name and Email; its When is
	// used when the When field is zero).
	Author Signature
	// When is the date of the commit; zero means Author.When, or now.
	When time.Time
	// Signer signs the commit; nil makes an unsigned commit. See
	// NewOpenPGPSigner and NewSSHSigner.
	Signer Signer
}

// Open checks out the reference selected by opts from the repository at
// rawURL, as Clone does, and returns it as a Workspace with the commit
// checked out. It also fetches the remote's notes (refs/notes/commits), so
// that AddNote adds to them. Like Clone it runs once per Client, and its
// errors never contain credentials.
//
// A Workspace holds the history of the checked-out reference, or only its
// tip with opts.ShallowClone, which is enough to commit and push: a push
// that the missing history would be needed to judge is reported as a
// non-fast-forward. Submodules, sparse checkouts and LastObservedCommit are
// refused with an [*InvalidOptionsError]: a commit made in a partial work
// tree would delete what is missing from it.
func (c *Client) Open(ctx context.Context, rawURL string, opts CheckoutOptions) (*Workspace, *Commit, error) {
	if err := validateWorkspaceOptions(opts); err != nil {
		return nil, nil, err
	}
	opts.index = true
	commit, err := c.Clone(ctx, rawURL, opts)
	if err != nil {
		return nil, nil, err
	}
	w := &Workspace{c: c, url: rawURL, repo: c.repo, ref: commit.Reference, opened: plumbing.NewHash(commit.Hash)}
	if opts.ShallowClone && opts.Commit == "" {
		w.depth = 1
	}
	err = w.run(ctx, "fetching notes from", func(r *remote) error {
		_, err := w.fetch(ctx, r, "")
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return w, commit, nil
}

// validateWorkspaceOptions refuses the checkout options a Workspace cannot
// commit from.
func validateWorkspaceOptions(opts CheckoutOptions) error {
	switch {
	case opts.RecurseSubmodules:
		return &InvalidOptionsError{Reason: "a workspace cannot check out submodules"}
	case len(opts.SparseCheckoutDirectories) > 0:
		return &InvalidOptionsError{Reason: "a workspace cannot be a sparse checkout"}
	case opts.LastObservedCommit != "":
		return &InvalidOptionsError{Reason: "a workspace always checks out: LastObservedCommit must be empty"}
	}
	return nil
}

// Dir returns the work directory: the checked-out files, without .git.
func (w *Workspace) Dir() string {
	return w.c.workDir
}

// Head returns the hex SHA-1 of the commit checked out: the one Open or
// Refresh checked out, or the last one Commit made; "" once the Client is
// closed.
func (w *Workspace) Head() string {
	head, err := w.head()
	if err != nil {
		return ""
	}
	return head.String()
}

// head returns the commit HEAD points at.
func (w *Workspace) head() (plumbing.Hash, error) {
	if w.c.closed {
		return plumbing.ZeroHash, errClosed
	}
	ref, err := w.repo.Head()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("resolving HEAD: %w", err)
	}
	return ref.Hash(), nil
}

// branch returns the short name of the branch checked out by Open, or ""
// when Open checked out a tag, another reference or a commit.
func (w *Workspace) branch() string {
	if name := plumbing.ReferenceName(w.ref); name.IsBranch() {
		return name.Short()
	}
	return ""
}

// Commit stages every change in the work tree (modified, added and deleted
// files; files matched by .gitignore are left out, as git does) and commits
// it on top of Head, signed when opts.Signer is set. It returns the hash of
// the new commit, or ErrNothingToCommit, without making a commit, when the
// work tree matches Head.
func (w *Workspace) Commit(opts CommitOptions) (string, error) {
	if w.c.closed {
		return "", errClosed
	}
	if strings.TrimSpace(opts.Message) == "" {
		return "", errors.New("commit: empty message")
	}
	if opts.Author.Name == "" || opts.Author.Email == "" {
		return "", errors.New("commit: the author needs a name and an email")
	}
	wt, err := w.repo.Worktree()
	if err != nil {
		return "", err
	}
	if err := wt.AddWithOptions(&gogit.AddOptions{All: true}); err != nil {
		return "", fmt.Errorf("commit: staging the changes: %w", err)
	}
	hash, err := wt.Commit(commitMessage(opts.Message), goGitCommitOptions(opts))
	if errors.Is(err, gogit.ErrEmptyCommit) {
		return "", ErrNothingToCommit
	}
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	return hash.String(), nil
}

// goGitCommitOptions converts CommitOptions for go-git.
func goGitCommitOptions(opts CommitOptions) *gogit.CommitOptions {
	when := opts.When
	if when.IsZero() {
		when = opts.Author.When
	}
	if when.IsZero() {
		when = time.Now()
	}
	sig := &object.Signature{Name: opts.Author.Name, Email: opts.Author.Email, When: when}
	o := &gogit.CommitOptions{Author: sig, Committer: sig}
	if opts.Signer != nil {
		o.Signer = opts.Signer
	}
	return o
}

// commitMessage ends msg with a newline.
func commitMessage(msg string) string {
	if strings.HasSuffix(msg, "\n") {
		return msg
	}
	return msg + "\n"
}

// Refresh fetches the tip of branch ("" for the branch checked out by Open)
// and the remote's notes, and resets the work tree hard to that tip:
// local commits and notes that were not pushed are dropped, and so are
// untracked files (not the ones .gitignore matches). It is what a caller
// does after a non-fast-forward [*PushRejectedError] before it applies its
// edits again. When branch does not exist on the remote, Refresh resets to
// the reference Open checked out, fetched again (or to its commit, when
// Open checked out a commit). After a failed Refresh, the work tree is
// undefined until a Refresh succeeds.
func (w *Workspace) Refresh(ctx context.Context, branch string) error {
	if branch == "" {
		branch = w.branch()
	}
	ref := w.ref
	if branch != "" {
		ref = plumbing.NewBranchReferenceName(branch).String()
	}
	return w.run(ctx, "refreshing from", func(r *remote) error {
		tip, err := w.fetch(ctx, r, ref)
		if errors.Is(err, gogit.NoMatchingRefSpecError{}) && ref != w.ref {
			tip, err = w.fetch(ctx, r, w.ref)
		}
		if err != nil {
			return err
		}
		return w.reset(tip)
	})
}

// notesRef is where git keeps the notes of commits.
const notesRef = plumbing.ReferenceName("refs/notes/commits")

// notesSpec fetches refs/notes/commits when the remote has it and nothing
// otherwise: a refspec naming the reference itself would fail the fetch
// when it is missing, while a pattern may match nothing ("*" matches the
// empty string; it would also match a refs/notes/commitsX, which is fetched
// and left alone).
const notesSpec = config.RefSpec("+" + notesRef + "*:" + notesRef + "*")

// fetch fetches ref ("" for none) and the remote's notes, which replace the
// local notes, and returns the commit ref points at; for ref "", the
// commit Open checked out.
func (w *Workspace) fetch(ctx context.Context, r *remote, ref string) (plumbing.Hash, error) {
	if err := w.repo.Storer.RemoveReference(notesRef); err != nil {
		return plumbing.ZeroHash, err
	}
	specs := []config.RefSpec{notesSpec}
	if ref != "" {
		specs = append(specs, config.RefSpec("+"+ref+":"+localRefName(ref)))
	}
	if err := w.c.fetch(ctx, w.repo, r, specs, w.depth); err != nil {
		return plumbing.ZeroHash, err
	}
	if ref == "" {
		return w.opened, nil
	}
	resolved, err := w.repo.Reference(plumbing.ReferenceName(localRefName(ref)), true)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("resolving %s: %w", ref, err)
	}
	commit, _, err := peel(w.repo, resolved.Hash())
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return commit.Hash, nil
}

// reset makes HEAD, the index and the work tree match commit, removing
// untracked files.
func (w *Workspace) reset(commit plumbing.Hash) error {
	wt, err := w.repo.Worktree()
	if err != nil {
		return err
	}
	if err := wt.Reset(&gogit.ResetOptions{Commit: commit, Mode: gogit.HardReset}); err != nil {
		return fmt.Errorf("resetting to %s: %w", commit, err)
	}
	if err := wt.Clean(&gogit.CleanOptions{Dir: true}); err != nil {
		return fmt.Errorf("removing untracked files: %w", err)
	}
	return nil
}

// run runs one operation of the Workspace on the remote: fn gets the
// remote with transport settings routed through a new operation bound to
// ctx (see operation.go), released when fn returns. The error is
// sanitized as Clone's are; action says what failed ("pushing to").
func (w *Workspace) run(ctx context.Context, action string, fn func(r *remote) error) error {
	c := w.c
	if c.closed {
		return errClosed
	}
	if err := c.limits.exceeded(); err != nil {
		return fmt.Errorf("%s '%s': %w", action, SanitizeURL(w.url), err)
	}
	c.ctx = ctx
	defer c.endOperation()
	r, err := c.newRemote(w.url)
	if err == nil {
		err = fn(r)
	}
	return c.operationError(ctx, action, w.url, err)
}
