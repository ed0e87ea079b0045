package ui

import (
	"context"
	"errors"
	"net/http"
	"time"

	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/inventory"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/redact"
)

// Bounds of a check of an inventory's health: how many objects it reads,
// and for how long.
const (
	maxHealthChecked = 500
	healthTimeout    = 15 * time.Second
)

// inventoryPage is what the health of an object's inventory shows.
type inventoryPage struct {
	Row     row
	Took    time.Duration
	Objects []inventoryObject
	// Unchecked counts the objects past maxHealthChecked.
	Unchecked int
	// Counts are how many objects are in each health.
	Counts map[health.Status]int
	Err    string
}

// inventoryObject is one object of an inventory with its health.
type inventoryObject struct {
	ID, Subject string
	Status      health.Status
	Message     string
	// Hidden says the user may not read the object.
	Hidden bool
	// Workload says the object runs pods, whose page the row links to.
	Workload bool
}

// inventory serves the health of every object a Kustomization or a
// HelmRelease applied, read from the cluster as the page's user when it
// is asked for: the cache holds none of them, and it is no live page.
func (s *Server) inventory(w http.ResponseWriter, r *http.Request) {
	k, obj, ok := s.pageObject(w, r)
	if !ok {
		return
	}
	live, err := s.liveClient(r)
	if err != nil {
		s.fail(w, http.StatusNotFound, "this UI cannot read the objects "+k.Kind+" applied")
		return
	}
	start := s.now()
	page := inventoryPage{Row: s.row(k, obj)}
	if page.Objects, page.Unchecked, err = s.checkInventory(r, live, inventoryEntries(obj)); err != nil {
		page.Err = redact.String(err.Error())
		if errors.Is(err, context.DeadlineExceeded) {
			page.Err = "reading the objects took too long"
		}
	}
	page.Counts = map[health.Status]int{}
	for _, o := range page.Objects {
		page.Counts[o.Status]++
	}
	page.Took = s.now().Sub(start).Round(time.Millisecond)
	s.render(w, "inventory", page)
}

// checkInventory returns the health of the entries, the first
// maxHealthChecked of them, with those the user may not read hidden, and
// how many it did not check.
func (s *Server) checkInventory(r *http.Request, live client.Client, entries []inventory.Entry) ([]inventoryObject, int, error) {
	unchecked := max(len(entries)-maxHealthChecked, 0)
	entries = entries[:len(entries)-unchecked]
	out := make([]inventoryObject, len(entries))
	var refs []health.ObjectRef
	var at []int
	for i, e := range entries {
		id, err := e.ObjMetadata()
		gvk, gvkErr := e.GroupVersionKind()
		out[i] = inventoryObject{ID: e.ID, Subject: e.ID}
		if err != nil || gvkErr != nil {
			out[i].Message = "not an inventory entry"
			continue
		}
		out[i].Subject = id.Subject()
		if !s.mayRead(r, e.ID) {
			out[i].Hidden = true
			continue
		}
		out[i].Workload = isWorkload(e.ID)
		refs = append(refs, health.ObjectRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: id.Namespace, Name: id.Name})
		at = append(at, i)
	}
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	result, err := health.NewChecker(live, live.RESTMapper()).Check(ctx, refs)
	if err != nil {
		return out, unchecked, err
	}
	for j, st := range result {
		out[at[j]].Status, out[at[j]].Message = st.Status, st.Message
	}
	return out, unchecked, nil
}

// liveClient returns the uncached client that reads as r's user: with
// sign-in, one that impersonates the user; without, the UI's one user's.
func (s *Server) liveClient(r *http.Request) (client.Client, error) {
	c, _, err := s.liveAs(r)
	return c, err
}

// liveAs returns what reads as r's user what the cache does not hold: an
// uncached client, and the pods' API (for their logs; nil when the UI has
// none). With sign-in, both impersonate the user; without, they are the
// UI's one user's.
func (s *Server) liveAs(r *http.Request) (client.Client, corev1client.PodsGetter, error) {
	if s.SignIn == nil {
		if s.Live == nil {
			return nil, nil, errors.New("no live reads")
		}
		return s.Live, s.Pods, nil
	}
	u, ok := userFrom(r.Context())
	if !ok || s.SignIn.Impersonate == nil {
		return nil, nil, errors.New("no live reads")
	}
	c, err := s.SignIn.Impersonate(u)
	if err != nil || s.SignIn.ImpersonatePods == nil {
		return c, nil, err
	}
	pods, err := s.SignIn.ImpersonatePods(u)
	return c, pods, err
}

// inventoryEntries returns the entries of the status.inventory of a
// Kustomization or a HelmRelease; none for other kinds.
func inventoryEntries(obj client.Object) []inventory.Entry {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		return kspec.Entries(o.Status.Inventory)
	case *helmv2.HelmRelease:
		return kspec.Entries(o.Status.Inventory)
	}
	return nil
}

// subjectOf names the object of an inventory ID as Kind/namespace/name;
// an ID that does not parse is shown as it is.
func subjectOf(id string) string {
	m, err := inventory.Entry{ID: id}.ObjMetadata()
	if err != nil {
		return id
	}
	return m.Subject()
}
