package release

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// hookPod is the template of a Pod run as a hook of event; no Pod ever
// runs here, so it never completes.
func hookPod(event, name string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
  annotations:
    "helm.sh/hook": ` + event + `
spec:
  restartPolicy: Never
  containers:
  - name: test
    image: registry.invalid/test:1
`
}

// testChart has two test hooks: a Pod "<release>-test" that never
// completes and a ConfigMap "<release>-test-cm" that is ready at once.
func testChart(t *testing.T) []helmtest.ChartOption {
	t.Helper()
	return []helmtest.ChartOption{
		helmtest.WithTemplate("tests/pod.yaml", hookPod("test", "{{ .Release.Name }}-test")),
		helmtest.WithTemplate("tests/configmap.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-test-cm
  annotations:
    "helm.sh/hook": test
    "helm.sh/hook-weight": "-1"
`),
	}
}

func TestTest(t *testing.T) {
	tests := []struct {
		name       string
		filters    []helmv2.Filter
		wantErr    bool
		wantPod    bool
		wantPhases map[string]string
	}{
		{
			name:       "a test Pod that never completes fails at the timeout",
			wantErr:    true,
			wantPod:    true,
			wantPhases: map[string]string{"app-test": "Failed", "app-test-cm": "Succeeded"},
		},
		{
			name:       "an excluded test is not run",
			filters:    []helmv2.Filter{{Name: "app-test", Exclude: true}},
			wantPhases: map[string]string{"app-test": "", "app-test-cm": "Succeeded"},
		},
		{
			name:       "only the named tests run",
			filters:    []helmv2.Filter{{Name: "app-test-cm"}},
			wantPhases: map[string]string{"app-test": "", "app-test-cm": "Succeeded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			f.install(t, "app", basicChart(t, "1.0.0", testChart(t)...), nil)

			start := time.Now()
			rel, err := f.runner.Test(context.Background(), "app", "", TestOptions{Timeout: 2 * time.Second, Filters: tt.filters})
			g.Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second))
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(testPhases(Snapshot(rel))).To(Equal(tt.wantPhases))
			// The runs are stored with the release.
			last, err := f.runner.Last("app")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(testPhases(Snapshot(last))).To(Equal(tt.wantPhases))
			g.Expect(Snapshot(last).HasTestInPhase("Failed")).To(Equal(tt.wantErr))

			err = env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.target, Name: "app-test"}, &corev1.Pod{})
			if tt.wantPod {
				g.Expect(err).NotTo(HaveOccurred(), "the test Pod was created")
			} else {
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the test Pod was not created")
			}
		})
	}
}

// testPhases returns the phase of each test hook of snap.
func testPhases(snap *helmv2.Snapshot) map[string]string {
	if snap == nil || snap.TestHooks == nil {
		return nil
	}
	out := map[string]string{}
	for name, h := range *snap.TestHooks {
		out[name] = h.Phase
	}
	return out
}

func TestUninstall(t *testing.T) {
	tests := []struct {
		name        string
		install     bool
		opts        UninstallOptions
		wantRelease bool
		wantHistory []string
	}{
		{name: "removes the objects and the history", install: true, opts: UninstallOptions{Wait: true}, wantRelease: true},
		{name: "keeps the history when asked", install: true, opts: UninstallOptions{KeepHistory: true}, wantRelease: true, wantHistory: []string{"v1=uninstalled"}},
		{name: "a missing release is fine", opts: UninstallOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			if tt.install {
				f.install(t, "app", basicChart(t, "1.0.0"), nil)
				g.Expect(f.greeting("app-cm")).To(Equal("hello"))
			}
			rel, err := f.runner.Uninstall(context.Background(), "app", tt.opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rel != nil).To(Equal(tt.wantRelease))
			g.Eventually(func() string { return f.greeting("app-cm") }).Should(BeEmpty(), "the ConfigMap is deleted")
			hist, err := f.runner.History("app", 0)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(versions(hist)).To(Equal(append([]string{}, tt.wantHistory...)))

			// Uninstalling again is no error either.
			_, err = f.runner.Uninstall(context.Background(), "app", tt.opts)
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
}

// setStatus overwrites the status of version of a stored release through
// the Secrets driver, as a process killed in the middle of an action
// leaves it.
func setStatus(t *testing.T, f *fixture, name string, version int, status rcommon.Status) {
	t.Helper()
	d := driver.NewSecrets(getter(t).clientset.CoreV1().Secrets(f.storage))
	key := secretName(name, version)
	stored, err := d.Get(key)
	if err != nil {
		t.Fatalf("reading release %s: %v", key, err)
	}
	rel := stored.(*releasev1.Release)
	rel.SetStatus(status, "set by the test")
	if err := d.Update(key, rel); err != nil {
		t.Fatalf("storing release %s: %v", key, err)
	}
}

func TestRecoverPending(t *testing.T) {
	tests := []struct {
		name     string
		upgrades int
		status   rcommon.Status
		next     func(t *testing.T, f *fixture) (*releasev1.Release, error)
		wantNext []string
	}{
		{
			name:     "an interrupted install, then an upgrade",
			status:   rcommon.StatusPendingInstall,
			next:     upgradeNext,
			wantNext: []string{"v2=deployed", "v1=superseded"},
		},
		{
			name:   "an interrupted install, then an install with Replace",
			status: rcommon.StatusPendingInstall,
			next: func(t *testing.T, f *fixture) (*releasev1.Release, error) {
				return f.runner.Install(context.Background(), basicChart(t, "1.0.0"), map[string]any{"greeting": "again"}, InstallOptions{
					ReleaseName: "app", Namespace: f.target, Replace: true, ServerSideApply: true,
				})
			},
			wantNext: []string{"v2=deployed", "v1=failed"},
		},
		{
			name:     "an interrupted upgrade, then an upgrade",
			upgrades: 1,
			status:   rcommon.StatusPendingUpgrade,
			next:     upgradeNext,
			wantNext: []string{"v3=deployed", "v2=failed", "v1=superseded"},
		},
		{
			name:     "an interrupted rollback, then an upgrade",
			upgrades: 1,
			status:   rcommon.StatusPendingRollback,
			next:     upgradeNext,
			wantNext: []string{"v3=deployed", "v2=failed", "v1=superseded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			f.install(t, "app", basicChart(t, "1.0.0"), nil)
			if tt.upgrades > 0 {
				// As the interrupted action leaves it: v1 still deployed.
				f.upgrade(t, "app", basicChart(t, "1.0.0"), map[string]any{"greeting": "up"})
				setStatus(t, f, "app", 1, rcommon.StatusDeployed)
			}
			setStatus(t, f, "app", 1+tt.upgrades, tt.status)
			_, err := upgradeNext(t, f)
			g.Expect(err).To(MatchError(ContainSubstring("another operation")), "the SDK refuses a pending release")

			rel, recovered, err := f.runner.RecoverPending(context.Background(), "app")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(recovered).To(BeTrue())
			g.Expect(rel).NotTo(BeNil())
			g.Expect(rel.Info.Status).To(Equal(rcommon.StatusFailed))
			g.Expect(rel.Info.Description).To(ContainSubstring("interrupted while " + tt.status.String()))
			again, recovered, err := f.runner.RecoverPending(context.Background(), "app")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(recovered).To(BeFalse(), "nothing is pending any more")
			g.Expect(again.Info.Status).To(Equal(rcommon.StatusFailed), "the newest release, as it was marked")
			g.Expect(again.Version).To(Equal(rel.Version))

			rel, err = tt.next(t, f)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed))
			g.Expect(f.greeting("app-cm")).To(Equal(rel.Config["greeting"]))
			hist, err := f.runner.History("app", 0)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(versions(hist)).To(Equal(tt.wantNext))
		})
	}
}

// upgradeNext upgrades "app" to greeting "next".
func upgradeNext(t *testing.T, f *fixture) (*releasev1.Release, error) {
	return f.runner.Upgrade(context.Background(), basicChart(t, "1.0.1"), map[string]any{"greeting": "next"}, UpgradeOptions{ReleaseName: "app"})
}

func TestRecoverPendingLeavesOthersAlone(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	rel, recovered, err := f.runner.RecoverPending(context.Background(), "missing")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(recovered).To(BeFalse())
	g.Expect(rel).To(BeNil())
	f.install(t, "app", basicChart(t, "1.0.0"), nil)
	rel, recovered, err = f.runner.RecoverPending(context.Background(), "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(recovered).To(BeFalse())
	g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed), "the newest release, left as it is")
	last, err := f.runner.Last("app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(last.Info.Status).To(Equal(rcommon.StatusDeployed))
}

func TestAdoptsReleasesOfTheHelmSDK(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	// Install as the helm CLI does: a kubeconfig, the SDK's own client
	// construction and storage driver.
	kubeconfig, err := env.KubeconfigFile(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	g.Expect(cfg.Init(flags, f.storage, "secret")).To(Succeed())
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "cli", f.target
	install.WaitStrategy = kube.HookOnlyStrategy // the helm CLI's default
	_, err = install.Run(basicChart(t, "1.0.0"), map[string]any{"greeting": "from the cli"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.Remove(filepath.Clean(kubeconfig))).To(Succeed())

	last, err := f.runner.Last("cli")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(last.Info.Status).To(Equal(rcommon.StatusDeployed))
	g.Expect(last.Config).To(Equal(map[string]any{"greeting": "from the cli"}))
	hist, err := f.runner.History("cli", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(versions(hist)).To(Equal([]string{"v1=deployed"}))

	rel := f.upgrade(t, "cli", basicChart(t, "1.1.0"), map[string]any{"greeting": "adopted"})
	g.Expect(rel.Version).To(Equal(2))
	g.Expect(f.greeting("cli-cm")).To(Equal("adopted"))
	hist, err = f.runner.History("cli", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(versions(hist)).To(Equal([]string{"v2=deployed", "v1=superseded"}))
}
