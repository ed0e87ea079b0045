package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/monitoring"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// The monitoring Windlass installs, on a real Prometheus: an operator
// scrapes the controller (its pod in flux-system, a container memory
// limit of 2 GiB) every second with the alert rules at short thresholds,
// and uses everything the dashboard shows: sources fetched and failing,
// Kustomizations that apply, correct a drift, prune, are suspended, fail
// and are held by a gate, Helm releases installed and failed,
// notifications sent and failed, webhooks accepted and refused, an image
// scanned and its update pushed to Git. Every panel of the dashboard then
// shows data, and every query is valid PromQL. The alerts fire for what
// goes wrong (an object failing, a source not fetched for twice its
// interval, a gate holding an object back, a controller over its memory
// limit) and resolve once it is mended.
func TestMonitoring_DashboardAndAlertsOnARealPrometheus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Now()
	step := start
	logStep := func(what string) {
		t.Logf("%s: %.1fs (%.1fs since the start)", what, time.Since(step).Seconds(), time.Since(start).Seconds())
		step = time.Now()
	}
	ns := env.CreateNamespace(t)
	shard := "monitoring-" + ns

	// The controller under watch, and a second one whose container limit
	// (1 MiB) its resident memory passes at once (GOMEMLIMIT keeps the Go
	// runtime from collecting without end to stay under it); it runs one
	// controller, for no object.
	proc := startMonitoredController(t, g, shard, []string{"WINDLASS_MEMORY_LIMIT=2147483648"})
	small := startMonitoredController(t, g, shard+"-small", []string{"WINDLASS_MEMORY_LIMIT=1048576", "GOMEMLIMIT=1GiB"},
		"--controllers=notification")
	rules, err := monitoring.RuleFile(monitoring.RuleOptions{FailingFor: 5 * time.Second, GateHeldFor: 5 * time.Second,
		MemoryFor: 3 * time.Second, RateWindow: 30 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	prom := testservers.StartPrometheus(t, testservers.PrometheusOptions{Interval: time.Second,
		Targets: []testservers.PrometheusTarget{podTarget(proc, "windlass-test"), podTarget(small, "windlass-small")},
		Rules:   [][]byte{rules}})

	// What the controller works with: a git server (the bot may push),
	// a chart repository with a chart that installs and one whose
	// manifest the API server refuses, notification endpoints (one
	// answers 500), and an image registry with two tags.
	const gitPassword, webhookToken = "git-p4ss-m0n", "m0nitored-t0ken"
	git := gitserver.NewForTest(t)
	git.SetBasicAuth("bot", gitPassword)
	gitBase := git.MustStartHTTP(t)
	appRepo := git.MustInitRepo(t, "app.git", "main")
	first := appRepo.MustCommit(t, "main", appFiles(), "the application")
	flakyRepo := git.MustInitRepo(t, "flaky.git", "main")
	flakyFirst := flakyRepo.MustCommit(t, "main", map[string]string{"README": "flaky\n"}, "flaky")
	registry := testutil.StartRegistry(t, "", "")
	image := registry + "/podinfo"
	testutil.PushImage(t, image, []string{"6.0.0", "6.1.0"})
	imagesRepo := git.MustInitRepo(t, "images.git", "main")
	imagesFirst := imagesRepo.MustCommit(t, "main", imageFiles(image, ns), "podinfo 6.0.0")
	charts := helmtest.NewRepo(t)
	charts.Add(t, appChart(t, "1.0.0", "hello"), appChart(t, "2.0.0", "hello", helmtest.WithTemplate("broken.yaml", brokenTemplate)))
	hooks := &hookServer{}
	hookSrv := httptest.NewServer(hooks)
	t.Cleanup(hookSrv.Close)
	brokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "the endpoint is broken", http.StatusInternalServerError)
	}))
	t.Cleanup(brokenSrv.Close)

	applyManifests(g, storyManifests(map[string]string{
		"NS": ns, "LABELS": "{" + shardLabel + ": " + shard + "}", "GIT": gitBase, "GIT_PASSWORD": gitPassword,
		"FLAKY_INTERVAL": "3s", "CHARTS": charts.URL(), "HOOK": hookSrv.URL, "BROKEN_HOOK": brokenSrv.URL,
		"WEBHOOK_TOKEN": webhookToken, "IMAGE": image,
	}))
	prom.WaitScraped(t, "windlass")
	logStep("controllers scraped, objects created")

	// The Kustomization app applies; a ConfigMap it applied, edited by
	// hand, is set back at the next reconciliation (a drift corrected),
	// and one whose file leaves the repository is pruned.
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	named := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	waitApplied(g, key("app"), "main@sha1:"+first)
	drift := queryValue(g, prom, `sum(windlass_drift_corrections_total{kind="Kustomization"})`)
	attempt := 0
	g.Eventually(func(g Gomega) float64 {
		if v := queryValue(g, prom, `sum(windlass_drift_corrections_total{kind="Kustomization"})`); v > drift {
			return v
		}
		attempt++
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, key("a"), cm)).To(Succeed())
		cm.Data["v"] = "edited by hand"
		g.Expect(env.Client.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
		testutil.RequestReconcile(g, env.Client, &kustomizev1.Kustomization{ObjectMeta: named("app")}, "drift-"+strconv.Itoa(attempt))
		return drift
	}, timeout, 2*time.Second).Should(BeNumerically(">", drift), "windlass_drift_corrections_total moves")
	g.Eventually(func() string { return configMapValue(ctx, env.Client, key("a")) }, timeout, interval).
		Should(Equal("1"), "the drift is corrected")
	pruned, err := appRepo.Remove("main", []string{"deploy/b.yaml"}, "drop b")
	g.Expect(err).NotTo(HaveOccurred())
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: named("app")}, "prune")
	waitApplied(g, key("app"), "main@sha1:"+pruned)
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, key("b"), &corev1.ConfigMap{}))
	}, timeout, interval).Should(BeTrue(), "b is pruned")
	logStep("applied, drift corrected, pruned")

	// The short-interval source is fetched, then its URL is broken: the
	// last successful fetch grows old.
	flaky := waitReady(g, key("flaky"), "main@sha1:"+flakyFirst)
	flakyURL := flaky.Spec.URL
	setGitURL(g, key("flaky"), gitBase+"/no-such-repository.git")

	// The Receiver accepts a request to its path, and a request to no
	// Receiver's path is refused.
	rcv := &notificationv1.Receiver{}
	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(ctx, key("ci"), rcv)).To(Succeed())
		return rcv.Status.WebhookPath
	}, timeout, interval).ShouldNot(BeEmpty())
	g.Expect(postHook(g, proc, rcv.Status.WebhookPath)).To(Equal(http.StatusOK))
	g.Expect(postHook(g, proc, "/hook/"+"0123456789abcdef")).To(Equal(http.StatusNotFound))

	// One release installs, the other fails; the image update is pushed.
	waitHelmRelease(g, key("app"), deployedAt("1.0.0"))
	waitHelmRelease(g, key("broken"), func(g Gomega, hr *helmv2.HelmRelease) {
		g.Expect(conditions.IsFalse(hr, meta.ReadyCondition)).To(BeTrue(), "Ready: %s", conditions.Message(hr, meta.ReadyCondition))
		g.Expect(conditions.Message(hr, meta.ReadyCondition)).To(ContainSubstring("Not_A_Valid_Name"))
	})
	g.Eventually(func(g Gomega) {
		iua := &imagev1.ImageUpdateAutomation{}
		g.Expect(env.Client.Get(ctx, key("images"), iua)).To(Succeed())
		head, err := imagesRepo.Head("main")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(head).NotTo(Equal(imagesFirst), "a commit is pushed")
		g.Expect(iua.Status.LastPushCommit).To(Equal(head))
	}, timeout, interval).Should(Succeed(), "the image update is pushed")
	g.Eventually(func() int { return len(hooks.messages()) }, timeout, interval).ShouldNot(BeZero(), "notifications are sent")
	logStep("webhooks posted, releases installed and failed, image update pushed")

	// Every panel of the dashboard shows data, every query is valid, and
	// the series the story made are there, with the labels it made them
	// with.
	panels := dashboardPanels(g)
	expectValidQueries(g, prom, panels)
	g.Eventually(func() []string { return panelsWithoutData(prom, panels) }, timeout, interval).
		Should(BeEmpty(), "panels of the dashboard without data")
	g.Expect(labelValues(prom, `group by (exported_namespace) (gotk_resource_info)`, "exported_namespace")).
		To(ContainElement(ns), "the dashboard's $namespace variable lists the namespace")
	g.Eventually(func() []string { return missingSeries(prom, storySeries(ns)) }, timeout, interval).
		Should(BeEmpty(), "series the story makes the controller export")
	logStep("every panel shows data")

	// The alerts fire: for the failing Kustomization, the source not
	// fetched, the Kustomization the gate holds, the controller over its
	// memory limit (and not the one well under its own).
	alerts := []struct {
		name   string
		labels map[string]string
	}{
		{"WindlassObjectFailing", objectAlert("Kustomization", ns, "broken")},
		{"WindlassSourceNotFetched", objectAlert("GitRepository", ns, "flaky")},
		{"WindlassGateHeldTooLong", objectAlert("Kustomization", ns, "held")},
		{"WindlassMemoryNearLimit", map[string]string{"job": "windlass", "instance": small.MetricsAddr}},
	}
	for _, a := range alerts {
		g.Eventually(func(g Gomega) string { return alertState(g, prom, a.name, a.labels) }, timeout, interval).
			Should(Equal("firing"), "%s %v", a.name, a.labels)
	}
	g.Expect(alertState(g, prom, "WindlassMemoryNearLimit", map[string]string{"instance": proc.MetricsAddr})).
		To(Equal("inactive"), "the controller under its limit")
	logStep("the alerts fire")

	// Mended, they resolve: the Kustomization's path fixed, the source's
	// URL too, the gate opened, and the controller over its limit stopped
	// (its target down, its series go stale).
	patchSpec(g, &kustomizev1.Kustomization{ObjectMeta: named("broken")}, `{"spec":{"path":"./fixed"}}`)
	setGitURL(g, key("flaky"), flakyURL)
	mustRunCLI(g, "gate", "open", "approval", "-n", ns, "--timeout", "1m")
	g.Expect(small.Terminate(shutdownGrace)).To(Succeed(), "the controller stops on SIGTERM")
	for _, a := range alerts {
		g.Eventually(func(g Gomega) string { return alertState(g, prom, a.name, a.labels) }, timeout, interval).
			Should(Equal("inactive"), "%s %v", a.name, a.labels)
	}
	g.Expect(queryValue(g, prom, `up{instance="`+small.MetricsAddr+`"}`)).To(BeZero(), "the stopped controller's target is down")
	g.Eventually(func() string { return configMapValue(ctx, env.Client, key("c")) }, timeout, interval).
		Should(Equal("1"), "the mended Kustomization applies")
	g.Eventually(func() string { return configMapValue(ctx, env.Client, key("d")) }, timeout, interval).
		Should(Equal("1"), "the gate lets d through")
	logStep("the alerts resolve")
	t.Logf("the story took %.1fs", time.Since(start).Seconds())
}

// storySeries are the series the story makes the controller export,
// beyond what every panel needs to show data: each outcome it brings
// about.
func storySeries(ns string) []seriesWant {
	return []seriesWant{
		{`sum by (action) (windlass_applied_objects_total{kind="Kustomization"})`, "action", []string{"created", "configured", "deleted"}},
		{`sum by (kind) (windlass_drift_corrections_total)`, "kind", []string{"Kustomization"}},
		{`sum by (result) (windlass_source_fetches_total{kind="GitRepository"})`, "result", []string{"success", "failure"}},
		{`sum by (action) (windlass_helm_action_duration_seconds_count)`, "action", []string{"install"}},
		{`sum by (action) (windlass_helm_action_failures_total)`, "action", []string{"install"}},
		{`sum by (result) (windlass_notifications_total{exported_namespace="` + ns + `"})`, "result", []string{"sent", "failed"}},
		{`sum by (result) (windlass_receiver_requests_total)`, "result", []string{"accepted", "refused"}},
		{`sum by (result) (windlass_image_scans_total)`, "result", []string{"success"}},
		{`sum by (result) (windlass_image_update_pushes_total)`, "result", []string{"success"}},
		{`max by (name) (windlass_image_repository_tags{exported_namespace="` + ns + `"})`, "name", []string{"podinfo"}},
		{`sum by (state) (gotk_resource_info{exported_namespace="` + ns + `"})`, "state", []string{"Ready", "Failing", "Held", "Suspended"}},
	}
}
