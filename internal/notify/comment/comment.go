// Package comment holds the notification Provider types that comment on
// pull and merge requests: githubpullrequestcomment,
// gitlabmergerequestcomment and giteapullrequestcomment. Each keeps ONE
// comment per object on a pull request, which later events of the object
// edit in place: the comment starts with a hidden marker naming the object
// (an HTML comment, which the forges do not show), by which it is found
// among the request's comments.
//
// # Address and credentials
//
// The address is the repository's URL, read as the commit-status types of
// the same forge read it (commitstatus.ParseRepository); the Secret's
// token authenticates, as for those types.
//
// # Which pull request
//
// An event names its pull request in the metadata key change_request (the
// reference's key, set on an object with the annotation
// event.toolkit.fluxcd.io/change_request: "<number>"), the pull request's
// number (the merge request's iid on GitLab). An event without it is
// mapped through its revision: the open pull requests that the forge
// associates with the revision's commit (at most maxRequests), as when a
// preview environment follows a pull request's branch. An event with
// neither sends nothing, as the commit-status types do.
package comment

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
	"github.com/windlass-dev/windlass/internal/notify/commitstatus"
)

// Types are the provider types of this package.
var Types = []string{"githubpullrequestcomment", "gitlabmergerequestcomment", "giteapullrequestcomment"}

// maxRequests bounds the pull requests one event comments on when its
// commit belongs to several.
const maxRequests = 5

// notifier comments on the pull requests of one repository.
type notifier struct {
	cfg    notify.Config
	client *http.Client
	forge  *forge
	repo   commitstatus.Repository
}

// New returns the Notifier of cfg: cfg.Type is one of Types, cfg.Address
// the repository's URL, cfg.Token the token.
func New(cfg notify.Config) (notify.Notifier, error) {
	f, ok := forges[cfg.Type]
	if !ok {
		return nil, fmt.Errorf("provider type %q is not a pull request comment type (%s)", cfg.Type, strings.Join(Types, ", "))
	}
	repo, err := commitstatus.ParseRepository(f.name, cfg)
	if err != nil {
		return nil, notify.NewScrubber(cfg).Error(fmt.Errorf("%s provider: %w", cfg.Type, err))
	}
	return &notifier{cfg: cfg, client: notify.Client(cfg), forge: f, repo: repo}, nil
}

// Post writes m in the comment of its object on each of its pull
// requests: it edits the comment that carries the object's marker, or
// creates it.
func (n *notifier) Post(ctx context.Context, m notify.Message) error {
	return notify.NewScrubber(n.cfg).Error(n.post(ctx, m))
}

func (n *notifier) post(ctx context.Context, m notify.Message) error {
	requests, err := n.requests(ctx, m)
	if err != nil {
		return fmt.Errorf("%s provider: %w", n.cfg.Type, err)
	}
	body := render(m)
	for _, number := range requests {
		if err := n.upsert(ctx, number, marker(m), body); err != nil {
			return fmt.Errorf("%s provider: %s %s: %w", n.cfg.Type, n.forge.noun, number, err)
		}
	}
	return nil
}

// requests returns the numbers of the pull requests m concerns.
func (n *notifier) requests(ctx context.Context, m notify.Message) ([]string, error) {
	if value, ok := changeRequest(m); ok {
		number := strings.TrimPrefix(strings.TrimSpace(value), "#")
		if id, err := strconv.ParseUint(number, 10, 63); err != nil || id == 0 {
			return nil, fmt.Errorf("the event's %s %q is not a %s number", eventv1.MetaChangeRequest, value, n.forge.noun)
		}
		return []string{number}, nil
	}
	revision, ok := m.Revision()
	if !ok {
		return nil, nil
	}
	sha, ok := commitstatus.CommitOf(revision)
	if !ok {
		return nil, nil
	}
	return n.requestsOfCommit(ctx, sha)
}

// changeRequest returns the event's change_request metadata, with or
// without a group prefix.
func changeRequest(m notify.Message) (string, bool) {
	for k, v := range m.Metadata {
		if k == eventv1.MetaChangeRequest || strings.HasSuffix(k, "/"+eventv1.MetaChangeRequest) {
			return v, true
		}
	}
	return "", false
}

// requestsOfCommit returns the open pull requests of the commit sha, at
// most maxRequests.
func (n *notifier) requestsOfCommit(ctx context.Context, sha string) ([]string, error) {
	var found []pullRequest
	err := n.do(ctx, notify.Request{Method: http.MethodGet, URL: n.forge.pullsOfCommit(n.repo.URL, sha), Into: n.forge.pullsInto(&found)})
	var se *notify.StatusError
	if errors.As(err, &se) && se.Code == http.StatusNotFound && n.forge.singlePull {
		return nil, nil // Gitea answers 404 for a commit of no pull request
	}
	if err != nil {
		return nil, fmt.Errorf("finding the %ss of commit %s: %w", n.forge.noun, sha, err)
	}
	var out []string
	for _, pr := range found {
		if pr.open() && len(out) < maxRequests {
			out = append(out, strconv.FormatInt(pr.number(), 10))
		}
	}
	return out, nil
}

// upsert edits the comment of the pull request that starts with mark, or
// creates it.
func (n *notifier) upsert(ctx context.Context, number, mark, body string) error {
	id, err := n.find(ctx, number, mark)
	if err != nil {
		return err
	}
	if id == 0 {
		return n.do(ctx, notify.Request{URL: n.forge.comments(n.repo.URL, number), Body: map[string]string{"body": body}})
	}
	return n.do(ctx, notify.Request{Method: n.forge.editMethod, URL: n.forge.comment(n.repo.URL, number, id), Body: map[string]string{"body": body}})
}

// find returns the id of the first comment of the pull request that
// starts with mark, or 0, reading the comments a page at a time.
func (n *notifier) find(ctx context.Context, number, mark string) (int64, error) {
	for page := 1; page <= maxPages; page++ {
		var comments []comment
		url := fmt.Sprintf("%s?%s=%d&page=%d", n.forge.comments(n.repo.URL, number), n.forge.pageParam, n.forge.pageSize, page)
		if err := n.do(ctx, notify.Request{Method: http.MethodGet, URL: url, Into: &comments}); err != nil {
			return 0, fmt.Errorf("listing the comments: %w", err)
		}
		for _, c := range comments {
			if strings.HasPrefix(c.Body, mark) {
				return c.ID, nil
			}
		}
		if len(comments) < n.forge.pageSize {
			return 0, nil
		}
	}
	return 0, fmt.Errorf("more than %d pages of comments: not searched further", maxPages)
}

// do sends req with the repository's credentials.
func (n *notifier) do(ctx context.Context, req notify.Request) error {
	req.Headers = map[string]string{}
	for k, v := range n.forge.headers {
		req.Headers[k] = v
	}
	for k, v := range n.repo.Auth {
		req.Headers[k] = v
	}
	return notify.Do(ctx, n.client, n.cfg, req)
}
