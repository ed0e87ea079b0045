package ui

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/state"
)

// maxRows bounds the objects the overview lists: the counts above it
// always cover every object.
const maxRows = 500

// overviewEvents and objectEvents are how many of the latest events the
// overview and an object's page show.
const (
	overviewEvents = 20
	objectEvents   = 50
)

// row is one object as the overview lists it.
type row struct {
	Kind, Namespace, Name string
	State                 state.State
	// Reason and Message are those of the Ready condition, or of what
	// holds the object back.
	Reason, Message string
	// Shard is the replica that holds the object, when the replicas share
	// the objects (controller --shards=auto).
	Shard string
}

// kindCount is how many objects of a kind stand in each state.
type kindCount struct {
	Kind   string
	Total  int
	Counts map[state.State]int
}

// filter selects the objects the overview lists.
type filter struct {
	Namespace, Kind, Query, Shard string
	State                         state.State
}

// matches reports whether r passes f.
func (f filter) matches(r row) bool {
	return (f.Namespace == "" || r.Namespace == f.Namespace) && (f.Kind == "" || r.Kind == f.Kind) &&
		(f.State == "" || r.State == f.State) && (f.Query == "" || strings.Contains(r.Name, f.Query)) &&
		(f.Shard == "" || r.Shard == f.Shard)
}

// overviewPage is what the overview shows.
type overviewPage struct {
	States     []state.State
	Counts     []kindCount
	Attention  []row
	Held       []row
	Rows       []row
	More       int
	Filter     filter
	Kinds      []string
	Namespaces []string
	// Shards are the replicas that hold the objects, when the replicas
	// share them: the objects' table then says which holds each.
	Shards []string
	// Events are the latest events; NoEvents says this UI keeps none
	// (it runs apart from the controllers).
	Events   []recentEvent
	NoEvents bool
	Now      time.Time
}

// overview serves the overview.
func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page := overviewPage{States: state.All, Filter: filter{Namespace: q.Get("namespace"), Kind: q.Get("kind"),
		State: state.State(q.Get("state")), Query: strings.TrimSpace(q.Get("q")), Shard: q.Get("shard")}}
	namespaces, shards := map[string]bool{}, map[string]bool{}
	for _, k := range s.Kinds {
		rows, err := s.rows(r, k)
		if err != nil {
			s.Log.Error(err, "Listing objects for the overview", "kind", k.Kind)
			s.fail(w, http.StatusInternalServerError, "listing "+k.Kind+" failed")
			return
		}
		page.Kinds = append(page.Kinds, k.Kind)
		count := kindCount{Kind: k.Kind, Total: len(rows), Counts: map[state.State]int{}}
		for _, row := range rows {
			count.Counts[row.State]++
			namespaces[row.Namespace] = true
			if row.Shard != "" {
				shards[row.Shard] = true
			}
			switch row.State {
			case state.Failing, state.Stalled:
				page.Attention = append(page.Attention, row)
			case state.Held:
				page.Held = append(page.Held, row)
			}
			if page.Filter.matches(row) {
				if len(page.Rows) < maxRows {
					page.Rows = append(page.Rows, row)
				} else {
					page.More++
				}
			}
		}
		page.Counts = append(page.Counts, count)
	}
	page.Namespaces, page.Shards = slices.Sorted(maps.Keys(namespaces)), slices.Sorted(maps.Keys(shards))
	page.Now, page.NoEvents = s.now(), s.Events == nil
	page.Events = s.recentEvents(r, overviewEvents, func(e recentEvent) bool {
		return page.Filter.Namespace == "" || e.Namespace == page.Filter.Namespace
	})
	s.render(w, "overview", page)
}

// rows lists the objects of kind k as rows.
func (s *Server) rows(r *http.Request, k kinds.Kind) ([]row, error) {
	list := k.NewList()
	if err := s.Reader.List(r.Context(), list); err != nil {
		return nil, err
	}
	items := k.Items(list)
	out := make([]row, 0, len(items))
	for _, item := range items {
		obj, ok := item.(object)
		if !ok {
			continue
		}
		out = append(out, s.row(k, obj))
	}
	return out, nil
}

// row returns the row of obj, of kind k, with the replica that holds it.
func (s *Server) row(k kinds.Kind, obj object) row {
	r := rowOf(k, obj)
	if s.Holder != nil {
		r.Shard = s.Holder(obj)
	}
	return r
}

// rowOf returns the row of obj, of kind k.
func rowOf(k kinds.Kind, obj object) row {
	r := row{Kind: k.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), State: state.Of(obj, k.Static)}
	if c := conditions.Get(obj, meta.ReadyCondition); c != nil {
		r.Reason, r.Message = c.Reason, c.Message
	}
	if r.State == state.Held {
		r.Reason, r.Message = meta.GateClosedReason, conditions.HeldByGate(obj, obj.GetGeneration())
	}
	return r
}

// object is an object of a Windlass kind.
type object = state.Object
