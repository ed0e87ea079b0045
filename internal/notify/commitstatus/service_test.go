package commitstatus

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/notify"
)

// TestParseAddress checks each service's URL forms by the URL of the
// request that sets a status on testSHA.
func TestParseAddress(t *testing.T) {
	const sha = testSHA
	tests := []struct {
		typ, address string
		wantURL      string // empty: refused
		wantErr      string
	}{
		// GitHub and GitHub Enterprise.
		{typ: "github", address: "https://github.com/org/repo", wantURL: "https://api.github.com/repos/org/repo/statuses/" + sha},
		{typ: "github", address: "https://github.com/org/repo.git", wantURL: "https://api.github.com/repos/org/repo/statuses/" + sha},
		{typ: "github", address: "https://GitHub.com/org/repo/", wantURL: "https://api.github.com/repos/org/repo/statuses/" + sha},
		{typ: "github", address: "https://ghe.example.com/org/repo", wantURL: "https://ghe.example.com/api/v3/repos/org/repo/statuses/" + sha},
		{typ: "github", address: "https://ghe.example.com:8443/org/repo.git", wantURL: "https://ghe.example.com:8443/api/v3/repos/org/repo/statuses/" + sha},
		{typ: "github", address: "https://github.com/org", wantErr: "want https://HOST/OWNER/REPO"},
		{typ: "github", address: "https://github.com/org/repo/tree/main", wantErr: "want"},
		{typ: "github", address: "https://github.com/org//repo", wantErr: "invalid path"},
		// GitLab, with nested groups.
		{typ: "gitlab", address: "https://gitlab.com/group/repo", wantURL: "https://gitlab.com/api/v4/projects/group%2Frepo/statuses/" + sha},
		{typ: "gitlab", address: "https://gitlab.com/group/sub/deeper/repo.git", wantURL: "https://gitlab.com/api/v4/projects/group%2Fsub%2Fdeeper%2Frepo/statuses/" + sha},
		{typ: "gitlab", address: "https://gitlab.example.com/group/repo/", wantURL: "https://gitlab.example.com/api/v4/projects/group%2Frepo/statuses/" + sha},
		{typ: "gitlab", address: "https://gitlab.com/group/repo/-/tree/main", wantURL: "https://gitlab.com/api/v4/projects/group%2Frepo/statuses/" + sha},
		{typ: "gitlab", address: "https://gitlab.com/repo", wantErr: "want"},
		// Gitea, at the root or under a path.
		{typ: "gitea", address: "https://gitea.example.com/org/repo", wantURL: "https://gitea.example.com/api/v1/repos/org/repo/statuses/" + sha},
		{typ: "gitea", address: "https://gitea.example.com/org/repo.git/", wantURL: "https://gitea.example.com/api/v1/repos/org/repo/statuses/" + sha},
		{typ: "gitea", address: "https://example.com/git/org/repo", wantURL: "https://example.com/git/api/v1/repos/org/repo/statuses/" + sha},
		{typ: "gitea", address: "https://gitea.example.com/", wantErr: "want"},
		// Bitbucket Cloud.
		{typ: "bitbucket", address: "https://bitbucket.org/ws/repo", wantURL: "https://api.bitbucket.org/2.0/repositories/ws/repo/commit/" + sha + "/statuses/build"},
		{typ: "bitbucket", address: "https://jdoe@bitbucket.org/ws/repo.git", wantURL: "https://api.bitbucket.org/2.0/repositories/ws/repo/commit/" + sha + "/statuses/build"},
		{typ: "bitbucket", address: "https://bitbucket.example.com/ws/repo", wantErr: "bitbucketserver"},
		{typ: "bitbucket", address: "https://bitbucket.org/ws", wantErr: "want"},
		// Bitbucket Server and Data Center.
		{typ: "bitbucketserver", address: "https://bitbucket.example.com/scm/proj/repo.git", wantURL: "https://bitbucket.example.com/rest/build-status/1.0/commits/" + sha},
		{typ: "bitbucketserver", address: "https://example.com/bitbucket/scm/proj/repo", wantURL: "https://example.com/bitbucket/rest/build-status/1.0/commits/" + sha},
		{typ: "bitbucketserver", address: "https://bitbucket.example.com/projects/PROJ/repos/repo/browse", wantURL: "https://bitbucket.example.com/rest/build-status/1.0/commits/" + sha},
		{typ: "bitbucketserver", address: "https://bitbucket.example.com/proj/repo", wantErr: "want"},
		{typ: "bitbucketserver", address: "https://bitbucket.example.com/scm/proj", wantErr: "want"},
		// Azure DevOps, Azure DevOps Server and visualstudio.com.
		{typ: "azuredevops", address: "https://dev.azure.com/org/project/_git/repo", wantURL: "https://dev.azure.com/org/project/_apis/git/repositories/repo/commits/" + sha + "/statuses?api-version=7.1"},
		{typ: "azuredevops", address: "https://org@dev.azure.com/org/My%20Project/_git/repo/", wantURL: "https://dev.azure.com/org/My%20Project/_apis/git/repositories/repo/commits/" + sha + "/statuses?api-version=7.1"},
		{typ: "azuredevops", address: "https://org.visualstudio.com/project/_git/repo", wantURL: "https://org.visualstudio.com/project/_apis/git/repositories/repo/commits/" + sha + "/statuses?api-version=7.1"},
		{typ: "azuredevops", address: "https://tfs.example.com/DefaultCollection/project/_git/repo", wantURL: "https://tfs.example.com/DefaultCollection/project/_apis/git/repositories/repo/commits/" + sha + "/statuses?api-version=7.1"},
		{typ: "azuredevops", address: "https://dev.azure.com/org/_git/repo", wantErr: "want"},
		{typ: "azuredevops", address: "https://dev.azure.com/org/project/repo", wantErr: "want"},
		// Not URLs of a repository at all.
		{typ: "gitea", address: "ftp://gitea.example.com/org/repo", wantErr: "scheme"},
		{typ: "gitlab", address: "https:///group/repo", wantErr: "no host"},
		{typ: "github", address: "://github.com/org/repo", wantErr: "invalid address"},
	}
	for _, tt := range tests {
		t.Run(tt.typ+" "+tt.address, func(t *testing.T) {
			g := NewWithT(t)
			n, err := New(notify.Config{Type: tt.typ, Address: tt.address, Token: testToken})
			if tt.wantURL == "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			req := n.(*notifier).service.request(sha, status{key: "k", description: "d"})
			g.Expect(req.URL).To(Equal(tt.wantURL))
		})
	}
}

func TestBitbucketServerLink(t *testing.T) {
	tests := map[string]string{
		"https://bb.example.com/scm/proj/repo.git":             "https://bb.example.com/projects/proj/repos/repo/commits/" + testSHA,
		"https://bb.example.com/scm/~jdoe/repo.git":            "https://bb.example.com/users/jdoe/repos/repo/commits/" + testSHA,
		"https://bb.example.com/users/jdoe/repos/repo/browse":  "https://bb.example.com/users/jdoe/repos/repo/commits/" + testSHA,
		"https://example.com/bitbucket/projects/P/repos/r.git": "https://example.com/bitbucket/projects/P/repos/r/commits/" + testSHA,
	}
	for address, want := range tests {
		t.Run(address, func(t *testing.T) {
			g := NewWithT(t)
			n, err := New(notify.Config{Type: "bitbucketserver", Address: address, Token: testToken})
			g.Expect(err).NotTo(HaveOccurred())
			body := n.(*notifier).service.request(testSHA, status{key: "k"}).Body.(map[string]string)
			g.Expect(body["url"]).To(Equal(want))
		})
	}
}

func TestCommitOf(t *testing.T) {
	upper := strings.ToUpper(testSHA)
	tests := []struct {
		revision string
		want     string // empty: no commit
	}{
		{revision: "main@sha1:" + testSHA, want: testSHA},
		{revision: "refs/heads/feature/x@sha1:" + testSHA, want: testSHA},
		{revision: "v1.2.3@sha1:" + upper, want: testSHA},
		{revision: "sha1:" + testSHA, want: testSHA},
		{revision: "main/" + testSHA, want: testSHA},
		{revision: "feature/nested/" + testSHA, want: testSHA},
		{revision: testSHA, want: testSHA},
		{revision: "latest@sha256:" + strings.Repeat("a", 64)},
		{revision: "sha256:" + strings.Repeat("a", 64)},
		{revision: "main@sha1:" + testSHA[:12]},
		{revision: "main@sha1:" + strings.Repeat("z", 40)},
		{revision: "main@md5:" + testSHA},
		{revision: "6.5.1"},
		{revision: "6.5.1+" + testSHA[:12]},
		{revision: ""},
	}
	for _, tt := range tests {
		t.Run(tt.revision, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := CommitOf(tt.revision)
			g.Expect(ok).To(Equal(tt.want != ""))
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestHashedKey(t *testing.T) {
	g := NewWithT(t)
	g.Expect(hashedKey("kustomization/apps", 40)).To(Equal("kustomization/apps"))
	exact := strings.Repeat("k", 40)
	g.Expect(hashedKey(exact, 40)).To(Equal(exact))
	long := "kustomization/a-very-long-name-of-an-object-in-a-cluster"
	h := hashedKey(long, 40)
	g.Expect(h).To(MatchRegexp("^[0-9a-f]{40}$"))
	g.Expect(hashedKey(long, 40)).To(Equal(h), "the same key gives the same hash")
	g.Expect(hashedKey(long+"2", 40)).NotTo(Equal(h))
}

func TestCut(t *testing.T) {
	g := NewWithT(t)
	g.Expect(cut("short", 10)).To(Equal("short"))
	g.Expect(cut("0123456789", 10)).To(Equal("0123456789"))
	g.Expect(cut("0123456789a", 10)).To(Equal("012345678…"))
	g.Expect(cut("ééééé", 3)).To(Equal("éé…"))
}
