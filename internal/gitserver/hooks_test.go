package gitserver

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRepoSetHookAndConfig(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	r, first := seed(t, s, "podinfo.git")
	base := s.MustStartHTTP(t)
	seen := filepath.Join(t.TempDir(), "options")
	g.Expect(r.SetConfig("receive.advertisePushOptions", "true")).To(Succeed())
	g.Expect(r.SetHook("pre-receive", "#!/bin/sh\n"+
		"echo \"$GIT_PUSH_OPTION_COUNT $GIT_PUSH_OPTION_0\" > '"+seen+"'\n"+
		"if [ \"$GIT_PUSH_OPTION_0\" = deny ]; then echo 'protected branch' >&2; exit 1; fi\n")).To(Succeed())

	dir, err := sysClone(t, s, base+"/podinfo.git", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "README.md"), []byte("changed\n"), 0o644)).To(Succeed())
	out, err := sysGit(s, dir, nil, "commit", "-qam", "change")
	g.Expect(err).NotTo(HaveOccurred(), out)

	out, err = sysGit(s, dir, nil, "push", "-o", "deny", "origin", "main")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("remote: protected branch"))
	g.Expect(readFile(t, seen)).To(Equal("1 deny\n"))
	g.Expect(r.Head("main")).To(Equal(first), "the hook refused the push")

	out, err = sysGit(s, dir, nil, "push", "-o", "ci.skip", "origin", "main")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(readFile(t, seen)).To(Equal("1 ci.skip\n"))
	g.Expect(r.Head("main")).To(Equal(sysRevParse(t, s, dir, "HEAD")))

	// An empty script removes the hook; only server-side hooks are accepted.
	g.Expect(r.SetHook("pre-receive", "")).To(Succeed())
	g.Expect(filepath.Join(r.Path(), "hooks", "pre-receive")).NotTo(BeAnExistingFile())
	g.Expect(r.SetHook("pre-commit", "#!/bin/sh\n")).To(MatchError(ContainSubstring("not a server-side hook")))
	g.Expect(r.SetConfig("", "x")).To(HaveOccurred())
}
