package helm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hchart "helm.sh/helm/v4/pkg/chart/v2"
	hcommon "helm.sh/helm/v4/pkg/release/common"
	hrelease "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// stepReleaser returns a HelmRelease reconciler on the test control plane,
// acting as the controller, and the recorder of its events.
func stepReleaser(g *WithT) (*HelmReleaseReconciler, *events.FakeRecorder) {
	httpClient, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(env.Config, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	recorder := events.NewFakeRecorder(100)
	return &HelmReleaseReconciler{
		Client:            env.Client,
		Events:            &event.Recorder{Kubernetes: recorder},
		Targets:           &impersonation.Factory{Config: env.Config, HTTPClient: httpClient, Scheme: env.Scheme, Mapper: mapper},
		DependencyRequeue: stepRequeue,
	}, recorder
}

// releaseScopeOf returns the scope the release step sees for chart ch: the
// values and the target as their steps leave them.
func releaseScopeOf(g *WithT, r *HelmReleaseReconciler, obj *helmv2.HelmRelease, ch *hchart.Chart) *releaseScope {
	ctx := context.Background()
	sc := &releaseScope{chart: ch, revision: ch.Metadata.Version, digest: "sha256:" + strings.Repeat("ab", 32)}
	_, err := r.reconcileValues(ctx, obj, sc)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.reconcileTarget(ctx, obj, sc)
	g.Expect(err).NotTo(HaveOccurred())
	return sc
}

// releaseStep runs the release step of chart ch on obj, as a run does
// after the values and target steps, and fails the test unless it
// succeeds; it returns the scope it leaves.
func releaseStep(g *WithT, r *HelmReleaseReconciler, obj *helmv2.HelmRelease, ch *hchart.Chart) *releaseScope {
	sc := releaseScopeOf(g, r, obj, ch)
	_, err := r.reconcileReleaseStep(context.Background(), obj, sc)
	g.Expect(err).NotTo(HaveOccurred())
	return sc
}

// greeting returns data.greeting of the ConfigMap ns/name, or "absent".
func greeting(g *WithT, ns, name string) string {
	var cm corev1.ConfigMap
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm)
	if apierrors.IsNotFound(err) {
		return "absent"
	}
	g.Expect(err).NotTo(HaveOccurred())
	return cm.Data["greeting"]
}

// historyOf returns status.history as "<version>:<status>", newest first.
func historyOf(obj *helmv2.HelmRelease) []string {
	out := []string{}
	for _, s := range obj.Status.History {
		out = append(out, fmt.Sprintf("%d:%s", s.Version, s.Status))
	}
	return out
}

// badChart returns chart app at version with a template the API server
// refuses: an install or upgrade to it fails.
func badChart(t *testing.T, version string) *hchart.Chart {
	return helmtest.Chart(t, "app", version, helmtest.WithTemplate("templates/bad.yaml",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\ndata: {}\n"))
}

// TestStep_ReconcileTarget runs the target step of the HelmRelease alone
// against the test control plane: it resolves where and as whom the release
// is made (the controller, an impersonated service account), its runner
// and post-renderers, and records the storage namespace; a release made
// under a former name is uninstalled first. A kubeconfig or post-renderers
// that can never work stall, a kubeconfig that cannot be read fails. The
// step sets no condition.
func TestStep_ReconcileTarget(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*helmv2.HelmRelease)
		secret map[string][]byte // the Secret "kubeconfig", when set
		// before installs what the row needs, then changes obj.
		before           func(t *testing.T, g *WithT, r *HelmReleaseReconciler, obj *helmv2.HelmRelease)
		wantStorage      string // "NS" for the test's namespace
		wantImpersonated string
		wantHistory      []string
		wantGreeting     string // of the ConfigMap app-cm
		wantErr          testutil.Outcome
		wantReason       string
		wantMsg          string
	}{
		{name: "the local cluster, as the controller", wantStorage: "NS", wantHistory: []string{}, wantGreeting: "absent"},
		{name: "another storage namespace is recorded", mutate: func(hr *helmv2.HelmRelease) { hr.Spec.StorageNamespace = "releases" },
			wantStorage: "releases", wantHistory: []string{}, wantGreeting: "absent"},
		{name: "a service account is impersonated", mutate: func(hr *helmv2.HelmRelease) { hr.Spec.ServiceAccountName = "deployer" },
			wantStorage: "NS", wantImpersonated: "deployer", wantHistory: []string{}, wantGreeting: "absent"},
		{name: "a kubeconfig Secret that is missing fails",
			mutate: func(hr *helmv2.HelmRelease) {
				hr.Spec.KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "kubeconfig"}}
			},
			wantErr: testutil.Failing, wantReason: helmv2.InitFailedReason, wantMsg: "reading the kubeconfig secret 'kubeconfig'"},
		{name: "a malformed kubeconfig stalls",
			mutate: func(hr *helmv2.HelmRelease) {
				hr.Spec.KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "kubeconfig"}}
			},
			secret:  map[string][]byte{"value": []byte("{not yaml")},
			wantErr: testutil.Stalled, wantReason: helmv2.InitFailedReason, wantMsg: "invalid kubeconfig"},
		{name: "a configMapRef stalls",
			mutate: func(hr *helmv2.HelmRelease) {
				hr.Spec.KubeConfig = &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "identity"}}
			},
			wantErr: testutil.Stalled, wantReason: meta.UnsupportedKubeConfigReason, wantMsg: "configMapRef 'identity'"},
		{name: "post-renderers that can never work stall",
			mutate: func(hr *helmv2.HelmRelease) {
				hr.Spec.PostRenderers = []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Patches: []kustomizev1.Patch{{Patch: " "}}}}}
			},
			wantErr: testutil.Stalled, wantReason: helmv2.InitFailedReason,
			wantMsg: "invalid post-renderers: spec.postRenderers[0].kustomize.patches[0]: the patch is empty"},
		{name: "the release under its name is kept",
			before: func(t *testing.T, g *WithT, r *HelmReleaseReconciler, obj *helmv2.HelmRelease) {
				releaseStep(g, r, obj, helmtest.Chart(t, "app", "1.0.0"))
			},
			wantStorage: "NS", wantHistory: []string{"1:deployed"}, wantGreeting: "hello"},
		{name: "a release under a former name is uninstalled",
			before: func(t *testing.T, g *WithT, r *HelmReleaseReconciler, obj *helmv2.HelmRelease) {
				releaseStep(g, r, obj, helmtest.Chart(t, "app", "1.0.0"))
				obj.Spec.ReleaseName = "renamed"
			},
			wantStorage: "NS", wantHistory: []string{}, wantGreeting: "absent"},
		{name: "a former release that is already gone",
			before: func(_ *testing.T, _ *WithT, _ *HelmReleaseReconciler, obj *helmv2.HelmRelease) {
				obj.Status.StorageNamespace = obj.Namespace
				obj.Status.History = helmv2.Snapshots{{Name: "old", Namespace: obj.Namespace, Version: 3, Status: "deployed"}}
			},
			wantStorage: "NS", wantHistory: []string{}, wantGreeting: "absent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.CreateNamespace(t)
			r, _ := stepReleaser(g)
			if tt.secret != nil {
				g.Expect(env.Client.Create(context.Background(), &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig"}, Data: tt.secret})).To(Succeed())
			}
			obj := stepHR(func(hr *helmv2.HelmRelease) { hr.Namespace = ns })
			if tt.before != nil {
				tt.before(t, g, r, obj)
			}
			if tt.mutate != nil {
				tt.mutate(obj)
			}
			obj.Status.Conditions = nil
			storage := obj.Status.StorageNamespace
			sc := &releaseScope{}

			res, err := r.reconcileTarget(context.Background(), obj, sc)
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(obj.Status.Conditions).To(BeEmpty())
			if tt.wantErr != testutil.NoError {
				g.Expect(sc.runner).To(BeNil())
				g.Expect(obj.Status.StorageNamespace).To(Equal(storage))
				return
			}
			g.Expect(sc.runner).NotTo(BeNil())
			g.Expect(sc.postRenderer).NotTo(BeNil())
			g.Expect(sc.target).NotTo(BeNil())
			wantUser := ""
			if tt.wantImpersonated != "" {
				wantUser = impersonation.ServiceAccountUser(ns, tt.wantImpersonated)
			}
			g.Expect(sc.target.Config.Impersonate.UserName).To(Equal(wantUser))
			g.Expect(obj.Status.StorageNamespace).To(Equal(strings.ReplaceAll(tt.wantStorage, "NS", ns)))
			g.Expect(historyOf(obj)).To(Equal(tt.wantHistory))
			g.Expect(greeting(g, ns, "app-cm")).To(Equal(tt.wantGreeting))
		})
	}
}

// TestStep_ReconcileReleaseStep runs the release step alone against the
// test control plane: a release that is missing is installed, one that
// differs from the spec (chart, values) upgraded, one that is as declared
// left alone unless a force is asked; a reset request zeroes the failure
// counters. A failed action fails the run while retries remain, after its
// remediation (uninstall, rollback), and stalls once they are used up;
// nothing is tried again until the spec, the chart or the values change;
// RetryOnFailure retries after its interval without remediating. The step
// records the history and inventory, and the Released and Remediated
// conditions.
func TestStep_ReconcileReleaseStep(t *testing.T) {
	v1 := func(t *testing.T) *hchart.Chart { return helmtest.Chart(t, "app", "1.0.0") }
	installV1 := func(t *testing.T, g *WithT, r *HelmReleaseReconciler, obj *helmv2.HelmRelease) {
		releaseStep(g, r, obj, v1(t))
	}
	retries := func(n int) func(*helmv2.HelmRelease) {
		return func(hr *helmv2.HelmRelease) {
			hr.Spec.Install = &helmv2.Install{Remediation: &helmv2.InstallRemediation{Retries: n}}
		}
	}
	// usedUp records two failed installs of chart 1.0.0 at revision.
	usedUp := func(revision string) func(*testing.T, *WithT, *HelmReleaseReconciler, *helmv2.HelmRelease) {
		return func(t *testing.T, g *WithT, r *HelmReleaseReconciler, obj *helmv2.HelmRelease) {
			sc := releaseScopeOf(g, r, obj, v1(t))
			obj.Status.LastAttemptedReleaseAction = helmv2.ReleaseActionInstall
			obj.Status.LastAttemptedGeneration = obj.Generation
			obj.Status.LastAttemptedRevision = revision
			obj.Status.LastAttemptedConfigDigest = sc.configDigest
			obj.Status.InstallFailures, obj.Status.Failures = 2, 2
		}
	}
	tests := []struct {
		name   string
		mutate func(*helmv2.HelmRelease)
		// before installs what the row needs; then chart is released.
		before func(t *testing.T, g *WithT, r *HelmReleaseReconciler, obj *helmv2.HelmRelease)
		chart  func(t *testing.T) *hchart.Chart
		values string
		// annotations are the requests the run sees.
		annotations map[string]string
		// wantAction is status.lastAttemptedReleaseAction afterwards.
		wantAction     string
		wantHistory    []string
		wantGreeting   string
		wantInventory  bool // the inventory holds app-cm
		wantFailures   [2]int64
		wantEvents     []string // parts of the events, one each
		wantErr        testutil.Outcome
		wantReason     string
		wantMsg        string
		wantConditions []string
		wantRetryAfter time.Duration
	}{
		{name: "no release: installed", chart: v1, values: `{"greeting":"hi"}`,
			wantAction: helmv2.ReleaseActionInstall, wantHistory: []string{"1:deployed"}, wantGreeting: "hi", wantInventory: true,
			wantEvents:     []string{"Normal InstallSucceeded Helm install succeeded for release NS/app.v1 with chart app@1.0.0"},
			wantConditions: []string{"Released=True/InstallSucceeded"}},
		{name: "the release is as declared: nothing is done", before: installV1, chart: v1,
			wantAction: helmv2.ReleaseActionInstall, wantHistory: []string{"1:deployed"}, wantGreeting: "hello", wantInventory: true,
			wantConditions: []string{"Released=True/InstallSucceeded"}},
		{name: "a new chart version is upgraded", before: installV1,
			chart:      func(t *testing.T) *hchart.Chart { return helmtest.Chart(t, "app", "1.1.0") },
			wantAction: helmv2.ReleaseActionUpgrade, wantHistory: []string{"2:deployed", "1:superseded"}, wantGreeting: "hello",
			wantInventory:  true,
			wantEvents:     []string{"Normal UpgradeSucceeded Helm upgrade succeeded for release NS/app.v2 with chart app@1.1.0"},
			wantConditions: []string{"Released=True/UpgradeSucceeded"}},
		{name: "new values are upgraded", before: installV1, chart: v1, values: `{"greeting":"hey"}`,
			wantAction: helmv2.ReleaseActionUpgrade, wantHistory: []string{"2:deployed", "1:superseded"}, wantGreeting: "hey",
			wantInventory: true, wantEvents: []string{"UpgradeSucceeded"},
			wantConditions: []string{"Released=True/UpgradeSucceeded"}},
		{name: "a force request upgrades a release as declared", before: installV1, chart: v1,
			annotations: map[string]string{meta.ForceRequestAnnotation: "f1"},
			wantAction:  helmv2.ReleaseActionUpgrade, wantHistory: []string{"2:deployed", "1:superseded"}, wantGreeting: "hello",
			wantInventory: true, wantEvents: []string{"UpgradeSucceeded"},
			wantConditions: []string{"Released=True/UpgradeSucceeded"}},
		{name: "a reset request zeroes the failure counters", chart: v1,
			before: func(t *testing.T, g *WithT, r *HelmReleaseReconciler, obj *helmv2.HelmRelease) {
				installV1(t, g, r, obj)
				obj.Status.InstallFailures, obj.Status.UpgradeFailures, obj.Status.Failures = 1, 2, 3
			},
			annotations: map[string]string{meta.ResetRequestAnnotation: "r1"},
			wantAction:  helmv2.ReleaseActionInstall, wantHistory: []string{"1:deployed"}, wantGreeting: "hello", wantInventory: true,
			wantConditions: []string{"Released=True/InstallSucceeded"}},
		{name: "a failed install without retries stalls, unremediated",
			chart:      func(t *testing.T) *hchart.Chart { return badChart(t, "1.0.0") },
			wantAction: helmv2.ReleaseActionInstall, wantHistory: []string{"1:failed"}, wantFailures: [2]int64{1, 0},
			wantGreeting: "?",
			wantErr:      testutil.Stalled, wantReason: helmv2.RetriesExceededReason, wantMsg: "retries exhausted after 1 attempt(s)",
			wantConditions: []string{"Released=False/InstallFailed"}},
		{name: "a failed install with retries left is uninstalled and fails", mutate: retries(2),
			chart:      func(t *testing.T) *hchart.Chart { return badChart(t, "1.0.0") },
			wantAction: helmv2.ReleaseActionInstall, wantHistory: []string{}, wantFailures: [2]int64{1, 0}, wantGreeting: "absent",
			wantEvents: []string{"Normal UninstallSucceeded Helm uninstall succeeded for release NS/app after a failed install"},
			wantErr:    testutil.Failing, wantReason: helmv2.InstallFailedReason, wantMsg: "Helm install failed for release NS/app with chart app@1.0.0",
			wantConditions: []string{"Released=False/InstallFailed", "Remediated=True/UninstallSucceeded"}},
		{name: "retries used up: nothing is tried", mutate: retries(1), before: usedUp("1.0.0"), chart: v1,
			wantAction: helmv2.ReleaseActionInstall, wantHistory: []string{}, wantFailures: [2]int64{2, 0}, wantGreeting: "absent",
			wantErr: testutil.Stalled, wantReason: helmv2.RetriesExceededReason, wantMsg: "failed to install after 2 attempt(s)",
			wantConditions: []string{}},
		{name: "retries used up, but the chart changed: tried afresh", mutate: retries(1), before: usedUp("0.9.0"), chart: v1,
			wantAction: helmv2.ReleaseActionInstall, wantHistory: []string{"1:deployed"}, wantGreeting: "hello", wantInventory: true,
			wantEvents: []string{"InstallSucceeded"}, wantConditions: []string{"Released=True/InstallSucceeded"}},
		{name: "RetryOnFailure retries after its interval, unremediated",
			mutate: func(hr *helmv2.HelmRelease) {
				hr.Spec.Install = &helmv2.Install{Strategy: &helmv2.ActionStrategy{Name: helmv2.ActionStrategyRetryOnFailure,
					RetryInterval: &metav1.Duration{Duration: 2 * time.Minute}}}
			},
			chart:      func(t *testing.T) *hchart.Chart { return badChart(t, "1.0.0") },
			wantAction: helmv2.ReleaseActionInstall, wantHistory: []string{"1:failed"}, wantFailures: [2]int64{1, 0}, wantGreeting: "?",
			wantErr: testutil.Failing, wantReason: helmv2.InstallFailedReason, wantMsg: "; retrying",
			wantConditions: []string{"Released=False/InstallFailed"}, wantRetryAfter: 2 * time.Minute},
		{name: "a failed upgrade is rolled back and fails", before: installV1,
			mutate: func(hr *helmv2.HelmRelease) {
				hr.Spec.Upgrade = &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: 1}}
			},
			chart:      func(t *testing.T) *hchart.Chart { return badChart(t, "1.1.0") },
			wantAction: helmv2.ReleaseActionUpgrade, wantHistory: []string{"3:deployed", "2:failed", "1:superseded"},
			wantFailures: [2]int64{0, 1}, wantGreeting: "hello", wantInventory: true,
			wantEvents: []string{"Normal RollbackSucceeded Helm rollback to previous release NS/app.v1 succeeded"},
			wantErr:    testutil.Failing, wantReason: helmv2.UpgradeFailedReason, wantMsg: "Helm upgrade failed for release NS/app with chart app@1.1.0",
			wantConditions: []string{"Released=False/UpgradeFailed", "Remediated=True/RollbackSucceeded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.CreateNamespace(t)
			r, recorder := stepReleaser(g)
			obj := stepHR(func(hr *helmv2.HelmRelease) {
				hr.Namespace = ns
				if tt.mutate != nil {
					tt.mutate(hr)
				}
			})
			if tt.before != nil {
				tt.before(t, g, r, obj)
				recordedEvents(recorder)
			}
			if tt.values != "" {
				obj.Spec.Values = valuesJSON(tt.values)
			}
			obj.Annotations = tt.annotations
			sc := releaseScopeOf(g, r, obj, tt.chart(t))

			res, err := r.reconcileReleaseStep(context.Background(), obj, sc)
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, strings.ReplaceAll(tt.wantMsg, "NS", ns))
			g.Expect(testutil.ConditionSummary(obj)).To(Equal(tt.wantConditions))
			g.Expect(obj.Status.LastAttemptedReleaseAction).To(Equal(tt.wantAction))
			g.Expect(historyOf(obj)).To(Equal(tt.wantHistory))
			g.Expect([2]int64{obj.Status.InstallFailures, obj.Status.UpgradeFailures}).To(Equal(tt.wantFailures))
			if tt.wantGreeting != "?" {
				g.Expect(greeting(g, ns, "app-cm")).To(Equal(tt.wantGreeting))
			}
			if tt.wantInventory {
				g.Expect(obj.Status.Inventory).NotTo(BeNil())
				g.Expect(obj.Status.Inventory.Entries).To(ContainElement(HaveField("ID", ns+"_app-cm__ConfigMap")))
			}
			want := make([]any, 0, len(tt.wantEvents))
			for _, e := range tt.wantEvents {
				want = append(want, ContainSubstring(strings.ReplaceAll(e, "NS", ns)))
			}
			g.Expect(recordedEvents(recorder)).To(ConsistOf(want...))
			g.Expect(testutil.RequeueAfter(err)).To(Equal(tt.wantRetryAfter))
			if tt.wantErr == testutil.NoError {
				g.Expect(obj.Status.LastAttemptedRevision).To(Equal(sc.revision))
				g.Expect(obj.Status.LastAttemptedConfigDigest).To(Equal(sc.configDigest))
				g.Expect(obj.Status.Failures).To(BeZero())
			}
			if token := tt.annotations[meta.ForceRequestAnnotation]; token != "" {
				g.Expect(obj.Status.LastHandledForceAt).To(Equal(token))
			}
			if token := tt.annotations[meta.ResetRequestAnnotation]; token != "" {
				g.Expect(obj.Status.LastHandledResetAt).To(Equal(token))
			}
		})
	}
}

// TestStep_ReconcileDrift runs the drift step alone against the test
// control plane: with detection disabled, no release, or a release that is
// not deployed, Drifted goes; otherwise the release's objects are compared
// with the cluster: no drift says so, warn reports drift in Drifted and a
// Warning event, enabled corrects it (a changed field, a deleted object),
// and ignored fields are no drift. Ignore rules that can never work stall.
func TestStep_ReconcileDrift(t *testing.T) {
	// install installs chart app 1.0.0, then changes the cluster with
	// change.
	install := func(change func(g *WithT, ns string)) func(*testing.T, *WithT, *HelmReleaseReconciler, *helmv2.HelmRelease) *hrelease.Release {
		return func(t *testing.T, g *WithT, r *HelmReleaseReconciler, obj *helmv2.HelmRelease) *hrelease.Release {
			sc := releaseStep(g, r, obj, helmtest.Chart(t, "app", "1.0.0"))
			if change != nil {
				change(g, obj.Namespace)
			}
			return sc.last
		}
	}
	edit := func(g *WithT, ns string) {
		var cm corev1.ConfigMap
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app-cm"}, &cm)).To(Succeed())
		cm.Data["greeting"] = "changed by hand"
		g.Expect(env.Client.Update(context.Background(), &cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	}
	remove := func(g *WithT, ns string) {
		g.Expect(env.Client.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-cm"}})).To(Succeed())
	}
	// fakeRelease is a release the step never compares: it is not read.
	fakeRelease := func(status hcommon.Status) func(*testing.T, *WithT, *HelmReleaseReconciler, *helmv2.HelmRelease) *hrelease.Release {
		return func(_ *testing.T, _ *WithT, _ *HelmReleaseReconciler, obj *helmv2.HelmRelease) *hrelease.Release {
			return &hrelease.Release{Name: "app", Namespace: obj.Namespace, Version: 1, Info: &hrelease.Info{Status: status},
				Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-cm\n"}
		}
	}
	tests := []struct {
		name   string
		mode   string
		ignore []kustomizev1.IgnoreRule
		// before makes the release the step sees (nil for none).
		before         func(*testing.T, *WithT, *HelmReleaseReconciler, *helmv2.HelmRelease) *hrelease.Release
		wantGreeting   string
		wantEvents     []string
		wantErr        testutil.Outcome
		wantReason     string
		wantMsg        string
		wantConditions []string
	}{
		{name: "disabled: Drifted goes", before: fakeRelease(hcommon.StatusDeployed), wantConditions: []string{}},
		{name: "no release: Drifted goes", mode: helmv2.DriftDetectionEnabled, wantConditions: []string{}},
		{name: "a release that is not deployed is not compared", mode: helmv2.DriftDetectionEnabled,
			before: fakeRelease(hcommon.StatusFailed), wantConditions: []string{}},
		{name: "ignore rules that can never work stall", mode: helmv2.DriftDetectionEnabled,
			ignore: []kustomizev1.IgnoreRule{{Paths: []string{"data"}}}, before: fakeRelease(hcommon.StatusDeployed),
			wantErr: testutil.Stalled, wantReason: helmv2.InvalidSpecReason, wantMsg: "invalid drift detection ignore rules",
			wantConditions: []string{"Drifted=True/DriftDetected"}},
		{name: "no drift", mode: helmv2.DriftDetectionEnabled, before: install(nil), wantGreeting: "hello",
			wantConditions: []string{"Drifted=False/NoDriftDetected"}},
		{name: "warn reports a changed field", mode: helmv2.DriftDetectionWarn, before: install(edit), wantGreeting: "changed by hand",
			wantEvents:     []string{"Warning DriftDetected Cluster state of release NS/app.v1 differs from the release"},
			wantConditions: []string{"Drifted=True/DriftDetected"}},
		{name: "enabled corrects a changed field", mode: helmv2.DriftDetectionEnabled, before: install(edit), wantGreeting: "hello",
			wantEvents: []string{"Normal DriftCorrected Drift corrected"}, wantConditions: []string{"Drifted=False/DriftCorrected"}},
		{name: "enabled creates a deleted object again", mode: helmv2.DriftDetectionEnabled, before: install(remove),
			wantGreeting: "hello", wantEvents: []string{"Normal DriftCorrected Drift corrected"},
			wantConditions: []string{"Drifted=False/DriftCorrected"}},
		{name: "an ignored field is no drift", mode: helmv2.DriftDetectionEnabled, before: install(edit),
			ignore:       []kustomizev1.IgnoreRule{{Paths: []string{"/data/greeting"}}},
			wantGreeting: "changed by hand", wantConditions: []string{"Drifted=False/NoDriftDetected"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.CreateNamespace(t)
			r, recorder := stepReleaser(g)
			obj := stepHR(func(hr *helmv2.HelmRelease) { hr.Namespace = ns })
			sc := releaseScopeOf(g, r, obj, helmtest.Chart(t, "app", "1.0.0"))
			if tt.before != nil {
				sc.last = tt.before(t, g, r, obj)
				recordedEvents(recorder)
			}
			obj.Spec.DriftDetection = &helmv2.DriftDetection{Mode: tt.mode, Ignore: tt.ignore}
			obj.Status.Conditions = nil
			conditions.MarkTrue(obj, helmv2.DriftedCondition, helmv2.DriftDetectedReason, "drift of an earlier run")

			res, err := r.reconcileDrift(context.Background(), obj, sc)
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(testutil.ConditionSummary(obj)).To(Equal(tt.wantConditions))
			want := make([]any, 0, len(tt.wantEvents))
			for _, e := range tt.wantEvents {
				want = append(want, ContainSubstring(strings.ReplaceAll(e, "NS", ns)))
			}
			g.Expect(recordedEvents(recorder)).To(ConsistOf(want...))
			if tt.wantGreeting != "" {
				g.Expect(greeting(g, ns, "app-cm")).To(Equal(tt.wantGreeting))
			}
			if c := conditions.Get(obj, helmv2.DriftedCondition); c != nil && c.Status == metav1.ConditionTrue && tt.wantErr == testutil.NoError {
				g.Expect(c.Message).To(ContainSubstring("app-cm"), "Drifted names what drifted")
			}
		})
	}
}
