package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/sourceignore"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// pushFolder pushes dir to the tag url (oci://HOST/REPO:TAG) with
// internal/oci.Push, leaving out what the ignore rules do as `push
// artifact` does, and returns the pushed artifact.
func pushFolder(t *testing.T, g *WithT, url, dir string, ignore *string, o oci.Options) oci.Pushed {
	t.Helper()
	ref, err := oci.ParseTag(url, o)
	g.Expect(err).NotTo(HaveOccurred())
	filter, err := sourceignore.NewFilter(dir, ignore)
	g.Expect(err).NotTo(HaveOccurred())
	pushed, err := oci.Push(context.Background(), ref, oci.PushRequest{Dir: dir, Filter: filter,
		Source: "https://git.example/app", Revision: "main@sha1:0123abc", Created: oci.ReproducibleCreated}, o)
	g.Expect(err).NotTo(HaveOccurred())
	return pushed
}

// expectExit checks that err is the ExitError of code, and returns its
// failure.
func expectExit(g *WithT, err error, code int) error {
	var exit *ExitError
	g.Expect(errors.As(err, &exit)).To(BeTrue(), "%v", err)
	g.Expect(exit.Code).To(Equal(code), "%v", err)
	return exit.Err
}

// TestDiffArtifact compares folders with an artifact pushed to a real
// registry: the folder it came from is the same (exit 0, no output); a
// folder with files added, removed, changed and made executable differs
// (one line each, exit 1); the ignore rules of push apply.
func TestDiffArtifact(t *testing.T) {
	g := NewWithT(t)
	host := startArtifactRegistry(t, "", "")
	files := map[string]string{
		"kustomization.yaml": "resources: [deploy]\n", "deploy/app.yaml": "kind: Deployment\n", "deploy/old.yaml": "kind: ConfigMap\n",
		"hack/run.sh": "#!/bin/sh\n", ".git/HEAD": "ref: refs/heads/main\n", "logo.png": "png", ".sourceignore": "local.env\n",
		"local.env": "TOKEN=x\n",
	}
	src := testutil.WriteTree(t, files)
	url := "oci://" + host + "/org/app:v1"
	pushed := pushFolder(t, g, url, src, nil, oci.Options{})

	t.Run("the folder it was pushed from is the same", func(t *testing.T) {
		g := NewWithT(t)
		for _, ref := range []string{url, "oci://" + host + "/org/app@" + pushed.Digest.String()} {
			out, errOut, err := runArtifact(t, "diff", "artifact", ref, "--path", src)
			g.Expect(err).NotTo(HaveOccurred(), ref)
			g.Expect(out).To(BeEmpty())
			g.Expect(errOut).To(BeEmpty())
		}
	})

	t.Run("added, removed, changed and executable files differ", func(t *testing.T) {
		g := NewWithT(t)
		dir := testutil.WriteTree(t, files)
		g.Expect(os.Remove(filepath.Join(dir, "deploy", "old.yaml"))).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, "deploy", "app.yaml"), []byte("kind: StatefulSet\n"), 0o644)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, "deploy", "new.yaml"), []byte("kind: Service\n"), 0o644)).To(Succeed())
		g.Expect(os.Chmod(filepath.Join(dir, "hack", "run.sh"), 0o755)).To(Succeed())
		// Left out as push leaves them out: not differences.
		g.Expect(os.WriteFile(filepath.Join(dir, "local.env"), []byte("TOKEN=y\n"), 0o644)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, ".git", "ORIG_HEAD"), []byte("0123\n"), 0o644)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, "screenshot.jpg"), []byte("jpg"), 0o644)).To(Succeed())

		out, _, err := runArtifact(t, "diff", "artifact", url, "--path", dir)
		g.Expect(expectExit(g, err, diffDiffers)).NotTo(HaveOccurred())
		expectGolden(t, g, "diff-artifact-changes", out)
	})

	t.Run("a file of the same size but another content differs", func(t *testing.T) {
		g := NewWithT(t)
		dir := testutil.WriteTree(t, files)
		g.Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: [deplox]\n"), 0o644)).To(Succeed())
		out, _, err := runArtifact(t, "diff", "artifact", url, "--path", dir)
		g.Expect(expectExit(g, err, diffDiffers)).NotTo(HaveOccurred())
		g.Expect(out).To(Equal("~ kustomization.yaml\n"))
	})

	t.Run("--ignore-paths replaces the default rules, as in push", func(t *testing.T) {
		g := NewWithT(t)
		ignore := "docs/"
		withDocs := testutil.WriteTree(t, map[string]string{"app.yaml": "a: 1\n", "docs/notes.md": "notes\n", "logo.png": "png"})
		pushFolder(t, g, "oci://"+host+"/org/docs:v1", withDocs, &ignore, oci.Options{})

		out, _, err := runArtifact(t, "diff", "artifact", "oci://"+host+"/org/docs:v1", "--path", withDocs, "--ignore-paths", "docs/")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(BeEmpty())
		out, _, err = runArtifact(t, "diff", "artifact", "oci://"+host+"/org/docs:v1", "--path", withDocs)
		g.Expect(expectExit(g, err, diffDiffers)).NotTo(HaveOccurred())
		g.Expect(out).To(Equal("+ docs/notes.md\n- logo.png\n"), "the default rules leave logo.png out, and keep docs/")
	})
}

// TestDiffArtifactFailures: what stops the diff is a one-line error with
// exit code 2, and never shows a password.
func TestDiffArtifactFailures(t *testing.T) {
	g := NewWithT(t)
	host := startArtifactRegistry(t, "alice", "s3cret-pass")
	src := testutil.WriteTree(t, map[string]string{"a.yaml": "a: 1\n"})
	url := "oci://" + host + "/app:v1"
	pushFolder(t, g, url, src, nil, oci.Options{Username: "alice", Password: "s3cret-pass"})
	notADir := filepath.Join(src, "a.yaml")

	out, _, err := runArtifact(t, "diff", "artifact", url, "--path", src, "--creds", "alice:s3cret-pass", "--insecure")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(BeEmpty())

	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no --path", []string{url}, "--path is required: the folder to compare the artifact with"},
		{"a --path that is a file", []string{url, "--path", notADir}, "--path " + notADir + " is not a folder"},
		{"a --path that does not exist", []string{url, "--path", filepath.Join(src, "missing")}, "cannot be read: no such file or directory"},
		{"a URL without oci://", []string{host + "/app:v1", "--path", src}, "does not start with oci://"},
		{"a bad --max-size", []string{url, "--path", src, "--max-size", "lots"}, `--max-size "lots" is not a size`},
		{"wrong credentials", []string{url, "--path", src, "--creds", "alice:wrong-s3cret"}, "refused the credentials (401 Unauthorized)"},
		{"a tag that does not exist", []string{"oci://" + host + "/app:v9", "--path", src, "--creds", "alice:s3cret-pass"}, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, errOut, err := runArtifact(t, append([]string{"diff", "artifact"}, tt.args...)...)
			g.Expect(expectExit(g, err, diffFailed)).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			g.Expect(err.Error() + out + errOut).NotTo(ContainSubstring("s3cret"))
			g.Expect(out).To(BeEmpty())
		})
	}
}
