package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
)

// actions are what a page may ask of an object, and the patch each makes.
var actions = map[string]func(now time.Time) []byte{
	"reconcile": func(now time.Time) []byte {
		return fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, now.Format(time.RFC3339Nano))
	},
	"suspend": func(time.Time) []byte { return []byte(`{"spec":{"suspend":true}}`) },
	"resume":  func(time.Time) []byte { return []byte(`{"spec":{"suspend":false}}`) },
}

// newCSRFToken returns a random token that the pages' forms carry and
// every action must present: another site cannot read it, so it cannot
// make the browser act.
func newCSRFToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("ui: no randomness: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// act performs an action on an object, as the user of s.Actions, and
// returns to the object's page.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	if s.Actions == nil {
		s.fail(w, http.StatusForbidden, "this UI is read-only")
		return
	}
	if !s.sameOrigin(r) || subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) != 1 {
		s.fail(w, http.StatusForbidden, "the request did not come from this UI's page")
		return
	}
	patch, ok := actions[r.PathValue("action")]
	k, known := s.kind(r.PathValue("kind"))
	if !ok || !known || k.Static {
		s.fail(w, http.StatusNotFound, "no such action")
		return
	}
	obj := k.New()
	obj.SetNamespace(r.PathValue("namespace"))
	obj.SetName(r.PathValue("name"))
	err := s.Actions.Patch(r.Context(), obj, client.RawPatch(types.MergePatchType, patch(s.now())))
	page := "/object/" + url.PathEscape(k.Kind) + "/" + url.PathEscape(obj.GetNamespace()) + "/" + url.PathEscape(obj.GetName())
	switch {
	case apierrors.IsForbidden(err):
		s.fail(w, http.StatusForbidden, "The API server refused you: "+err.Error())
	case err != nil:
		s.fail(w, http.StatusBadGateway, fmt.Sprintf("%s failed: %v", r.PathValue("action"), err))
	default:
		http.Redirect(w, r, page+"?done="+url.QueryEscape(r.PathValue("action")), http.StatusSeeOther)
	}
}

// sameOrigin reports whether r comes from a page of this UI, as far as
// the browser says: a cross-site request is refused whatever it carries.
func (s *Server) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		return err == nil && u.Host == r.Host
	}
	return true
}
