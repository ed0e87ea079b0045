package git

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestCommitMetadata: a commit read from a checkout says in an artifact's
// metadata who wrote it, when, and its subject (cut when long); a partial
// commit says nothing; CommitInfoOf reads back what Metadata wrote.
func TestCommitMetadata(t *testing.T) {
	when := time.Date(2026, 11, 2, 10, 30, 0, 0, time.FixedZone("CET", 3600))
	ada := &Signature{Name: "Ada", Email: "ada@example.com", When: when}
	tests := []struct {
		name        string
		commit      *Commit
		wantSubject string
		wantNone    bool
	}{
		{name: "the subject is the first line", commit: &Commit{Author: ada, Message: "  Scale web to 3  \n\nbecause"},
			wantSubject: "Scale web to 3"},
		{name: "a long subject is cut", commit: &Commit{Author: ada, Message: strings.Repeat("é", 250)},
			wantSubject: strings.Repeat("é", 200) + "..."},
		{name: "a partial commit says nothing", commit: &Commit{Hash: "abc"}, wantNone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			md := tt.commit.Metadata()
			info, ok := CommitInfoOf(md)
			if tt.wantNone {
				g.Expect(md).To(BeNil())
				g.Expect(ok).To(BeFalse())
				return
			}
			g.Expect(md).To(HaveKeyWithValue(TimeMetadataKey, "2026-11-02T09:30:00Z"))
			g.Expect(ok).To(BeTrue())
			g.Expect(info).To(Equal(CommitInfo{Author: "Ada <ada@example.com>", Subject: tt.wantSubject, When: when.UTC()}))
		})
	}
}
