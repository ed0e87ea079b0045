package git

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// maxSubmoduleDepth bounds how deep submodules of submodules are followed.
const maxSubmoduleDepth = 8

// updateSubmodules checks out the submodules of repo, recursively. A
// submodule outside the sparse directories is skipped.
//
// Submodules are fetched by this package rather than by go-git's
// Submodule.Update, which would drop the CA bundle, client certificate and
// proxy. Credentials are sent only to the host (and transport) they were
// given for; other submodules are fetched anonymously over HTTP(S), and an
// SSH submodule on another host is an error. A submodule may use
// http, https or ssh, or the transport of its parent: a local path is refused
// unless the parent itself is local, so a repository cannot make the
// controller read its own file system.
func (c *Client) updateSubmodules(ctx context.Context, repo *gogit.Repository, parent *remote,
	sparse []string, level int) error {
	if level >= maxSubmoduleDepth {
		return fmt.Errorf("submodules nested deeper than %d levels", maxSubmoduleDepth)
	}
	w, err := repo.Worktree()
	if err != nil {
		return err
	}
	subs, err := w.Submodules()
	if err != nil {
		return fmt.Errorf("reading .gitmodules: %w", err)
	}
	for _, s := range subs {
		if !inSparseDirs(s.Config().Path, sparse) {
			continue
		}
		if err := c.updateSubmodule(ctx, repo, s, parent, level); err != nil {
			return fmt.Errorf("submodule %q: %w", s.Config().Name, err)
		}
	}
	return nil
}

// updateSubmodule fetches one submodule and checks out the commit its parent
// records.
func (c *Client) updateSubmodule(ctx context.Context, parentRepo *gogit.Repository, s *gogit.Submodule,
	parent *remote, level int) error {
	want, err := recordedCommit(parentRepo, s.Config().Path)
	if err != nil {
		return err
	}
	if err := s.Init(); err != nil && !errors.Is(err, gogit.ErrSubmoduleAlreadyInitialized) {
		return err
	}
	repo, err := s.Repository()
	if err != nil {
		return err
	}
	origin, err := repo.Remote(gogit.DefaultRemoteName)
	if err != nil {
		return err
	}
	r, err := c.submoduleRemote(parent, origin.Config().URLs[0])
	if err != nil {
		return err
	}
	if err := c.fetchSubmodule(ctx, repo, r, want); err != nil {
		return err
	}
	if err := checkoutTree(repo, want, nil); err != nil {
		return err
	}
	return c.updateSubmodules(ctx, repo, r, nil, level+1)
}

// recordedCommit returns the commit the parent's index records for the
// submodule at path.
func recordedCommit(repo *gogit.Repository, path string) (plumbing.Hash, error) {
	idx, err := repo.Storer.Index()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	e, err := idx.Entry(path)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("no commit recorded at %q: %w", path, err)
	}
	return e.Hash, nil
}

// fetchSubmodule fetches the branches and tags of a submodule and, when the
// wanted commit is not among them, asks for the commit itself (servers that
// allow fetching reachable commits by hash accept this).
func (c *Client) fetchSubmodule(ctx context.Context, repo *gogit.Repository, r *remote, want plumbing.Hash) error {
	specs := []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"}
	if err := c.fetch(ctx, repo, r, specs, 0); err != nil {
		return err
	}
	if _, err := repo.CommitObject(want); err == nil {
		return nil
	}
	spec := config.RefSpec("+" + want.String() + ":refs/windlass/submodule")
	if err := c.fetch(ctx, repo, r, []config.RefSpec{spec}, 0); err != nil {
		return fmt.Errorf("commit %s: %w", want, err)
	}
	return nil
}

// submoduleRemote checks a submodule URL and picks the credentials for it.
func (c *Client) submoduleRemote(parent *remote, rawURL string) (*remote, error) {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return nil, fmt.Errorf("invalid submodule URL %q", SanitizeURL(rawURL))
	}
	parentScheme := strings.ToLower(parent.parsed.Scheme)
	if ep.Protocol == TransportHTTP && c.refusePlainHTTP {
		return nil, fmt.Errorf("submodule URL %q uses plain HTTP, which the controller refuses (--insecure-allow-http=false)", SanitizeURL(rawURL))
	}
	switch ep.Protocol {
	case TransportHTTP, TransportHTTPS, TransportSSH:
	default:
		if ep.Protocol != parentScheme {
			return nil, fmt.Errorf("submodule URL %q uses the %s transport, which is not allowed",
				SanitizeURL(rawURL), ep.Protocol)
		}
	}
	parsed, err := url.Parse(ep.String())
	if err != nil {
		return nil, fmt.Errorf("invalid submodule URL %q", SanitizeURL(rawURL))
	}
	r := &remote{url: rawURL, parsed: parsed}
	if r.proxy, err = c.proxyFor(ep.Protocol); err != nil {
		return nil, err
	}
	if c.auth != nil && c.auth.Transport == ep.Protocol && sameHost(c.auth.Host, parsed, ep.Protocol) {
		c.applyAuth(r)
		return r, nil
	}
	if ep.Protocol == TransportSSH {
		// No known_hosts for this host: never fall back to an SSH agent or
		// the controller's ~/.ssh/known_hosts.
		return nil, fmt.Errorf("submodule URL %q: no SSH credentials for host %s", SanitizeURL(rawURL), parsed.Host)
	}
	return r, nil
}

// sameHost compares an AuthOptions host ("host" or "host:port") with a URL,
// filling in the default port of the transport.
func sameHost(authHost string, u *url.URL, scheme string) bool {
	a, err := url.Parse(scheme + "://" + authHost)
	if err != nil {
		return false
	}
	return strings.EqualFold(a.Hostname(), u.Hostname()) && portOrDefault(a, scheme) == portOrDefault(u, scheme)
}

// portOrDefault returns the port of u or the default port of scheme.
func portOrDefault(u *url.URL, scheme string) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch scheme {
	case TransportHTTP:
		return "80"
	case TransportHTTPS:
		return "443"
	case TransportSSH:
		return "22"
	}
	return ""
}
