package imageupdate

import (
	"strings"

	"sigs.k8s.io/yaml"
)

// NoteHeader starts the git note of every commit an ImageUpdateAutomation
// makes; the rest of the note is an UpdateNote in YAML.
const NoteHeader = "windlass image update\n"

// NoteMetadataKey is the key of a GitRepository artifact's metadata that
// holds the note of its commit, when the commit is an automated image
// update: what is applied says why.
const NoteMetadataKey = "windlass.dev/image-update"

// MaxNoteMetadataBytes bounds the note kept in an artifact's metadata,
// which is stored in the object's status.
const MaxNoteMetadataBytes = 4 << 10

// UpdateNote is the git note of an automated commit: what it changed and
// why, readable with `git notes show` and `windlass trace`.
type UpdateNote struct {
	// Automation is the namespace/name of the ImageUpdateAutomation.
	Automation string `json:"automation"`
	// Policies are the policies whose images the commit writes.
	Policies []NotePolicy `json:"policies"`
	// Changes are the values the commit rewrote.
	Changes []NoteChange `json:"changes"`
}

// NotePolicy is a policy of an update and why it elects its image.
type NotePolicy struct {
	// Name is the policy's namespace/name.
	Name string `json:"name"`
	// Image is the image it elects.
	Image string `json:"image"`
	// Previous is the image it elected before, if any.
	Previous string `json:"previous,omitempty"`
	// Reason says why: its rule, or a pin.
	Reason string `json:"reason"`
}

// NoteChange is one value rewritten.
type NoteChange struct {
	// File is the file's path in the repository.
	File string `json:"file"`
	// Object is the Kind/namespace/name of the YAML object, when it has
	// one.
	Object string `json:"object,omitempty"`
	// Setter is the marker's reference, such as "apps:podinfo:tag".
	Setter string `json:"setter"`
	// OldValue and NewValue are the value before and after.
	OldValue string `json:"oldValue"`
	NewValue string `json:"newValue"`
}

// Note writes n as a note: NoteHeader, then YAML.
func (n UpdateNote) Note() (string, error) {
	out, err := yaml.Marshal(n)
	if err != nil {
		return "", err
	}
	return NoteHeader + string(out), nil
}

// ParseNote reads a note that Note wrote; ok is false for any other note.
func ParseNote(note string) (n UpdateNote, ok bool) {
	body, found := strings.CutPrefix(note, NoteHeader)
	if !found {
		return UpdateNote{}, false
	}
	if err := yaml.Unmarshal([]byte(body), &n); err != nil {
		return UpdateNote{}, false
	}
	return n, true
}

// IsNote reports whether a git note is one an ImageUpdateAutomation wrote.
func IsNote(note string) bool {
	return strings.HasPrefix(note, NoteHeader)
}

// Summary says in one line what the update changed: the automation and
// each policy's image before and after, such as "image update by
// ImageUpdateAutomation/apps/fleet: ghcr.io/org/web:1.0.0 -> 1.1.0".
func (n UpdateNote) Summary() string {
	changes := make([]string, 0, len(n.Policies))
	for _, p := range n.Policies {
		if p.Previous == "" {
			changes = append(changes, p.Image)
			continue
		}
		changes = append(changes, p.Previous+" -> "+strings.TrimPrefix(p.Image, imageName(p.Previous)+":"))
	}
	return "image update by ImageUpdateAutomation/" + n.Automation + ": " + strings.Join(changes, ", ")
}

// imageName returns the name of an image reference name:tag[@digest].
func imageName(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}
