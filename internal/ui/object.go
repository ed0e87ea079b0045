package ui

import (
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
)

// objectPage is what the page of one object shows.
type objectPage struct {
	Row        row
	Generation int64
	Created    time.Time
	Now        time.Time
	Conditions []metav1.Condition
	// Revisions are what the status says of revisions: the artifact's,
	// the last applied and the last attempted, the last handled request.
	Revisions []field
	// Inventory lists the objects a Kustomization or a HelmRelease
	// applied, by their inventory ID.
	Inventory []string
	// History lists a HelmRelease's releases, newest first.
	History []release
	// Applied lists the revisions a Kustomization applied, newest first.
	Applied []appliedRevision
	// Trace is the way back to the commit: the sources the object is made
	// of.
	Trace []traceStep
	// Actions are the actions the page offers, with the token they carry;
	// none when the UI is read-only.
	Actions []string
	CSRF    string
	// Done is the action just performed.
	Done string
	// Gate is the state, the week ahead and the consumers of a Gate.
	Gate *gateView
	// Pin is an ImagePolicy's pinned tag; Pinnable says the page offers
	// to pin it.
	Pin      string
	Pinnable bool
	// Previewable says the page links to the preview of the next
	// revision.
	Previewable bool
	// LiveReads says the page links to the health of the inventory.
	LiveReads bool
	// Events are the object's latest events; NoEvents says this UI keeps
	// none.
	Events   []recentEvent
	NoEvents bool
	// Logs are the latest lines the controllers logged about the object.
	Logs logList
}

// object serves the page of one object.
func (s *Server) object(w http.ResponseWriter, r *http.Request) {
	k, obj, ok := s.pageObject(w, r)
	if !ok {
		return
	}
	key := client.ObjectKeyFromObject(obj)
	page := objectPage{Row: s.row(k, obj), Generation: obj.GetGeneration(), Created: obj.GetCreationTimestamp().Time,
		Now: s.now(), Conditions: obj.GetConditions()}
	if s.acts() && k.Reconciled() {
		page.Actions, page.CSRF = s.actionsFor(r, obj), s.csrfFor(r)
		if done := r.URL.Query().Get("done"); actions[done] != nil || gateActions[done] || pinActions[done] {
			page.Done = done
		}
	}
	if policy, isPolicy := obj.(*imagev1.ImagePolicy); isPolicy {
		page.Pin, page.Pinnable = policy.GetAnnotations()[imagev1.PinAnnotation], page.Actions != nil
	}
	page.Previewable = s.Previews[k.Kind] != nil
	page.LiveReads = s.Live != nil || (s.SignIn != nil && s.SignIn.Impersonate != nil)
	page.NoEvents = s.Events == nil
	page.Logs = s.logsAbout(k.Kind, key.Namespace, key.Name)
	page.Events = s.recentEvents(r, objectEvents, func(e recentEvent) bool {
		return e.Kind == k.Kind && e.Namespace == key.Namespace && e.Name == key.Name
	})
	if g, isGate := obj.(*gatingv1alpha1.Gate); isGate {
		page.Gate = s.gateView(r, k, g, page.Now)
	}
	if status, err := statusOf(obj); err == nil {
		page.Revisions = revisionsOf(status)
	}
	page.History, page.Applied, page.Inventory = releasesOf(obj), appliedRevisionsOf(obj), inventoryIDs(obj)
	page.Trace = s.trace(r, obj, k.Kind)
	s.render(w, "object", page)
}

// pageObject reads the object a page is about, by the kind, namespace and
// name of its path; false when there is none, which it has answered.
func (s *Server) pageObject(w http.ResponseWriter, r *http.Request) (kinds.Kind, object, bool) {
	k, ok := s.kind(r.PathValue("kind"))
	if !ok {
		s.fail(w, http.StatusNotFound, "no kind "+r.PathValue("kind"))
		return k, nil, false
	}
	got := k.New()
	key := client.ObjectKey{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	if err := s.Reader.Get(r.Context(), key, got); err != nil {
		if apierrors.IsNotFound(err) {
			s.fail(w, http.StatusNotFound, fmt.Sprintf("no %s %s", k.Kind, key))
			return k, nil, false
		}
		s.Log.Error(err, "Reading an object", "kind", k.Kind, "object", key)
		s.fail(w, http.StatusInternalServerError, "reading the object failed")
		return k, nil, false
	}
	obj, ok := got.(object)
	if !ok {
		s.fail(w, http.StatusNotFound, "no status for "+k.Kind)
	}
	return k, obj, ok
}

// kind returns the kind of the pages called name.
func (s *Server) kind(name string) (kinds.Kind, bool) {
	for _, k := range s.Kinds {
		if k.Kind == name {
			return k, true
		}
	}
	return kinds.Kind{}, false
}

// statusOf returns obj's status as a generic tree.
func statusOf(obj client.Object) (map[string]any, error) {
	tree, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	status, _, err := unstructured.NestedMap(tree, "status")
	return status, err
}

// actionsFor returns the actions the page of obj offers: reconcile, with
// its source too when it has one, and suspend or resume.
func (s *Server) actionsFor(r *http.Request, obj object) []string {
	out := []string{"reconcile"}
	if s.sourceOf(r, obj) != nil {
		out = append(out, reconcileWithSource)
	}
	if obj.IsSuspended() {
		return append(out, "resume")
	}
	return append(out, "suspend")
}

// field is a named value of a status.
type field struct {
	Name, Value string
}

// revisionFields are the status fields that say which revision an object
// is at, by their path, with the name the page gives them.
var revisionFields = []struct {
	name string
	path []string
}{
	{"Artifact", []string{"artifact", "revision"}},
	{"Artifact digest", []string{"artifact", "digest"}},
	{"Applied", []string{"lastAppliedRevision"}},
	{"Attempted", []string{"lastAttemptedRevision"}},
	{"Last pushed commit", []string{"lastPushCommit"}},
	{"Latest image tag", []string{"latestRef", "tag"}},
	{"Last handled request", []string{"lastHandledReconcileAt"}},
}

// revisionsOf returns the revision fields status has.
func revisionsOf(status map[string]any) []field {
	var out []field
	for _, f := range revisionFields {
		if v, found, _ := unstructured.NestedString(status, f.path...); found && v != "" {
			out = append(out, field{Name: f.name, Value: v})
		}
	}
	return out
}
