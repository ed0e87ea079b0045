package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/browser"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// The web UI's image automation page, in Chromium: an ImageRepository
// scanned from a registry, with the ImagePolicy that reads it under it and
// the tag the policy elected; the policy's link opens its page, which
// shows that tag too.
func TestUI_ImagesShowsThePolicysLatestTag(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	shard := "ui-images-" + ns
	addrs, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	startShardController(t, g, shard, t.TempDir(), "--ui-addr", addrs[0])
	registry := testutil.StartRegistry(t, "", "")
	image := registry + "/podinfo"
	testutil.PushImage(t, image, []string{"6.0.0", "6.1.0", "7.0.0"})
	createSharded(g, shard, &imagev1.ImageRepository{}, fmt.Sprintf(`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: podinfo, namespace: %s}
spec: {image: %s, interval: 1m, insecure: true}
`, ns, image))
	policy := createSharded(g, shard, &imagev1.ImagePolicy{}, fmt.Sprintf(`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: podinfo, namespace: %s}
spec: {imageRepositoryRef: {name: podinfo}, policy: {semver: {range: 6.x}}}
`, ns))
	g.Eventually(func(g Gomega) string {
		got := &imagev1.ImagePolicy{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(policy), got)).To(Succeed())
		g.Expect(got.Status.LatestRef).NotTo(BeNil())
		return got.Status.LatestRef.Tag
	}, timeout, interval).Should(Equal("6.1.0"))

	tab := browser.New(t)
	base := "http://" + addrs[0]
	// The UI reads the controller's cache, which may follow the API
	// server a moment later: reload until it shows the tag.
	g.Eventually(func() (string, error) {
		g.Expect(browser.Do(tab, browserTimeout, browser.Navigate(base+"/images?namespace="+ns))).To(Succeed())
		return browser.Text(tab, browserTimeout, "#repositories")
	}, timeout, interval).Should(And(ContainSubstring("ImageRepository "+ns+"/podinfo"), ContainSubstring("3 tags"),
		ContainSubstring("ImagePolicy "+ns+"/podinfo"), ContainSubstring("semver 6.x"), ContainSubstring("6.1.0")))

	g.Expect(browser.Do(tab, browserTimeout, browser.Click(`#repositories a[href="/object/ImagePolicy/`+ns+`/podinfo"]`))).To(Succeed())
	revisions, err := browser.Text(tab, browserTimeout, "#revisions")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revisions).To(ContainSubstring("6.1.0"))

	// Pinned from the page of `windlass ui` (its user, the administrator,
	// may patch), the policy elects the pinned tag, as `windlass image set`.
	local, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	proc, err := childproc.Start(windlassCommand(context.Background(), "ui", "--kubeconfig", kubeconfig, "-n", ns, "--addr", local[0], "--open=false"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proc.Kill)
	g.Eventually(proc.Output, timeout, interval).Should(ContainSubstring("Serving the web UI"))
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate("http://"+local[0]+"/object/ImagePolicy/"+ns+"/podinfo"),
		browser.SendKeys("#pin-tag", "6.0.0"), browser.Click("#action-pin"))).To(Succeed())
	g.Eventually(func() (string, error) { return browser.Text(tab, time.Second, "#pin") }, timeout, interval).
		Should(ContainSubstring("Pinned to 6.0.0"))
	g.Eventually(func() (string, error) { return browser.Text(tab, time.Second, "#revisions") }, timeout, interval).
		Should(ContainSubstring("6.0.0"))
}
