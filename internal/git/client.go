package git

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/Masterminds/semver/v3"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

// DefaultBranch is the branch checked out when CheckoutOptions names no
// reference.
const DefaultBranch = "master"

// CheckoutOptions selects what Clone checks out. Precedence, highest first:
// Commit, RefName, SemVer, Tag, Branch; with nothing set the branch
// DefaultBranch is checked out.
type CheckoutOptions struct {
	// Branch to check out. Combined with Commit, only this branch is fetched
	// and Commit must be reachable from it.
	Branch string
	// Tag to check out.
	Tag string
	// SemVer is a range (Masterminds syntax); the highest tag that satisfies
	// it is checked out.
	SemVer string
	// RefName is a full reference such as refs/pull/1/head.
	RefName string
	// Commit is the full hex SHA-1 of a commit to check out.
	Commit string
	// ShallowClone fetches only the tip commit (depth 1) where the reference
	// allows it: branches, tags, semver tags and reference names. A commit is
	// always fetched with history.
	ShallowClone bool
	// Notes fetches the remote's notes (refs/notes/commits) along with the
	// reference, and fills Commit.Note with the note of the commit checked
	// out. A remote without notes costs nothing more; one with many notes
	// costs their tree (one blob per note), within the byte limits.
	Notes bool
	// RecurseSubmodules checks out the submodules too, recursively.
	RecurseSubmodules bool
	// InMemory leaves the files of the commit in memory rather than
	// writing them to the work directory: Files reads them from the
	// objects. A tree that holds a symbolic link is written all the same,
	// and so is a checkout with its submodules.
	InMemory bool
	// SparseCheckoutDirectories, when not empty, are the only directories
	// checked out. Entries must be relative and must not contain "..".
	SparseCheckoutDirectories []string
	// LastObservedCommit is the revision (see Commit.String) of the previous
	// checkout. When the remote still points there, Clone does not clone and
	// returns a partial commit (see IsConcreteCommit).
	LastObservedCommit string
	// index makes the checkout keep go-git's index, which a Workspace
	// commits from (see Open).
	index bool

	// The byte limits below bound one Clone as a whole: every request it
	// makes, the repository and all its submodules count against the same
	// budgets. A Clone that exceeds one fails with a [*TooLargeError]
	// (errors.Is(err, ErrTooLarge)). Zero means the default; a negative
	// value is an [*InvalidOptionsError] (use math.MaxInt64 for no
	// practical limit).

	// MaxTransferBytes bounds what the Clone receives from remotes: over
	// http, https and ssh, every byte read from the network (reference
	// advertisements, packs, protocol framing, TLS or SSH overhead); over
	// any transport, the pack data, which is buffered in memory. Default
	// DefaultMaxTransferBytes (1 GiB).
	MaxTransferBytes int64
	// MaxObjectBytes bounds the uncompressed size of the objects fetched,
	// which are held in memory; it is checked from the object headers
	// before the objects are inflated. Default DefaultMaxObjectBytes
	// (2 GiB).
	MaxObjectBytes int64
	// MaxCheckoutBytes bounds the bytes of the files checked out, written
	// to the work directory or left in memory (InMemory), which is more
	// than MaxObjectBytes when a tree holds the same blob many times; the
	// whole tree is counted before anything is written. Default
	// DefaultMaxCheckoutBytes (2 GiB).
	MaxCheckoutBytes int64
	// RefusePlainHTTP refuses submodules with http:// URLs (the
	// controller's --insecure-allow-http=false); the caller checks the
	// repository's own URL.
	RefusePlainHTTP bool
}

// Client clones one repository into its work directory. A Client is not safe
// for concurrent use; use one Client per clone. Clients never share mutable
// transport state, so different Clients may clone concurrently with
// different credentials.
type Client struct {
	workDir    string
	auth       *AuthOptions
	proxy      *ProxyOptions
	signer     ssh.Signer
	knownHosts knownHosts
	closed     bool
	// cloned is set by the first Clone: a Client clones once.
	cloned bool
	// storage holds the clone's objects and references, in memory.
	storage *limitedStorage
	// repo is the repository of the clone, kept for a Workspace.
	repo *gogit.Repository
	// files are the files of the commit when Clone left them in memory.
	files *treeFS

	// State of the Clone in progress.
	ctx    context.Context // governs the connections (see operation.go)
	limits *cloneLimits    // byte budgets (see limits.go)
	// refusePlainHTTP refuses http:// submodules (CheckoutOptions).
	refusePlainHTTP bool
	op              *operation // connections of the Clone, registered on first use
}

// NewClient returns a Client that clones into workDir (created if missing),
// authenticating with auth and going through proxy; both may be nil. SSH
// credentials are parsed here, so a bad identity or known_hosts is an
// [*InvalidAuthError].
func NewClient(workDir string, auth *AuthOptions, proxy *ProxyOptions) (*Client, error) {
	if workDir == "" {
		return nil, errors.New("git client: empty work directory")
	}
	if err := os.MkdirAll(workDir, 0o750); err != nil {
		return nil, fmt.Errorf("git client: creating work directory: %w", err)
	}
	c, err := newRemoteClient(auth, proxy)
	if err != nil {
		return nil, err
	}
	c.workDir = workDir
	return c, nil
}

// newRemoteClient returns a Client without a work directory: it can talk
// to remotes (LsRemote), not check out.
func newRemoteClient(auth *AuthOptions, proxy *ProxyOptions) (*Client, error) {
	c := &Client{auth: auth, proxy: proxy}
	if auth == nil || auth.Transport != TransportSSH {
		return c, nil
	}
	var err error
	if c.signer, err = parseIdentity(auth.Identity, auth.Password); err != nil {
		return nil, err
	}
	if c.knownHosts, err = parseKnownHosts(auth.KnownHosts); err != nil {
		return nil, &InvalidAuthError{Reason: "'known_hosts': " + err.Error()}
	}
	return c, nil
}

// Close releases what the Client holds; Clone fails afterwards. It does not
// remove the work directory, which belongs to the caller.
func (c *Client) Close() {
	c.closed = true
	c.signer = nil
	c.knownHosts = nil
	c.storage, c.repo, c.files = nil, nil, nil
	c.limits.releaseMemory()
}

// Files returns the files of the commit that Clone checked out and left in
// memory (see CheckoutOptions.InMemory): a tree of directories and regular
// files, listed as a directory on disk lists them, with the modes a
// checkout gives them. It returns nil when the files are in the work
// directory, and after Close.
func (c *Client) Files() fs.ReadDirFS {
	if c.files == nil {
		return nil
	}
	return c.files
}

// Clone checks out the reference selected by opts from the repository at
// rawURL into the work directory and returns the commit checked out. When
// opts.LastObservedCommit still matches the remote it returns a partial
// commit without cloning. Errors never contain credentials.
//
// Clone runs once per Client, into an empty work directory; a work
// directory left by a failed Clone must be discarded. The repository's
// objects and references stay in memory: the work directory holds the
// checked-out files only, without .git. ctx
// bounds the whole operation over http, https and ssh: when it is done, open
// connections are closed and the error wraps ctx.Err(). The byte limits of
// opts bound it in size (see CheckoutOptions.MaxTransferBytes); over one,
// the error is a [*TooLargeError] and the objects fetched are released.
func (c *Client) Clone(ctx context.Context, rawURL string, opts CheckoutOptions) (*Commit, error) {
	if c.closed {
		return nil, errors.New("git client is closed")
	}
	if c.cloned {
		return nil, errors.New("git client has already cloned into its work directory")
	}
	c.cloned = true
	c.ctx = ctx
	defer c.endOperation()
	commit, err := c.clone(ctx, rawURL, opts)
	if err = c.operationError(ctx, "cloning", rawURL, err); err != nil {
		c.storage, c.repo, c.files = nil, nil, nil
		c.limits.releaseMemory()
		return nil, err
	}
	return commit, nil
}

// operationError returns what a Clone (or an operation of a Workspace)
// reports for err: the byte limit it went over, whatever go-git made of the
// failed read, with the context's error when it is done, and without
// credentials. It returns nil when err is nil and no limit was exceeded.
func (c *Client) operationError(ctx context.Context, action, rawURL string, err error) error {
	if tooLarge := c.limits.exceeded(); tooLarge != nil {
		err = fmt.Errorf("%s '%s': %w", action, SanitizeURL(rawURL), tooLarge)
	}
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) && !errors.Is(err, ErrTooLarge) {
		err = fmt.Errorf("%w: %w", ctxErr, err)
	}
	return SanitizeError(withoutEmptyReason(err), c.secrets()...)
}

// clone validates and dispatches by reference precedence.
func (c *Client) clone(ctx context.Context, rawURL string, opts CheckoutOptions) (*Commit, error) {
	if err := validateOptions(opts); err != nil {
		return nil, err
	}
	c.limits = newCloneLimits(opts)
	c.refusePlainHTTP = opts.RefusePlainHTTP
	r, err := c.newRemote(rawURL)
	if err != nil {
		return nil, err
	}
	switch {
	case opts.Commit != "":
		return c.cloneCommit(ctx, r, opts)
	case opts.RefName != "":
		return c.cloneRef(ctx, r, opts.RefName, opts)
	case opts.SemVer != "":
		return c.cloneSemVer(ctx, r, opts)
	case opts.Tag != "":
		return c.cloneRef(ctx, r, "refs/tags/"+opts.Tag, opts)
	}
	branch := opts.Branch
	if branch == "" {
		branch = DefaultBranch
	}
	return c.cloneRef(ctx, r, "refs/heads/"+branch, opts)
}

// validateOptions rejects options that can never work.
func validateOptions(opts CheckoutOptions) error {
	if opts.Commit != "" && !isFullHash(opts.Commit) {
		return &InvalidOptionsError{Reason: fmt.Sprintf("commit %q is not a full hex SHA-1", opts.Commit)}
	}
	if opts.Commit == "" && opts.RefName == "" && opts.SemVer != "" {
		if _, err := semver.NewConstraint(opts.SemVer); err != nil {
			return &InvalidOptionsError{Reason: fmt.Sprintf("semver range %q: %v", opts.SemVer, err)}
		}
	}
	if opts.RefName != "" && !strings.HasPrefix(opts.RefName, "refs/") {
		return &InvalidOptionsError{Reason: fmt.Sprintf("reference name %q does not start with refs/", opts.RefName)}
	}
	if _, err := cleanSparseDirs(opts.SparseCheckoutDirectories); err != nil {
		return err
	}
	return validateLimits(opts)
}

// isFullHash reports whether s is 40 hex digits.
func isFullHash(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

// cleanSparseDirs validates and normalises sparse checkout directories; it
// returns nil when every entry means the whole tree.
func cleanSparseDirs(dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		if strings.HasPrefix(d, "/") || strings.HasPrefix(d, `\`) || strings.Contains(d, `\`) {
			return nil, &InvalidOptionsError{Reason: fmt.Sprintf("sparse checkout path %q must be relative and use forward slashes", d)}
		}
		for _, part := range strings.Split(d, "/") {
			if part == ".." {
				return nil, &InvalidOptionsError{Reason: fmt.Sprintf("sparse checkout path %q must not contain '..'", d)}
			}
		}
		clean := path.Clean(d)
		if clean == "." || clean == "" {
			return nil, nil
		}
		if clean == ".git" || strings.HasPrefix(clean, ".git/") {
			return nil, &InvalidOptionsError{Reason: fmt.Sprintf("sparse checkout path %q points into .git", d)}
		}
		out = append(out, clean)
	}
	return out, nil
}

// remote is a validated clone URL with the transport settings for it.
type remote struct {
	url    string
	parsed *url.URL
	auth   transport.AuthMethod
	ca     []byte
	cert   []byte
	key    []byte
	proxy  transport.ProxyOptions
}

// newRemote checks rawURL against the Client's credentials and builds the
// go-git transport settings for it.
func (c *Client) newRemote(rawURL string) (*remote, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q", SanitizeURL(rawURL))
	}
	r := &remote{url: rawURL, parsed: u}
	if r.proxy, err = c.proxyFor(u.Scheme); err != nil {
		return nil, err
	}
	scheme := strings.ToLower(u.Scheme)
	if c.auth == nil {
		if scheme == TransportSSH {
			// Without this, go-git would fall back to an SSH agent and the
			// controller's own ~/.ssh/known_hosts.
			return nil, &InvalidAuthError{Reason: "ssh requires an identity and known_hosts"}
		}
		return r, nil
	}
	if c.auth.Transport != scheme || (c.auth.Host != "" && !strings.EqualFold(c.auth.Host, u.Host)) {
		return nil, &InvalidAuthError{Reason: fmt.Sprintf("credentials are for %s://%s, not for %s",
			c.auth.Transport, c.auth.Host, SanitizeURL(rawURL))}
	}
	c.applyAuth(r)
	return r, nil
}

// applyAuth fills the credentials of r from the Client's AuthOptions.
func (c *Client) applyAuth(r *remote) {
	a := c.auth
	switch a.Transport {
	case TransportHTTPS:
		r.ca, r.cert, r.key = a.CAFile, a.ClientCert, a.ClientKey
		fallthrough
	case TransportHTTP:
		if a.BearerToken != "" {
			r.auth = &http.TokenAuth{Token: a.BearerToken}
		} else if a.Username != "" || a.Password != "" {
			r.auth = &http.BasicAuth{Username: a.Username, Password: a.Password}
		}
	case TransportSSH:
		user := r.parsed.User.Username()
		if user == "" {
			user = "git"
		}
		r.auth = &gitssh.PublicKeys{
			User:   user,
			Signer: c.signer,
			HostKeyCallbackHelper: gitssh.HostKeyCallbackHelper{
				HostKeyCallback:   c.knownHosts.hostKeyCallback(),
				HostKeyAlgorithms: c.knownHosts.hostKeyAlgorithms(sshAddress(r.parsed)),
			},
		}
	}
}

// proxyFor returns the go-git proxy settings for a transport. Over http,
// https and ssh they route go-git to the Clone's operation, which dials
// every connection itself, through the user's proxy when there is one (see
// operation.go). Other transports get the user's proxy, which they ignore.
func (c *Client) proxyFor(scheme string) (transport.ProxyOptions, error) {
	switch strings.ToLower(scheme) {
	case TransportHTTP, TransportHTTPS:
	case TransportSSH:
		if _, err := c.operation().sshForwardDialer(); err != nil {
			return transport.ProxyOptions{}, fmt.Errorf("ssh proxy: %w", err)
		}
	default:
		if c.proxy == nil {
			return transport.ProxyOptions{}, nil
		}
		return transport.ProxyOptions{URL: c.proxy.URL, Username: c.proxy.Username, Password: c.proxy.Password}, nil
	}
	return transport.ProxyOptions{URL: c.operation().proxyURL}, nil
}

// operation returns the operation of the Clone in progress, registering it
// on first use.
func (c *Client) operation() *operation {
	if c.op == nil {
		ctx := c.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		var transfer *byteBudget
		if c.limits != nil {
			transfer = c.limits.transfer
		}
		c.op = registerOperation(ctx, transfer, c.proxy)
	}
	return c.op
}

// endOperation releases what the Clone in progress registered and closes
// its connections.
func (c *Client) endOperation() {
	if c.op != nil {
		c.op.release()
	}
	c.ctx, c.op = nil, nil
}

// sshAddress returns host:port of an ssh URL, port 22 by default.
func sshAddress(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "22"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// secrets lists the values to scrub from errors.
func (c *Client) secrets() []string {
	s := c.auth.secrets()
	if c.proxy != nil {
		s = append(s, c.proxy.Password)
	}
	return s
}
