package ui

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/imageupdate"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/reconcile/gate"
)

// actions are what a page may ask of an object, and the patch each makes.
var actions = map[string]func(k kinds.Kind, now time.Time) []byte{
	"reconcile":         reconcilePatch,
	reconcileWithSource: reconcilePatch,
	"suspend":           func(k kinds.Kind, _ time.Time) []byte { return k.SuspendPatch(true) },
	"resume":            func(k kinds.Kind, _ time.Time) []byte { return k.SuspendPatch(false) },
}

// reconcilePatch is a reconcile request made at now.
func reconcilePatch(_ kinds.Kind, now time.Time) []byte {
	return fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, now.Format(time.RFC3339Nano))
}

// pinActions are what a page may ask of an ImagePolicy, beside actions:
// pin it to a tag (as `windlass image set`), or unpin it.
var pinActions = map[string]bool{"pin": true, "unpin": true}

// pinPatch returns the patch of a pin action: the pin annotation (removed
// by unpin) and a reconcile request. The automations that select the
// policy follow its new latest tag.
func pinPatch(action, tag string, now time.Time) ([]byte, error) {
	var pin any // nil removes the annotation
	if action == "pin" {
		if !imageupdate.IsTag(tag) {
			return nil, fmt.Errorf("tag %q: write an image tag such as 6.5.0 (letters, digits, _, . and -)", tag)
		}
		pin = tag
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		imagev1.PinAnnotation: pin, meta.ReconcileRequestAnnotation: now.Format(time.RFC3339Nano)}}})
}

// errNoSuchAction is an action the kind does not have.
var errNoSuchAction = errors.New("no such action")

// gateActions are what a page may ask of a Gate, beside actions.
var gateActions = map[string]bool{"open": true, "close": true}

// patchOf returns the patch of the action r asks of an object of kind k.
func (s *Server) patchOf(k kinds.Kind, r *http.Request) ([]byte, error) {
	name := r.PathValue("action")
	if patch, ok := actions[name]; ok {
		return patch(k, s.now()), nil
	}
	if k.Kind == imagev1.ImagePolicyKind && pinActions[name] {
		return pinPatch(name, strings.TrimSpace(r.PostFormValue("tag")), s.now())
	}
	if k.Kind != gatingv1alpha1.GateKind || !gateActions[name] {
		return nil, errNoSuchAction
	}
	var current gatingv1alpha1.Gate
	key := client.ObjectKey{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	if err := s.Reader.Get(r.Context(), key, &current); err == nil && current.Spec.Suspend {
		return nil, fmt.Errorf("the gate %s is suspended, so it takes no request: resume it first", key)
	}
	req := gate.NewRequest(name == "open", s.now())
	req.Reason = strings.TrimSpace(r.PostFormValue("reason"))
	if d := strings.TrimSpace(r.PostFormValue("for")); d != "" {
		window, err := time.ParseDuration(d)
		if err != nil || window <= 0 {
			return nil, fmt.Errorf("for %q: write a positive duration such as 30m or 2h", d)
		}
		req.Window = window
	}
	return req.Patch()
}

// act performs an action on an object, as the page's user, and returns
// to the object's page.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	if !s.acts() {
		s.fail(w, http.StatusForbidden, "this UI is read-only")
		return
	}
	if !s.sameOrigin(r) || subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrfFor(r))) != 1 {
		s.fail(w, http.StatusForbidden, "the request did not come from this UI's page")
		return
	}
	k, known := s.kind(r.PathValue("kind"))
	if !known || !k.Reconciled() {
		s.fail(w, http.StatusNotFound, "no such action")
		return
	}
	patch, err := s.patchOf(k, r)
	if errors.Is(err, errNoSuchAction) {
		s.fail(w, http.StatusNotFound, err.Error())
		return
	} else if err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	obj := k.New()
	obj.SetNamespace(r.PathValue("namespace"))
	obj.SetName(r.PathValue("name"))
	err = nil
	if r.PathValue("action") == reconcileWithSource {
		err = s.reconcileSource(r, k, obj, patch)
	}
	if err == nil {
		err = s.patchAs(r, obj, patch)
	}
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

// reconcileWithSource asks the object's source to reconcile, then the
// object: what the source fetches is then applied at once.
const reconcileWithSource = "reconcile-with-source"

// reconcileSource patches, as r's user, the source of the object of kind
// k named by obj (read from the cache) with a reconcile request.
func (s *Server) reconcileSource(r *http.Request, k kinds.Kind, obj client.Object, patch []byte) error {
	current := k.New()
	if err := s.Reader.Get(r.Context(), client.ObjectKeyFromObject(obj), current); err != nil {
		return err
	}
	ref := s.sourceOf(r, current)
	if ref == nil {
		return fmt.Errorf("%s %s/%s has no source to reconcile", k.Kind, obj.GetNamespace(), obj.GetName())
	}
	sk, known := s.kind(ref.Kind)
	if !known {
		return fmt.Errorf("the source kind %s is not served", ref.Kind)
	}
	source := sk.New()
	source.SetNamespace(ref.Namespace)
	source.SetName(ref.Name)
	return s.patchAs(r, source, patch)
}

// patchAs patches obj with a merge patch as r's user.
func (s *Server) patchAs(r *http.Request, obj client.Object, patch []byte) error {
	actor, err := s.actor(r, obj)
	if err != nil {
		return err
	}
	return actor.Patch(r.Context(), obj, client.RawPatch(types.MergePatchType, patch))
}

// acts reports whether the pages offer actions.
func (s *Server) acts() bool {
	if s.SignIn != nil {
		return s.SignIn.Impersonate != nil && !s.SignIn.ReadOnly
	}
	return s.Actions != nil
}

// actor returns the client that patches obj for r: with sign-in, one
// that acts as the signed-in user, once a SubjectAccessReview says the
// user may patch obj (a Forbidden error otherwise); else Actions.
func (s *Server) actor(r *http.Request, obj client.Object) (client.Client, error) {
	if s.SignIn == nil {
		return s.Actions, nil
	}
	u, ok := userFrom(r.Context())
	reader, isAccess := s.Reader.(*accessReader)
	if !ok || !isAccess {
		return nil, errors.New("no signed-in user")
	}
	resource, err := reader.resourceOf(obj)
	if err != nil {
		return nil, err
	}
	allowed, err := reader.access.may(r.Context(), u, "patch", resource, obj.GetNamespace(), obj.GetName())
	if err != nil {
		return nil, err
	}
	if !allowed {
		return nil, apierrors.NewForbidden(resource, obj.GetName(),
			fmt.Errorf("user %q cannot patch %s in the namespace %q", u.Name, resource, obj.GetNamespace()))
	}
	return s.SignIn.Impersonate(u)
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
