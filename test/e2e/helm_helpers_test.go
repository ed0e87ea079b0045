package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

const (
	// releaseName is the name of the HelmRelease of every Helm story, and
	// of its Helm release (no target namespace, so no prefix).
	releaseName = "app"
	// settingsConfigMap is the ConfigMap every chart of the Helm stories
	// renders for that release.
	settingsConfigMap = releaseName + "-settings"
	// helmStoryBound is the wall time a Helm story should stay under; it
	// is logged against, not asserted, since a loaded machine may exceed
	// it without anything being wrong.
	helmStoryBound = 60
	// helmChartLayer is the media type of the layer of a Helm chart in an
	// OCI registry, as a user types it into --layer-media-type.
	helmChartLayer = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// settingsTemplate is the template of every chart of the Helm stories: a
// ConfigMap with the release's greeting and the chart's version, so that
// the cluster shows which version was applied last.
const settingsTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  greeting: {{ .Values.greeting | quote }}
  chartVersion: {{ .Chart.Version | quote }}
`

// brokenTemplate is an object that Helm renders and sends but the API
// server refuses: a ConfigMap whose name is not a DNS subdomain.
const brokenTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-Not_A_Valid_Name
data:
  k: v
`

// neverReadyTemplate is a Deployment that never becomes ready: there is no
// kubelet, and no kube-controller-manager to write its status.
const neverReadyTemplate = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.invalid/web:1.0.0
`

// appChart builds version of the chart "app": the settings ConfigMap with
// greeting as its default value, plus the templates of opts.
func appChart(t *testing.T, version, greeting string, opts ...helmtest.ChartOption) *chart.Chart {
	t.Helper()
	base := []helmtest.ChartOption{
		helmtest.WithoutTemplates(),
		helmtest.WithTemplate("settings.yaml", settingsTemplate),
		helmtest.WithValues(map[string]any{"greeting": greeting}),
	}
	return helmtest.Chart(t, "app", version, append(base, opts...)...)
}

// helmRelease reads the HelmRelease key.
func helmRelease(g Gomega, key client.ObjectKey) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(context.Background(), key, hr)).To(Succeed())
	return hr
}

// waitHelmRelease waits until check passes on the HelmRelease key, and
// returns it as last read.
func waitHelmRelease(g *WithT, key client.ObjectKey, check func(g Gomega, hr *helmv2.HelmRelease)) *helmv2.HelmRelease {
	g.THelper()
	var hr *helmv2.HelmRelease
	g.Eventually(func(g Gomega) {
		hr = helmRelease(g, key)
		check(g, hr)
	}, timeout, interval).Should(Succeed(), func() string {
		if hr == nil {
			return "no HelmRelease " + key.String()
		}
		return fmt.Sprintf("status of HelmRelease %s: %+v", key, hr.Status)
	})
	return hr
}

// deployedAt checks that a HelmRelease is Ready for its generation with
// the chart version deployed as the latest release.
func deployedAt(version string) func(g Gomega, hr *helmv2.HelmRelease) {
	return deployedMatching(Equal(version))
}

// deployedMatching checks that a HelmRelease is Ready for its generation
// with a chart version that matches version deployed as the latest
// release.
func deployedMatching(version types.GomegaMatcher) func(g Gomega, hr *helmv2.HelmRelease) {
	return func(g Gomega, hr *helmv2.HelmRelease) {
		g.Expect(conditions.IsTrue(hr, meta.ReadyCondition)).To(BeTrue(), "Ready: %s", conditions.Message(hr, meta.ReadyCondition))
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation), "observedGeneration")
		latest := hr.Status.History.Latest()
		g.Expect(latest).NotTo(BeNil(), "history")
		g.Expect(latest.Status).To(Equal("deployed"), "latest release")
		g.Expect(latest.ChartVersion).To(version, "latest release")
	}
}

// settings returns the data of the settings ConfigMap of ns, nil when it
// does not exist.
func settings(g Gomega, ns string) map[string]string {
	cm := &corev1.ConfigMap{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: settingsConfigMap}, cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	return cm.Data
}

// releaseRecords returns the status label of each of Helm's release
// records (Secrets) of the release in ns, by Secret name.
func releaseRecords(g Gomega, ns string) map[string]string {
	return releaseRecordsIn(g, env, ns)
}

// releaseRecordsIn is releaseRecords in the cluster of cp.
func releaseRecordsIn(g Gomega, cp *testenv.Environment, ns string) map[string]string {
	var list corev1.SecretList
	g.Expect(cp.Client.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{"owner": "helm", "name": releaseName})).To(Succeed())
	out := map[string]string{}
	for _, s := range list.Items {
		out[s.Name] = s.Labels["status"]
	}
	return out
}

// watchReleaseRecords watches Helm's release records of the release in ns.
func watchReleaseRecords(g *WithT, ns string) watch.Interface {
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	w, err := cs.CoreV1().Secrets(ns).Watch(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + releaseName})
	g.Expect(err).NotTo(HaveOccurred())
	return w
}

// exportHelmRelease runs `windlass create helmrelease app ... --export`
// in ns with args, as a user does to get a manifest to edit, and returns
// the HelmRelease it printed.
func exportHelmRelease(g *WithT, ns string, args ...string) *helmv2.HelmRelease {
	g.THelper()
	out := mustRunCLI(g, append([]string{"create", "helmrelease", releaseName, "-n", ns, "--export"}, args...)...)
	hr := &helmv2.HelmRelease{}
	g.Expect(yaml.UnmarshalStrict([]byte(out), hr)).To(Succeed(), out)
	g.Expect(hr.Kind).To(Equal(helmv2.HelmReleaseKind))
	return hr
}

// writeFile writes data to name in a new temporary folder of t and
// returns its path.
func writeFile(t *testing.T, g *WithT, name string, data []byte) string {
	path := filepath.Join(t.TempDir(), name)
	g.Expect(os.WriteFile(path, data, 0o600)).To(Succeed())
	return path
}

// expectBuildMatchesCluster runs `windlass build helmrelease app` in ns and
// checks every object it prints against the cluster: the same labels and
// annotations, and every other top-level field (data, spec, ...) equal.
// It returns the "Kind/name" of the objects built, sorted.
func expectBuildMatchesCluster(g *WithT, ns string) []string {
	g.THelper()
	out := mustRunCLI(g, "build", "helmrelease", releaseName, "-n", ns)
	built := decodeObjects(g, out)
	g.Expect(built).NotTo(BeEmpty(), out)
	var names []string
	for _, want := range built {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(want.GroupVersionKind())
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(want), live)).
			To(Succeed(), "%s/%s built but not in the cluster", want.GetKind(), want.GetName())
		for k, v := range want.GetLabels() {
			g.Expect(live.GetLabels()).To(HaveKeyWithValue(k, v), "label of %s/%s", want.GetKind(), want.GetName())
		}
		for k, v := range want.GetAnnotations() {
			g.Expect(live.GetAnnotations()).To(HaveKeyWithValue(k, v), "annotation of %s/%s", want.GetKind(), want.GetName())
		}
		for field, v := range want.Object {
			if field == "metadata" || field == "status" {
				continue
			}
			g.Expect(live.Object[field]).To(Equal(v), "%s of %s/%s", field, want.GetKind(), want.GetName())
		}
		names = append(names, want.GetKind()+"/"+want.GetName())
	}
	sort.Strings(names)
	return names
}

// decodeObjects decodes a stream of YAML documents into objects.
func decodeObjects(g *WithT, stream string) []*unstructured.Unstructured {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(stream)), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		g.Expect(err).NotTo(HaveOccurred(), stream)
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// expectNoDiff checks that `windlass diff helmrelease app` in ns finds
// nothing to change: exit code 0 and no output.
func expectNoDiff(g *WithT, ns string) {
	g.THelper()
	out, errOut, code := runCLI(g, "diff", "helmrelease", releaseName, "-n", ns)
	g.Expect(code).To(Equal(0), out+errOut)
	g.Expect(out + errOut).To(BeEmpty())
}

// logStory logs the wall time of a story since start, against
// helmStoryBound.
func logStory(t *testing.T, what string, took float64) {
	t.Logf("%s: %.1fs of wall time (bound %ds)", what, took, helmStoryBound)
}

// joinLines joins the non-empty trimmed lines of out with " | ", for logs.
func joinLines(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, " | ")
}

// helmCrashScene is a namespace with a controller of its own (its own
// shard and storage), and a chart repository of charts, for a HelmRelease
// whose controller is killed mid-action.
type helmCrashScene struct {
	ns, shard, storage string
	proc               *controller
	repo               *helmtest.Repo
	key                client.ObjectKey
}

// newHelmCrashScene starts the scene's controller, and its HelmRepository
// "charts" serving charts.
func newHelmCrashScene(t *testing.T, g *WithT, charts ...*chart.Chart) *helmCrashScene {
	ns := env.CreateNamespace(t)
	sc := &helmCrashScene{ns: ns, shard: "helm-crash-" + ns, storage: t.TempDir(), repo: helmtest.NewRepo(t),
		key: client.ObjectKey{Namespace: ns, Name: releaseName}}
	sc.proc = startShardController(t, g, sc.shard, sc.storage)
	for _, c := range charts {
		sc.repo.Add(t, c)
	}
	mustRunCLI(g, "create", "source", "helm", "charts", "--url", sc.repo.URL(), "--label", shardLabel+"="+sc.shard,
		"-n", ns, "--timeout", cliTimeout)
	return sc
}

// release returns the scene's HelmRelease of the chart "app", with a
// timeout of ten minutes, for the scene's controller.
func (sc *helmCrashScene) release(g *WithT) *helmv2.HelmRelease {
	hr := exportHelmRelease(g, sc.ns, "--source", "HelmRepository/charts", "--chart", "app", "--label", shardLabel+"="+sc.shard,
		"--release-timeout", "10m")
	hr.Spec.Chart.ObjectMeta = &helmv2.HelmChartTemplateObjectMeta{Labels: map[string]string{shardLabel: sc.shard}}
	return hr
}

// expectPendingRecovered checks that restarted, a controller started after
// one was killed mid-action, told of the release left pending (an event on
// hr) and never found an operation in progress.
func expectPendingRecovered(g *WithT, hr *helmv2.HelmRelease, restarted *controller) {
	g.THelper()
	g.Expect(testutil.EventMessages(g, env.Client, hr, helmv2.HelmReleaseKind)).
		To(ContainElement(ContainSubstring("was left pending by an interrupted action")))
	expectNoOperationInProgress(g, restarted)
}

// expectNoOperationInProgress checks that proc never found a release with
// an operation in progress, as one left pending would be.
func expectNoOperationInProgress(g *WithT, proc *controller) {
	g.THelper()
	g.Expect(proc.Output()).NotTo(ContainSubstring("another operation (install/upgrade/rollback) is in progress"))
}
