package ui

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// graphTestObjects are a small estate: in team-a, a frozen application
// that depends on its infrastructure, each with its GitRepository; in
// team-b, two HelmReleases, one made from a HelmRepository's chart, the
// other, which depends on it, from an OCIRepository that is not there;
// in team-c, a Kustomization of a source of another namespace; a Bucket
// nothing uses.
func graphTestObjects() []client.Object {
	ready := []metav1.Condition{cond(meta.ReadyCondition, "True", "Succeeded", "fine")}
	om := func(ns, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1}
	}
	freeze := &gatingv1alpha1.Gate{ObjectMeta: om("team-a", "freeze")}
	freeze.Status.Conditions = append(ready, cond(gatingv1alpha1.OpenedCondition, "False", "Default", "closed by default"))
	open := &gatingv1alpha1.Gate{ObjectMeta: om("team-a", "weekdays")}
	open.Status.Conditions = append(ready, cond(gatingv1alpha1.OpenedCondition, "True", "Schedule", "open"))
	git := func(name string) *sourcev1.GitRepository {
		g := &sourcev1.GitRepository{ObjectMeta: om("team-a", name)}
		g.Status.Conditions = ready
		return g
	}
	appRepo := git("app")
	appRepo.Spec.Gates = []meta.NamespacedObjectReference{{Name: "weekdays"}}
	ks := func(ns, name, source string, ids ...string) *kustomizev1.Kustomization {
		k := &kustomizev1.Kustomization{ObjectMeta: om(ns, name)}
		k.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: source}
		k.Status.Conditions = ready
		if ids != nil {
			k.Status.Inventory = &kustomizev1.ResourceInventory{}
			for _, id := range ids {
				k.Status.Inventory.Entries = append(k.Status.Inventory.Entries, kustomizev1.ResourceRef{ID: id, Version: "v1"})
			}
		}
		return k
	}
	infra := ks("team-a", "infra", "infra", "_team-a__Namespace", "team-a_db_apps_Deployment", "team-a_shared_kustomize.toolkit.fluxcd.io_Kustomization")
	app := ks("team-a", "app", "app", "team-a_web_apps_Deployment", "team-a_web__Service")
	app.Spec.DependsOn = []meta.DependencyReference{{Name: "infra"}}
	app.Spec.Gates = []meta.NamespacedObjectReference{{Name: "freeze"}}
	lonely := ks("team-c", "lonely", "shared")
	lonely.Spec.SourceRef.Namespace = "team-a"
	charts := &sourcev1.HelmRepository{ObjectMeta: om("team-b", "charts")}
	chart := &sourcev1.HelmChart{ObjectMeta: om("team-b", "team-b-cache")}
	chart.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}
	cache := &helmv2.HelmRelease{ObjectMeta: om("team-b", "cache")}
	cache.Spec.Chart = &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "redis",
		SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}}}
	cache.Status.HelmChart = "team-b/team-b-cache"
	web := &helmv2.HelmRelease{ObjectMeta: om("team-b", "web")}
	web.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "web-chart"}
	web.Spec.DependsOn = []meta.DependencyReference{{Name: "cache"}}
	unused := &sourcev1.Bucket{ObjectMeta: om("team-b", "unused")}
	return []client.Object{freeze, open, git("infra"), appRepo, git("shared"), infra, app, lonely, charts, chart, cache, web, unused}
}

// svgNodes returns the keys of the nodes drawn in body, from their IDs.
func svgNodes(body string) []string {
	svg, _, _ := strings.Cut(body, "</svg>")
	var out []string
	for _, m := range regexp.MustCompile(` id="node-([^"]+)" class="node `).FindAllStringSubmatch(svg, -1) {
		out = append(out, m[1])
	}
	return out
}

// edgeTitles returns the titles of the edges drawn in body.
func edgeTitles(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<path class="edge[^"]*" d="[^"]*" marker-end="[^"]*"><title>([^<]*)</title>`).FindAllStringSubmatch(body, -1) {
		out = append(out, strings.ReplaceAll(m[1], "&gt;", ">"))
	}
	return out
}

func TestGraphShowsWhatFeedsWhat(t *testing.T) {
	g := NewWithT(t)
	code, body := get(g, testServer(graphTestObjects()...), "/graph")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body).To(MatchRegexp(`<svg [^>]*aria-labelledby="graph-title">\s*<title id="graph-title">Graph of 5 applications: \d+ nodes, \d+ edges</title>`))
	g.Expect(svgNodes(body)).To(ConsistOf(
		"Gate_team-a_freeze", "Gate_team-a_weekdays",
		"GitRepository_team-a_infra", "GitRepository_team-a_app", "GitRepository_team-a_shared",
		"HelmRepository_team-b_charts", "HelmChart_team-b_team-b-cache", "OCIRepository_team-b_web-chart", "Bucket_team-b_unused",
		"Kustomization_team-a_infra", "Kustomization_team-a_app", "Kustomization_team-c_lonely",
		"HelmRelease_team-b_cache", "HelmRelease_team-b_web",
		"objects_of_Kustomization_team-a_infra", "objects_of_Kustomization_team-a_app"))
	g.Expect(edgeTitles(body)).To(ConsistOf(
		"Gate team-a/freeze → Kustomization team-a/app (gate, closed)",
		"Gate team-a/weekdays → GitRepository team-a/app (gate, open)",
		"GitRepository team-a/infra → Kustomization team-a/infra (source)",
		"GitRepository team-a/app → Kustomization team-a/app (source)",
		"Kustomization team-a/infra → Kustomization team-a/app (dependsOn)",
		"GitRepository team-a/shared → Kustomization team-c/lonely (source)",
		"HelmRepository team-b/charts → HelmChart team-b/team-b-cache (source)",
		"HelmChart team-b/team-b-cache → HelmRelease team-b/cache (source)",
		"OCIRepository team-b/web-chart → HelmRelease team-b/web (source)",
		"HelmRelease team-b/cache → HelmRelease team-b/web (dependsOn)",
		"Kustomization team-a/infra → Applied 3 objects (applies)",
		"Kustomization team-a/app → Applied 2 objects (applies)"))

	// Each node links to its page and shows its state; what is not
	// there links nowhere.
	g.Expect(body).To(MatchRegexp(`<a href="/object/Kustomization/team-a/app" id="node-Kustomization_team-a_app" class="node node-applier state-Ready"`))
	g.Expect(body).To(ContainSubstring(`<a href="/object/Gate/team-a/freeze" id="node-Gate_team-a_freeze" class="node node-gate state-Ready node-closed"`))
	g.Expect(body).To(ContainSubstring(`<g id="node-OCIRepository_team-b_web-chart" class="node node-source node-not-found"`))
	g.Expect(body).To(ContainSubstring(`<a href="/object/Kustomization/team-a/infra#inventory" id="node-objects_of_Kustomization_team-a_infra"`))
	// The closed gate's edge is marked and labelled; dependsOn is labelled.
	g.Expect(body).To(MatchRegexp(`<path class="edge edge-gate edge-closed" [^>]*marker-end="url\(#graph-arrow-closed\)"`))
	g.Expect(regexp.MustCompile(`<text class="edge-label edge-label-closed"[^>]*>closed</text>`).FindAllString(body, -1)).To(HaveLen(1))
	g.Expect(regexp.MustCompile(`<text class="edge-label"[^>]*>dependsOn</text>`).FindAllString(body, -1)).To(HaveLen(2))

	// The list says the same, for who does not see the drawing.
	list := section(body, "graph-nodes")
	g.Expect(list).To(ContainSubstring(`<a href="/object/Kustomization/team-a/app">Kustomization team-a/app</a></td><td>Applier</td>`))
	g.Expect(list).To(ContainSubstring("GitRepository team-a/app (source); Kustomization team-a/infra (dependsOn); Gate team-a/freeze (gate, closed)"))
	g.Expect(list).To(ContainSubstring("OCIRepository team-b/web-chart</td><td>Source</td>\n<td> not found</td>"))
}

// nodeX returns the horizontal position of the node with id in body.
func nodeX(g Gomega, body, id string) int {
	m := regexp.MustCompile(`id="` + id + `" class="[^"]*" transform="translate\((\d+) \d+\)"`).FindStringSubmatch(body)
	g.Expect(m).To(HaveLen(2), id)
	var x int
	fmt.Sscan(m[1], &x)
	return x
}

func TestGraphColumns(t *testing.T) {
	g := NewWithT(t)
	_, body := get(g, testServer(graphTestObjects()...), "/graph")
	gate, src := nodeX(g, body, "node-Gate_team-a_freeze"), nodeX(g, body, "node-GitRepository_team-a_app")
	repo, chart := nodeX(g, body, "node-HelmRepository_team-b_charts"), nodeX(g, body, "node-HelmChart_team-b_team-b-cache")
	infra, app := nodeX(g, body, "node-Kustomization_team-a_infra"), nodeX(g, body, "node-Kustomization_team-a_app")
	objects := nodeX(g, body, "node-objects_of_Kustomization_team-a_infra")
	g.Expect(gate).To(BeNumerically("<", src), "gates, then sources")
	g.Expect(repo).To(BeNumerically("<", chart), "a chart right of its repository")
	g.Expect(chart).To(BeNumerically("<", infra), "sources, then appliers")
	g.Expect(infra).To(BeNumerically("<", app), "a dependency left of what depends on it")
	g.Expect(app).To(BeNumerically("<", objects), "appliers, then what they applied")
}

func TestGraphFilters(t *testing.T) {
	g := NewWithT(t)
	h := testServer(graphTestObjects()...)

	// A name keeps the appliers it matches with their sources, gates and
	// dependencies, and nothing else.
	_, body := get(g, h, "/graph?q=app")
	g.Expect(svgNodes(body)).To(ConsistOf("Gate_team-a_freeze", "Gate_team-a_weekdays",
		"GitRepository_team-a_app", "GitRepository_team-a_infra", "Kustomization_team-a_app", "Kustomization_team-a_infra",
		"objects_of_Kustomization_team-a_app", "objects_of_Kustomization_team-a_infra"))
	g.Expect(body).To(ContainSubstring(`<input id="graph-q" type="search" name="q" value="app">`), "an ID: a live update keeps what is typed")

	_, body = get(g, h, "/graph?namespace=team-b")
	g.Expect(svgNodes(body)).To(ConsistOf("HelmRepository_team-b_charts", "HelmChart_team-b_team-b-cache",
		"OCIRepository_team-b_web-chart", "Bucket_team-b_unused", "HelmRelease_team-b_cache", "HelmRelease_team-b_web"))
	g.Expect(body).To(ContainSubstring(`<option selected>team-b</option>`))

	// Applied objects one by one: a Windlass kind links to its page.
	_, body = get(g, h, "/graph?q=infra&objects=1")
	g.Expect(svgNodes(body)).To(ContainElements("applied__team-a__Namespace", "applied_team-a_db_apps_Deployment",
		"Kustomization_team-a_shared"))
	g.Expect(body).NotTo(ContainSubstring("objects_of_"))
	g.Expect(body).To(ContainSubstring(`<g id="node-applied_team-a_db_apps_Deployment" class="node node-applied"`))
	g.Expect(body).To(ContainSubstring(`<a href="/object/Kustomization/team-a/shared" id="node-Kustomization_team-a_shared" class="node node-applied"`))
	g.Expect(body).To(ContainSubstring(`name="objects" value="1" checked`))

	_, body = get(g, h, "/graph?q=nothing-has-this-name")
	g.Expect(body).To(ContainSubstring("Nothing to show: no application matches."))
	g.Expect(body).NotTo(ContainSubstring("<svg"))
}

func TestGraphBoundsWhatItDraws(t *testing.T) {
	g := NewWithT(t)
	h := testServer(graphApps(maxGraphAppliers + 20)...)
	_, body := get(g, h, "/graph")
	g.Expect(body).To(ContainSubstring(fmt.Sprintf("%d applications match: the graph shows the first %d.", maxGraphAppliers+20, maxGraphAppliers)))
	g.Expect(strings.Count(body, `class="node node-applier`)).To(Equal(maxGraphAppliers))
	g.Expect(strings.Count(body, `class="node node-applied`)).To(Equal(maxGraphAppliers), "one node counts the objects of each")

	_, body = get(g, h, "/graph?namespace=team-07")
	g.Expect(body).NotTo(ContainSubstring("applications match"))
	ids := regexp.MustCompile(` id="(node-[^"]+)"`).FindAllStringSubmatch(body, -1)
	seen := map[string]bool{}
	for _, id := range ids {
		g.Expect(seen).NotTo(HaveKey(id[1]), "IDs are unique")
		seen[id[1]] = true
	}
	_, again := get(g, h, "/graph?namespace=team-07")
	g.Expect(again).To(Equal(body), "the same objects give the same page (a live update keeps the focus)")

	// Too many objects one by one: the others are counted.
	_, body = get(g, h, "/graph?objects=1")
	g.Expect(body).To(ContainSubstring(`id="graph-collapsed"`))
	g.Expect(strings.Count(body, `class="node node-applied`)).To(BeNumerically(">", maxGraphObjects))
}

// crossings counts the pairs of edges that cross between the same two
// columns.
func crossings(m graphModel, d graphDrawing) int {
	n := 0
	for i, a := range m.Edges {
		for _, b := range m.Edges[i+1:] {
			fa, ta, fb, tb := d.Boxes[a.From], d.Boxes[a.To], d.Boxes[b.From], d.Boxes[b.To]
			if fa.X == fb.X && ta.X == tb.X && (fa.Y-fb.Y)*(ta.Y-tb.Y) < 0 {
				n++
			}
		}
	}
	return n
}

// expectWellLaidOut expects d to draw every node and edge of m, in its
// bounds, the top node at the top: no two nodes overlap, the groups'
// columns are in order, and each edge leaves its From and reaches its To.
func expectWellLaidOut(g Gomega, m graphModel, d graphDrawing) {
	g.Expect(d.Boxes).To(HaveLen(len(m.Nodes)))
	g.Expect(d.Paths).To(HaveLen(len(m.Edges)))
	g.Expect(d.Width).To(BeNumerically(">=", 2*margin))
	g.Expect(d.Height).To(BeNumerically(">=", 2*margin))
	for i, b := range d.Boxes {
		g.Expect(b.X).To(BeNumerically(">=", margin))
		g.Expect(b.Y).To(BeNumerically(">=", margin))
		g.Expect(b.X + b.W).To(BeNumerically("<=", d.Width))
		g.Expect(b.Y + b.H).To(BeNumerically("<=", d.Height))
		for j, o := range d.Boxes {
			g.Expect(i != j && b.overlaps(o)).To(BeFalse(), "nodes %d and %d overlap", i, j)
			if m.Nodes[i].Group < m.Nodes[j].Group {
				g.Expect(b.X).To(BeNumerically("<", o.X), "the groups' columns are in order")
			}
		}
	}
	if len(d.Boxes) > 0 {
		g.Expect(slices.MinFunc(d.Boxes, func(a, b graphBox) int { return a.Y - b.Y }).Y).To(Equal(margin), "nothing above the top node")
	}
	for k, e := range m.Edges {
		from, to, p := d.Boxes[e.From], d.Boxes[e.To], d.Paths[k]
		g.Expect(p.Start).To(Equal([2]int{from.X + from.W, from.Y + from.H/2}), "edge %d leaves its From", k)
		g.Expect(p.End).To(Equal([2]int{to.X, to.Y + to.H/2}), "edge %d reaches its To", k)
		g.Expect(p.D).To(And(HavePrefix(fmt.Sprintf("M%d %d ", p.Start[0], p.Start[1])),
			HaveSuffix(fmt.Sprintf(" %d %d", p.End[0], p.End[1]))))
	}
}

// backwards counts the edges whose From does not stand left of their To.
func backwards(m graphModel, d graphDrawing) int {
	n := 0
	for _, e := range m.Edges {
		if d.Boxes[e.From].X >= d.Boxes[e.To].X {
			n++
		}
	}
	return n
}

func TestLayoutGraph(t *testing.T) {
	nodes := func(groups ...int) []graphNode {
		out := make([]graphNode, len(groups))
		for i, g := range groups {
			out[i] = graphNode{Key: fmt.Sprint(i), Group: g}
		}
		return out
	}
	edges := func(pairs ...int) []graphEdge {
		var out []graphEdge
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, graphEdge{From: pairs[i], To: pairs[i+1], Rel: relSource})
		}
		return out
	}
	fan := graphModel{Nodes: nodes(groupSources)}
	for i := range 40 {
		fan.Nodes = append(fan.Nodes, nodes(groupAppliers, groupObjects)...)
		fan.Edges = append(fan.Edges, edges(0, 1+2*i, 1+2*i, 2+2*i)...)
	}
	for _, tc := range []struct {
		name  string
		model graphModel
		// back is how many edges may not go rightwards: one of each cycle,
		// those to an earlier group.
		back int
		// crossings is how many pairs of edges may cross.
		crossings int
	}{
		{name: "nothing"},
		{name: "one node", model: graphModel{Nodes: nodes(groupAppliers)}},
		{name: "a chain of dependencies, listed backwards",
			model: graphModel{Nodes: nodes(groupAppliers, groupAppliers, groupAppliers, groupAppliers, groupSources),
				Edges: edges(3, 2, 2, 1, 1, 0, 4, 3)}},
		{name: "a diamond", model: graphModel{Nodes: nodes(groupAppliers, groupAppliers, groupAppliers, groupAppliers),
			Edges: edges(0, 1, 0, 2, 1, 3, 2, 3)}},
		{name: "every group", model: graphModel{
			Nodes: nodes(groupObjects, groupAppliers, groupSources, groupGates, groupAppliers, groupSources, groupSources),
			Edges: edges(3, 1, 2, 1, 1, 0, 5, 4, 4, 1, 6, 5)}},
		{name: "crossed sources are uncrossed", model: graphModel{
			Nodes: nodes(groupSources, groupSources, groupSources, groupAppliers, groupAppliers, groupAppliers),
			Edges: edges(2, 3, 1, 4, 0, 5)}},
		{name: "a cycle of dependencies", model: graphModel{Nodes: nodes(groupAppliers, groupAppliers, groupAppliers, groupSources),
			Edges: edges(0, 1, 1, 2, 2, 0, 3, 0)}, back: 1},
		{name: "an applier applies a source", model: graphModel{Nodes: nodes(groupSources, groupAppliers),
			Edges: []graphEdge{{From: 0, To: 1, Rel: relSource}, {From: 1, To: 0, Rel: relApplies}}}, back: 1},
		{name: "a source of forty appliers", model: fan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := layoutGraph(tc.model)
			expectWellLaidOut(g, tc.model, d)
			g.Expect(backwards(tc.model, d)).To(BeNumerically("<=", tc.back), "what comes first stands left")
			g.Expect(crossings(tc.model, d)).To(BeNumerically("<=", tc.crossings))
		})
	}
}

// A user who may not read Gates (windlass ui) is not told that a gate is
// missing or closed: the graph does not know.
func TestGraphLeavesWhatItMayNotReadUnknown(t *testing.T) {
	g := NewWithT(t)
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(graphTestObjects()...).Build()
	readable := kinds.Where(func(k kinds.Kind) bool { return k.Kind != gatingv1alpha1.GateKind })
	h := (&Server{Reader: c, Kinds: readable, Log: logr.Discard()}).Handler()
	_, body := get(g, h, "/graph?q=app")
	g.Expect(body).To(ContainSubstring(`<g id="node-Gate_team-a_freeze" class="node node-gate" `))
	g.Expect(body).NotTo(Or(ContainSubstring("edge-closed"), ContainSubstring("not found")))
	g.Expect(edgeTitles(body)).To(ContainElements("Gate team-a/freeze → Kustomization team-a/app (gate)",
		"Gate team-a/weekdays → GitRepository team-a/app (gate)"))
}

// TestGraphShowsAGeneratorsChain: a monorepo's GitRepository feeds its
// ArtifactGenerator, which feeds the ExternalArtifact it generated, which
// feeds the Kustomization that applies it.
func TestGraphShowsAGeneratorsChain(t *testing.T) {
	g := NewWithT(t)
	om := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "team-d", Name: name, Generation: 1}
	}
	mono := &sourcev1.GitRepository{ObjectMeta: om("mono")}
	gen := &sourceextv1beta1.ArtifactGenerator{ObjectMeta: om("apps")}
	gen.Spec.Sources = []sourceextv1beta1.SourceReference{{Alias: "mono", Kind: sourcev1.GitRepositoryKind, Name: "mono"}}
	ea := &sourcev1.ExternalArtifact{ObjectMeta: om("app-a")}
	ea.Spec.SourceRef = &meta.NamespacedObjectKindReference{Kind: sourceextv1beta1.ArtifactGeneratorKind, Name: "apps"}
	ks := &kustomizev1.Kustomization{ObjectMeta: om("a")}
	ks.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: "app-a"}
	code, body := get(g, testServer(mono, gen, ea, ks), "/graph")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(edgeTitles(body)).To(ConsistOf(
		"GitRepository team-d/mono → ArtifactGenerator team-d/apps (source)",
		"ArtifactGenerator team-d/apps → ExternalArtifact team-d/app-a (source)",
		"ExternalArtifact team-d/app-a → Kustomization team-d/a (source)"))
}

// TestGraphGroupsFollowTheRegistry: the graph shows the Gates, the kinds
// of the source controller as sources and the kinds with dependsOn as
// appliers, from the registry.
func TestGraphGroupsFollowTheRegistry(t *testing.T) {
	g := NewWithT(t)
	g.Expect(graphGroups).To(Equal(map[string]int{
		"Gate":          groupGates,
		"GitRepository": groupSources, "OCIRepository": groupSources, "Bucket": groupSources,
		"HelmRepository": groupSources, "HelmChart": groupSources,
		"ArtifactGenerator": groupSources, "ExternalArtifact": groupSources,
		"Kustomization": groupAppliers, "HelmRelease": groupAppliers,
	}))
}
