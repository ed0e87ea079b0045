package source

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/imageupdate"
)

// TestGitRepository_ImageUpdateNote: the artifact of a commit made by
// image update automation carries the commit's note in its metadata, so
// that what applies it can say why it changed; other notes, and commits
// without one, keep none (only what the commit is: its author, time and
// subject).
func TestGitRepository_ImageUpdateNote(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	first := repo.MustCommit(t, "main", map[string]string{"app.yaml": "image: app:1.0.0\n"}, "first")
	note := imageupdate.NoteHeader + "automation: apps/fleet\n"
	addNote := func(commit, text string) {
		out, err := srv.GitCommand(repo.Path(), "notes", "add", "-f", "-m", text, commit).CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
	}
	addNote(first, "a note of another tool")

	obj := newGitRepository(ns, "app", base+"/app.git")
	obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	got := waitFor(g, obj, readyAt("main@sha1:"+first))
	g.Expect(got.Status.Artifact.Metadata).NotTo(HaveKey(imageupdate.NoteMetadataKey))
	g.Expect(got.Status.Artifact.Metadata).To(HaveKeyWithValue(git.SubjectMetadataKey, "first"),
		"the artifact says which commit it was made from")

	second := repo.MustCommit(t, "main", map[string]string{"app.yaml": "image: app:1.1.0\n"}, "update")
	addNote(second, note)
	requestReconcile(g, obj, "second")
	got = waitFor(g, obj, readyAt("main@sha1:"+second))
	g.Expect(got.Status.Artifact.Metadata).To(HaveKeyWithValue(imageupdate.NoteMetadataKey, note))
}
