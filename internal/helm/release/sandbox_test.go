package release

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/helm/sandbox"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// ownTemplates joins the templates of ch.
func ownTemplates(ch *chart.Chart) string {
	var b strings.Builder
	for _, t := range ch.Templates {
		b.Write(t.Data)
	}
	return b.String()
}

// templateText joins the templates of ch and of its dependencies.
func templateText(ch *chart.Chart) string {
	text := ownTemplates(ch)
	for _, dep := range ch.Dependencies() {
		text += templateText(dep)
	}
	return text
}

func TestSandboxedActionsStoreTheChartsOwnTemplates(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	sub := helmtest.Chart(t, "sub", "1.0.0", helmtest.WithoutTemplates(), helmtest.WithTemplate("sub.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
data:
  greeting: {{ .Values.greeting | quote }}
`))
	ch := basicChart(t, "1.0.0", helmtest.WithSubchart(sub), helmtest.WithMetadata(func(md *chart.Metadata) {
		md.Dependencies = append(md.Dependencies, &chart.Dependency{Name: "sub", Version: "1.0.0", Alias: "second"})
	}))
	values := map[string]any{"greeting": "hi", "sub": map[string]any{"greeting": "one"}, "second": map[string]any{"greeting": "two"}}

	installed := f.install(t, "app", ch, values)
	g.Expect(f.greeting("app-cm")).To(Equal("hi"))
	g.Expect(f.greeting("app-sub")).To(Equal("one"))
	g.Expect(f.greeting("app-second")).To(Equal("two"), "an aliased subchart renders under its alias")
	upgraded := f.upgrade(t, "app", ch, map[string]any{"greeting": "hey"})
	g.Expect(f.greeting("app-cm")).To(Equal("hey"))

	for _, rel := range []struct {
		name    string
		version int
		chart   *chart.Chart
	}{{"install", 1, installed.Chart}, {"upgrade", 2, upgraded.Chart}} {
		stored, err := f.runner.History("app", 0)
		g.Expect(err).NotTo(HaveOccurred())
		// A release stores its chart without the subcharts.
		for _, s := range stored {
			if s.Version == rel.version {
				g.Expect(ownTemplates(s.Chart)).To(Equal(ownTemplates(ch)), rel.name)
			}
		}
		g.Expect(templateText(rel.chart)).To(ContainSubstring("{{ .Values.greeting | quote }}"), rel.name)
	}
	g.Expect(templateText(ch)).To(ContainSubstring("{{ .Values.greeting | quote }}"), "the given chart is not changed")
}

func TestSandboxedActionsEndAChartThatExhaustsThem(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.install(t, "app", basicChart(t, "1.0.0"), map[string]any{"greeting": "kept"})

	for _, tc := range []struct {
		name     string
		template string
		timeout  time.Duration
		want     error
	}{
		{"a list of 300 million", `n: {{ len (until 300000000) }}`, time.Minute, sandbox.ErrMemory},
		{"more output than allowed", `{{ range until 4000000 }}xxxxxxxxxx{{ end }}`, time.Minute, sandbox.ErrOutput},
		{"a loop without end", `{{ range $i := until 100000 }}{{ range $j := until 100000 }}{{ end }}{{ end }}`, 2 * time.Second, sandbox.ErrTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			bomb := basicChart(t, "2.0.0", helmtest.WithTemplate("bomb.yaml", tc.template))
			_, err := f.runner.Upgrade(context.Background(), bomb, nil, UpgradeOptions{ReleaseName: "app", Timeout: tc.timeout})
			g.Expect(err).To(MatchError(tc.want))
			_, err = f.runner.Install(context.Background(), bomb, nil, InstallOptions{ReleaseName: "other", Namespace: f.target, Timeout: tc.timeout})
			g.Expect(err).To(MatchError(tc.want))
		})
	}
	hist, err := f.runner.History("app", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(versions(hist)).To(Equal([]string{"v1=deployed"}), "nothing was stored")
	g.Expect(f.greeting("app-cm")).To(Equal("kept"))
	g.Expect(f.runner.Last("other")).To(BeNil())
}

func TestSandboxedTemplatesLookUpObjectsAsTheRunner(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	ctx := context.Background()
	for _, name := range []string{"seed", "other"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.target}, Data: map[string]string{"x": name + "-value"}}
		g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	}
	ch := basicChart(t, "1.0.0", helmtest.WithTemplate("configmap.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  greeting: {{ dig "data" "x" "none" (lookup "v1" "ConfigMap" .Release.Namespace "seed") }}
  missing: {{ (lookup "v1" "ConfigMap" .Release.Namespace "none") | len | quote }}
  listed: {{ dig "items" list (lookup "v1" "ConfigMap" .Release.Namespace "") | len | quote }}
  cluster: {{ dig "metadata" "name" "none" (lookup "v1" "Namespace" "" .Release.Namespace) }}
`))
	rel := f.install(t, "app", ch, nil)
	g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed))
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.target, Name: "app-cm"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "seed-value"))
	g.Expect(cm.Data).To(HaveKeyWithValue("missing", "0"))
	g.Expect(cm.Data).To(HaveKeyWithValue("listed", "2"))
	g.Expect(cm.Data).To(HaveKeyWithValue("cluster", f.target))

	// Rendered without the cluster, lookups find nothing.
	manifest, _, err := f.runner.Render(ctx, ch, nil, RenderOptions{ReleaseName: "app", Namespace: f.target, ClientOnly: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest).To(And(ContainSubstring("greeting: none\n"), ContainSubstring(`listed: "0"`), ContainSubstring("cluster: none\n")))
}
