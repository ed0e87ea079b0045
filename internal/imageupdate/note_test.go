package imageupdate

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestNoteRoundTrip: a note reads back as written, any other note is not
// one, and its summary names the images before and after.
func TestNoteRoundTrip(t *testing.T) {
	g := NewWithT(t)
	n := UpdateNote{
		Automation: "apps/fleet",
		Policies: []NotePolicy{
			{Name: "apps/web", Image: "localhost:5000/org/web:1.1.0", Previous: "localhost:5000/org/web:1.0.0", Reason: "latest by policy: semver ^1.0"},
			{Name: "apps/api", Image: "ghcr.io/org/api:2.0.0@sha256:ab", Previous: "ghcr.io/org/api:1.9.0@sha256:cd", Reason: "pinned"},
			{Name: "apps/new", Image: "ghcr.io/org/new:1.0.0", Reason: "latest by policy: semver *"},
		},
		Changes: []NoteChange{{File: "apps/web.yaml", Object: "Deployment/apps/web", Setter: "apps:web",
			OldValue: "localhost:5000/org/web:1.0.0", NewValue: "localhost:5000/org/web:1.1.0"}},
	}
	text, err := n.Note()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(IsNote(text)).To(BeTrue())
	back, ok := ParseNote(text)
	g.Expect(ok).To(BeTrue())
	g.Expect(back).To(Equal(n))
	g.Expect(n.Summary()).To(Equal("image update by ImageUpdateAutomation/apps/fleet: localhost:5000/org/web:1.0.0 -> 1.1.0, " +
		"ghcr.io/org/api:1.9.0@sha256:cd -> 2.0.0@sha256:ab, ghcr.io/org/new:1.0.0"))

	for _, other := range []string{"", "a note of another tool\n", NoteHeader + "{not: [yaml"} {
		_, ok := ParseNote(other)
		g.Expect(ok).To(BeFalse(), other)
	}
}
