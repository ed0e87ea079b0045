package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/internal/monitoring"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

func TestMonitoringPrintsTheRulesTheDashboardAndAScrapeConfigPrometheusAccepts(t *testing.T) {
	g := NewWithT(t)
	out, _, err := runWithoutKubeconfig("monitoring", "rules")
	g.Expect(err).NotTo(HaveOccurred())
	var rules struct {
		Groups []monitoring.RuleGroup `json:"groups"`
	}
	g.Expect(yaml.Unmarshal([]byte(out), &rules)).To(Succeed())
	g.Expect(rules.Groups).To(HaveLen(1))
	g.Expect(rules.Groups[0].Rules).To(ContainElements(HaveField("Alert", "WindlassObjectFailing"),
		HaveField("Alert", "WindlassSourceNotFetched"), HaveField("Alert", "WindlassGateHeldTooLong")))

	out, _, err = runWithoutKubeconfig("monitoring", "dashboard")
	g.Expect(err).NotTo(HaveOccurred())
	var dashboard map[string]any
	g.Expect(json.Unmarshal([]byte(out), &dashboard)).To(Succeed())
	g.Expect(dashboard).To(HaveKeyWithValue("uid", monitoring.DashboardUID))

	_, _, err = runWithoutKubeconfig("monitoring", "rule")
	g.Expect(err).To(MatchError(HavePrefix(`unknown command "rule" for "windlass monitoring" (did you mean rules?)`)))

	out, _, err = runWithoutKubeconfig("install", "--export", "--monitoring", "-n", "gitops")
	g.Expect(err).NotTo(HaveOccurred())
	exported := map[string]string{}
	for _, o := range installedObjects(g, out) {
		exported[o.GetKind()+"/"+o.GetName()] = o.GetNamespace()
	}
	g.Expect(exported).To(And(HaveKeyWithValue("PodMonitor/windlass", "gitops"), HaveKeyWithValue("PrometheusRule/windlass", "gitops"),
		HaveKeyWithValue("ConfigMap/windlass-dashboard", "gitops")), "--export prints the monitoring objects too")

	out, _, err = runWithoutKubeconfig("monitoring", "scrape-config", "-n", "gitops")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("job_name: gitops/windlass"))
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	g.Expect(os.WriteFile(config, []byte(out), 0o600)).To(Succeed())
	check, err := exec.Command(testservers.Promtool(t), "check", "config", "--syntax-only", config).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(check))
}

func TestInstallMonitoring(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, _, err := run(t, "install", "-n", ns, "--monitoring", "--timeout", installTestTimeout)
	g.Expect(err).To(MatchError(ContainSubstring("--monitoring needs the Prometheus Operator's PodMonitor kind (monitoring.coreos.com/v1), which this cluster does not serve")))
	deployment := &unstructured.Unstructured{}
	deployment.SetAPIVersion("apps/v1")
	deployment.SetKind("Deployment")
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "windlass"}, deployment))).
		To(BeTrue(), "nothing is installed")

	crds, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join("testdata", "monitoring-crds.yaml")}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		_ = envtest.UninstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: crds})
	})
	ns, out, _ := installForTest(t, g, "--monitoring")
	g.Expect(out).To(ContainSubstring("✔ PodMonitor/" + ns + "/windlass created\n"))
	g.Expect(out).To(ContainSubstring("✔ PrometheusRule/" + ns + "/windlass created\n"))
	g.Expect(out).To(ContainSubstring("✔ ConfigMap/" + ns + "/windlass-dashboard created\n"))

	podMonitor := monitoringObject(monitoring.PodMonitorKind)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "windlass"}, podMonitor)).To(Succeed())
	selector, _, _ := unstructured.NestedStringMap(podMonitor.Object, "spec", "selector", "matchLabels")
	g.Expect(selector).To(Equal(map[string]string{"app.kubernetes.io/part-of": "windlass"}))
	rule := monitoringObject(monitoring.PrometheusRuleKind)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "windlass"}, rule)).To(Succeed())
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	g.Expect(groups).To(HaveLen(1))
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "windlass-dashboard"}, cm)).To(Succeed())
	g.Expect(cm.Labels).To(HaveKeyWithValue(monitoring.DashboardLabel, "1"))
	g.Expect(cm.Data).To(HaveKey(monitoring.DashboardFile))

	_, _, err = run(t, "uninstall", "--silent", "--keep-crds", "--keep-namespace", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	for _, obj := range []client.Object{monitoringObject(monitoring.PodMonitorKind), monitoringObject(monitoring.PrometheusRuleKind)} {
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "windlass"}, obj))).To(BeTrue())
	}
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "windlass-dashboard"}, cm))).To(BeTrue())
}

// monitoringObject returns an empty object of the Prometheus Operator's kind.
func monitoringObject(kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(monitoring.OperatorAPIVersion)
	u.SetKind(kind)
	return u
}
