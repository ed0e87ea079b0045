package helm

import (
	"context"
	"io"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// uiAddr is where the suite's manager serves the web UI (main_test.go).
var uiAddr string

// TestPreviewShowsWhatTheNextReleaseWouldChange: while a HelmRelease is
// suspended, its values change; the web UI's preview renders the chart with
// them and dry-runs it as the controller would: the ConfigMap's new value
// shows in a diff, and no release is made.
func TestPreviewShowsWhatTheNextReleaseWouldChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0"))
	hr := newRelease(g, ns, "app", "app")
	key := client.ObjectKeyFromObject(hr)
	waitForHR(g, key, hrReady("1.0.0"))
	g.Expect(env.Client.Get(ctx, key, hr)).To(Succeed())
	hr.Spec.Suspend = true
	hr.Spec.Values = valuesJSON(`{"greeting": "bonjour"}`)
	g.Expect(env.Client.Update(ctx, hr)).To(Succeed())

	// The controller's cache sees the new values a moment later.
	g.Eventually(func(g Gomega) string {
		code, page := getPreview(g, ns, "app")
		g.Expect(code).To(Equal(http.StatusOK), page)
		return page
	}, testutil.WaitTimeout, testutil.WaitInterval).Should(ContainSubstring("greeting: bonjour"))
	_, page := getPreview(g, ns, "app")
	g.Expect(page).To(ContainSubstring("Revision <strong>app 1.0.0</strong>"))
	g.Expect(page).To(MatchRegexp(`(?s)drifted</span> ConfigMap/` + ns + `/app-cm</h2>.*<span class="diff-remove">-  greeting: hello</span>\s*<span class="diff-add">&#43;  greeting: bonjour</span>`))
	g.Expect(configMap(g, ns, "app-cm").Data).To(HaveKeyWithValue("greeting", "hello"), "the preview wrote nothing")
	var secrets corev1.SecretList
	g.Expect(env.Client.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": "app"})).To(Succeed())
	g.Expect(secrets.Items).To(HaveLen(1), "and made no release")
	g.Expect(env.Client.Get(ctx, key, hr)).To(Succeed())
	g.Expect(hr.Status.History).To(HaveLen(1))
	g.Expect(hr.Status.History[0].ChartVersion).To(Equal("1.0.0"))
}

// getPreview returns the status and body of the preview page of the
// HelmRelease ns/name.
func getPreview(g Gomega, ns, name string) (int, string) {
	resp, err := http.Get("http://" + uiAddr + "/object/HelmRelease/" + ns + "/" + name + "/preview")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(body)
}
