package git

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestCloneReadsNotes: with CheckoutOptions.Notes, the note git wrote on
// the commit checked out is in Commit.Note, stored whole or fanned out;
// without it, or without a note, Note is empty.
func TestCloneReadsNotes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		write    func(r *localRepo, commit string)
		notes    bool
		shallow  bool
		wantNote string
	}{
		{name: "whole", notes: true, wantNote: "updated by the automation\n", write: func(r *localRepo, c string) {
			r.git("notes", "add", "-m", "updated by the automation", c)
		}},
		{name: "whole, shallow", notes: true, shallow: true, wantNote: "updated by the automation\n", write: func(r *localRepo, c string) {
			r.git("notes", "add", "-m", "updated by the automation", c)
		}},
		{name: "fanned out", notes: true, wantNote: "fanned out\n", write: writeFannedOutNote},
		{name: "not asked", wantNote: "", write: func(r *localRepo, c string) {
			r.git("notes", "add", "-m", "updated by the automation", c)
		}},
		{name: "another commit's note", notes: true, wantNote: "", write: func(r *localRepo, c string) {
			r.git("notes", "add", "-m", "about the parent", c+"^")
		}},
		{name: "no notes", notes: true, wantNote: "", write: func(*localRepo, string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := newLocalRepo(t, "main")
			r.commit("main", map[string]string{"a.txt": "1"}, "first")
			head := r.commit("main", map[string]string{"a.txt": "2"}, "second")
			tc.write(r, head)
			if tc.wantNote != "" {
				g.Expect(r.git("notes", "show", head)+"\n").To(Equal(tc.wantNote), "git reads the note as written")
			}
			c, _ := newTestClient(t, nil, nil)
			commit, err := c.Clone(context.Background(), r.url(), CheckoutOptions{Branch: "main", Notes: tc.notes, ShallowClone: tc.shallow})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(commit.Hash).To(Equal(head))
			g.Expect(commit.Note).To(Equal(tc.wantNote))
		})
	}
}

// writeFannedOutNote writes the note of commit as git does once there are
// many notes: under a directory named by the first two hex digits.
func writeFannedOutNote(r *localRepo, commit string) {
	blob := r.gitStdin("fanned out\n", "hash-object", "-w", "--stdin")
	inner := r.gitStdin("100644 blob "+blob+"\t"+commit[2:]+"\n", "mktree")
	outer := r.gitStdin("040000 tree "+inner+"\t"+commit[:2]+"\n", "mktree")
	notes := r.git("commit-tree", outer, "-m", "Notes added by 'git notes add'")
	r.git("update-ref", "refs/notes/commits", notes)
	if !strings.HasPrefix(r.git("ls-tree", "-r", "--name-only", "refs/notes/commits"), commit[:2]+"/") {
		r.t.Fatal("the note is not fanned out")
	}
}
