package main

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/gitserver"
)

// gitKit serves the repositories of a git run behind the clone-counting
// proxy.
type gitKit struct {
	srv    *gitserver.Server
	proxy  *countingProxy
	repos  map[string]*gitserver.Repo
	layout string
	server string
	// revisions is the revision of each application's manifest on the
	// server (see appManifests).
	revisions []int
}

// startGitKit starts the git server cfg.GitServer names over folder dir,
// behind a clone-counting proxy, and writes the repositories of
// cfg.Layout.
func startGitKit(ctx context.Context, cfg Config, dir string) (_ *gitKit, err error) {
	k := &gitKit{layout: cfg.Layout, server: cfg.GitServer, revisions: make([]int, cfg.N)}
	for i := range k.revisions {
		k.revisions[i] = 1
	}
	if k.srv, err = gitserver.New(dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			k.Close()
		}
	}()
	gitURL, err := startGitServer(k.srv, cfg.GitServer)
	if err != nil {
		return nil, err
	}
	if k.proxy, err = startCountingProxy(gitURL, countGitFetch, gitFetches); err != nil {
		return nil, err
	}
	if k.repos, err = writeRepos(ctx, k.srv, cfg.Layout, cfg.N); err != nil {
		return nil, err
	}
	return k, nil
}

// gitFetches labels the git fetches counted by countGitFetch.
const gitFetches = "fetches"

// countGitFetch counts a smart-HTTP fetch or clone: one POST to
// <repo>/git-upload-pack (the pack negotiation and transfer). Merely
// listing the remote's references (GET <repo>/info/refs) is not counted.
func countGitFetch(r *http.Request) string {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
		return gitFetches
	}
	return ""
}

// Kind implements sourceKit.
func (k *gitKit) Kind() string { return sourcev1.GitRepositoryKind }

// NewObject implements sourceKit.
func (k *gitKit) NewObject() client.Object { return &sourcev1.GitRepository{} }

// NewList implements sourceKit.
func (k *gitKit) NewList() client.ObjectList { return &sourcev1.GitRepositoryList{} }

// Prepare implements sourceKit: the repositories need no credentials.
func (k *gitKit) Prepare(context.Context, client.Client, string) error { return nil }

// Sources implements sourceKit.
func (k *gitKit) Sources(ns string) []client.Object {
	var sources []client.Object
	for _, name := range slices.Sorted(maps.Keys(k.repos)) {
		sources = append(sources, gitRepository(ns, name, k.proxy.URL+"/"+name+".git"))
	}
	return sources
}

// SourceName implements sourceKit.
func (k *gitKit) SourceName(i int) string { return sourceName(k.layout, i) }

// AppPath implements sourceKit.
func (k *gitKit) AppPath(i int) string { return appPath(k.layout, i) }

// Heads implements sourceKit: the commit at the head of every repository.
func (k *gitKit) Heads() (map[string]string, error) { return repoHeads(k.repos) }

// Change implements sourceKit: a commit to application 0's repository.
func (k *gitKit) Change(context.Context) (string, error) {
	repo := k.repos[k.SourceName(0)]
	k.revisions[0] = 2
	return repo.Commit(branch, map[string]string{k.AppPath(0) + "/app.yaml": appManifests(2)}, "change app-0")
}

// Downloads implements sourceKit: the git fetches (see countGitFetch).
func (k *gitKit) Downloads() map[string]int64 { return k.proxy.Counts() }

// Server implements sourceKit.
func (k *gitKit) Server() string { return "git (" + k.server + ")" }

// Close implements sourceKit.
func (k *gitKit) Close() {
	if k.proxy != nil {
		k.proxy.Close()
	}
	k.srv.Stop()
}

// repoHeads returns the commit at the head of branch of every repository,
// by name.
func repoHeads(repos map[string]*gitserver.Repo) (map[string]string, error) {
	heads := map[string]string{}
	for name, r := range repos {
		var err error
		if heads[name], err = r.Head(branch); err != nil {
			return nil, err
		}
	}
	return heads, nil
}

// The loopback git servers a run can use. Both serve the same bare
// repositories over smart HTTP; they differ in what serving costs the
// machine the controller runs on.
const (
	// GitServerNative answers upload-pack in process with go-git
	// (gitserver.StartNativeHTTP): about a millisecond of CPU per clone.
	GitServerNative = "native"
	// GitServerHTTPBackend runs git-http-backend and the git processes it
	// starts for every request: tens of milliseconds of CPU per clone,
	// taken from the cores the controller and the control plane share.
	GitServerHTTPBackend = "http-backend"
)

// startGitServer serves srv's repositories with the named git server and
// returns their base URL.
func startGitServer(srv *gitserver.Server, name string) (string, error) {
	if name == GitServerHTTPBackend {
		return srv.StartHTTP()
	}
	return srv.StartNativeHTTP()
}

// writeRepos creates the repositories of layout on srv, with the first
// revision of every application, and returns them by name (the name of
// the GitRepository that serves each).
func writeRepos(ctx context.Context, srv *gitserver.Server, layout string, n int) (map[string]*gitserver.Repo, error) {
	if layout == LayoutMonorepo {
		repo, err := srv.InitRepo(monorepoName+".git", branch)
		if err != nil {
			return nil, err
		}
		files := map[string]string{}
		for i := range n {
			files[appPath(layout, i)+"/app.yaml"] = appManifests(1)
		}
		if _, err := repo.Commit(branch, files, "initial"); err != nil {
			return nil, err
		}
		return map[string]*gitserver.Repo{monorepoName: repo}, nil
	}
	list := make([]*gitserver.Repo, n)
	err := parallel(ctx, n, 8, func(i int) error {
		repo, err := srv.InitRepo(appName(i)+".git", branch)
		if err != nil {
			return err
		}
		if _, err := repo.Commit(branch, map[string]string{appPath(layout, i) + "/app.yaml": appManifests(1)}, "initial"); err != nil {
			return err
		}
		list[i] = repo
		return nil
	})
	if err != nil {
		return nil, err
	}
	repos := map[string]*gitserver.Repo{}
	for i, r := range list {
		repos[appName(i)] = r
	}
	return repos, nil
}
