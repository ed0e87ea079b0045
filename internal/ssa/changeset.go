package ssa

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-dev/windlass/internal/inventory"
)

// Action is what an apply or a prune did to one object.
type Action string

const (
	// ActionCreated means the object did not exist and was created. An
	// object recreated because of an immutable field is reported as created
	// too: it is a new object with a new UID.
	ActionCreated Action = "created"
	// ActionConfigured means the object existed and was changed.
	ActionConfigured Action = "configured"
	// ActionUnchanged means the object already matched; nothing was sent.
	ActionUnchanged Action = "unchanged"
	// ActionSkipped means the object was left alone on purpose: ssa Ignore
	// or IfNotPresent, prune disabled, or owned by someone else.
	ActionSkipped Action = "skipped"
	// ActionDeleted means the object was deleted by a prune.
	ActionDeleted Action = "deleted"
)

// Change is the outcome for one object.
type Change struct {
	// Object identifies the object.
	Object inventory.ObjMetadata
	// Version is the API version the object was applied or found at.
	Version string
	// Action is what happened to it.
	Action Action
	// Fingerprint is the object's fingerprint as the apply left it (see
	// Manager.Verify); empty when unknown, and for prunes.
	Fingerprint string
	// Live is the object as the apply left it (the server's answer, or the
	// object read when nothing was written); nil for prunes and for
	// objects never read. Callers should not keep it longer than the
	// ChangeSet.
	Live *unstructured.Unstructured
}

// String returns "Kind/namespace/name action". It never holds object data.
func (c Change) String() string {
	return c.Object.Subject() + " " + string(c.Action)
}

// ChangeSet lists what happened to each object, in the order it happened.
type ChangeSet struct {
	// Entries holds one Change per object.
	Entries []Change
}

// add records one change.
func (cs *ChangeSet) add(obj inventory.ObjMetadata, version string, action Action) {
	cs.Entries = append(cs.Entries, Change{Object: obj, Version: version, Action: action})
}

// Applied returns the objects that the apply left in place (every action
// but deleted) with their fingerprints, for a later Verify.
func (cs *ChangeSet) Applied() []Applied {
	out := make([]Applied, 0, len(cs.Entries))
	for _, c := range cs.Entries {
		if c.Action != ActionDeleted {
			a := Applied{Entry: inventory.Entry{ID: c.Object.ID(), Version: c.Version}, Fingerprint: c.Fingerprint}
			if c.Live != nil {
				a.ResourceVersion = c.Live.GetResourceVersion()
			}
			out = append(out, a)
		}
	}
	return out
}

// Live returns the objects as the apply left them, by inventory ID.
func (cs *ChangeSet) Live() map[string]*unstructured.Unstructured {
	out := make(map[string]*unstructured.Unstructured, len(cs.Entries))
	for _, c := range cs.Entries {
		if c.Live != nil {
			out[c.Object.ID()] = c.Live
		}
	}
	return out
}

// Append adds the entries of other to cs.
func (cs *ChangeSet) Append(other *ChangeSet) {
	if other != nil {
		cs.Entries = append(cs.Entries, other.Entries...)
	}
}

// String returns one line per object, "Kind/namespace/name action", for
// every object including the unchanged and skipped ones.
func (cs *ChangeSet) String() string {
	return cs.lines(func(Action) bool { return true })
}

// Summary returns one line per object that was created, configured or
// deleted, in the form used for Kubernetes events
// ("Deployment/default/app configured"). It is empty when nothing changed.
func (cs *ChangeSet) Summary() string {
	return cs.lines(isChange)
}

// Changed reports whether any object was created, configured or deleted.
func (cs *ChangeSet) Changed() bool {
	for _, c := range cs.Entries {
		if isChange(c.Action) {
			return true
		}
	}
	return false
}

// Inventory returns the inventory entries of the objects that were applied
// or examined (every action but deleted), sorted by ID. Skipped objects are
// included: an object left alone still belongs to its source.
func (cs *ChangeSet) Inventory() []inventory.Entry {
	entries := make([]inventory.Entry, 0, len(cs.Entries))
	for _, c := range cs.Entries {
		if c.Action != ActionDeleted {
			entries = append(entries, inventory.Entry{ID: c.Object.ID(), Version: c.Version})
		}
	}
	return inventory.Merge(entries, nil)
}

func (cs *ChangeSet) lines(keep func(Action) bool) string {
	if cs == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range cs.Entries {
		if !keep(c.Action) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.String())
	}
	return b.String()
}

func isChange(a Action) bool {
	return a == ActionCreated || a == ActionConfigured || a == ActionDeleted
}
