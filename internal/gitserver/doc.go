// Package gitserver runs a real git server on the loopback interface:
// `windlass dev` serves its demo repository and the folder it syncs with
// it, and Windlass's tests use it too (unit tests of the git client,
// envtest stories of the GitRepository controller, end-to-end tests of the
// binary).
//
// A Server serves the bare repositories under its root folder with the
// system's git (2.39 or newer): smart HTTP and HTTPS through
// git-http-backend behind net/http/cgi, and SSH through an in-process
// golang.org/x/crypto/ssh server that runs git-upload-pack and
// git-receive-pack. Every git process runs with a hermetic environment (no
// system or global configuration, a private HOME, fixed author and committer
// identities), so the user's git configuration never matters.
//
// Repositories are created and changed through Repo, which writes commits,
// removals, symlinks and tags into the bare repository with git's own
// plumbing (git fast-import), so the repository stays a normal bare
// repository that any client can clone, fetch from and push to.
// Repo.SetHook and Repo.SetConfig give a repository server-side hooks (a
// pre-receive hook that refuses a push, or records its push options) and
// configuration (receive.advertisePushOptions...).
//
// The core API does not depend on package testing; NewForTest and the
// Must* helpers (testing.go) are conveniences for tests.
//
//	s := gitserver.NewForTest(t)
//	repo := s.MustInitRepo(t, "podinfo.git", "main")
//	sha := repo.MustCommit(t, "main", map[string]string{"README.md": "hi"}, "init")
//	url, _ := s.StartHTTP()
//	// clone url + "/podinfo.git" and expect sha at refs/heads/main
package gitserver
