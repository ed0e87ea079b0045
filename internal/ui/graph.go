package ui

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/state"
)

// The graph page shows what feeds what: gates, sources, the appliers
// (Kustomizations and HelmReleases) that apply them, in the order of
// their dependencies, and the objects they applied. This file builds the
// graph's model from the objects of the cache; graphlayout.go lays it
// out and turns both into the page.

// The bounds that keep the graph readable at 1,000 applications.
const (
	// maxGraphAppliers bounds the appliers the graph starts from; their
	// dependencies are shown besides.
	maxGraphAppliers = 300
	// maxGraphObjects bounds the applied objects shown one by one; the
	// others are counted.
	maxGraphObjects = 2000
)

// The groups of nodes, each a band of columns, left to right.
const (
	groupGates = iota
	groupSources
	groupAppliers
	groupObjects
)

// graphGroups are the kinds the graph shows, with their group, from the
// registry: Gates; the kinds of the source controller (sources, and what
// makes artifacts out of them); the kinds with dependsOn (appliers).
var graphGroups = graphGroupsOf(kinds.All)

// graphGroupsOf returns the group of each kind of ks the graph shows.
func graphGroupsOf(ks []kinds.Kind) map[string]int {
	out := map[string]int{}
	for _, k := range ks {
		switch {
		case k.Kind == gatingv1alpha1.GateKind:
			out[k.Kind] = groupGates
		case k.Controller == kinds.SourceController:
			out[k.Kind] = groupSources
		case k.DependsOn != nil:
			out[k.Kind] = groupAppliers
		}
	}
	return out
}

// What an edge says of its ends.
const (
	// relSource: From is the source of To.
	relSource = "source"
	// relDependsOn: To depends on From.
	relDependsOn = "dependsOn"
	// relGate: the gate From holds To back while it is closed.
	relGate = "gate"
	// relApplies: From applied To.
	relApplies = "applies"
)

// graphRef names an object.
type graphRef struct {
	Kind, Namespace, Name string
}

// String returns "Kind/namespace/name".
func (r graphRef) String() string { return r.Kind + "/" + r.Namespace + "/" + r.Name }

// graphObject is an object the cache holds, with its kind.
type graphObject struct {
	kind kinds.Kind
	obj  object
}

// graphModel is what the graph shows: its nodes and the edges between
// them.
type graphModel struct {
	Nodes []graphNode
	Edges []graphEdge
}

// graphNode is one node: an object, a reference to one that is not
// there, an applied object, or the applied objects of an applier counted.
type graphNode struct {
	// Key identifies the node among the others.
	Key                   string
	Group                 int
	Kind, Namespace, Name string
	// State is the object's; empty for what the graph cannot tell.
	State  state.State
	Reason string
	// Note says more: a gate open or closed, an object not found, a count.
	Note string
	// Href is the node's page; empty for none.
	Href string
}

// graphEdge joins From to To, indexes of nodes: From comes first.
type graphEdge struct {
	From, To int
	// Rel is what the edge says: relSource, relDependsOn, relGate or
	// relApplies.
	Rel string
	// Closed marks the edge of a gate that is closed.
	Closed bool
}

// graphFilter selects what the graph shows.
type graphFilter struct {
	Namespace, Query string
	// Objects shows the applied objects one by one.
	Objects bool
}

// graph serves the graph.
func (s *Server) graph(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := graphFilter{Namespace: q.Get("namespace"), Query: strings.TrimSpace(q.Get("q")), Objects: q.Get("objects") == "1"}
	objs, err := s.graphObjects(r)
	if err != nil {
		s.Log.Error(err, "Listing objects for the graph")
		s.fail(w, http.StatusInternalServerError, "listing the objects failed")
		return
	}
	b := newGraphBuilder(objs, s.Kinds)
	total, shown := b.build(f)
	s.render(w, "graph", newGraphPage(f, b, total, shown))
}

// graphObjects reads the objects of the kinds the graph shows, those of
// s.Kinds, from the Reader.
func (s *Server) graphObjects(r *http.Request) (map[graphRef]graphObject, error) {
	out := map[graphRef]graphObject{}
	for _, k := range s.Kinds {
		if _, ok := graphGroups[k.Kind]; !ok {
			continue
		}
		list := k.NewList()
		if err := s.Reader.List(r.Context(), list); err != nil {
			return nil, err
		}
		for _, item := range k.Items(list) {
			if obj, ok := item.(object); ok {
				out[graphRef{k.Kind, obj.GetNamespace(), obj.GetName()}] = graphObject{kind: k, obj: obj}
			}
		}
	}
	return out, nil
}

// graphBuilder builds the model of the graph from the objects.
type graphBuilder struct {
	objs map[graphRef]graphObject
	// served are the kinds the UI reads and has pages for.
	served map[string]bool
	model  graphModel
	index  map[string]int
	edges  map[graphEdge]bool
	// Collapsed says that the applied objects were asked for one by one,
	// and some were counted instead.
	Collapsed bool
}

// newGraphBuilder returns a builder of the graph of objs.
func newGraphBuilder(objs map[graphRef]graphObject, served []kinds.Kind) *graphBuilder {
	b := &graphBuilder{objs: objs, served: map[string]bool{}, index: map[string]int{}, edges: map[graphEdge]bool{}}
	for _, k := range served {
		b.served[k.Kind] = true
	}
	return b
}

// build adds what f selects: the appliers that match (at most
// maxGraphAppliers) with what they need, the sources and gates nothing
// uses when f names no name and nothing was left out, and the applied
// objects. It returns how many appliers match and how many are shown.
func (b *graphBuilder) build(f graphFilter) (total, shown int) {
	roots := b.appliers(f)
	total = len(roots)
	roots = roots[:min(total, maxGraphAppliers)]
	for _, r := range roots {
		b.node(r, groupAppliers)
	}
	if f.Query == "" && len(roots) == total {
		for _, r := range b.sorted(func(r graphRef, group int) bool {
			return group != groupAppliers && (f.Namespace == "" || r.Namespace == f.Namespace)
		}) {
			b.node(r, graphGroups[r.Kind])
		}
	}
	b.inventories(f.Objects)
	return total, len(roots)
}

// appliers returns the appliers f selects, by namespace and name.
func (b *graphBuilder) appliers(f graphFilter) []graphRef {
	return b.sorted(func(r graphRef, group int) bool {
		return group == groupAppliers && (f.Namespace == "" || r.Namespace == f.Namespace) &&
			(f.Query == "" || strings.Contains(r.Name, f.Query))
	})
}

// sorted returns the objects keep selects, by namespace, name and kind.
func (b *graphBuilder) sorted(keep func(r graphRef, group int) bool) []graphRef {
	var out []graphRef
	for r := range b.objs {
		if keep(r, graphGroups[r.Kind]) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b graphRef) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(a.Kind, b.Kind))
	})
	return out
}

// node returns the node of the object r, added in group with its
// sources, dependencies and gates when it is not there yet.
func (b *graphBuilder) node(r graphRef, group int) int {
	if i, ok := b.index[r.String()]; ok {
		return i
	}
	i := b.add(b.objectNode(r, group))
	o, ok := b.objs[r]
	if !ok {
		return i
	}
	for _, src := range sourcesOf(o.obj, b.has) {
		if src.Kind == "" || src.Name == "" {
			continue // not valid: the API server refuses it
		}
		b.link(b.node(src, groupSources), i, relSource, false)
	}
	for _, dep := range dependenciesOf(o) {
		b.link(b.node(dep, groupAppliers), i, relDependsOn, false)
	}
	for _, g := range gatesOf(o.obj) {
		b.link(b.node(g, groupGates), i, relGate, b.closed(g))
	}
	return i
}

// objectNode returns the node of the object r in group: its state and
// page when the cache holds it.
func (b *graphBuilder) objectNode(r graphRef, group int) graphNode {
	n := graphNode{Key: r.String(), Group: group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
	o, ok := b.objs[r]
	switch {
	case ok:
		row := rowOf(o.kind, o.obj)
		n.State, n.Reason, n.Href = row.State, row.Reason, objectHref(r)
		if gate, ok := o.obj.(*gatingv1alpha1.Gate); ok {
			n.Note = map[bool]string{true: "open", false: "closed"}[gate.IsOpened()]
		}
	case group == groupObjects && b.served[r.Kind]:
		n.Href = objectHref(r)
	case group != groupObjects && b.served[r.Kind]:
		n.Note = "not found" // else a kind the UI does not read: unknown
	}
	return n
}

// objectHref returns the path of the page of r.
func objectHref(r graphRef) string {
	return "/object/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}

// add adds n and returns its index.
func (b *graphBuilder) add(n graphNode) int {
	b.index[n.Key] = len(b.model.Nodes)
	b.model.Nodes = append(b.model.Nodes, n)
	return len(b.model.Nodes) - 1
}

// link adds the edge from from to to, once.
func (b *graphBuilder) link(from, to int, rel string, closed bool) {
	e := graphEdge{From: from, To: to, Rel: rel, Closed: closed}
	if !b.edges[e] {
		b.edges[e] = true
		b.model.Edges = append(b.model.Edges, e)
	}
}

// closed reports whether the gate r holds its consumers back: it is
// missing, or not Opened (as the consumers judge it). A gate the UI may
// not read is not known to be closed.
func (b *graphBuilder) closed(r graphRef) bool {
	o, ok := b.objs[r]
	if !ok {
		return b.served[r.Kind]
	}
	gate, ok := o.obj.(*gatingv1alpha1.Gate)
	return !ok || !gate.IsOpened()
}

// has reports whether the graph's objects hold r.
func (b *graphBuilder) has(r graphRef) bool {
	_, ok := b.objs[r]
	return ok
}

// inventories adds what the appliers shown applied: one node per applied
// object when expand is set and they are not too many, otherwise one
// node per applier that counts them.
func (b *graphBuilder) inventories(expand bool) {
	budget := maxGraphObjects
	for i, n := range slices.Clone(b.model.Nodes) {
		if n.Group != groupAppliers {
			continue
		}
		ids := inventoryIDs(b.objs[graphRef{n.Kind, n.Namespace, n.Name}].obj)
		switch {
		case len(ids) == 0:
		case expand && len(ids) <= budget:
			budget -= len(ids)
			for _, id := range ids {
				b.link(i, b.applied(id), relApplies, false)
			}
		default:
			b.Collapsed = b.Collapsed || expand
			b.link(i, b.add(graphNode{Key: "objects of " + n.Key, Group: groupObjects, Kind: "Applied",
				Name: objectCount(len(ids)), Href: n.Href + "#inventory"}), relApplies, false)
		}
	}
}

// applied returns the node of the applied object of inventory id: the
// object's when it is one of the graph's already.
func (b *graphBuilder) applied(id string) int {
	m, err := inventory.ParseObjMetadata(id)
	if err != nil {
		m = inventory.ObjMetadata{Name: id}
	}
	n := graphNode{Key: "applied " + id, Group: groupObjects, Kind: m.Kind, Namespace: m.Namespace, Name: m.Name}
	for _, k := range kinds.All {
		if k.GroupVersion.Group == m.Group && k.Kind == m.Kind {
			n = b.objectNode(graphRef{k.Kind, m.Namespace, m.Name}, groupObjects)
		}
	}
	if i, ok := b.index[n.Key]; ok {
		return i
	}
	return b.add(n)
}

// objectCount says n objects.
func objectCount(n int) string {
	if n == 1 {
		return "1 object"
	}
	return strconv.Itoa(n) + " objects"
}

// sourcesOf returns the sources obj is made from: a Kustomization's
// spec.sourceRef; a HelmRelease's spec.chartRef, or the HelmChart made
// from its spec.chart (that chart's source when there is none yet); a
// HelmChart's spec.sourceRef; an ArtifactGenerator's spec.sources; the
// generator of a generated ExternalArtifact. exists says whether an
// object is there.
func sourcesOf(obj client.Object, exists func(graphRef) bool) []graphRef {
	ns := obj.GetNamespace()
	switch o := obj.(type) {
	case *sourceextv1beta1.ArtifactGenerator:
		refs := make([]graphRef, 0, len(o.Spec.Sources))
		for _, s := range o.Spec.Sources {
			refs = append(refs, graphRef{s.Kind, orDefault(s.Namespace, ns), s.Name})
		}
		return refs
	case *sourcev1.ExternalArtifact:
		if ref := o.Spec.SourceRef; ref != nil && ref.Kind == sourceextv1beta1.ArtifactGeneratorKind {
			return []graphRef{{ref.Kind, orDefault(ref.Namespace, ns), ref.Name}}
		}
		return nil
	case *kustomizev1.Kustomization:
		return []graphRef{{o.Spec.SourceRef.Kind, orDefault(o.Spec.SourceRef.Namespace, ns), o.Spec.SourceRef.Name}}
	case *sourcev1.HelmChart:
		return []graphRef{{o.Spec.SourceRef.Kind, ns, o.Spec.SourceRef.Name}}
	case *helmv2.HelmRelease:
		if c := o.Spec.ChartRef; c != nil {
			return []graphRef{{c.Kind, orDefault(c.Namespace, ns), c.Name}}
		}
		if o.Spec.Chart == nil {
			return nil
		}
		src := o.Spec.Chart.Spec.SourceRef
		chart := graphRef{sourcev1.HelmChartKind, orDefault(src.Namespace, ns), o.GetHelmChartName()}
		if made, name, ok := strings.Cut(o.Status.HelmChart, "/"); ok {
			chart.Namespace, chart.Name = made, name
		}
		if exists(chart) {
			return []graphRef{chart}
		}
		return []graphRef{{src.Kind, orDefault(src.Namespace, ns), src.Name}}
	}
	return nil
}

// dependenciesOf returns the objects o depends on (spec.dependsOn): of
// its own kind and namespace unless the reference names others.
func dependenciesOf(o graphObject) []graphRef {
	if o.kind.DependsOn == nil {
		return nil
	}
	var out []graphRef
	for _, d := range o.kind.DependsOn(o.obj) {
		out = append(out, graphRef{orDefault(d.Kind, o.kind.Kind), orDefault(d.Namespace, o.obj.GetNamespace()), d.Name})
	}
	return out
}

// gatesOf returns the gates obj waits behind (spec.gates).
func gatesOf(obj client.Object) []graphRef {
	consumer, ok := obj.(interface {
		GetGates() []meta.NamespacedObjectReference
	})
	if !ok {
		return nil
	}
	var out []graphRef
	for _, g := range consumer.GetGates() {
		out = append(out, graphRef{gatingv1alpha1.GateKind, orDefault(g.Namespace, obj.GetNamespace()), g.Name})
	}
	return out
}

// inventoryIDs returns the IDs of the objects obj applied
// (status.inventory); none for other kinds or without an inventory.
func inventoryIDs(obj client.Object) []string {
	entries := inventoryEntries(obj)
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		ids = append(ids, e.ID)
	}
	return ids
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
