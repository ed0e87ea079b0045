package incident

import (
	"errors"
	"strings"

	"github.com/windlass-dev/windlass/internal/notify"
)

// GitHub REST "Create a repository dispatch event"
// (docs.github.com/rest/repos/repos#create-a-repository-dispatch-event):
// POST /repos/{owner}/{repo}/dispatches with event_type (at most 100
// characters) and client_payload (a JSON object of at most 10 top-level
// properties), answered 204; it starts the workflows that listen to
// repository_dispatch of that type. Headers: "Authorization: Bearer
// <token>", "Accept: application/vnd.github+json",
// "X-GitHub-Api-Version: 2022-11-28". The API of github.com is
// https://api.github.com; that of a GitHub Enterprise Server is
// https://<host>/api/v3.
//
// The address is the repository (https://github.com/owner/repo); any other
// host is taken as a GitHub Enterprise Server, whose API is
// <scheme>://<host>/api/v3 (which also lets tests point it at a loopback
// server). The Secret's token is a token allowed to write the repository's
// contents.
//
// event_type is "<Kind>/<name>.<namespace>", the reference's form (kind
// not lowercased), so that workflows written for it
// (types: [Kustomization/podinfo.flux-system]) keep working;
// client_payload is the wire event, its message being notify.Text.

// gitHubAPI is the API of github.com.
const gitHubAPI = "https://api.github.com"

// dispatch is a repository dispatch request.
type dispatch struct {
	EventType     string `json:"event_type"`
	ClientPayload any    `json:"client_payload"`
}

func newGitHubDispatch(cfg notify.Config) (*target, error) {
	u, err := address(cfg, "")
	if err != nil {
		return nil, err
	}
	parts := strings.Split(strings.Trim(strings.TrimSuffix(strings.TrimRight(u.Path, "/"), ".git"), "/"), "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return nil, errors.New("the address must be a repository, https://github.com/<owner>/<repo>")
	}
	if err := requireToken(cfg, "a GitHub token that may write the repository"); err != nil {
		return nil, err
	}
	api := u.Scheme + "://" + u.Host + "/api/v3"
	if host := strings.ToLower(u.Hostname()); host == "github.com" || host == "www.github.com" {
		api = gitHubAPI
	}
	endpoint := api + "/repos/" + parts[0] + "/" + parts[1] + "/dispatches"
	headers := map[string]string{
		"Authorization":        "Bearer " + cfg.Token,
		"Accept":               "application/vnd.github+json",
		"X-GitHub-Api-Version": "2022-11-28",
	}
	return &target{secrets: []string{cfg.Token}, request: func(m notify.Message) (notify.Request, error) {
		payload := m.Event
		payload.Message = notify.Text(m)
		return notify.Request{URL: endpoint, Headers: headers, Body: dispatch{EventType: objectName(m), ClientPayload: payload}}, nil
	}}, nil
}
