package comment

import (
	"net/http"
	"strconv"
)

// The forges' APIs for the comments of a pull request:
//
//   - GitHub (docs.github.com, REST "Issue comments": a pull request is an
//     issue): GET and POST /repos/{owner}/{repo}/issues/{number}/comments
//     (per_page at most 100, page), PATCH
//     /repos/{owner}/{repo}/issues/comments/{id}, each with {"body"}; the
//     pull requests of a commit: GET
//     /repos/{owner}/{repo}/commits/{sha}/pulls.
//   - GitLab (docs.gitlab.com, "Notes API", merge request notes): GET and
//     POST /projects/{id}/merge_requests/{iid}/notes (per_page at most
//     100, page), PUT /projects/{id}/merge_requests/{iid}/notes/{note_id};
//     the merge requests of a commit: GET
//     /projects/{id}/repository/commits/{sha}/merge_requests.
//   - Gitea and Forgejo (the API's swagger, "issue" and "repository"): GET
//     and POST /repos/{owner}/{repo}/issues/{index}/comments (limit, page),
//     PATCH /repos/{owner}/{repo}/issues/comments/{id}; the pull request of
//     a commit: GET /repos/{owner}/{repo}/commits/{sha}/pull, one pull
//     request or 404.

// maxPages bounds the pages of comments read to find the marker.
const maxPages = 50

// forge is how one provider type reaches the comments of its forge.
type forge struct {
	// name is the commit-status type of the same forge.
	name string
	// noun is what the forge calls a pull request, for messages.
	noun string
	// comments is the URL that lists and creates the comments of a pull
	// request; comment the URL of one comment.
	comments func(repo, number string) string
	comment  func(repo, number string, id int64) string
	// editMethod edits a comment.
	editMethod string
	// pageParam names the page size parameter, at most pageSize.
	pageParam string
	pageSize  int
	// pullsOfCommit is the URL of the pull requests of a commit; with
	// singlePull, it answers one pull request, not a list.
	pullsOfCommit func(repo, sha string) string
	singlePull    bool
	// headers are added to every request.
	headers map[string]string
}

var forges = map[string]*forge{
	"githubpullrequestcomment": {
		name: "github", noun: "pull request",
		comments:      func(repo, number string) string { return repo + "/issues/" + number + "/comments" },
		comment:       func(repo, _ string, id int64) string { return repo + "/issues/comments/" + strconv.FormatInt(id, 10) },
		editMethod:    http.MethodPatch,
		pageParam:     "per_page",
		pageSize:      100,
		pullsOfCommit: func(repo, sha string) string { return repo + "/commits/" + sha + "/pulls" },
		headers:       map[string]string{"Accept": "application/vnd.github+json"},
	},
	"gitlabmergerequestcomment": {
		name: "gitlab", noun: "merge request",
		comments: func(repo, number string) string { return repo + "/merge_requests/" + number + "/notes" },
		comment: func(repo, number string, id int64) string {
			return repo + "/merge_requests/" + number + "/notes/" + strconv.FormatInt(id, 10)
		},
		editMethod:    http.MethodPut,
		pageParam:     "per_page",
		pageSize:      100,
		pullsOfCommit: func(repo, sha string) string { return repo + "/repository/commits/" + sha + "/merge_requests" },
	},
	"giteapullrequestcomment": {
		name: "gitea", noun: "pull request",
		comments:      func(repo, number string) string { return repo + "/issues/" + number + "/comments" },
		comment:       func(repo, _ string, id int64) string { return repo + "/issues/comments/" + strconv.FormatInt(id, 10) },
		editMethod:    http.MethodPatch,
		pageParam:     "limit",
		pageSize:      50,
		pullsOfCommit: func(repo, sha string) string { return repo + "/commits/" + sha + "/pull" },
		singlePull:    true,
	},
}

// pullsInto returns where the answer of pullsOfCommit is decoded: the
// list, or its one element.
func (f *forge) pullsInto(list *[]pullRequest) any {
	if f.singlePull {
		*list = make([]pullRequest, 1)
		return &(*list)[0]
	}
	return list
}

// comment is a comment (a note on GitLab) as the forges list them.
type comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
}

// pullRequest holds what the forges say of a pull request: GitHub and
// Gitea its number and state ("open", "closed"), GitLab its iid and state
// ("opened", "merged", "closed", "locked").
type pullRequest struct {
	Number int64  `json:"number"`
	IID    int64  `json:"iid"`
	State  string `json:"state"`
}

// number is the pull request's number in URLs.
func (p pullRequest) number() int64 {
	if p.IID != 0 {
		return p.IID
	}
	return p.Number
}

// open tells whether the pull request is open: a merged or closed one is
// left alone (the commit of a merged pull request is on the target branch,
// where every object of the fleet would comment on it).
func (p pullRequest) open() bool {
	return (p.State == "open" || p.State == "opened") && p.number() > 0
}
