package git_test

import (
	"context"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestClone_LeavesNoFilesOrGoroutinesOpen (row 44) clones, and fails to
// clone, many times over HTTP and SSH: once the clients are closed, the
// process holds no more open files and goroutines than before (see
// testutil.ExpectNoLeaks).
func TestClone_LeavesNoFilesOrGoroutinesOpen(t *testing.T) {
	g := NewWithT(t)
	srv := gitserver.NewForTest(t)
	httpURL := srv.MustStartHTTP(t)
	sshURL := srv.MustStartSSH(t)
	_, identity := srv.AuthorizedSSHKeyForTest(t)
	srv.MustInitRepo(t, "app.git", "main").MustCommit(t, "main", map[string]string{"a.yaml": "a: 1\n", "b/c.yaml": "c: 2\n"}, "one")
	u, err := url.Parse(sshURL + "/app.git")
	g.Expect(err).NotTo(HaveOccurred())
	sshAuth, err := git.NewAuthOptions(*u, map[string][]byte{"identity": identity, "known_hosts": srv.KnownHosts()})
	g.Expect(err).NotTo(HaveOccurred())

	clone := func(url string, auth *git.AuthOptions, branch string) error {
		c, err := git.NewClient(t.TempDir(), auth, nil)
		g.Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		_, err = c.Clone(context.Background(), url, git.CheckoutOptions{Branch: branch, ShallowClone: true})
		return err
	}
	round := func() {
		g.Expect(clone(httpURL+"/app.git", nil, "main")).To(Succeed())
		g.Expect(clone(sshURL+"/app.git", sshAuth, "main")).To(Succeed())
		g.Expect(clone(httpURL+"/app.git", nil, "missing")).NotTo(Succeed())
		g.Expect(clone(httpURL+"/gone.git", nil, "main")).NotTo(Succeed())
	}
	testutil.ExpectNoLeaks(t, g, round)
}
