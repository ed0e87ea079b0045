package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/monitoring"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// startMonitoredController starts `windlass controller` for the objects
// labelled for shard, with env added to its environment and extra flags,
// and kills it when t ends (showing its output if t failed). It does not
// wait for it to be ready: Prometheus's first successful scrape says it is.
func startMonitoredController(t *testing.T, g *WithT, shard string, env []string, extra ...string) *controller {
	t.Helper()
	proc, err := startControllerWithEnv(kubeconfig, filepath.Join(t.TempDir(), "artifacts"), shardLabel+"="+shard, env, extra...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if !proc.Exited() {
			proc.Kill()
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("windlass controller (%s) output:\n%s", shard, proc.Output())
		}
	})
	return proc
}

// podTarget is a Prometheus target of the controller proc, labelled as the
// Kubernetes service discovery of monitoring.ScrapeConfig labels a pod of
// an installation in flux-system.
func podTarget(proc *controller, pod string) testservers.PrometheusTarget {
	return testservers.PrometheusTarget{Job: "windlass", Addr: proc.MetricsAddr,
		Labels: map[string]string{"namespace": "flux-system", "pod": pod}}
}

// dashboardPanel is a panel of the Grafana dashboard that shows data: its
// row, its title and the PromQL of its queries.
type dashboardPanel struct {
	Row, Title string
	Exprs      []string
}

// String names the panel as its row and title: two panels may share a
// title ("Held by gates").
func (p dashboardPanel) String() string { return p.Row + " / " + p.Title }

// dashboardPanels returns the panels of monitoring.Dashboard(), read from
// its JSON as Grafana reads it: a panel of type "row" starts a row (and
// holds its panels when collapsed), every other panel shows data.
func dashboardPanels(g *WithT) []dashboardPanel {
	data, err := monitoring.Dashboard()
	g.Expect(err).NotTo(HaveOccurred())
	type jsonPanel struct {
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels []jsonPanel `json:"panels"`
	}
	g.Expect(json.Unmarshal(data, &d)).To(Succeed())
	var out []dashboardPanel
	row := ""
	var walk func(ps []jsonPanel)
	walk = func(ps []jsonPanel) {
		for _, p := range ps {
			if p.Type == "row" {
				row = p.Title
				var nested []jsonPanel
				if len(p.Panels) > 0 {
					g.Expect(json.Unmarshal(p.Panels, &nested)).To(Succeed())
				}
				walk(nested)
				continue
			}
			panel := dashboardPanel{Row: row, Title: p.Title}
			for _, target := range p.Targets {
				panel.Exprs = append(panel.Exprs, target.Expr)
			}
			g.Expect(panel.Exprs).NotTo(BeEmpty(), "panel %s has no query", panel)
			out = append(out, panel)
		}
	}
	walk(d.Panels)
	return out
}

// grafanaVariables stand for the dashboard's variables as Grafana
// expands them: every namespace, and a rate interval of four scrapes and
// more (one minute).
var grafanaVariables = strings.NewReplacer("$namespace", ".*", "$__rate_interval", "1m")

// expandQuery returns expr with the dashboard's variables expanded.
func expandQuery(expr string) string { return grafanaVariables.Replace(expr) }

// expectValidQueries checks that Prometheus evaluates every query of
// panels without an error.
func expectValidQueries(g *WithT, prom *testservers.Prometheus, panels []dashboardPanel) {
	g.THelper()
	for _, p := range panels {
		for _, expr := range p.Exprs {
			_, err := prom.Query(context.Background(), expandQuery(expr))
			g.Expect(err).NotTo(HaveOccurred(), "a query of the panel %s", p)
		}
	}
}

// panelsWithoutData returns the panels none of whose queries returns a
// sample now, each with what its queries returned (an error, or nothing).
func panelsWithoutData(prom *testservers.Prometheus, panels []dashboardPanel) []string {
	var missing []string
	for _, p := range panels {
		var why []string
		hasData := false
		for _, expr := range p.Exprs {
			v, err := prom.Query(context.Background(), expandQuery(expr))
			switch {
			case err != nil:
				why = append(why, err.Error())
			case len(v) == 0:
				why = append(why, "no data: "+expandQuery(expr))
			default:
				hasData = true
			}
		}
		if !hasData {
			missing = append(missing, p.String()+" ("+strings.Join(why, "; ")+")")
		}
	}
	return missing
}

// seriesWant is a query grouped by one label, and the values of that
// label the story makes the controller export.
type seriesWant struct {
	Expr  string
	Label string
	Want  []string
}

// missingSeries returns, for each of wants, the values of its label that
// its query does not return now.
func missingSeries(prom *testservers.Prometheus, wants []seriesWant) []string {
	var missing []string
	for _, w := range wants {
		got, err := labelValues(prom, w.Expr, w.Label)
		if err != nil {
			missing = append(missing, err.Error())
			continue
		}
		for _, want := range w.Want {
			if !slices.Contains(got, want) {
				missing = append(missing, fmt.Sprintf("%s=%q of %s (got %q)", w.Label, want, w.Expr, got))
			}
		}
	}
	return missing
}

// labelValues returns the values of label in the result of the instant
// query expr, sorted.
func labelValues(prom *testservers.Prometheus, expr, label string) ([]string, error) {
	v, err := prom.Query(context.Background(), expr)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range v {
		out = append(out, s.Labels[label])
	}
	sort.Strings(out)
	return out, nil
}

// queryValue returns the value of the instant query expr, which returns
// one sample or none (0).
func queryValue(g Gomega, prom *testservers.Prometheus, expr string) float64 {
	v, err := prom.Query(context.Background(), expr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(v)).To(BeNumerically("<=", 1), "%s returns one sample at most: %v", expr, v)
	if len(v) == 0 {
		return 0
	}
	return v[0].Value
}

// alertState returns the state of the alert name whose labels include
// labels: "firing", "pending", or "inactive" when Prometheus has none.
func alertState(g Gomega, prom *testservers.Prometheus, name string, labels map[string]string) string {
	alerts, err := prom.Alerts(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	state := "inactive"
	for _, a := range alerts {
		if a.Labels["alertname"] != name || !hasLabels(a.Labels, labels) {
			continue
		}
		if a.State == "firing" {
			return a.State
		}
		state = a.State
	}
	return state
}

// hasLabels reports whether got holds every label of want.
func hasLabels(got, want map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// objectAlert is the labels of an alert about one object.
func objectAlert(kind, ns, name string) map[string]string {
	return map[string]string{"kind": kind, "exported_namespace": ns, "name": name}
}

// monitoredStory is the manifests of the story, in the namespace NS, each
// object labelled for the controller of the story: the git repositories
// (the application, a short-interval one that the story breaks, and one
// that image automation pushes to), the Kustomizations that apply (app),
// are suspended, fail (a path not in the repository) and are held by the
// closed gate, the Helm releases that install and fail, the notification
// providers (one broken) and their alerts, a generic Receiver, and the
// image repository, policy and automation.
const monitoredStory = `apiVersion: v1
kind: Secret
metadata: {name: git-auth, namespace: {{NS}}}
stringData: {username: bot, password: {{GIT_PASSWORD}}}
---
apiVersion: v1
kind: Secret
metadata: {name: webhook-token, namespace: {{NS}}}
stringData: {token: {{WEBHOOK_TOKEN}}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: app, namespace: {{NS}}, labels: {{LABELS}}}
spec: {interval: 1h, url: {{GIT}}/app.git, ref: {branch: main}, secretRef: {name: git-auth}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flaky, namespace: {{NS}}, labels: {{LABELS}}}
spec: {interval: {{FLAKY_INTERVAL}}, url: {{GIT}}/flaky.git, ref: {branch: main}, secretRef: {name: git-auth}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: images, namespace: {{NS}}, labels: {{LABELS}}}
spec: {interval: 1h, url: {{GIT}}/images.git, ref: {branch: main}, secretRef: {name: git-auth}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: {{NS}}, labels: {{LABELS}}}
spec: {interval: 1h, path: ./deploy, prune: true, targetNamespace: {{NS}}, sourceRef: {kind: GitRepository, name: app}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: paused, namespace: {{NS}}, labels: {{LABELS}}}
spec: {interval: 1h, suspend: true, path: ./deploy, prune: true, targetNamespace: {{NS}}, sourceRef: {kind: GitRepository, name: app}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: broken, namespace: {{NS}}, labels: {{LABELS}}}
spec: {interval: 1h, path: ./no-such-path, prune: true, targetNamespace: {{NS}}, sourceRef: {kind: GitRepository, name: app}}
---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata: {name: approval, namespace: {{NS}}, labels: {{LABELS}}}
spec: {interval: 1h, default: closed, window: 1h}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: held, namespace: {{NS}}, labels: {{LABELS}}}
spec:
  interval: 1h
  path: ./held
  prune: true
  targetNamespace: {{NS}}
  sourceRef: {kind: GitRepository, name: app}
  gates: [{name: approval}]
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: {{NS}}, labels: {{LABELS}}}
spec: {interval: 1h, url: {{CHARTS}}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: app, namespace: {{NS}}, labels: {{LABELS}}}
spec:
  interval: 1h
  chart:
    spec: {chart: app, version: 1.0.0, sourceRef: {kind: HelmRepository, name: charts}}
    metadata: {labels: {{LABELS}}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: broken, namespace: {{NS}}, labels: {{LABELS}}}
spec:
  interval: 1h
  chart:
    spec: {chart: app, version: 2.0.0, sourceRef: {kind: HelmRepository, name: charts}}
    metadata: {labels: {{LABELS}}}
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: oncall, namespace: {{NS}}, labels: {{LABELS}}}
spec: {type: generic, address: {{HOOK}}}
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: broken-hook, namespace: {{NS}}, labels: {{LABELS}}}
spec: {type: generic, address: {{BROKEN_HOOK}}}
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: oncall, namespace: {{NS}}, labels: {{LABELS}}}
spec:
  providerRef: {name: oncall}
  eventSources: [{kind: Kustomization, name: '*'}, {kind: GitRepository, name: '*'}, {kind: HelmRelease, name: '*'}]
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: broken-hook, namespace: {{NS}}, labels: {{LABELS}}}
spec:
  providerRef: {name: broken-hook}
  eventSources: [{kind: Kustomization, name: '*'}, {kind: GitRepository, name: '*'}, {kind: HelmRelease, name: '*'}]
---
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: ci, namespace: {{NS}}, labels: {{LABELS}}}
spec:
  type: generic
  secretRef: {name: webhook-token}
  resources: [{kind: GitRepository, name: app}]
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: podinfo, namespace: {{NS}}, labels: {{LABELS}}}
spec: {image: {{IMAGE}}, interval: 5s, insecure: true}
---
apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImagePolicy
metadata: {name: podinfo, namespace: {{NS}}, labels: {{LABELS}}}
spec:
  imageRepositoryRef: {name: podinfo}
  policy: {semver: {range: 6.x}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: images, namespace: {{NS}}, labels: {{LABELS}}}
spec:
  interval: 1h
  sourceRef: {kind: GitRepository, name: images}
  git:
    checkout: {ref: {branch: main}}
    commit:
      author: {name: windlass, email: bot@example.com}
      messageTemplate: 'Update images'
    push: {branch: main}
  update: {strategy: Setters, path: ./apps}`

// storyManifests returns monitoredStory with its placeholders ({{NS}},
// ...) replaced by vars.
func storyManifests(vars map[string]string) string {
	var pairs []string
	for k, v := range vars {
		pairs = append(pairs, "{{"+k+"}}", v)
	}
	out := strings.NewReplacer(pairs...).Replace(monitoredStory)
	if i := strings.Index(out, "{{"); i >= 0 {
		panic("a placeholder of the story is not set: " + out[i:min(len(out), i+30)])
	}
	return out
}

// appFiles are the files of the application's repository: deploy is what
// the Kustomization app applies (a, and b, which the story removes to
// prune it), fixed is where the Kustomization broken is pointed to mend
// it, held what the gated Kustomization applies once the gate opens.
func appFiles() map[string]string {
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  v: \"1\"\n"
	}
	return map[string]string{
		"deploy/a.yaml": cm("a"),
		"deploy/b.yaml": cm("b"),
		"fixed/c.yaml":  cm("c"),
		"held/d.yaml":   cm("d"),
	}
}

// setGitURL sets the spec.url of the GitRepository key, as kubectl patch
// does.
func setGitURL(g *WithT, key client.ObjectKey, url string) {
	patchSpec(g, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
		`{"spec":{"url":"`+url+`"}}`)
}

// patchSpec applies the JSON merge patch to obj (its namespace and name).
func patchSpec(g *WithT, obj client.Object, patch string) {
	g.Expect(env.Client.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// postHook posts a generic webhook (an empty JSON body) to path on the
// Receiver address of proc, and returns the status code.
func postHook(g *WithT, proc *controller, path string) int {
	resp, err := httpClient.Post("http://"+proc.ReceiverAddr+path, "application/json", strings.NewReader("{}"))
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	return resp.StatusCode
}
