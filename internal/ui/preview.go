package ui

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/plan"
	"github.com/windlass-dev/windlass/internal/redact"
)

// Previewer tells what applying the next revision of an object would
// change in its cluster: the Kustomization controller's Preview.
type Previewer func(ctx context.Context, key types.NamespacedName) (*plan.Preview, error)

// maxPreviews bounds the previews the UI runs at once: each builds a
// revision and dry-runs every object of it.
const maxPreviews = 2

// previewPage is what the preview of an object's next revision shows.
type previewPage struct {
	Row     row
	Now     time.Time
	Took    time.Duration
	Preview *plan.Preview
	// Changes are the preview's changes, with the diffs the user may not
	// read left out.
	Changes []previewChange
	// Err says why there is no preview.
	Err string
}

// previewChange is one change of a preview as the page shows it.
type previewChange struct {
	plan.Change
	// Hidden says the user may not read the object, so its diff is not
	// shown.
	Hidden bool
}

// preview serves the page that shows what applying the object's next
// revision would change: a server-side dry-run, on request only (it is no
// live page: an update would run it again).
func (s *Server) preview(w http.ResponseWriter, r *http.Request) {
	previewer := s.Previews[r.PathValue("kind")]
	if previewer == nil {
		s.fail(w, http.StatusNotFound, "no preview of "+r.PathValue("kind")+" here")
		return
	}
	k, obj, ok := s.pageObject(w, r)
	if !ok {
		return
	}
	page := previewPage{Row: s.row(k, obj), Now: s.now()}
	select {
	case s.previews <- struct{}{}:
		defer func() { <-s.previews }()
	default:
		s.fail(w, http.StatusServiceUnavailable, "other previews are running: try again in a moment")
		return
	}
	p, err := previewer(r.Context(), types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()})
	page.Took = s.now().Sub(page.Now).Round(time.Millisecond)
	if err != nil {
		page.Err = previewError(err)
	} else {
		page.Preview, page.Changes = p, s.readableChanges(r, p.Changes)
	}
	s.render(w, "preview", page)
}

// previewError says why a preview failed, with the credentials of any URL
// in it removed, as a condition would say it.
func previewError(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "the preview took too long"
	}
	return redact.String(err.Error())
}

// readableChanges returns changes with the diffs of the objects the
// signed-in user may not read hidden: the dry-run runs as the
// Kustomization's identity, which may read more than the user.
func (s *Server) readableChanges(r *http.Request, changes []plan.Change) []previewChange {
	out := make([]previewChange, 0, len(changes))
	for _, c := range changes {
		pc := previewChange{Change: c}
		if c.Diff != "" && !s.mayRead(r, c.ID) {
			pc.Diff, pc.Hidden = "", true
		}
		out = append(out, pc)
	}
	return out
}

// mayRead reports whether the signed-in user may get the object of an
// inventory ID; without sign-in the UI serves one user, who may.
func (s *Server) mayRead(r *http.Request, id string) bool {
	reader, isAccess := s.Reader.(*accessReader)
	if s.SignIn == nil || !isAccess {
		return true
	}
	u, ok := userFrom(r.Context())
	meta, err := inventory.Entry{ID: id}.ObjMetadata()
	if !ok || err != nil {
		return false
	}
	mapping, err := reader.mapper.RESTMapping(schema.GroupKind{Group: meta.Group, Kind: meta.Kind})
	if err != nil {
		return false
	}
	allowed, err := reader.access.may(r.Context(), u, "get", mapping.Resource.GroupResource(), meta.Namespace, meta.Name)
	if err != nil && !apierrors.IsForbidden(err) {
		s.Log.Error(err, "Reviewing a user's access", "user", u.Name, "object", id)
	}
	return err == nil && allowed
}

// diffLine is one line of a unified diff, with the class that colours it:
// "add", "remove", "hunk" or "keep".
type diffLine struct {
	Class, Text string
}

// diffLines splits a unified diff into its lines.
func diffLines(diff string) []diffLine {
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	out := make([]diffLine, 0, len(lines))
	for _, l := range lines {
		class := "keep"
		switch {
		case strings.HasPrefix(l, "@@"):
			class = "hunk"
		case strings.HasPrefix(l, "+"):
			class = "add"
		case strings.HasPrefix(l, "-"):
			class = "remove"
		}
		out = append(out, diffLine{Class: class, Text: l})
	}
	return out
}
