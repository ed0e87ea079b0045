package git

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Signature is the author, committer or tagger of a Git object.
type Signature struct {
	Name, Email string
	When        time.Time
}

// Tag is an annotated Git tag.
type Tag struct {
	// Hash is the hex SHA-1 of the tag object.
	Hash string
	// Name is the tag name, e.g. "v1.2.0".
	Name string
	// Author is the tagger.
	Author *Signature
	// Message is the tag message without its signature.
	Message string
	// Encoded is the tag object payload without the signature: the bytes the
	// signature was made over.
	Encoded []byte
	// Signature is the armored PGP or SSH signature; empty when unsigned.
	Signature string
}

// String returns the tag as a revision: "<name>@<hash>".
func (t *Tag) String() string {
	return t.Name + "@" + t.Hash
}

// Commit is a Git commit: the one a checkout resolved to, or a partial commit
// (Hash and Reference only) when the remote was unchanged.
type Commit struct {
	// Hash is the hex SHA-1 of the commit.
	Hash string
	// Reference is the full reference resolved, e.g. "refs/heads/main",
	// "refs/tags/v1.2.0" or "refs/pull/1/head"; empty for a bare commit.
	Reference string
	// Author and Committer of the commit.
	Author, Committer *Signature
	// Message is the full commit message.
	Message string
	// Encoded is the commit object payload without the signature: the bytes
	// the signature was made over.
	Encoded []byte
	// Signature is the armored PGP or SSH signature; empty when unsigned.
	Signature string
	// ReferencingTag is the annotated tag the checkout resolved through, if
	// any.
	ReferencingTag *Tag
	// Note is the commit's git note (refs/notes/commits), when the checkout
	// asked for notes (CheckoutOptions.Notes) and there is one, cut at
	// MaxNoteBytes.
	Note string
}

// String returns the revision of the commit in the GitOps Toolkit format:
// "main@sha1:<hex>" for a branch, "v1.2.0@sha1:<hex>" for a tag,
// "refs/pull/1/head@sha1:<hex>" for any other reference and "sha1:<hex>"
// for a commit without a reference.
func (c *Commit) String() string {
	return formatRevision(c.Reference, c.Hash)
}

// ShortMessage returns the subject of the commit (its first line), cut to 50
// characters with "..." appended when longer.
func (c *Commit) ShortMessage() string {
	subject, _, _ := strings.Cut(c.Message, "\n")
	subject = strings.TrimSpace(subject)
	if runes := []rune(subject); len(runes) > 50 {
		return string(runes[:50]) + "..."
	}
	return subject
}

// IsConcreteCommit reports whether c was read from a checkout. It is false
// for the partial commit Clone returns when LastObservedCommit still matched
// the remote and nothing was checked out.
func IsConcreteCommit(c Commit) bool {
	return c.Hash != "" && c.Author != nil && c.Committer != nil && len(c.Encoded) > 0
}

// formatRevision builds the revision string of a hash seen at a reference.
func formatRevision(ref, hash string) string {
	hash = strings.ToLower(hash)
	if ref == "" {
		return "sha1:" + hash
	}
	return shortRefName(ref) + "@sha1:" + hash
}

// shortRefName drops refs/heads/ and refs/tags/ from a reference; other
// references are kept whole.
func shortRefName(ref string) string {
	name := plumbing.ReferenceName(ref)
	if name.IsBranch() || name.IsTag() {
		return name.Short()
	}
	return ref
}

// newSignature converts a go-git signature.
func newSignature(s object.Signature) *Signature {
	return &Signature{Name: s.Name, Email: s.Email, When: s.When}
}

// newCommit converts a go-git commit seen at ref.
func newCommit(c *object.Commit, ref string) (*Commit, error) {
	var buf plumbing.MemoryObject
	if err := c.EncodeWithoutSignature(&buf); err != nil {
		return nil, fmt.Errorf("encoding commit %s: %w", c.Hash, err)
	}
	encoded, err := readAll(&buf)
	if err != nil {
		return nil, err
	}
	return &Commit{
		Hash:      c.Hash.String(),
		Reference: ref,
		Author:    newSignature(c.Author),
		Committer: newSignature(c.Committer),
		Message:   c.Message,
		Encoded:   encoded,
		Signature: c.PGPSignature,
	}, nil
}

// newTag converts a go-git annotated tag.
func newTag(t *object.Tag) (*Tag, error) {
	var buf plumbing.MemoryObject
	if err := t.EncodeWithoutSignature(&buf); err != nil {
		return nil, fmt.Errorf("encoding tag %s: %w", t.Name, err)
	}
	encoded, err := readAll(&buf)
	if err != nil {
		return nil, err
	}
	return &Tag{
		Hash:      t.Hash.String(),
		Name:      t.Name,
		Author:    newSignature(t.Tagger),
		Message:   t.Message,
		Encoded:   encoded,
		Signature: t.PGPSignature,
	}, nil
}

// readAll returns the content of an in-memory object.
func readAll(o *plumbing.MemoryObject) ([]byte, error) {
	r, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// The keys of an artifact's metadata (status.artifact.metadata) that say
// which commit it was made from: who wrote it, when, and its subject. They
// are a Windlass extension, shown by the web UI and `windlass trace`.
const (
	AuthorMetadataKey  = "windlass.dev/commit-author"
	TimeMetadataKey    = "windlass.dev/commit-time"
	SubjectMetadataKey = "windlass.dev/commit-subject"
)

// maxSubjectMetadataRunes bounds the subject kept in an artifact's
// metadata.
const maxSubjectMetadataRunes = 200

// Metadata returns the artifact metadata of a commit read from a checkout:
// its author ("Name <email>"), author time (RFC 3339) and subject; nil
// for a partial commit.
func (c *Commit) Metadata() map[string]string {
	if c == nil || c.Author == nil {
		return nil
	}
	subject, _, _ := strings.Cut(c.Message, "\n")
	subject = strings.TrimSpace(subject)
	if runes := []rune(subject); len(runes) > maxSubjectMetadataRunes {
		subject = string(runes[:maxSubjectMetadataRunes]) + "..."
	}
	return map[string]string{
		AuthorMetadataKey:  fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email),
		TimeMetadataKey:    c.Author.When.UTC().Format(time.RFC3339),
		SubjectMetadataKey: strings.ToValidUTF8(subject, ""),
	}
}

// CommitInfo is what an artifact's metadata says of the commit it was made
// from.
type CommitInfo struct {
	Author, Subject string
	When            time.Time
}

// CommitInfoOf reads the commit keys of an artifact's metadata; false when
// it has none.
func CommitInfoOf(metadata map[string]string) (CommitInfo, bool) {
	author := metadata[AuthorMetadataKey]
	if author == "" {
		return CommitInfo{}, false
	}
	when, _ := time.Parse(time.RFC3339, metadata[TimeMetadataKey])
	return CommitInfo{Author: author, Subject: metadata[SubjectMetadataKey], When: when}, true
}
