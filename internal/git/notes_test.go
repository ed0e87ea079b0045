package git

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestWorkspace_Notes(t *testing.T) {
	tests := []struct {
		transport string
		atomic    bool
	}{
		{transport: "http", atomic: true},
		{transport: "ssh", atomic: true},
		{transport: "http", atomic: false},
	}
	for _, tt := range tests {
		name := tt.transport + "/atomic"
		if !tt.atomic {
			name = tt.transport + "/not atomic"
		}
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			p := newPushRemote(t, tt.transport)
			if !tt.atomic {
				g.Expect(p.repo.SetConfig("receive.advertiseAtomic", "false")).To(Succeed())
			}
			p.git(t, nil, "notes", "add", "-m", "written by git", p.head)
			w, _ := p.open(t, CheckoutOptions{Branch: "main", ShallowClone: true})

			first := editAndCommit(t, w, map[string]string{"deploy/app.yaml": "v1"}, "first")
			g.Expect(w.AddNote(first, "image: ghcr.io/app:v1")).To(Succeed())
			g.Expect(w.Push(ctx, PushOptions{Notes: true})).To(Succeed())
			g.Expect(p.git(t, nil, "notes", "show", first)).To(Equal("image: ghcr.io/app:v1"))
			g.Expect(p.git(t, nil, "notes", "show", p.head)).To(Equal("written by git"))

			second := editAndCommit(t, w, map[string]string{"deploy/app.yaml": "v2"}, "second")
			g.Expect(w.AddNote(second, "image: ghcr.io/app:v2\n")).To(Succeed())
			g.Expect(w.Push(ctx, PushOptions{Notes: true})).To(Succeed())

			g.Expect(p.remoteRef(t, "refs/heads/main")).To(Equal(second))
			g.Expect(p.git(t, nil, "log", "--notes", "--format=%s: %N", "main")).To(Equal(
				"second: image: ghcr.io/app:v2\n\nfirst: image: ghcr.io/app:v1\n\ninit: written by git"))
			g.Expect(p.git(t, nil, "rev-list", "--count", "refs/notes/commits")).To(Equal("3"),
				"each note is a commit on top of the remote's notes")
			g.Expect(p.git(t, nil, "fsck", "--strict")).NotTo(ContainSubstring("error"))
		})
	}
}

func TestWorkspace_NoteReplacesANoteWhereverItIs(t *testing.T) {
	g := NewWithT(t)
	p := newPushRemote(t, "http")
	// The remote's note of the first commit is fanned out, as git writes
	// notes once there are many: <2 hex digits>/<38 hex digits>.
	blob := p.gitStdin(t, "old note\n", "hash-object", "-w", "--stdin")
	sub := p.gitStdin(t, "100644 blob "+blob+"\t"+p.head[2:]+"\n", "mktree")
	top := p.gitStdin(t, "040000 tree "+sub+"\t"+p.head[:2]+"\n", "mktree")
	p.git(t, nil, "update-ref", "refs/notes/commits", p.git(t, nil, "commit-tree", "-m", "notes", top))
	g.Expect(p.git(t, nil, "notes", "show", p.head)).To(Equal("old note"))

	w, _ := p.open(t, CheckoutOptions{Branch: "main"})
	next := editAndCommit(t, w, map[string]string{"deploy/app.yaml": "next"}, "next")
	g.Expect(w.AddNote(p.head, "new note")).To(Succeed())
	g.Expect(w.AddNote(next, "draft")).To(Succeed())
	g.Expect(w.AddNote(strings.ToUpper(next), "final")).To(Succeed())
	g.Expect(w.Push(context.Background(), PushOptions{Notes: true})).To(Succeed())

	g.Expect(p.git(t, nil, "notes", "show", p.head)).To(Equal("new note"))
	g.Expect(p.git(t, nil, "notes", "show", next)).To(Equal("final"))
	// One note per commit; the head's stays fanned out, and the next one
	// may join it under the same fan-out folder when their hashes share
	// the first two digits.
	names := strings.Split(p.git(t, nil, "ls-tree", "-r", "--name-only", "refs/notes/commits"), "\n")
	g.Expect(names).To(ContainElement(p.head[:2] + "/" + p.head[2:]))
	g.Expect(names).To(HaveLen(2))
	g.Expect(names).To(ContainElement(BeElementOf(next, next[:2]+"/"+next[2:])))
	g.Expect(p.git(t, nil, "fsck", "--strict")).NotTo(ContainSubstring("error"))
}

func TestWorkspace_NotesNeverLeaveWithoutTheirCommit(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		name := "atomic"
		if !atomic {
			name = "not atomic"
		}
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := newPushRemote(t, "http")
			if !atomic {
				g.Expect(p.repo.SetConfig("receive.advertiseAtomic", "false")).To(Succeed())
			}
			// The update hook refuses main only: in one push that is not
			// atomic, the notes would still be taken.
			err := p.repo.SetHook("update", "#!/bin/sh\n"+
				"if [ \"$1\" = refs/heads/main ]; then echo 'main is protected' >&2; exit 1; fi\n")
			g.Expect(err).NotTo(HaveOccurred())
			w, _ := p.open(t, CheckoutOptions{Branch: "main"})
			hash := editAndCommit(t, w, map[string]string{"deploy/app.yaml": "v1"}, "v1")
			g.Expect(w.AddNote(hash, "image: v1")).To(Succeed())

			err = w.Push(context.Background(), PushOptions{Notes: true})
			var rejected *PushRejectedError
			g.Expect(errors.As(err, &rejected)).To(BeTrue(), "error %v", err)
			g.Expect(rejected.Ref).To(Equal("refs/heads/main"))
			g.Expect(rejected.Reason).To(Equal("hook declined"))
			g.Expect(rejected.RemoteMessage).To(ContainSubstring("main is protected"))
			g.Expect(p.remoteRef(t, "refs/notes/commits")).To(BeEmpty())
			g.Expect(p.remoteRef(t, "refs/heads/main")).To(Equal(p.head))

			// A branch the hook lets through takes the notes with it.
			g.Expect(w.Push(context.Background(), PushOptions{Branch: "auto", Notes: true})).To(Succeed())
			g.Expect(p.git(t, nil, "notes", "show", "auto")).To(Equal("image: v1"))
		})
	}
}

func TestWorkspace_RefreshDropsUnpushedNotes(t *testing.T) {
	g := NewWithT(t)
	p := newPushRemote(t, "http")
	p.git(t, nil, "notes", "add", "-m", "remote note", p.head)
	w, _ := p.open(t, CheckoutOptions{Branch: "main"})
	g.Expect(w.AddNote(p.head, "local note")).To(Succeed())
	g.Expect(w.Refresh(context.Background(), "")).To(Succeed())

	// Nothing to push: the local note went with the refresh.
	g.Expect(w.Push(context.Background(), PushOptions{Notes: true})).To(Succeed())
	g.Expect(p.git(t, nil, "notes", "show", p.head)).To(Equal("remote note"))
}

func TestWorkspace_AddNoteErrors(t *testing.T) {
	p := newPushRemote(t, "http")
	w, _ := p.open(t, CheckoutOptions{Branch: "main"})
	tests := []struct {
		name, commit, text, wantErr string
	}{
		{name: "short hash", commit: p.head[:7], wantErr: "not a full hex SHA-1"},
		{name: "unknown commit", commit: strings.Repeat("b", 40), wantErr: "not in the workspace"},
		{name: "empty text", commit: p.head, text: " \n", wantErr: "empty text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			text := tt.text
			if text == "" {
				text = "note"
			}
			g.Expect(w.AddNote(tt.commit, text)).To(MatchError(ContainSubstring(tt.wantErr)))
			_, err := w.repo.Reference(notesRef, false)
			g.Expect(err).To(HaveOccurred(), "no notes were written")
		})
	}
}
