// Package commitstatus holds the commit-status provider types of the
// notification Provider: github, gitlab, gitea, bitbucket (Bitbucket
// Cloud), bitbucketserver (Bitbucket Server and Data Center) and
// azuredevops. Each marks the Git commit an event concerns with a status:
// failed for an error, successful for anything else and for a message that
// resolves a failure.
//
// # Address
//
// The Provider's address is the Git repository's URL, which New parses into
// the service's API base and the repository's identity (see the service
// types in service.go for the URL forms each accepts). Self-hosted hosts are
// allowed: a GitHub host other than github.com is GitHub Enterprise
// (https://HOST/api/v3), GitLab and Gitea are reached at their host's
// /api/v4 and /api/v1. The bitbucket type is Bitbucket Cloud only
// (bitbucket.org, API at https://api.bitbucket.org/2.0); a self-hosted
// Bitbucket is the bitbucketserver type.
//
// # Which events
//
// Only events whose revision names a Git commit are posted: "main@sha1:<40
// hex>", "sha1:<40 hex>", the legacy "<branch>/<40 hex>" and a bare 40-hex
// SHA. Post returns nil, sending nothing, for an event without a revision or
// whose revision holds no commit: an OCI digest ("latest@sha256:<hex>"), a
// chart version. A "sha256:" revision is always taken for an OCI digest: it
// cannot be told apart from a Git SHA-256 commit, which none of these
// services' status APIs document.
//
// # Status key
//
// Each object has one status on a commit, updated with its newest state:
// the status key (GitHub and Gitea context, GitLab name, Bitbucket key,
// Azure DevOps context name) is "<kind>/<name>" with the kind in lower case,
// e.g. "kustomization/apps". With Config.CommitStatusExpr set, the key is
// that CEL expression's string result (see expr.go).
package commitstatus

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/windlass-dev/windlass/internal/notify"
	"github.com/windlass-dev/windlass/internal/redact"
)

// Types are the provider types of this package.
var Types = []string{"github", "gitlab", "gitea", "bitbucket", "bitbucketserver", "azuredevops"}

// serviceType is how one provider type reads its address and credentials.
type serviceType struct {
	parse func(u *urlParts) (service, error)
	auth  func(cfg notify.Config) (map[string]string, error)
}

var serviceTypes = map[string]serviceType{
	"github":          {parse: parseGitHub, auth: bearerAuth},
	"gitlab":          {parse: parseGitLab, auth: gitlabAuth},
	"gitea":           {parse: parseGitea, auth: giteaAuth},
	"bitbucket":       {parse: parseBitbucketCloud, auth: bitbucketCloudAuth},
	"bitbucketserver": {parse: parseBitbucketServer, auth: bitbucketServerAuth},
	"azuredevops":     {parse: parseAzureDevOps, auth: azureDevOpsAuth},
}

// status is what a service writes on a commit.
type status struct {
	// key tells this status from the others on the commit.
	key string
	// description is the text for people, not cut yet.
	description string
	// failed is true for a failure, false for a success.
	failed bool
}

// service builds the request that sets a status on one hosting service.
type service interface {
	// request returns the request that sets st on the commit sha.
	request(sha string, st status) notify.Request
}

// notifier posts commit statuses to one repository.
type notifier struct {
	cfg     notify.Config
	client  *http.Client
	service service
	auth    map[string]string
	expr    *keyExpr
}

// New returns the Notifier of cfg: cfg.Type is one of Types, cfg.Address
// the repository's URL. It refuses an address it cannot parse (or a
// link-local one unless cfg allows them), missing credentials, and a
// commitStatusExpr that does not compile to a string.
func New(cfg notify.Config) (notify.Notifier, error) {
	st, ok := serviceTypes[cfg.Type]
	if !ok {
		return nil, fmt.Errorf("provider type %q is not a commit-status type (%s)", cfg.Type, strings.Join(Types, ", "))
	}
	u, err := notify.CheckAddress(cfg.Address, cfg.AddressPolicy())
	if err != nil {
		return nil, err
	}
	svc, err := st.parse(newURLParts(u))
	if err != nil {
		return nil, fmt.Errorf("%s address %q: %w", cfg.Type, redact.URL(cfg.Address), err)
	}
	auth, err := st.auth(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s provider: %w", cfg.Type, err)
	}
	n := &notifier{cfg: cfg, client: notify.Client(cfg), service: svc, auth: auth}
	if strings.TrimSpace(cfg.CommitStatusExpr) != "" {
		if n.expr, err = compileKeyExpr(cfg.CommitStatusExpr, cfg); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// Post sets the status of the commit m's revision names. It returns nil
// without sending anything when m carries no revision or its revision
// holds no Git commit.
func (n *notifier) Post(ctx context.Context, m notify.Message) error {
	revision, ok := m.Revision()
	if !ok {
		return nil
	}
	sha, ok := CommitOf(revision)
	if !ok {
		return nil
	}
	key, err := n.key(ctx, m)
	if err != nil {
		return err
	}
	req := n.service.request(sha, status{key: key, description: notify.Text(m), failed: notify.IsError(m)})
	if req.Headers == nil {
		req.Headers = map[string]string{}
	}
	for k, v := range n.auth {
		req.Headers[k] = v
	}
	err = notify.Do(ctx, n.client, n.cfg, req)
	if err != nil && alreadySet(n.service, err) {
		return nil
	}
	// The forge may quote the request's Authorization in its answer.
	return notify.NewScrubber(n.cfg).Error(err)
}

// key returns the status key of m: the expression's result, or
// "<kind>/<name>".
func (n *notifier) key(ctx context.Context, m notify.Message) (string, error) {
	if n.expr != nil {
		return n.expr.eval(ctx, m)
	}
	return strings.ToLower(m.InvolvedObject.Kind) + "/" + m.InvolvedObject.Name, nil
}

// alreadySet tells whether err only says that the commit already has the
// status, for services that refuse to set a status twice.
func alreadySet(svc service, err error) bool {
	r, ok := svc.(interface {
		alreadySet(*notify.StatusError) bool
	})
	var se *notify.StatusError
	return ok && errors.As(err, &se) && r.alreadySet(se)
}

// cut returns s cut to at most limit characters (runes), ending with "…"
// when it was cut.
func cut(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	runes := []rune(s)
	return string(runes[:limit-1]) + "…"
}
