package git

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"
)

// refFixture is a repository with branches, tags and a pull request ref.
type refFixture struct {
	repo                *localRepo
	c1, c2, c3          string // main~1, main, dev
	annotated, rcTagObj string // tag objects of v1.1.0 and v2.0.0-rc.1
}

// newRefFixture builds:
//
//	main: c1 (v1.0.0, 1.0.5) -> c2 (v1.1.0 annotated, v2.0.0-rc.1 annotated)
//	dev:  c2 -> c3 (refs/pull/1/head)
func newRefFixture(t *testing.T) *refFixture {
	r := newLocalRepo(t, "main")
	f := &refFixture{repo: r}
	f.c1 = r.commit("main", map[string]string{"README.md": "v1", "deploy/app.yaml": "a: 1"}, "first commit")
	f.c2 = r.commit("main", map[string]string{"README.md": "v2"}, "second commit\n\nwith a body")
	f.c3 = r.commit("dev", map[string]string{"dev.txt": "dev"}, "dev commit")
	r.tag("v1.0.0", f.c1)
	r.tag("1.0.5", f.c1)
	f.annotated = r.annotatedTag("v1.1.0", f.c2, "release 1.1.0")
	f.rcTagObj = r.annotatedTag("v2.0.0-rc.1", f.c2, "rc")
	r.git("update-ref", "refs/pull/1/head", f.c3)
	r.git("checkout", "-q", "main")
	return f
}

func TestClone_References(t *testing.T) {
	f := newRefFixture(t)
	tests := []struct {
		name      string
		opts      CheckoutOptions
		wantHash  string
		wantRef   string
		wantRev   string
		wantTag   string // name of ReferencingTag, if any
		wantFiles []string
	}{
		{name: "branch", opts: CheckoutOptions{Branch: "main"}, wantHash: f.c2, wantRef: "refs/heads/main",
			wantRev: "main@sha1:" + f.c2, wantFiles: []string{"README.md", "deploy/app.yaml"}},
		{name: "shallow branch", opts: CheckoutOptions{Branch: "dev", ShallowClone: true}, wantHash: f.c3,
			wantRef: "refs/heads/dev", wantRev: "dev@sha1:" + f.c3,
			wantFiles: []string{"README.md", "deploy/app.yaml", "dev.txt"}},
		{name: "lightweight tag", opts: CheckoutOptions{Tag: "v1.0.0", ShallowClone: true}, wantHash: f.c1,
			wantRef: "refs/tags/v1.0.0", wantRev: "v1.0.0@sha1:" + f.c1},
		{name: "annotated tag", opts: CheckoutOptions{Tag: "v1.1.0", ShallowClone: true}, wantHash: f.c2,
			wantRef: "refs/tags/v1.1.0", wantRev: "v1.1.0@sha1:" + f.c2, wantTag: "v1.1.0"},
		{name: "semver picks the highest release", opts: CheckoutOptions{SemVer: ">=1.0.0 <2.0.0"}, wantHash: f.c2,
			wantRef: "refs/tags/v1.1.0", wantRev: "v1.1.0@sha1:" + f.c2, wantTag: "v1.1.0"},
		{name: "semver accepts tags without v", opts: CheckoutOptions{SemVer: "~1.0"}, wantHash: f.c1,
			wantRef: "refs/tags/1.0.5", wantRev: "1.0.5@sha1:" + f.c1},
		{name: "semver star skips pre-releases", opts: CheckoutOptions{SemVer: "*"}, wantHash: f.c2,
			wantRef: "refs/tags/v1.1.0", wantRev: "v1.1.0@sha1:" + f.c2, wantTag: "v1.1.0"},
		{name: "semver pre-release range", opts: CheckoutOptions{SemVer: ">=2.0.0-0"}, wantHash: f.c2,
			wantRef: "refs/tags/v2.0.0-rc.1", wantRev: "v2.0.0-rc.1@sha1:" + f.c2, wantTag: "v2.0.0-rc.1"},
		{name: "ref name", opts: CheckoutOptions{RefName: "refs/pull/1/head", ShallowClone: true}, wantHash: f.c3,
			wantRef: "refs/pull/1/head", wantRev: "refs/pull/1/head@sha1:" + f.c3},
		{name: "ref name of a branch", opts: CheckoutOptions{RefName: "refs/heads/dev"}, wantHash: f.c3,
			wantRef: "refs/heads/dev", wantRev: "dev@sha1:" + f.c3},
		{name: "commit", opts: CheckoutOptions{Commit: f.c1}, wantHash: f.c1, wantRef: "",
			wantRev: "sha1:" + f.c1, wantFiles: []string{"README.md", "deploy/app.yaml"}},
		{name: "commit on branch", opts: CheckoutOptions{Commit: f.c1, Branch: "main", ShallowClone: true},
			wantHash: f.c1, wantRef: "refs/heads/main", wantRev: "main@sha1:" + f.c1},
		{name: "commit beats everything", opts: CheckoutOptions{Commit: f.c3, RefName: "refs/heads/main",
			SemVer: "*", Tag: "v1.0.0"}, wantHash: f.c3, wantRef: "", wantRev: "sha1:" + f.c3},
		{name: "ref name beats semver and tag", opts: CheckoutOptions{RefName: "refs/pull/1/head", SemVer: "*",
			Tag: "v1.0.0", Branch: "main"}, wantHash: f.c3, wantRef: "refs/pull/1/head",
			wantRev: "refs/pull/1/head@sha1:" + f.c3},
		{name: "semver beats tag", opts: CheckoutOptions{SemVer: "<1.0.1", Tag: "v1.1.0"}, wantHash: f.c1,
			wantRef: "refs/tags/v1.0.0", wantRev: "v1.0.0@sha1:" + f.c1},
		{name: "tag beats branch", opts: CheckoutOptions{Tag: "v1.0.0", Branch: "dev"}, wantHash: f.c1,
			wantRef: "refs/tags/v1.0.0", wantRev: "v1.0.0@sha1:" + f.c1},
		{name: "last observed commit differs", opts: CheckoutOptions{Branch: "main",
			LastObservedCommit: "main@sha1:" + f.c1}, wantHash: f.c2, wantRef: "refs/heads/main",
			wantRev: "main@sha1:" + f.c2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, dir := newTestClient(t, nil, nil)
			commit, err := c.Clone(context.Background(), f.repo.url(), tt.opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(IsConcreteCommit(*commit)).To(BeTrue())
			g.Expect(commit.Hash).To(Equal(tt.wantHash))
			g.Expect(commit.Reference).To(Equal(tt.wantRef))
			g.Expect(commit.String()).To(Equal(tt.wantRev))
			g.Expect(commit.Author.Name).To(Equal("Test Author"))
			g.Expect(commit.Committer.Email).To(Equal("committer@example.com"))
			g.Expect(string(commit.Encoded)).To(HavePrefix("tree "))
			if tt.wantTag == "" {
				g.Expect(commit.ReferencingTag).To(BeNil())
			} else {
				g.Expect(commit.ReferencingTag).NotTo(BeNil())
				g.Expect(commit.ReferencingTag.Name).To(Equal(tt.wantTag))
				g.Expect(string(commit.ReferencingTag.Encoded)).To(ContainSubstring("object " + tt.wantHash))
			}
			if tt.wantFiles != nil {
				g.Expect(listFiles(t, dir)).To(Equal(tt.wantFiles))
			}
			head, err := c.storage.Reference(plumbing.HEAD)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(head.Hash().String()).To(Equal(tt.wantHash), "the work tree is checked out at the commit")
			g.Expect(filepath.Join(dir, ".git")).NotTo(BeAnExistingFile(), "nothing of the repository but its files is written")
		})
	}
}

func TestClone_ShallowFetchesOneCommit(t *testing.T) {
	f := newRefFixture(t)
	tests := []struct {
		name    string
		opts    CheckoutOptions
		shallow bool
	}{
		{name: "shallow branch", opts: CheckoutOptions{Branch: "main", ShallowClone: true}, shallow: true},
		{name: "shallow annotated tag", opts: CheckoutOptions{Tag: "v1.1.0", ShallowClone: true}, shallow: true},
		{name: "full branch", opts: CheckoutOptions{Branch: "main"}, shallow: false},
		{name: "commit on branch is never shallow", opts: CheckoutOptions{Branch: "main", Commit: f.c1,
			ShallowClone: true}, shallow: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, _ := newTestClient(t, nil, nil)
			_, err := c.Clone(context.Background(), f.repo.url(), tt.opts)
			g.Expect(err).NotTo(HaveOccurred())
			shallows, err := c.storage.Shallow()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(len(shallows) > 0).To(Equal(tt.shallow))
		})
	}
}

func TestClone_DefaultBranchIsMaster(t *testing.T) {
	g := NewWithT(t)
	r := newLocalRepo(t, "master")
	sha := r.commit("master", map[string]string{"a.txt": "a"}, "init")
	c, _ := newTestClient(t, nil, nil)
	commit, err := c.Clone(context.Background(), r.url(), CheckoutOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commit.String()).To(Equal("master@sha1:" + sha))
}

func TestClone_Errors(t *testing.T) {
	f := newRefFixture(t)
	const unreachable = "file:///nonexistent/windlass/repo"
	tests := []struct {
		name        string
		url         string
		opts        CheckoutOptions
		wantInvalid bool
		wantErr     string
	}{
		{name: "missing branch", opts: CheckoutOptions{Branch: "nope"}, wantErr: "nope"},
		{name: "missing branch with last observed", opts: CheckoutOptions{Branch: "nope",
			LastObservedCommit: "nope@sha1:" + f.c1}, wantErr: "refs/heads/nope not found"},
		{name: "missing tag", opts: CheckoutOptions{Tag: "v9.9.9"}, wantErr: "v9.9.9"},
		{name: "no tag matches semver", opts: CheckoutOptions{SemVer: ">=5.0.0"}, wantErr: "satisfies semver range"},
		{name: "invalid semver range", url: unreachable, opts: CheckoutOptions{SemVer: "not a range"},
			wantInvalid: true, wantErr: "semver range"},
		{name: "missing ref name", opts: CheckoutOptions{RefName: "refs/pull/2/head"}, wantErr: "refs/pull/2/head"},
		{name: "ref name without refs/", url: unreachable, opts: CheckoutOptions{RefName: "pull/1/head"},
			wantInvalid: true, wantErr: "refs/"},
		{name: "commit not on branch", opts: CheckoutOptions{Commit: f.c3, Branch: "main"},
			wantErr: "not found on branch main"},
		{name: "unknown commit", opts: CheckoutOptions{Commit: "0123456789abcdef0123456789abcdef01234567"},
			wantErr: "not found"},
		{name: "short commit", url: unreachable, opts: CheckoutOptions{Commit: "abc123"}, wantInvalid: true,
			wantErr: "full hex SHA-1"},
		{name: "sparse path with ..", url: unreachable, opts: CheckoutOptions{
			SparseCheckoutDirectories: []string{"deploy/../../etc"}}, wantInvalid: true, wantErr: ".."},
		{name: "absolute sparse path", url: unreachable, opts: CheckoutOptions{
			SparseCheckoutDirectories: []string{"/etc"}}, wantInvalid: true, wantErr: "relative"},
		{name: "sparse path into .git", url: unreachable, opts: CheckoutOptions{
			SparseCheckoutDirectories: []string{".git/hooks"}}, wantInvalid: true, wantErr: ".git"},
		{name: "unreachable repository", url: unreachable, opts: CheckoutOptions{Branch: "main"}, wantErr: "fetching"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			url := tt.url
			if url == "" {
				url = f.repo.url()
			}
			c, _ := newTestClient(t, nil, nil)
			commit, err := c.Clone(context.Background(), url, tt.opts)
			g.Expect(err).To(HaveOccurred())
			g.Expect(commit).To(BeNil())
			g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
			var invalid *InvalidOptionsError
			g.Expect(errors.As(err, &invalid)).To(Equal(tt.wantInvalid))
		})
	}
}

func TestClone_LastObservedCommitSkipsClone(t *testing.T) {
	f := newRefFixture(t)
	const unreachable = "file:///nonexistent/windlass/repo"
	tests := []struct {
		name    string
		url     string
		opts    CheckoutOptions
		wantRef string
		want    string
	}{
		{name: "branch", opts: CheckoutOptions{Branch: "main"}, wantRef: "refs/heads/main", want: f.c2},
		{name: "default branch", url: "", opts: CheckoutOptions{RefName: "refs/heads/dev"}, wantRef: "refs/heads/dev",
			want: f.c3},
		{name: "annotated tag is compared peeled", opts: CheckoutOptions{Tag: "v1.1.0"}, wantRef: "refs/tags/v1.1.0",
			want: f.c2},
		{name: "lightweight tag", opts: CheckoutOptions{Tag: "v1.0.0"}, wantRef: "refs/tags/v1.0.0", want: f.c1},
		{name: "semver", opts: CheckoutOptions{SemVer: "1.x"}, wantRef: "refs/tags/v1.1.0", want: f.c2},
		{name: "ref name", opts: CheckoutOptions{RefName: "refs/pull/1/head"}, wantRef: "refs/pull/1/head", want: f.c3},
		{name: "commit needs no network", url: unreachable, opts: CheckoutOptions{Commit: f.c1}, want: f.c1},
		{name: "commit on branch needs no network", url: unreachable, opts: CheckoutOptions{Commit: f.c1,
			Branch: "main"}, wantRef: "refs/heads/main", want: f.c1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			url := tt.url
			if url == "" {
				url = f.repo.url()
			}
			opts := tt.opts
			opts.LastObservedCommit = formatRevision(tt.wantRef, tt.want)
			c, dir := newTestClient(t, nil, nil)
			commit, err := c.Clone(context.Background(), url, opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(IsConcreteCommit(*commit)).To(BeFalse())
			g.Expect(commit.Hash).To(Equal(tt.want))
			g.Expect(commit.Reference).To(Equal(tt.wantRef))
			g.Expect(commit.String()).To(Equal(opts.LastObservedCommit))
			g.Expect(filepath.Join(dir, ".git")).NotTo(BeADirectory())
		})
	}
}

func TestClone_WorkDirAlreadyHoldsARepository(t *testing.T) {
	g := NewWithT(t)
	f := newRefFixture(t)
	c, _ := newTestClient(t, nil, nil)
	_, err := c.Clone(context.Background(), f.repo.url(), CheckoutOptions{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Clone(context.Background(), f.repo.url(), CheckoutOptions{Branch: "main"})
	g.Expect(err).To(MatchError(ContainSubstring("work directory")))
}

func TestHighestTag(t *testing.T) {
	refs := map[string]string{
		"HEAD":                 "h",
		"refs/heads/v9.0.0":    "branch, not a tag",
		"refs/tags/v1.0.0":     "a",
		"refs/tags/1.0.0":      "b",
		"refs/tags/v1.2.0":     "tagobj",
		"refs/tags/v1.2.0^{}":  "c",
		"refs/tags/v2.0.0-rc1": "d",
		"refs/tags/latest":     "e",
		"refs/tags/v1.10.0":    "f",
	}
	tests := []struct {
		constraint, want string
	}{
		{constraint: "*", want: "v1.10.0"},
		{constraint: "~1.2", want: "v1.2.0"},
		{constraint: "1.0.0", want: "v1.0.0"}, // equal versions: the greater name
		{constraint: ">=2.0.0-0", want: "v2.0.0-rc1"},
		{constraint: ">=3", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.constraint, func(t *testing.T) {
			g := NewWithT(t)
			c, err := semver.NewConstraint(tt.constraint)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(highestTag(refs, c)).To(Equal(tt.want))
		})
	}
}
