package sandbox

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"

	"github.com/windlass-dev/windlass/internal/isolate"
)

// testChart returns a chart named name whose templates are given by file
// name (under templates/).
func testChart(name string, values map[string]any, templates map[string]string) *chart.Chart {
	ch := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: "1.0.0"},
		Values:   values,
	}
	for file, text := range templates {
		ch.Templates = append(ch.Templates, &common.File{Name: "templates/" + file, Data: []byte(text)})
	}
	return ch
}

// appChart is a chart that uses what templates commonly use: values of
// every type, partials, include, tpl, the release and the capabilities, a
// subchart also used under an alias, one that its condition disables,
// files and notes.
func appChart() *chart.Chart {
	app := testChart("app", map[string]any{
		"replicas": int64(3),
		"ratio":    0.5,
		"name":     "web",
		"nothing":  nil,
		"list":     []any{"a", int64(2), true},
		"tmpl":     "{{ .Values.name }}-{{ .Release.Revision }}",
		"db":       map[string]any{"enabled": true, "size": 10.0},
		"replica":  map[string]any{"enabled": true, "size": 2.0},
		"cache":    map[string]any{"enabled": false},
	}, map[string]string{
		"_helpers.tpl": `{{- define "app.name" -}}{{ .Chart.Name }}-{{ .Values.name }}{{- end -}}`,
		"deploy.yaml": `kind: Deployment
name: {{ include "app.name" . }}
replicas: {{ .Values.replicas }} {{ printf "%T %T %T" .Values.replicas .Values.ratio .Values.nothing }}
list: {{ .Values.list | toJson }}
tpl: {{ tpl .Values.tmpl . }}
release: {{ .Release.Name }} {{ .Release.Namespace }} {{ .Release.Revision }} {{ .Release.IsInstall }} {{ .Release.IsUpgrade }}
kube: {{ .Capabilities.KubeVersion.Version }} {{ .Capabilities.APIVersions.Has "example.com/v1" }}
file: {{ .Files.Get "files/conf.txt" | trim }}
literal: {{ "{{ not a template }}" }} {{/* a comment */}}`,
		"NOTES.txt": `Installed {{ .Release.Name }}.`,
	})
	app.Files = []*common.File{{Name: "files/conf.txt", Data: []byte("conf\n")}}
	app.Metadata.Dependencies = []*chart.Dependency{
		{Name: "db", Version: "1.0.0", Condition: "db.enabled"},
		{Name: "db", Version: "1.0.0", Alias: "replica", Condition: "replica.enabled"},
		{Name: "cache", Version: "1.0.0", Condition: "cache.enabled"},
	}
	app.AddDependency(
		testChart("db", map[string]any{"size": 1.0}, map[string]string{"db.yaml": `size: {{ .Values.size }} of {{ .Release.Name }}`}),
		testChart("cache", nil, map[string]string{"cache.yaml": `cache: {{ .Values.x }}`}),
	)
	return app
}

// renderDirectly renders as a Helm action would in this process.
func renderDirectly(t *testing.T, req Request) map[string]string {
	t.Helper()
	ch := copyTree(req.Chart) // rendering changes the chart
	values := map[string]any{}
	for k, v := range req.Values {
		values[k] = v
	}
	if err := chartutil.ProcessDependencies(ch, values); err != nil {
		t.Fatal(err)
	}
	caps := req.Capabilities
	if caps == nil {
		caps = common.DefaultCapabilities
	}
	top, err := util.ToRenderValuesWithSchemaValidation(ch, values, req.Release, caps, true)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// copyTree copies a chart and its dependencies, sharing templates, as
// the release package does before an action changes them.
func copyTree(ch *chart.Chart) *chart.Chart {
	out := *ch
	md := *ch.Metadata
	md.Dependencies = nil
	for _, d := range ch.Metadata.Dependencies {
		dc := *d
		md.Dependencies = append(md.Dependencies, &dc)
	}
	out.Metadata = &md
	var deps []*chart.Chart
	for _, d := range ch.Dependencies() {
		deps = append(deps, copyTree(d))
	}
	out.SetDependencies(deps...)
	return &out
}

func newRenderer(t *testing.T, limits Limits) *Renderer {
	t.Helper()
	return New(limits, nil)
}

// takeTurn takes a turn of r with a render process that waits for its
// chart until it is ended.
func takeTurn(t *testing.T, r *Renderer) *isolate.Process {
	t.Helper()
	held, err := r.turns.Start(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

func TestRenderIsWhatHelmRenders(t *testing.T) {
	caps := common.DefaultCapabilities.Copy()
	caps.APIVersions = append(caps.APIVersions, "example.com/v1")
	r := newRenderer(t, Limits{})
	for _, tc := range []struct {
		name string
		req  Request
	}{
		{"install", Request{Release: common.ReleaseOptions{Name: "web", Namespace: "apps", Revision: 1, IsInstall: true}}},
		{"upgrade with values", Request{
			Values:       map[string]any{"replicas": 5, "db": map[string]any{"size": int64(7)}, "nothing": "set", "ratio": math.Inf(1)},
			Release:      common.ReleaseOptions{Name: "web", Namespace: "apps", Revision: 7, IsUpgrade: true},
			Capabilities: caps,
		}},
		{"subcharts switched", Request{
			Values:  map[string]any{"db": map[string]any{"enabled": false}, "cache": map[string]any{"enabled": true, "x": "on"}},
			Release: common.ReleaseOptions{Name: "other", Namespace: "ns", Revision: 2, IsUpgrade: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tc.req.Chart = appChart()
			want := renderDirectly(t, tc.req)

			rendered, err := r.Render(context.Background(), tc.req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rendered).To(Equal(want))

			// The literal chart renders the same files as Helm's action
			// would render them from it, with the same values.
			lit, _ := Literal(tc.req.Chart, rendered)
			g.Expect(renderDirectly(t, Request{Chart: lit, Values: tc.req.Values, Release: tc.req.Release, Capabilities: tc.req.Capabilities})).To(Equal(want))
		})
	}
	// Nothing above was a no-op.
	files := renderDirectly(t, Request{Chart: appChart(), Release: common.ReleaseOptions{Name: "web", Namespace: "apps", Revision: 1, IsInstall: true}})
	NewWithT(t).Expect(files["app/templates/deploy.yaml"]).To(And(
		ContainSubstring("replicas: 3 int64 float64 <nil>"),
		ContainSubstring("tpl: web-1"),
		ContainSubstring("file: conf"),
		ContainSubstring("literal: {{ not a template }}"),
	))
	NewWithT(t).Expect(files).To(HaveKeyWithValue("app/charts/db/templates/db.yaml", "size: 10 of web"))
	NewWithT(t).Expect(files).To(HaveKeyWithValue("app/charts/replica/templates/db.yaml", "size: 2 of web"))
}

func TestRenderKeepsWithinItsLimits(t *testing.T) {
	r := newRenderer(t, Limits{Memory: 96 << 20, Output: 1 << 20})
	for _, tc := range []struct {
		name     string
		template string
		timeout  time.Duration
		want     error
	}{
		{"a list of a billion", `n: {{ len (until 300000000) }}`, time.Minute, ErrMemory},
		{"a string of 200 MB", `n: {{ len (repeat 200000000 "x") }}`, time.Minute, ErrMemory},
		{"strings grown in a loop", `{{ $s := "xxxxxxxxxxxxxxxx" }}{{ range until 30 }}{{ $s = print $s $s }}{{ end }}n: {{ len $s }}`, time.Minute, ErrMemory},
		{"more output than allowed", `{{ range until 200000 }}xxxxxxxxxx{{ end }}`, time.Minute, ErrOutput},
		{"a loop without end", `{{ range $i := until 100000 }}{{ range $j := until 100000 }}{{ end }}{{ end }}`, 2 * time.Second, ErrTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()

			_, err := r.Render(ctx, Request{Chart: testChart("bomb", nil, map[string]string{"cm.yaml": tc.template})})
			g.Expect(err).To(MatchError(tc.want))

			// The parent never held what the chart asked for.
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			g.Expect(after.TotalAlloc - before.TotalAlloc).To(BeNumerically("<", 32<<20))
		})
	}
}

func TestRenderErrorsOfTheTemplatesAreReturned(t *testing.T) {
	g := NewWithT(t)
	r := newRenderer(t, Limits{})
	_, err := r.Render(context.Background(), Request{Chart: testChart("bad", nil, map[string]string{"cm.yaml": `{{ fail "the value x is required" }}`})})
	g.Expect(err).To(MatchError(ContainSubstring("the value x is required")))
	for _, limit := range []error{ErrMemory, ErrOutput, ErrTimeout} {
		g.Expect(errors.Is(err, limit)).To(BeFalse())
	}
}

func TestLookupIsAnsweredByTheParent(t *testing.T) {
	g := NewWithT(t)
	r := newRenderer(t, Limits{Output: 1 << 20})
	var calls []lookupCall
	lookup := func(apiVersion, kind, namespace, name string) (map[string]any, error) {
		calls = append(calls, lookupCall{apiVersion, kind, namespace, name})
		if name == "huge" {
			return map[string]any{"data": string(make([]byte, 2<<20))}, nil
		}
		return map[string]any{"data": map[string]any{"k": "v"}, "spec": map[string]any{"n": int64(4)}}, nil
	}
	ch := testChart("app", nil, map[string]string{
		"cm.yaml": `k: {{ (lookup "v1" "ConfigMap" "ns" "cm").data.k }} {{ printf "%T" (lookup "v1" "ConfigMap" "ns" "cm").spec.n }}`,
	})

	rendered, err := r.Render(context.Background(), Request{Chart: ch, Lookup: lookup})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rendered).To(HaveKeyWithValue("app/templates/cm.yaml", "k: v int64"))
	g.Expect(calls).To(ConsistOf(lookupCall{"v1", "ConfigMap", "ns", "cm"}, lookupCall{"v1", "ConfigMap", "ns", "cm"}))

	// Without a cluster, lookups find nothing.
	rendered, err = r.Render(context.Background(), Request{Chart: testChart("app", nil, map[string]string{"cm.yaml": `{{ lookup "v1" "ConfigMap" "ns" "cm" | toJson }}`})})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rendered).To(HaveKeyWithValue("app/templates/cm.yaml", "{}"))

	// An answer larger than the output may be is an error of the render.
	_, err = r.Render(context.Background(), Request{Chart: testChart("app", nil, map[string]string{"cm.yaml": `{{ lookup "v1" "Secret" "ns" "huge" }}`}), Lookup: lookup})
	g.Expect(err).To(MatchError(ContainSubstring("the answer is larger than 1 MiB")))
}

// TestOneProcessRendersOneChartAfterAnother: a render process that
// rendered a chart well renders the next (starting one costs more CPU
// than most renders), with the next request's values and lookups only;
// one whose render failed is ended.
func TestOneProcessRendersOneChartAfterAnother(t *testing.T) {
	g := NewWithT(t)
	r := newRenderer(t, Limits{Concurrency: 1})
	tenant := func(name string) LookupFunc {
		return func(_, _, _, _ string) (map[string]any, error) {
			return map[string]any{"data": map[string]any{"owner": name}}, nil
		}
	}
	show := testChart("show", nil, map[string]string{
		"cm.yaml": `values: {{ .Values | toJson }} lookup: {{ (lookup "v1" "ConfigMap" "ns" "cm").data.owner }}`,
	})

	rendered, err := r.Render(context.Background(), Request{Chart: show, Values: map[string]any{"password": "alpha-secret"}, Lookup: tenant("alpha")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rendered).To(HaveKeyWithValue("show/templates/cm.yaml", `values: {"password":"alpha-secret"} lookup: alpha`))
	rendered, err = r.Render(context.Background(), Request{Chart: show, Values: map[string]any{"user": "beta"}, Lookup: tenant("beta")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rendered).To(HaveKeyWithValue("show/templates/cm.yaml", `values: {"user":"beta"} lookup: beta`))
	g.Expect(r.turns.Started()).To(Equal(int64(1)), "the process that rendered the first chart rendered the second")

	_, err = r.Render(context.Background(), Request{Chart: testChart("bad", nil, map[string]string{"cm.yaml": `{{ fail "no" }}`})})
	g.Expect(err).To(HaveOccurred())
	_, err = r.Render(context.Background(), Request{Chart: show, Lookup: tenant("gamma")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.turns.Started()).To(Equal(int64(2)), "a process whose render failed renders nothing more")
}

func TestRenderWaitsForATurnUntilItsContextEnds(t *testing.T) {
	g := NewWithT(t)
	r := newRenderer(t, Limits{Concurrency: 1})
	held := takeTurn(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.Render(ctx, Request{Chart: testChart("app", nil, nil)})
	g.Expect(err).To(MatchError(ErrTimeout))
	g.Expect(held.End(true)).To(Succeed())
	_, err = r.Render(context.Background(), Request{Chart: testChart("app", nil, nil)})
	g.Expect(err).NotTo(HaveOccurred())
}

func TestValuesKeepTheirTypes(t *testing.T) {
	g := NewWithT(t)
	in := map[string]any{
		"int": 1, "int64": int64(-2), "uint64": uint64(math.MaxUint64), "float": 1.5, "nan": math.NaN(),
		"nil": nil, "bool": true, "string": "s", "list": []any{map[string]any{"a": nil}},
		"other": []string{"x", "y"},
	}
	w, err := encodeValue(in)
	g.Expect(err).NotTo(HaveOccurred())
	out, err := w.decode()
	g.Expect(err).NotTo(HaveOccurred())
	m := out.(map[string]any)
	g.Expect(math.IsNaN(m["nan"].(float64))).To(BeTrue())
	delete(m, "nan")
	delete(in, "nan")
	in["other"] = []any{"x", "y"} // other types cross as JSON
	g.Expect(m).To(Equal(in))
}

func TestLiteralPrintsTheTextAsItIs(t *testing.T) {
	g := NewWithT(t)
	text := "a: {{ .Values.x }}\nb: {{- /* c */ -}} }}{{{{\n{{ fail \"no\" }}"
	ch := testChart("app", nil, map[string]string{"cm.yaml": `{{ .Values.x }}`, "_p.tpl": `{{ define "p" }}x{{ end }}`})
	lit, _ := Literal(ch, map[string]string{"app/templates/cm.yaml": text})

	files, err := engine.Render(lit, map[string]any{"Values": map[string]any{"x": "no"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(Equal(map[string]string{"app/templates/cm.yaml": text}))
	g.Expect(string(ch.Templates[0].Data) + string(ch.Templates[1].Data)).To(ContainSubstring(".Values.x")) // unchanged
}

func TestRestoreGivesTheProcessedLiteralChartItsTemplatesBack(t *testing.T) {
	g := NewWithT(t)
	ch := appChart()
	values := map[string]any{"cache": map[string]any{"enabled": true}}
	rendered := renderDirectly(t, Request{Chart: ch, Values: values})
	lit, originals := Literal(ch, rendered)
	processed := copyTree(lit)
	g.Expect(chartutil.ProcessDependencies(processed, values)).To(Succeed())

	restored := originals.Restore(processed)
	templates := func(c *chart.Chart) string {
		var b strings.Builder
		for _, t := range c.Templates {
			b.Write(t.Data)
		}
		return b.String()
	}
	g.Expect(templates(restored)).To(Equal(templates(ch)))
	var names []string
	for _, dep := range restored.Dependencies() {
		names = append(names, dep.Name())
		g.Expect(templates(dep)).To(ContainSubstring(".Values."), dep.Name())
	}
	g.Expect(names).To(ConsistOf("db", "replica", "cache"))
	g.Expect(templates(processed)).NotTo(ContainSubstring(".Values."), "the action's chart is not changed")
	// The db chart prints what was rendered under each of its names.
	g.Expect(templates(lit.Dependencies()[0])).To(And(ContainSubstring(`.Template.Name "app/charts/replica/templates/db.yaml"`), ContainSubstring("size: 2 of")))
}

// A render's time is its own: req.Timeout (capped by Limits.Time) ends a
// render that never finishes, with a message naming it, and is counted
// from when the process has the chart, so that the wait for a turn is not
// charged to it.
func TestRenderTimeIsCountedFromWhenTheProcessHasTheChart(t *testing.T) {
	endless := testChart("loop", nil, map[string]string{"cm.yaml": `{{ range $i := until 100000 }}{{ range $j := until 100000 }}{{ end }}{{ end }}`})
	for _, tc := range []struct {
		name    string
		limits  Limits
		timeout time.Duration
		want    string
	}{
		{"the request's timeout", Limits{}, time.Second, "took longer than 1s"},
		{"capped by the limit", Limits{Time: time.Second}, time.Hour, "took longer than 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := newRenderer(t, tc.limits).Render(context.Background(), Request{Chart: endless, Timeout: tc.timeout})
			g.Expect(err).To(MatchError(ErrTimeout))
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}

	g := NewWithT(t)
	r := newRenderer(t, Limits{Concurrency: 1})
	held := takeTurn(t, r) // for longer than the render may take
	done := make(chan error, 1)
	go func() {
		_, err := r.Render(context.Background(), Request{Chart: testChart("app", nil, nil), Timeout: 5 * time.Second})
		done <- err
	}()
	g.Consistently(done, 6*time.Second).ShouldNot(Receive(), "waiting for a turn, longer than the render may take")
	g.Expect(held.End(true)).To(Succeed())
	g.Eventually(done, time.Minute).Should(Receive(BeNil()))
}
