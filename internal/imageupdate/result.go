package imageupdate

import (
	"fmt"
	"sort"
	"strings"
)

// Change is one value a marker rewrote.
type Change struct {
	// OldValue is the value before the update, as YAML reads it (without
	// quotes).
	OldValue string
	// NewValue is the value written.
	NewValue string
	// Setter is the marker's reference as written, e.g. "apps:podinfo:tag".
	Setter string
}

// ObjectIdentifier names the object of the YAML document that holds a
// changed line. Fields the document does not give are empty; a document that
// is no Kubernetes object gives the zero value.
type ObjectIdentifier struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

// String returns "Kind namespace/name" (or "Kind name" without a namespace).
func (o ObjectIdentifier) String() string {
	name := o.Name
	if o.Namespace != "" {
		name = o.Namespace + "/" + name
	}
	return strings.TrimSpace(o.Kind + " " + name)
}

// ObjectChanges are the changes of one file, by object.
type ObjectChanges map[ObjectIdentifier][]Change

// SkippedFile is a YAML file ApplySetters did not read, and why.
type SkippedFile struct {
	// File is the path relative to the root, slash-separated.
	File   string
	Reason string
}

// Result is what ApplySetters changed. Its shape is the one commit message
// templates use: .Changed.FileChanges and .Changed.Objects.
type Result struct {
	// FileChanges are the changes by file (relative to the root,
	// slash-separated), then by object.
	FileChanges map[string]ObjectChanges
	// Skipped are the files not read: too large, or symbolic links.
	Skipped []SkippedFile

	// changes are all the changes in file, then line order.
	changes []located
}

// newResult builds a Result from changes in file, then line order.
func newResult(changes []located, skipped []SkippedFile) *Result {
	r := &Result{FileChanges: map[string]ObjectChanges{}, Skipped: skipped, changes: changes}
	for _, c := range changes {
		objects := r.FileChanges[c.file]
		if objects == nil {
			objects = ObjectChanges{}
			r.FileChanges[c.file] = objects
		}
		objects[c.object] = append(objects[c.object], c.change)
	}
	return r
}

// Empty tells whether nothing changed.
func (r *Result) Empty() bool { return r == nil || len(r.changes) == 0 }

// Objects returns the changes by object, across files. Two files holding the
// same object identifier (or documents without one) share an entry, their
// changes in file order.
func (r *Result) Objects() map[ObjectIdentifier][]Change {
	objects := map[ObjectIdentifier][]Change{}
	if r == nil {
		return objects
	}
	for _, c := range r.changes {
		objects[c.object] = append(objects[c.object], c.change)
	}
	return objects
}

// Changes returns every change, in file, then line order.
func (r *Result) Changes() []Change {
	if r == nil {
		return nil
	}
	var out []Change
	for _, c := range r.changes {
		out = append(out, c.change)
	}
	return out
}

// Policies returns the policies that changed something, sorted.
func (r *Result) Policies() []PolicyKey {
	if r == nil {
		return nil
	}
	seen := map[PolicyKey]bool{}
	var out []PolicyKey
	for _, c := range r.changes {
		if !seen[c.policy] {
			seen[c.policy] = true
			out = append(out, c.policy)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// MarkerError is a marker that cannot be applied: malformed, on a value it
// cannot set, or naming a policy whose latest ref lacks what it asks for.
type MarkerError struct {
	// File is the path relative to the root, slash-separated.
	File string
	// Line is 1-based; 0 when the error is about the whole file.
	Line   int
	Reason string
}

// Error returns "file:line: reason".
func (e *MarkerError) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Reason
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
}

// maxListedMarkers bounds how many markers MalformedMarkersError.Error names,
// so that a status condition stays readable.
const maxListedMarkers = 10

// MalformedMarkersError lists every marker of a run that cannot be applied.
// When ApplySetters returns it, no file was written.
type MalformedMarkersError struct {
	Markers []*MarkerError
}

// Error names the first markers and counts the rest.
func (e *MalformedMarkersError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d image policy marker(s) cannot be applied: ", len(e.Markers))
	for i, m := range e.Markers {
		if i == maxListedMarkers {
			fmt.Fprintf(&b, "; and %d more", len(e.Markers)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(m.Error())
	}
	return b.String()
}

// Unwrap returns the markers' errors, for errors.As.
func (e *MalformedMarkersError) Unwrap() []error {
	out := make([]error, len(e.Markers))
	for i, m := range e.Markers {
		out[i] = m
	}
	return out
}
