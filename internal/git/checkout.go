package git

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// maxTagDepth bounds the chain of tags pointing at tags that peel follows.
const maxTagDepth = 8

// cloneRef checks out a reference: a branch, a tag or a full reference name.
func (c *Client) cloneRef(ctx context.Context, r *remote, ref string, opts CheckoutOptions) (*Commit, error) {
	if opts.LastObservedCommit != "" {
		refs, err := c.lsRemote(ctx, r)
		if err != nil {
			return nil, err
		}
		hash, ok := remoteCommit(refs, ref)
		if !ok {
			return nil, fmt.Errorf("reference %s not found in '%s'", ref, SanitizeURL(r.url))
		}
		if formatRevision(ref, hash) == opts.LastObservedCommit {
			return &Commit{Hash: hash, Reference: ref}, nil
		}
	}
	return c.fetchAndCheckout(ctx, r, ref, opts)
}

// cloneSemVer checks out the highest tag that satisfies opts.SemVer.
func (c *Client) cloneSemVer(ctx context.Context, r *remote, opts CheckoutOptions) (*Commit, error) {
	constraint, err := semver.NewConstraint(opts.SemVer)
	if err != nil {
		return nil, &InvalidOptionsError{Reason: fmt.Sprintf("semver range %q: %v", opts.SemVer, err)}
	}
	refs, err := c.lsRemote(ctx, r)
	if err != nil {
		return nil, err
	}
	tag := highestTag(refs, constraint)
	if tag == "" {
		return nil, fmt.Errorf("no tag in '%s' satisfies semver range %q", SanitizeURL(r.url), opts.SemVer)
	}
	ref := "refs/tags/" + tag
	hash, _ := remoteCommit(refs, ref)
	if opts.LastObservedCommit != "" && formatRevision(ref, hash) == opts.LastObservedCommit {
		return &Commit{Hash: hash, Reference: ref}, nil
	}
	return c.fetchAndCheckout(ctx, r, ref, opts)
}

// highestTag returns the name of the highest tag that parses as a semantic
// version and satisfies constraint, or "" when none does. Between tags of
// equal versions (v1.0.0 and 1.0.0) the greater name wins, so the choice is
// stable.
func highestTag(refs map[string]string, constraint *semver.Constraints) string {
	var best string
	var bestVersion *semver.Version
	for name := range refs {
		tag, ok := strings.CutPrefix(name, "refs/tags/")
		if !ok || strings.HasSuffix(tag, "^{}") {
			continue
		}
		v, err := semver.NewVersion(tag)
		if err != nil || !constraint.Check(v) {
			continue
		}
		if bestVersion == nil || v.GreaterThan(bestVersion) || (v.Equal(bestVersion) && tag > best) {
			best, bestVersion = tag, v
		}
	}
	return best
}

// cloneCommit checks out a fixed commit, fetching only opts.Branch when it is
// set and every branch and tag otherwise.
func (c *Client) cloneCommit(ctx context.Context, r *remote, opts CheckoutOptions) (*Commit, error) {
	hash := strings.ToLower(opts.Commit)
	ref := ""
	if opts.Branch != "" {
		ref = "refs/heads/" + opts.Branch
	}
	if opts.LastObservedCommit == formatRevision(ref, hash) {
		return &Commit{Hash: hash, Reference: ref}, nil
	}
	repo, err := c.initRepo(r)
	if err != nil {
		return nil, err
	}
	specs := []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"}
	if ref != "" {
		specs = []config.RefSpec{config.RefSpec("+" + ref + ":" + localRefName(ref))}
	}
	if opts.Notes {
		specs = append(specs, notesSpec)
	}
	if err := c.fetch(ctx, repo, r, specs, 0); err != nil {
		return nil, err
	}
	if err := checkReachable(repo, plumbing.NewHash(hash), ref); err != nil {
		return nil, err
	}
	return c.checkout(ctx, repo, r, plumbing.NewHash(hash), ref, opts)
}

// checkReachable makes sure the fetched objects hold the commit and, when
// ref is set, that the commit is in the history of ref.
func checkReachable(repo *gogit.Repository, hash plumbing.Hash, ref string) error {
	commit, err := repo.CommitObject(hash)
	if err != nil {
		if ref != "" {
			return fmt.Errorf("commit %s not found on branch %s", hash, shortRefName(ref))
		}
		return fmt.Errorf("commit %s not found: %w", hash, err)
	}
	if ref == "" {
		return nil
	}
	tipRef, err := repo.Reference(plumbing.ReferenceName(localRefName(ref)), true)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", ref, err)
	}
	if tipRef.Hash() == hash {
		return nil
	}
	tip, err := repo.CommitObject(tipRef.Hash())
	if err != nil {
		return err
	}
	ok, err := commit.IsAncestor(tip)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("commit %s not found on branch %s", hash, shortRefName(ref))
	}
	return nil
}

// fetchAndCheckout fetches one reference, shallow when asked, and checks out
// the commit it points at.
func (c *Client) fetchAndCheckout(ctx context.Context, r *remote, ref string, opts CheckoutOptions) (*Commit, error) {
	repo, err := c.initRepo(r)
	if err != nil {
		return nil, err
	}
	depth := 0
	if opts.ShallowClone {
		depth = 1
	}
	local := localRefName(ref)
	specs := []config.RefSpec{config.RefSpec("+" + ref + ":" + local)}
	if opts.Notes {
		specs = append(specs, notesSpec)
	}
	if err := c.fetch(ctx, repo, r, specs, depth); err != nil {
		return nil, err
	}
	resolved, err := repo.Reference(plumbing.ReferenceName(local), true)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", ref, err)
	}
	return c.checkout(ctx, repo, r, resolved.Hash(), ref, opts)
}

// localRefName is where a fetched remote reference is stored locally:
// branches and other references under refs/remotes/origin/, tags as tags.
func localRefName(ref string) string {
	name := plumbing.ReferenceName(ref)
	switch {
	case name.IsTag():
		return ref
	case name.IsBranch():
		return "refs/remotes/origin/" + name.Short()
	}
	return "refs/remotes/origin/" + strings.TrimPrefix(ref, "refs/")
}

// checkout checks out the commit hash resolves to (peeling annotated tags),
// then the submodules, and describes the result.
func (c *Client) checkout(ctx context.Context, repo *gogit.Repository, r *remote,
	hash plumbing.Hash, ref string, opts CheckoutOptions) (*Commit, error) {
	commitObj, tagObj, err := peel(repo, hash)
	if err != nil {
		return nil, err
	}
	sparse, _ := cleanSparseDirs(opts.SparseCheckoutDirectories)
	if err := c.checkoutWorkTree(ctx, repo, r, commitObj.Hash, sparse, opts); err != nil {
		return nil, err
	}
	commit, err := newCommit(commitObj, ref)
	if err != nil {
		return nil, err
	}
	if opts.Notes {
		if commit.Note, err = noteOf(repo.Storer, commitObj.Hash); err != nil {
			return nil, err
		}
	}
	if tagObj != nil {
		if commit.ReferencingTag, err = newTag(tagObj); err != nil {
			return nil, err
		}
	}
	return commit, nil
}

// checkoutWorkTree checks out commit with its submodules, limited to the
// sparse directories. A checkout that needs no index (nothing commits from
// it, and it has no submodules to update) only writes the files of the
// commit (see writeTree), or leaves them in memory when opts.InMemory.
func (c *Client) checkoutWorkTree(ctx context.Context, repo *gogit.Repository, r *remote,
	commit plumbing.Hash, sparse []string, opts CheckoutOptions) error {
	if !opts.RecurseSubmodules && !opts.index {
		ix, err := commitIndex(repo, commit, sparse, c.limits.checkout)
		if err != nil {
			return err
		}
		if opts.InMemory && !ix.links {
			c.files = &treeFS{objects: repo.Storer, index: ix}
		} else if err := ix.write(repo.Storer, c.workDir); err != nil {
			return fmt.Errorf("checking out %s: %w", commit, err)
		}
		return detachHead(repo, commit)
	}
	if err := checkoutTree(repo, commit, sparse); err != nil {
		return err
	}
	if opts.RecurseSubmodules {
		if len(sparse) > 0 {
			if err := writeGitmodules(repo, commit); err != nil {
				return fmt.Errorf("reading .gitmodules: %w", err)
			}
		}
		if err := c.updateSubmodules(ctx, repo, r, sparse, 0); err != nil {
			return err
		}
	}
	if len(sparse) == 0 {
		return nil
	}
	return pruneOutsideSparse(c.workDir, sparse)
}

// peel resolves hash to a commit, through annotated tags. It also returns the
// outermost tag, if hash named one.
func peel(repo *gogit.Repository, hash plumbing.Hash) (*object.Commit, *object.Tag, error) {
	obj, err := repo.Object(plumbing.AnyObject, hash)
	if err != nil {
		return nil, nil, fmt.Errorf("reading object %s: %w", hash, err)
	}
	var first *object.Tag
	for range maxTagDepth {
		switch o := obj.(type) {
		case *object.Commit:
			return o, first, nil
		case *object.Tag:
			if first == nil {
				first = o
			}
			if obj, err = o.Object(); err != nil {
				return nil, nil, fmt.Errorf("reading target of tag %s: %w", o.Name, err)
			}
		default:
			return nil, nil, fmt.Errorf("object %s is a %s, not a commit", hash, obj.Type())
		}
	}
	return nil, nil, fmt.Errorf("tag %s: too many nested tags", hash)
}

// initRepo creates the repository with the remote "origin": its objects,
// references and index in memory (a clone is read once, into an artifact,
// then thrown away, so writing .git to disk would only cost system calls),
// its work tree in the work directory, opened with go-billy's BoundOS, which
// resolves every path inside the work directory, so no write can be
// redirected outside it through a symbolic link in the checkout. Both are
// bounded by the Clone's byte limits (see limitstore.go and limitfs.go).
// The recorded shallow commits are kept for inspection.
func (c *Client) initRepo(r *remote) (*gogit.Repository, error) {
	wt := newLimitedFS(osfs.New(c.workDir, osfs.WithBoundOS()), c.limits.checkout)
	c.storage = newLimitedStorage(c.limits)
	repo, err := gogit.Init(c.storage, wt)
	if err != nil {
		return nil, fmt.Errorf("initialising repository in work directory: %w", err)
	}
	c.repo = repo
	_, err = repo.CreateRemote(&config.RemoteConfig{Name: gogit.DefaultRemoteName, URLs: []string{r.url}})
	if err != nil {
		return nil, fmt.Errorf("configuring remote: %w", err)
	}
	return repo, nil
}

// fetch fetches specs from origin with r's transport settings.
func (c *Client) fetch(ctx context.Context, repo *gogit.Repository, r *remote, specs []config.RefSpec, depth int) error {
	err := repo.FetchContext(ctx, &gogit.FetchOptions{
		RemoteName:   gogit.DefaultRemoteName,
		RefSpecs:     specs,
		Depth:        depth,
		Auth:         r.auth,
		Tags:         gogit.NoTags,
		Force:        true,
		CABundle:     r.ca,
		ClientCert:   r.cert,
		ClientKey:    r.key,
		ProxyOptions: r.proxy,
	})
	if err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return fmt.Errorf("fetching from '%s': %w", SanitizeURL(r.url), err)
	}
	return nil
}

// lsRemote lists the references of the remote in one request. Annotated tags
// also appear peeled, as "<ref>^{}" with the hash of the object they point at.
func (c *Client) lsRemote(ctx context.Context, r *remote) (map[string]string, error) {
	rem := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{
		Name: gogit.DefaultRemoteName, URLs: []string{r.url},
	})
	list, err := rem.ListContext(ctx, &gogit.ListOptions{
		Auth:          r.auth,
		CABundle:      r.ca,
		ClientCert:    r.cert,
		ClientKey:     r.key,
		ProxyOptions:  r.proxy,
		PeelingOption: gogit.AppendPeeled,
	})
	if err != nil {
		return nil, fmt.Errorf("listing references of '%s': %w", SanitizeURL(r.url), err)
	}
	refs := make(map[string]string, len(list))
	for _, ref := range list {
		if ref.Type() == plumbing.HashReference {
			refs[ref.Name().String()] = ref.Hash().String()
		}
	}
	return refs, nil
}

// remoteCommit returns what ref points at on the remote, peeled through
// annotated tags.
func remoteCommit(refs map[string]string, ref string) (string, bool) {
	if h, ok := refs[ref+"^{}"]; ok {
		return h, true
	}
	h, ok := refs[ref]
	return h, ok
}
