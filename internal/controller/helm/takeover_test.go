package helm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hchart "helm.sh/helm/v4/pkg/chart/v2"
	hcommon "helm.sh/helm/v4/pkg/release/common"
	hrelease "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// helmCLI runs the real helm CLI against the control plane, as an
// administrator, with its own home, fails the test when it fails and
// returns its output.
func helmCLI(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	kubeconfig, err := env.KubeconfigFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testservers.Helm(t), append(args, "--kubeconfig", kubeconfig)...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "config"), "HELM_DATA_HOME="+filepath.Join(dir, "data"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// installWithCLI installs chart app 1.0.0 as release "app" in ns with the
// helm CLI, with greeting "cli", and serves the same chart, and more, to
// HelmReleases.
func installWithCLI(t *testing.T, g *WithT, ns string, more ...*hchart.Chart) {
	t.Helper()
	ch := helmtest.Chart(t, "app", "1.0.0")
	newRepository(t, g, ns, append([]*hchart.Chart{ch}, more...)...)
	helmCLI(t, "install", "app", helmtest.Package(t, ch, t.TempDir()), "--namespace", ns, "--set", "greeting=cli")
	cm := configMap(g, ns, "app-cm")
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "cli"))
	g.Expect(cm.Labels).NotTo(HaveKey(helmv2.NameLabel))
}

// releaseRecords returns the names of the release records in ns.
func releaseRecords(g *WithT, ns string) []string {
	var secrets corev1.SecretList
	g.Expect(env.Client.List(context.Background(), &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})).To(Succeed())
	names := make([]string, 0, len(secrets.Items))
	for _, s := range secrets.Items {
		names = append(names, s.Name)
	}
	return names
}

// TestTakeOverReleaseOfHelmCLI: a release that the helm CLI installed is
// taken over by a HelmRelease of the same name, once, whether its values
// differ or not: the upgrade forces the CLI's server-side apply
// conflicts, labels the objects and records the history.
func TestTakeOverReleaseOfHelmCLI(t *testing.T) {
	tests := []struct {
		name   string
		values string
		want   string
	}{
		{name: "with other values", values: `{"greeting":"gitops"}`, want: "gitops"},
		{name: "with the same values", values: `{"greeting":"cli"}`, want: "cli"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.CreateNamespace(t)
			installWithCLI(t, g, ns)

			hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) { hr.Spec.Values = valuesJSON(tt.values) })
			got := waitForHR(g, client.ObjectKeyFromObject(hr), func(hr *helmv2.HelmRelease) bool {
				return hrReady("1.0.0")(hr) && hr.Status.History.Latest().Version == 2
			})
			g.Expect(got.Status.LastAttemptedReleaseAction).To(Equal(helmv2.ReleaseActionUpgrade))
			g.Expect(got.Status.History).To(HaveLen(2), "the CLI's version and the takeover")
			g.Expect(got.Status.History.Latest().Status).To(Equal("deployed"))
			g.Expect(got.Status.History[1].Status).To(Equal("superseded"))
			g.Expect(releaseRecords(g, ns)).To(ConsistOf("sh.helm.release.v1.app.v1", "sh.helm.release.v1.app.v2"))
			cm := configMap(g, ns, "app-cm")
			g.Expect(cm.Data).To(HaveKeyWithValue("greeting", tt.want))
			g.Expect(cm.Labels).To(HaveKeyWithValue(helmv2.NameLabel, "app"))
			g.Expect(cm.Labels).To(HaveKeyWithValue(helmv2.NamespaceLabel, ns))
			g.Expect(testutil.EventMessages(g, env.Client, got, helmv2.HelmReleaseKind)).To(
				ContainElement(ContainSubstring("Taking over release " + ns + "/app.v1")))
			// The helm CLI reads the record the HelmRelease wrote.
			g.Expect(helmCLI(t, "history", "app", "--namespace", ns, "--output", "json")).To(And(
				MatchRegexp(`"revision":1,[^}]*"status":"superseded"`), MatchRegexp(`"revision":2,[^}]*"status":"deployed"`)))
			g.Expect(helmCLI(t, "get", "values", "app", "--namespace", ns, "--output", "json")).To(
				MatchJSON(`{"greeting":"` + tt.want + `"}`))

			// Taken over, the release is the HelmRelease's: a new run
			// does not upgrade it again.
			testutil.RequestReconcile(g, env.Client, hr, "again")
			got = waitForHR(g, client.ObjectKeyFromObject(hr), func(hr *helmv2.HelmRelease) bool {
				return hr.Status.LastHandledReconcileAt == "again" && hrReady("1.0.0")(hr)
			})
			g.Expect(got.Status.History.Latest().Version).To(Equal(2))
			g.Expect(releaseRecords(g, ns)).To(HaveLen(2))
		})
	}
}

// TestTakeoverNeedsTheRightsOfTheServiceAccount: a HelmRelease whose
// service account could not upgrade the helm CLI's release to its chart
// does not take it: it fails with a condition that names the missing
// right, and the release stays as the CLI left it, until the service
// account is granted every right the upgrade needs.
func TestTakeoverNeedsTheRightsOfTheServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	// The HelmRelease's chart adds a ConfigMap to the CLI's release.
	installWithCLI(t, g, ns, helmtest.Chart(t, "app", "1.1.0", helmtest.WithTemplate("extra.yaml",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\ndata: {}\n")))
	// The service account may read and write the release's records and
	// read ConfigMaps, not change them.
	grantRole(g, ns, "deployer", "records", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"*"}})
	grantRole(g, ns, "deployer", "read", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"},
		Verbs: []string{"get", "list", "watch"}})

	hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) {
		hr.Spec.ServiceAccountName = "deployer"
		hr.Spec.Values = valuesJSON(`{"greeting":"gitops"}`)
	})
	key := client.ObjectKeyFromObject(hr)
	refused := func(right string) {
		t.Helper()
		got := waitForHR(g, key, func(hr *helmv2.HelmRelease) bool {
			c := conditions.Get(hr, meta.ReadyCondition)
			return c != nil && c.Reason == TakeoverRefusedReason && strings.Contains(c.Message, right)
		})
		g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring(
			"not taking over release " + ns + "/app.v1, which another tool made, as service account " + ns + "/deployer"))
		g.Expect(got.Status.InstallFailures+got.Status.UpgradeFailures).To(BeZero(), "a refused takeover is no failed attempt")
		g.Expect(releaseRecords(g, ns)).To(ConsistOf("sh.helm.release.v1.app.v1"), "the release is untouched")
		cm := configMap(g, ns, "app-cm")
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "cli"))
		g.Expect(cm.Labels).NotTo(HaveKey(helmv2.NameLabel))
	}
	refused("the identity may not patch ConfigMap " + ns + "/app-cm")

	// Allowed to change the CLI's objects, it must still make the one its
	// chart adds.
	grantRole(g, ns, "deployer", "patch", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"patch", "update"}})
	refused("the identity may not create ConfigMap " + ns + "/app-extra")

	// Granted every right, the service account takes it over.
	grantRole(g, ns, "deployer", "create", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "delete"}})
	waitForHR(g, key, func(hr *helmv2.HelmRelease) bool {
		return hrReady("1.1.0")(hr) && hr.Status.History.Latest().Version == 2
	})
	g.Expect(configMap(g, ns, "app-cm").Data).To(HaveKeyWithValue("greeting", "gitops"))
	g.Expect(configMap(g, ns, "app-extra").Labels).To(HaveKeyWithValue(helmv2.NameLabel, "app"))
}

// grantRole gives the service account sa of ns a Role called name with
// rule.
func grantRole(g *WithT, ns, sa, name string, rule rbacv1.PolicyRule) {
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Rules: []rbacv1.PolicyRule{rule}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	})).To(Succeed())
}

func TestOwnedAndForeign(t *testing.T) {
	deployed := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	rel := func(version int, status hcommon.Status, at time.Time) *hrelease.Release {
		return &hrelease.Release{Name: "app", Namespace: "web", Version: version, Info: &hrelease.Info{Status: status, LastDeployed: at}}
	}
	// The status keeps times to the second.
	history := helmv2.Snapshots{{Name: "app", Namespace: "web", Version: 3, LastDeployed: metav1.NewTime(deployed.Truncate(time.Second))}}
	tests := []struct {
		name        string
		history     helmv2.Snapshots
		rel         *hrelease.Release
		wantOwned   bool
		wantForeign bool
	}{
		{name: "the newest release of the history", history: history, rel: rel(3, hcommon.StatusDeployed, deployed), wantOwned: true},
		{name: "a failed release of the history", history: history, rel: rel(3, hcommon.StatusFailed, deployed), wantOwned: true},
		{name: "a newer version (helm upgrade)", history: history, rel: rel(4, hcommon.StatusDeployed, deployed.Add(time.Minute)), wantForeign: true},
		{name: "the same version deployed again (helm uninstall and install)", history: history,
			rel: rel(3, hcommon.StatusDeployed, deployed.Add(time.Hour)), wantForeign: true},
		{name: "a release of another name", history: history,
			rel: &hrelease.Release{Name: "other", Namespace: "web", Version: 3, Info: &hrelease.Info{LastDeployed: deployed}}, wantForeign: true},
		{name: "no history (helm install)", rel: rel(1, hcommon.StatusDeployed, deployed), wantForeign: true},
		{name: "an uninstalled release is installed, not taken over", rel: rel(1, hcommon.StatusUninstalled, deployed)},
		{name: "no release", history: history},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &helmv2.HelmRelease{Status: helmv2.HelmReleaseStatus{History: tt.history}}
			g.Expect(owned(obj, tt.rel)).To(Equal(tt.wantOwned))
			g.Expect(foreign(obj, tt.rel)).To(Equal(tt.wantForeign))
		})
	}
}
