package git

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
)

// Git notes are commits on refs/notes/commits whose tree holds one blob per
// annotated object, named by the object's hex hash, either whole or split
// into directories of two hex digits ("fan-out", which git uses once there
// are many notes). git reads both forms, mixed.

// AddNote sets text as the note of commit (a full hex SHA-1 of a commit of
// the workspace) in refs/notes/commits, on top of the notes fetched by
// Open or Refresh: the other notes are kept and a previous note of the same
// commit is replaced, as "git notes add -f" does. The notes commit is made
// by the committer of commit. Push with PushOptions.Notes sends it;
// `git notes show <commit>` and `git log --notes` read it.
func (w *Workspace) AddNote(commit, text string) error {
	if w.c.closed {
		return errClosed
	}
	if !isFullHash(commit) {
		return fmt.Errorf("note: %q is not a full hex SHA-1", commit)
	}
	if strings.TrimSpace(text) == "" {
		return errors.New("note: empty text")
	}
	target, err := w.repo.CommitObject(plumbing.NewHash(strings.ToLower(commit)))
	if err != nil {
		return fmt.Errorf("note: commit %s is not in the workspace", commit)
	}
	s := w.repo.Storer
	var parents []plumbing.Hash
	var base *object.Tree
	if ref, err := s.Reference(notesRef); err == nil {
		tip, err := object.GetCommit(s, ref.Hash())
		if err != nil {
			return fmt.Errorf("note: reading %s: %w", notesRef, err)
		}
		if base, err = tip.Tree(); err != nil {
			return fmt.Errorf("note: reading %s: %w", notesRef, err)
		}
		parents = []plumbing.Hash{tip.Hash}
	} else if !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return err
	}
	blob, err := storeBlob(s, commitMessage(text))
	if err != nil {
		return err
	}
	tree, err := setNote(s, base, "", target.Hash.String(), blob)
	if err != nil {
		return fmt.Errorf("note: %w", err)
	}
	who := object.Signature{Name: target.Committer.Name, Email: target.Committer.Email, When: time.Now()}
	notes := &object.Commit{
		Author: who, Committer: who, TreeHash: tree, ParentHashes: parents,
		Message: "Notes added by 'git notes add'\n",
	}
	hash, err := storeObject(s, notes)
	if err != nil {
		return err
	}
	return s.SetReference(plumbing.NewHashReference(notesRef, hash))
}

// setNote returns the tree of notes base (nil for none), whose entries are
// named after prefix (the hex digits of the directories above it), with
// the note of hex set to blob: in place of the note hex has, whole or
// fanned out, else in the directory of its first two remaining digits when
// there is one, else whole in base.
func setNote(s storage.Storer, base *object.Tree, prefix, hex string, blob plumbing.Hash) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	if base != nil {
		entries = append(entries, base.Entries...)
	}
	rest := hex[len(prefix):]
	for i, e := range entries {
		if e.Mode != filemode.Dir && strings.EqualFold(e.Name, rest) {
			entries[i].Hash = blob
			return storeTree(s, entries)
		}
	}
	for i, e := range entries {
		if e.Mode != filemode.Dir || len(e.Name) != 2 || !strings.HasPrefix(rest, strings.ToLower(e.Name)) {
			continue
		}
		sub, err := object.GetTree(s, e.Hash)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if entries[i].Hash, err = setNote(s, sub, prefix+e.Name, hex, blob); err != nil {
			return plumbing.ZeroHash, err
		}
		return storeTree(s, entries)
	}
	entries = append(entries, object.TreeEntry{Name: rest, Mode: filemode.Regular, Hash: blob})
	return storeTree(s, entries)
}

// storeTree stores a tree of entries, sorted as git sorts them: by name,
// a directory's name compared as if it ended with "/".
func storeTree(s storage.Storer, entries []object.TreeEntry) (plumbing.Hash, error) {
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	return storeObject(s, &object.Tree{Entries: entries})
}

// storeBlob stores content as a blob.
func storeBlob(s storage.Storer, content string) (plumbing.Hash, error) {
	obj := s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write([]byte(content)); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

// encodable is a go-git object that can be stored.
type encodable interface {
	Encode(plumbing.EncodedObject) error
}

// storeObject encodes and stores o.
func storeObject(s storage.Storer, o encodable) (plumbing.Hash, error) {
	obj := s.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}
