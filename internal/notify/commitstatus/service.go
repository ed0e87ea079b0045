package commitstatus

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/windlass-dev/windlass/internal/notify"
)

// Limits of the services' fields, in characters.
const (
	// githubDescriptionLimit is the longest description GitHub takes.
	githubDescriptionLimit = 140
	// descriptionLimit bounds the description on the other services, whose
	// API references give no limit: short enough for any of them to store.
	descriptionLimit = 255
	// bitbucketKeyLimit is the longest status key sent to Bitbucket (Cloud
	// and Server alike); a longer key is hashed.
	bitbucketKeyLimit = 40
)

// azureGenre is the genre of the statuses set on Azure DevOps: a branch
// policy names a status "<genre>/<name>", here "fluxcd/kustomization/apps".
// It names the API family Windlass serves (*.toolkit.fluxcd.io).
const azureGenre = "fluxcd"

// azureAPIVersion is the api-version of the Azure DevOps statuses API.
const azureAPIVersion = "7.1"

// urlParts is a repository URL cut into what the parsers need.
type urlParts struct {
	// scheme and host (with its port) of the address.
	scheme, host string
	// hostname is the host without port, in lower case.
	hostname string
	// segments are the path's segments, decoded, without a final ".git".
	segments []string
}

func newURLParts(u *url.URL) *urlParts {
	path := strings.Trim(u.Path, "/")
	var segments []string
	if path != "" {
		segments = strings.Split(path, "/")
		last := len(segments) - 1
		segments[last] = strings.TrimSuffix(segments[last], ".git")
	}
	return &urlParts{scheme: u.Scheme, host: u.Host, hostname: strings.ToLower(u.Hostname()), segments: segments}
}

// origin is "scheme://host".
func (p *urlParts) origin() string { return p.scheme + "://" + p.host }

// check refuses a path with an empty segment ("org//repo", "org/.git").
func (p *urlParts) check(want string) error {
	for _, s := range p.segments {
		if s == "" || s == "." || s == ".." {
			return fmt.Errorf("invalid path: want %s", want)
		}
	}
	return nil
}

// escapePath joins segments into a path, each escaped, with a leading '/'
// (empty for no segments).
func escapePath(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteString("/" + url.PathEscape(s))
	}
	return b.String()
}

// github is the GitHub (and GitHub Enterprise) statuses API.
type github struct{ api, owner, repo string }

func parseGitHub(p *urlParts) (service, error) {
	const want = "https://HOST/OWNER/REPO"
	if err := p.check(want); err != nil {
		return nil, err
	}
	if len(p.segments) != 2 {
		return nil, fmt.Errorf("want %s", want)
	}
	api := p.origin() + "/api/v3"
	if p.hostname == "github.com" || p.hostname == "www.github.com" {
		api = "https://api.github.com"
	}
	return &github{api: api, owner: p.segments[0], repo: p.segments[1]}, nil
}

func (s *github) request(sha string, st status) notify.Request {
	state := "success"
	if st.failed {
		state = "failure"
	}
	return notify.Request{
		URL:     s.repoURL() + "/statuses/" + sha,
		Headers: map[string]string{"Accept": "application/vnd.github+json"},
		Body: map[string]string{
			"state":       state,
			"context":     st.key,
			"description": cut(st.description, githubDescriptionLimit),
		},
	}
}

// gitlab is the GitLab commit statuses API.
type gitlab struct{ api, project string }

func parseGitLab(p *urlParts) (service, error) {
	const want = "https://HOST/GROUP[/SUBGROUP...]/PROJECT"
	if err := p.check(want); err != nil {
		return nil, err
	}
	segments := p.segments
	for i, s := range segments {
		if s == "-" { // a web page of the project: ".../project/-/tree/main"
			segments = segments[:i]
			break
		}
	}
	if len(segments) < 2 {
		return nil, fmt.Errorf("want %s", want)
	}
	return &gitlab{api: p.origin() + "/api/v4", project: strings.Join(segments, "/")}, nil
}

func (s *gitlab) request(sha string, st status) notify.Request {
	state := "success"
	if st.failed {
		state = "failed"
	}
	return notify.Request{
		URL: s.repoURL() + "/statuses/" + sha,
		Body: map[string]string{
			"state":       state,
			"name":        st.key,
			"description": cut(st.description, descriptionLimit),
		},
	}
}

// alreadySet: GitLab answers 400 "Cannot transition status via :x from
// :y" when asked to set a state the status cannot move to from its own,
// which it is already in.
func (s *gitlab) alreadySet(se *notify.StatusError) bool {
	return se.Code == 400 && strings.Contains(se.Answer, "Cannot transition status")
}

// gitea is the Gitea (and Forgejo) statuses API.
type gitea struct {
	api, owner, repo string
}

func parseGitea(p *urlParts) (service, error) {
	const want = "https://HOST[/PATH]/OWNER/REPO"
	if err := p.check(want); err != nil {
		return nil, err
	}
	n := len(p.segments)
	if n < 2 {
		return nil, fmt.Errorf("want %s", want)
	}
	// Segments before the owner are the path Gitea is served under.
	api := p.origin() + escapePath(p.segments[:n-2]...) + "/api/v1"
	return &gitea{api: api, owner: p.segments[n-2], repo: p.segments[n-1]}, nil
}

func (s *gitea) request(sha string, st status) notify.Request {
	state := "success"
	if st.failed {
		state = "failure"
	}
	return notify.Request{
		URL: s.repoURL() + "/statuses/" + sha,
		Body: map[string]string{
			"state":       state,
			"context":     st.key,
			"description": cut(st.description, descriptionLimit),
		},
	}
}

// bitbucketCloud is the Bitbucket Cloud build statuses API. api is a field
// so that tests can point it at a loopback server.
type bitbucketCloud struct{ api, web, workspace, repo string }

func parseBitbucketCloud(p *urlParts) (service, error) {
	const want = "https://bitbucket.org/WORKSPACE/REPO"
	if p.hostname != "bitbucket.org" && p.hostname != "www.bitbucket.org" {
		return nil, fmt.Errorf("the bitbucket type is Bitbucket Cloud (%s); a self-hosted Bitbucket is the bitbucketserver type", want)
	}
	if err := p.check(want); err != nil {
		return nil, err
	}
	if len(p.segments) != 2 {
		return nil, fmt.Errorf("want %s", want)
	}
	ws, repo := p.segments[0], p.segments[1]
	return &bitbucketCloud{
		api: "https://api.bitbucket.org/2.0", web: "https://bitbucket.org" + escapePath(ws, repo),
		workspace: ws, repo: repo,
	}, nil
}

func (s *bitbucketCloud) request(sha string, st status) notify.Request {
	return notify.Request{
		URL:  s.api + "/repositories" + escapePath(s.workspace, s.repo) + "/commit/" + sha + "/statuses/build",
		Body: bitbucketBody(st, s.web+"/commits/"+sha),
	}
}

// bitbucketServer is the build status API of Bitbucket Server and Data
// Center.
type bitbucketServer struct{ api, web string }

func parseBitbucketServer(p *urlParts) (service, error) {
	const want = "https://HOST[/PATH]/scm/PROJECT/REPO or https://HOST[/PATH]/projects/PROJECT/repos/REPO"
	if err := p.check(want); err != nil {
		return nil, err
	}
	segs := p.segments
	for i, s := range segs {
		var project, repo string
		switch {
		case s == "scm" && len(segs) == i+3:
			project, repo = segs[i+1], segs[i+2]
		case (s == "projects" || s == "users") && len(segs) >= i+4 && segs[i+2] == "repos":
			project, repo = segs[i+1], segs[i+3]
			if s == "users" {
				project = "~" + project
			}
		default:
			continue
		}
		base := p.origin() + escapePath(segs[:i]...)
		return &bitbucketServer{api: base + "/rest/build-status/1.0", web: base + bitbucketServerRepoPath(project, repo)}, nil
	}
	return nil, fmt.Errorf("want %s", want)
}

// bitbucketServerRepoPath is the web path of a repository: a project's, or
// a user's ("~user" in clone URLs).
func bitbucketServerRepoPath(project, repo string) string {
	if user, ok := strings.CutPrefix(project, "~"); ok {
		return escapePath("users", user, "repos", repo)
	}
	return escapePath("projects", project, "repos", repo)
}

func (s *bitbucketServer) request(sha string, st status) notify.Request {
	return notify.Request{URL: s.api + "/commits/" + sha, Body: bitbucketBody(st, s.web+"/commits/"+sha)}
}

// bitbucketBody is the build status of both Bitbucket APIs. A key longer
// than Bitbucket takes is replaced by the start of its SHA-256 in hex; the
// name keeps it whole for people.
func bitbucketBody(st status, link string) map[string]string {
	state := "SUCCESSFUL"
	if st.failed {
		state = "FAILED"
	}
	return map[string]string{
		"key":         hashedKey(st.key, bitbucketKeyLimit),
		"name":        cut(st.key, descriptionLimit),
		"state":       state,
		"url":         link,
		"description": cut(st.description, descriptionLimit),
	}
}

// azureDevOps is the Azure DevOps (and Azure DevOps Server) Git statuses
// API; repoAPI is the repository's API URL.
type azureDevOps struct{ repoAPI string }

func parseAzureDevOps(p *urlParts) (service, error) {
	const want = "https://dev.azure.com/ORG/PROJECT/_git/REPO"
	if err := p.check(want); err != nil {
		return nil, err
	}
	// Before "_git": organization and project on dev.azure.com, the
	// collection and project on Azure DevOps Server, the project on
	// ORG.visualstudio.com.
	minBefore := 1
	if p.hostname == "dev.azure.com" {
		minBefore = 2
	}
	for i, s := range p.segments {
		if s == "_git" && i >= minBefore && len(p.segments) == i+2 {
			api := p.origin() + escapePath(p.segments[:i]...) + "/_apis/git/repositories" + escapePath(p.segments[i+1])
			return &azureDevOps{repoAPI: api}, nil
		}
	}
	return nil, fmt.Errorf("want %s", want)
}

func (s *azureDevOps) request(sha string, st status) notify.Request {
	state := "succeeded"
	if st.failed {
		state = "failed"
	}
	return notify.Request{
		URL: s.repoAPI + "/commits/" + sha + "/statuses?api-version=" + azureAPIVersion,
		Body: map[string]any{
			"state":       state,
			"description": cut(st.description, descriptionLimit),
			"context":     map[string]string{"genre": azureGenre, "name": st.key},
		},
	}
}

// errNoToken is the error of a provider whose Secret has no token.
var errNoToken = errors.New("no token: the Provider's secretRef must hold a token")

func token(cfg notify.Config) (string, error) {
	t := strings.TrimSpace(cfg.Token)
	if t == "" {
		return "", errNoToken
	}
	return t, nil
}

func bearerAuth(cfg notify.Config) (map[string]string, error) {
	t, err := token(cfg)
	if err != nil {
		return nil, err
	}
	return map[string]string{"Authorization": "Bearer " + t}, nil
}

func gitlabAuth(cfg notify.Config) (map[string]string, error) {
	t, err := token(cfg)
	if err != nil {
		return nil, err
	}
	return map[string]string{"PRIVATE-TOKEN": t}, nil
}

func giteaAuth(cfg notify.Config) (map[string]string, error) {
	t, err := token(cfg)
	if err != nil {
		return nil, err
	}
	return map[string]string{"Authorization": "token " + t}, nil
}

// bitbucketCloudAuth: the Secret's username and password (an app
// password), or a token "<username>:<app password>" (the reference's
// form), or an access token sent as a bearer token.
func bitbucketCloudAuth(cfg notify.Config) (map[string]string, error) {
	if h, ok := basicFromSecret(cfg); ok {
		return h, nil
	}
	t, err := token(cfg)
	if err != nil {
		return nil, errors.New("no credentials: the Provider's secretRef must hold a username and password, or a token")
	}
	if user, pass, ok := strings.Cut(t, ":"); ok {
		return basicAuth(user, pass), nil
	}
	return map[string]string{"Authorization": "Bearer " + t}, nil
}

// bitbucketServerAuth: the Secret's username and password, or an HTTP
// access token sent as a bearer token.
func bitbucketServerAuth(cfg notify.Config) (map[string]string, error) {
	if h, ok := basicFromSecret(cfg); ok {
		return h, nil
	}
	if _, err := token(cfg); err != nil {
		return nil, errors.New("no credentials: the Provider's secretRef must hold a username and password, or a token")
	}
	return bearerAuth(cfg)
}

// azureDevOpsAuth: a personal access token, sent with basic auth and an
// empty user name.
func azureDevOpsAuth(cfg notify.Config) (map[string]string, error) {
	t, err := token(cfg)
	if err != nil {
		return nil, err
	}
	return basicAuth("", t), nil
}

func basicFromSecret(cfg notify.Config) (map[string]string, bool) {
	if cfg.BasicUsername == "" || cfg.Password == "" {
		return nil, false
	}
	return basicAuth(cfg.BasicUsername, cfg.Password), true
}

func basicAuth(user, pass string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))}
}
