package ui

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The graph's layout and view: a pure function from a graph model to the
// boxes of its nodes and the paths of its edges, drawn on the server as
// inline SVG, and the page that draws and lists them.
//
// The layout is layered: one band of columns per group (gates, sources,
// appliers, applied objects, left to right); within a band, a node
// stands a column right of every node of the band it comes after (a
// dependency left of what depends on it); within a column, the nodes are
// ordered by the median position of their neighbours, a few passes each
// way, so that edges cross little; then each is moved to the height of
// its neighbours, as far as the nodes above it allow.

// Sizes of the drawing, in pixels.
const (
	nodeWidth  = 230
	nodeHeight = 40
	rowHeight  = nodeHeight + 12
	colWidth   = nodeWidth + 90
	margin     = 10
	// orderPasses are the passes, each way, that order the columns.
	orderPasses = 2
)

// graphBox is where a node stands in the drawing.
type graphBox struct {
	X, Y, W, H int
}

// overlaps reports whether b and o share any point.
func (b graphBox) overlaps(o graphBox) bool {
	return b.X < o.X+o.W && o.X < b.X+b.W && b.Y < o.Y+o.H && o.Y < b.Y+b.H
}

// graphDrawing is a laid-out graph model.
type graphDrawing struct {
	// Boxes are the nodes' boxes, by the index of the node.
	Boxes []graphBox
	// Paths are the edges' paths, by the index of the edge.
	Paths         []edgePath
	Width, Height int
}

// edgePath is an edge as drawn: an SVG path and where its label goes.
type edgePath struct {
	D              string
	LabelX, LabelY int
	// Start and End are the ends of the path.
	Start, End [2]int
}

// layoutGraph places the nodes and edges of m.
func layoutGraph(m graphModel) graphDrawing {
	col := graphColumns(m)
	left, right := graphNeighbours(m, col)
	order := orderColumns(col, left, right)
	y := placeRows(len(m.Nodes), order, left, right)
	d := graphDrawing{Boxes: make([]graphBox, len(m.Nodes)), Width: 2 * margin, Height: 2 * margin}
	for i := range m.Nodes {
		d.Boxes[i] = graphBox{X: margin + col[i]*colWidth, Y: margin + y[i], W: nodeWidth, H: nodeHeight}
		d.Width = max(d.Width, d.Boxes[i].X+nodeWidth+margin)
		d.Height = max(d.Height, d.Boxes[i].Y+nodeHeight+margin)
	}
	for _, e := range m.Edges {
		d.Paths = append(d.Paths, edgePathOf(d.Boxes[e.From], d.Boxes[e.To]))
	}
	return d
}

// graphColumns returns each node's column: its group's band, and within it
// the length of the longest chain of nodes of the group it comes after.
func graphColumns(m graphModel) []int {
	depth := graphDepths(m)
	width := map[int]int{}
	for i, n := range m.Nodes {
		width[n.Group] = max(width[n.Group], depth[i]+1)
	}
	offset, next := map[int]int{}, 0
	for _, g := range slices.Sorted(maps.Keys(width)) {
		offset[g], next = next, next+width[g]
	}
	col := make([]int, len(m.Nodes))
	for i, n := range m.Nodes {
		col[i] = offset[n.Group] + depth[i]
	}
	return col
}

// graphDepths returns, for each node, the longest chain of edges within its
// group that leads to it. An edge that closes a cycle is left out.
func graphDepths(m graphModel) []int {
	preds := make([][]int, len(m.Nodes))
	for _, e := range m.Edges {
		if e.From != e.To && m.Nodes[e.From].Group == m.Nodes[e.To].Group {
			preds[e.To] = append(preds[e.To], e.From)
		}
	}
	const unknown, visiting = -1, -2
	depth := make([]int, len(m.Nodes))
	for i := range depth {
		depth[i] = unknown
	}
	var visit func(int) int
	visit = func(i int) int {
		if depth[i] >= 0 {
			return depth[i]
		}
		depth[i] = visiting
		d := 0
		for _, p := range preds[i] {
			if depth[p] != visiting {
				d = max(d, visit(p)+1)
			}
		}
		depth[i] = d
		return d
	}
	for i := range m.Nodes {
		visit(i)
	}
	return depth
}

// graphNeighbours returns, for each node, the nodes joined to it by an edge
// that stand in a column left of it, and those right of it.
func graphNeighbours(m graphModel, col []int) (left, right [][]int) {
	left, right = make([][]int, len(m.Nodes)), make([][]int, len(m.Nodes))
	for _, e := range m.Edges {
		a, b := e.From, e.To
		if col[a] > col[b] {
			a, b = b, a
		}
		if col[a] < col[b] {
			right[a] = append(right[a], b)
			left[b] = append(left[b], a)
		}
	}
	return left, right
}

// orderColumns returns the nodes of each column, top to bottom: first in
// the model's order, then sorted by the median position of their
// neighbours on the left, column by column rightwards, and back by those
// on the right.
func orderColumns(col []int, left, right [][]int) [][]int {
	n := 0
	for _, c := range col {
		n = max(n, c+1)
	}
	order := make([][]int, n)
	pos := make([]float64, len(col))
	for i, c := range col {
		pos[i] = float64(len(order[c]))
		order[c] = append(order[c], i)
	}
	for range orderPasses {
		for c := 1; c < n; c++ {
			sortByMedian(order[c], left, pos)
		}
		for c := n - 2; c >= 0; c-- {
			sortByMedian(order[c], right, pos)
		}
	}
	return order
}

// sortByMedian sorts column by the median position of each node's
// neighbours (a node without any keeps its own), and records the new
// positions.
func sortByMedian(column []int, nbs [][]int, pos []float64) {
	key := make(map[int]float64, len(column))
	for _, i := range column {
		key[i] = pos[i]
		if len(nbs[i]) > 0 {
			key[i] = medianOf(nbs[i], func(j int) float64 { return pos[j] })
		}
	}
	slices.SortStableFunc(column, func(a, b int) int { return cmp.Compare(key[a], key[b]) })
	for p, i := range column {
		pos[i] = float64(p)
	}
}

// placeRows returns each node's height in the drawing: the nodes of a
// column stacked in order, each moved down to the median height of its
// neighbours on the left, column by column rightwards, then to that of
// its neighbours on the right, back leftwards; never onto the node above.
func placeRows(n int, order [][]int, left, right [][]int) []int {
	y := make([]int, n)
	for _, column := range order {
		for p, i := range column {
			y[i] = p * rowHeight
		}
	}
	for _, column := range order {
		alignColumn(column, left, y)
	}
	for c := len(order) - 1; c >= 0; c-- {
		alignColumn(order[c], right, y)
	}
	if len(y) > 0 { // the highest node at the top
		top := slices.Min(y)
		for i := range y {
			y[i] -= top
		}
	}
	return y
}

// alignColumn moves each node of column to the median height of its neighbours
// nbs, below the node above it.
func alignColumn(column []int, nbs [][]int, y []int) {
	next := 0
	for _, i := range column {
		want := y[i]
		if len(nbs[i]) > 0 {
			want = int(medianOf(nbs[i], func(j int) float64 { return float64(y[j]) }))
		}
		y[i] = max(want, next)
		next = y[i] + rowHeight
	}
}

// medianOf returns the median of the values of nodes.
func medianOf(nodes []int, value func(int) float64) float64 {
	vs := make([]float64, len(nodes))
	for k, j := range nodes {
		vs[k] = value(j)
	}
	slices.Sort(vs)
	mid := len(vs) / 2
	if len(vs)%2 == 1 {
		return vs[mid]
	}
	return (vs[mid-1] + vs[mid]) / 2
}

// edgePathOf returns the path of an edge from the right side of from to the
// left side of to: a curve, which loops round when to stands left.
func edgePathOf(from, to graphBox) edgePath {
	x1, y1 := from.X+from.W, from.Y+from.H/2
	x2, y2 := to.X, to.Y+to.H/2
	dx := max(40, (x2-x1)/2)
	p := edgePath{Start: [2]int{x1, y1}, End: [2]int{x2, y2},
		D: fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, x1+dx, y1, x2-dx, y2, x2, y2)}
	// The middle of the curve, (P0 + 3 P1 + 3 P2 + P3) / 8, a little above.
	p.LabelX, p.LabelY = (x1+x2)/2, (y1+y2)/2-4
	return p
}

// graphPage is what the graph page shows.
type graphPage struct {
	Filter     graphFilter
	Namespaces []string
	// Total appliers match the filter, of which the graph shows Shown.
	Total, Shown int
	// Collapsed says that some applied objects asked for one by one are
	// counted instead: they were too many.
	Collapsed bool
	// Title names the drawing, Width and Height are its size.
	Title         string
	Width, Height int
	Nodes         []graphNodeView
	Edges         []graphEdgeView
	// List are the nodes by group, namespace and name.
	List []*graphNodeView
}

// graphNodeView is a node as the page draws and lists it.
type graphNodeView struct {
	graphNode
	// ID is the element's, unique and the same from one view to the next,
	// so that a live update keeps the focus on it.
	ID, Class, Role string
	// Title says all of the node; Line1 and Line2 are its text, shortened.
	Title, Line1, Line2 string
	// Display is the node's name, "namespace/name"; Label its kind and
	// name, as the list shows it.
	Display, Label string
	X, Y, W, H     int
	// After describes the edges that lead to the node.
	After string
}

// graphEdgeView is an edge as the page draws it.
type graphEdgeView struct {
	edgePath
	Class, Label, Title, Marker string
}

// groupRoles name the groups in words.
var groupRoles = []string{"Gate", "Source", "Applier", "Applied"}

// newGraphPage returns the page of the graph b built, laid out.
func newGraphPage(f graphFilter, b *graphBuilder, total, shown int) graphPage {
	m, d := b.model, layoutGraph(b.model)
	p := graphPage{Filter: f, Namespaces: graphNamespaces(b.objs), Total: total, Shown: shown,
		Collapsed: b.Collapsed, Width: d.Width, Height: d.Height}
	ids := map[string]bool{}
	for i, n := range m.Nodes {
		p.Nodes = append(p.Nodes, nodeViewOf(n, d.Boxes[i], ids))
	}
	for k, e := range m.Edges {
		from, to := &p.Nodes[e.From], &p.Nodes[e.To]
		p.Edges = append(p.Edges, edgeViewOf(e, d.Paths[k], from, to))
		if to.After != "" {
			to.After += "; "
		}
		to.After += from.Label + " (" + relWords(e, from.graphNode) + ")"
	}
	p.List = p.ordered()
	p.Title = fmt.Sprintf("Graph of %d applications: %d nodes, %d edges", shown, len(p.Nodes), len(p.Edges))
	return p
}

// edgeViewOf returns the view of e, drawn as path, from from to to.
func edgeViewOf(e graphEdge, path edgePath, from, to *graphNodeView) graphEdgeView {
	v := graphEdgeView{edgePath: path, Class: "edge edge-" + e.Rel, Marker: "graph-arrow"}
	v.Title = from.Label + " → " + to.Label + " (" + relWords(e, from.graphNode) + ")"
	switch {
	case e.Closed:
		v.Class, v.Label, v.Marker = v.Class+" edge-closed", "closed", "graph-arrow-closed"
	case e.Rel == relDependsOn:
		v.Label = relDependsOn
	}
	return v
}

// ordered sorts the nodes in reading order, which the keyboard follows
// (by column, top to bottom), and returns them by group, namespace and
// name, for the list.
func (p *graphPage) ordered() []*graphNodeView {
	slices.SortFunc(p.Nodes, func(a, b graphNodeView) int { return cmp.Or(cmp.Compare(a.X, b.X), cmp.Compare(a.Y, b.Y)) })
	list := make([]*graphNodeView, len(p.Nodes))
	for i := range p.Nodes {
		list[i] = &p.Nodes[i]
	}
	slices.SortFunc(list, func(a, b *graphNodeView) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), strings.Compare(a.Namespace, b.Namespace),
			strings.Compare(a.Name, b.Name), strings.Compare(a.Key, b.Key))
	})
	return list
}

// nodeViewOf returns the view of n in b, with an ID that ids does not
// hold yet.
func nodeViewOf(n graphNode, b graphBox, ids map[string]bool) graphNodeView {
	v := graphNodeView{graphNode: n, Role: groupRoles[n.Group], Display: displayName(n), X: b.X, Y: b.Y, W: b.W, H: b.H}
	v.ID = uniqueID("node-"+elementID(n.Key), ids)
	v.Class = "node node-" + strings.ToLower(v.Role)
	if n.State != "" {
		v.Class += " state-" + string(n.State)
	}
	if n.Note != "" {
		v.Class += " node-" + strings.ReplaceAll(n.Note, " ", "-")
	}
	var words []string
	for _, w := range []string{n.Kind, string(n.State), n.Note} {
		if w != "" {
			words = append(words, w)
		}
	}
	v.Line1, v.Line2 = shorten(strings.Join(words, " · ")), shorten(v.Display)
	v.Label = n.Kind + " " + v.Display
	v.Title = v.Label
	if n.State != "" || n.Note != "" {
		v.Title += ": " + strings.Join(words[1:], ", ")
	}
	if n.Reason != "" {
		v.Title += " (" + n.Reason + ")"
	}
	return v
}

// displayName returns "namespace/name", or the name alone.
func displayName(n graphNode) string {
	if n.Namespace == "" {
		return n.Name
	}
	return n.Namespace + "/" + n.Name
}

// relWords says what an edge from from says, in words.
func relWords(e graphEdge, from graphNode) string {
	switch {
	case e.Rel == relGate && e.Closed:
		return "gate, closed"
	case e.Rel == relGate && from.Note == "open":
		return "gate, open"
	}
	return e.Rel
}

// shorten shortens s to what a node's box holds, cutting its middle.
func shorten(s string) string {
	const most = 34
	r := []rune(s)
	if len(r) <= most {
		return s
	}
	return string(r[:most/2-1]) + "…" + string(r[len(r)-most/2:])
}

// elementID returns key with what an element ID should not hold
// replaced.
func elementID(key string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, key)
}

// uniqueID returns id, or id with a number when ids holds it, and
// records it.
func uniqueID(id string, ids map[string]bool) string {
	out := id
	for k := 2; ids[out]; k++ {
		out = fmt.Sprintf("%s-%d", id, k)
	}
	ids[out] = true
	return out
}

// graphNamespaces returns the namespaces of objs, sorted.
func graphNamespaces(objs map[graphRef]graphObject) []string {
	seen := map[string]bool{}
	for r := range objs {
		seen[r.Namespace] = true
	}
	return slices.Sorted(maps.Keys(seen))
}
