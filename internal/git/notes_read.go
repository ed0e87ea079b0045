package git

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
)

// MaxNoteBytes bounds the note a checkout reads (Commit.Note).
const MaxNoteBytes = 64 << 10

// noteOf returns the note of commit in the notes fetched into s
// (refs/notes/commits), or "" when there is none. The note may be stored
// whole or fanned out in directories of two hex digits.
func noteOf(s storage.Storer, commit plumbing.Hash) (string, error) {
	ref, err := s.Reference(notesRef)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	tip, err := object.GetCommit(s, ref.Hash())
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", notesRef, err)
	}
	tree, err := tip.Tree()
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", notesRef, err)
	}
	hex := commit.String()
	for len(hex) > 0 {
		entry, err := tree.FindEntry(hex)
		if err == nil && entry.Mode.IsFile() {
			return readNoteBlob(s, entry.Hash)
		}
		if len(hex) <= 2 {
			return "", nil
		}
		sub, err := tree.Tree(hex[:2])
		if err != nil {
			return "", nil
		}
		tree, hex = sub, hex[2:]
	}
	return "", nil
}

// readNoteBlob reads a note's blob, cut at MaxNoteBytes.
func readNoteBlob(s storage.Storer, hash plumbing.Hash) (string, error) {
	blob, err := object.GetBlob(s, hash)
	if err != nil {
		return "", fmt.Errorf("reading note %s: %w", hash, err)
	}
	r, err := blob.Reader()
	if err != nil {
		return "", err
	}
	defer r.Close()
	var b strings.Builder
	if _, err := io.Copy(&b, io.LimitReader(r, MaxNoteBytes)); err != nil {
		return "", fmt.Errorf("reading note %s: %w", hash, err)
	}
	return b.String(), nil
}
