package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image/jpeg"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil/browser"
)

// screenshotsEnv names the folder TestUI_Screenshots writes its images to
// (docs/ui for the documentation); without it they go to a temporary folder.
const screenshotsEnv = "WINDLASS_SCREENSHOTS"

// The screenshots are JPEGs of this quality, of at most this size each.
const (
	screenshotQuality  = 80
	screenshotMaxBytes = 250 << 10
)

// TestUI_Screenshots takes the screenshots of docs/ui.md, in Chromium,
// from the web UI of `windlass dev`'s demo, to which it adds what shows
// every page at work: the demo's gate closed with a reason (so demo-app is
// held, and the graph's gate edge is red), a gate with a weekly schedule,
// a Kustomization whose folder is missing (under Needs attention), and a
// drifted ConfigMap (what demo-app's preview would correct). Each image
// must decode as a JPEG as wide as the window (the graph's, as wide as its
// page); with WINDLASS_SCREENSHOTS set, they are written there:
//
//	WINDLASS_SCREENSHOTS=$PWD/docs/ui go test ./test/e2e -run TestUI_Screenshots -count=1
func TestUI_Screenshots(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		dir = t.TempDir()
	} else {
		g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	}
	started := time.Now()
	d := startDev(t, g)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("windlass dev output:\n%s", d.Output())
		}
	})
	found := regexp.MustCompile(`Open the web UI: (http://127\.0\.0\.1:\d+)/`).FindStringSubmatch(d.Output())
	g.Expect(found).To(HaveLen(2), d.Output())
	base := found[1]
	g.Expect(d.WaitHTTP(ctx, base+"/", timeout)).To(Succeed())
	ns := "flux-system"
	kustomization := func(name string) *kustomizev1.Kustomization {
		ks := &kustomizev1.Kustomization{}
		g.Expect(d.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ks)).To(Succeed())
		return ks
	}
	for _, name := range []string{"demo-infrastructure", "demo-app"} {
		g.Eventually(func() bool { return conditions.IsTrue(kustomization(name), meta.ReadyCondition) }, timeout, interval).
			Should(BeTrue(), "the demo is Ready")
	}
	t.Logf("windlass dev's demo is Ready %s after the start", time.Since(started).Round(time.Millisecond))

	// A change freeze: the demo's gate closed, with a reason, holds
	// demo-app back once it reconciles.
	_, errOut, code := runCLIAgainst(g, d.kubeconfig, "gate", "close", "demo-approval", "-n", ns,
		"--for", "2h", "--reason", "release freeze, ticket OPS-12")
	g.Expect(code).To(Equal(0), errOut)
	g.Expect(d.client.Patch(ctx, kustomization("demo-app"), client.RawPatch(client.Merge.Type(), fmt.Appendf(nil,
		`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, time.Now().Format(time.RFC3339Nano))))).To(Succeed())
	g.Eventually(func() string {
		app := kustomization("demo-app")
		return conditions.HeldByGate(app, app.Generation)
	}, timeout, interval).ShouldNot(BeEmpty(), "demo-app is held by the closed gate")
	// Held, it corrects no drift: someone's edit of its ConfigMap is what
	// its preview would undo.
	g.Expect(d.client.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-config"}},
		client.RawPatch(client.Merge.Type(), []byte(`{"data":{"index.html":"<h1>Edited by hand</h1>"}}`)),
		client.FieldOwner("kubectl-edit"))).To(Succeed())
	// No deploys on Fridays, in Berlin: a gate whose week ahead has a
	// closed stretch.
	g.Expect(d.client.Create(ctx, &gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-deploy-friday"},
		Spec: gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateOpened, Schedules: []gatingv1alpha1.GateSchedule{{
			Action: gatingv1alpha1.ScheduleClose, Cron: "0 0 * * FRI", Duration: metav1.Duration{Duration: 24 * time.Hour},
			TimeZone: "Europe/Berlin"}}},
	})).To(Succeed())
	// A Kustomization merged before its folder: it fails, and says why.
	g.Expect(d.client.Create(ctx, &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-monitoring"},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: 10 * time.Minute}, Path: "./monitoring", Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "dev"}},
	})).To(Succeed())

	browserCtx := browser.New(t)
	// tab is the open page's tab. Each page opens in a tab of its own,
	// closed once its screenshot is taken: a page left for another in the
	// same tab stays in Chromium's back/forward cache with its live stream
	// (/events) open, and after six of them Chromium's six connections to
	// the host are taken, so that the next page waits about a minute.
	tab, closeTab := browserCtx, context.CancelFunc(func() {})
	defer func() { closeTab() }()
	// open opens the page path in a new tab of width×height in the color
	// scheme ("light" or "dark"), with opts (such as a phone's).
	open := func(path, scheme string, width, height int64, opts ...chromedp.EmulateViewportOption) {
		t.Helper()
		closeTab()
		tab, closeTab = chromedp.NewContext(browserCtx)
		openCtx, cancel := context.WithTimeout(tab, browserTimeout)
		defer cancel()
		g.Expect(chromedp.Do(tab)).To(Succeed(), "opening a tab")
		_, err := chromedp.Call(openCtx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(chromedp.Do(openCtx, chromedp.EmulateViewport(width, height, opts...), browser.Navigate(base+path))).
			To(Succeed(), "opening %s", path)
	}
	// waitFor waits until the JavaScript predicate holds in the open page
	// (which follows its objects live, so no reload is needed).
	waitFor := func(predicate string) {
		t.Helper()
		pollCtx, cancel := context.WithTimeout(tab, timeout)
		defer cancel()
		_, err := chromedp.Run(pollCtx, chromedp.Poll[bool](predicate,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
		g.Expect(err).NotTo(HaveOccurred(), "waiting for %s", predicate)
	}
	// has is a predicate: the element sel holds each text.
	has := func(sel string, texts ...string) string {
		el := fmt.Sprintf("document.querySelector(%q)", sel)
		predicate := el + " !== null"
		for _, text := range texts {
			predicate += fmt.Sprintf(" && %s.textContent.includes(%q)", el, text)
		}
		return predicate
	}
	// evaluate returns the value of the JavaScript expression in the open
	// page.
	evaluate := func(expression string) any {
		t.Helper()
		evalCtx, cancel := context.WithTimeout(tab, browserTimeout)
		defer cancel()
		v, err := chromedp.Run(evalCtx, chromedp.Evaluate[any](expression))
		g.Expect(err).NotTo(HaveOccurred(), expression)
		return v
	}
	// shoot takes the screenshot name of the open page, width pixels
	// wide: the whole page (FullScreenshot, a JPEG of quality 80), or,
	// when that is wider than width, taller than maxHeight or larger than
	// screenshotMaxBytes, its top left corner as large as fits (at least
	// the viewport).
	var total int
	shoot := func(name string, width, maxHeight int) {
		t.Helper()
		shotCtx, cancel := context.WithTimeout(tab, browserTimeout)
		defer cancel()
		buf, err := chromedp.Run(shotCtx, chromedp.FullScreenshot(screenshotQuality))
		g.Expect(err).NotTo(HaveOccurred(), name)
		whole, err := jpeg.DecodeConfig(bytes.NewReader(buf))
		g.Expect(err).NotTo(HaveOccurred(), "%s is a JPEG", name)
		if whole.Width > width {
			t.Logf("%s: the page is %d px wide, wider than the window's %d", name, whole.Width, width)
		}
		viewport := int(evaluate(`window.innerHeight`).(float64))
		for top := min(whole.Height, maxHeight); whole.Width > width || top < whole.Height || len(buf) > screenshotMaxBytes; {
			quality, beyond := int64(screenshotQuality), true
			shot, err := chromedp.Call(shotCtx, page.CaptureScreenshot, page.CaptureScreenshotParams{
				Format: page.CaptureScreenshotFormatJpeg, Quality: &quality, CaptureBeyondViewport: &beyond,
				Clip: &page.Viewport{Width: float64(min(width, whole.Width)), Height: float64(top), Scale: 1}})
			g.Expect(err).NotTo(HaveOccurred(), name)
			buf = shot.Data
			if len(buf) <= screenshotMaxBytes || top <= viewport {
				break
			}
			top = max(viewport, top*screenshotMaxBytes/len(buf)*19/20)
		}
		img, err := jpeg.Decode(bytes.NewReader(buf))
		g.Expect(err).NotTo(HaveOccurred(), "%s is a JPEG", name)
		g.Expect(img.Bounds().Dx()).To(Equal(width), "the width of %s", name)
		g.Expect(os.WriteFile(filepath.Join(dir, name), buf, 0o644)).To(Succeed())
		total += len(buf)
		t.Logf("%s: %dx%d of a %dx%d page, %d KB", name, img.Bounds().Dx(), img.Bounds().Dy(), whole.Width, whole.Height, len(buf)/1024)
	}
	const width, height, tall = 1280, 900, 2700

	// The overview: counts, what fails and why, what the gate holds.
	open("/", "light", width, height)
	waitFor(has("#attention", "Kustomization "+ns+"/demo-monitoring") + " && " + has("#held", "Kustomization "+ns+"/demo-app"))
	shoot("overview.jpg", width, tall)

	// The graph: gates, the source, the Kustomizations, what they applied.
	// Its drawing may be wider than the window, and the page with it: the
	// screenshot shows all of it.
	open("/graph", "light", width, height)
	waitFor(has("#graph", "Kustomization · Held", "Kustomization · Failing", "closed", "dependsOn", ns+"/no-deploy-friday"))
	shoot("graph.jpg", max(width, int(evaluate(`document.documentElement.scrollWidth`).(float64))), tall)

	// The gates, and the closed one's page with what it holds back.
	open("/gates", "light", width, height)
	waitFor(has("#gate-"+ns+"-demo-approval", "Closed", "release freeze") + " && " + has("#gate-"+ns+"-no-deploy-friday", "0 0 * * FRI"))
	shoot("gates.jpg", width, tall)
	open("/object/Gate/"+ns+"/demo-approval", "light", width, height)
	waitFor(has(".gate-state", "Closed", "release freeze") + " && " + has("#consumers", "Kustomization "+ns+"/demo-app", "Held"))
	shoot("gate.jpg", width, tall)

	// Image automation: the demo has none, and the page says so.
	open("/images", "light", width, height)
	waitFor(has("#repositories") + " && " + has("main", "Image update automations"))
	shoot("images.jpg", width, tall)

	// demo-app's page, its preview and the health of what it applied.
	object := "/object/Kustomization/" + ns + "/demo-app"
	open(object, "light", width, height)
	waitFor(has("#state", "Held") + " && " + has("#trace", "GitRepository "+ns+"/dev") + " && " +
		has("#inventory", "Deployment/demo/web") + " && " + has("#applied", "main@sha1:"))
	shoot("object.jpg", width, tall)
	open(object+"/preview", "light", width, height)
	waitFor(`document.querySelector("#preview-summary, #preview-error") !== null`)
	g.Expect(evaluate(`document.querySelector("main").innerText`)).To(And(ContainSubstring("1 would change"),
		ContainSubstring("drifted ConfigMap/demo/web-config"), ContainSubstring("Edited by hand")), "the preview shows the drift")
	shoot("preview.jpg", width, tall)
	open(object+"/inventory", "light", width, height)
	waitFor(`document.querySelector("#inventory-summary") !== null`)
	g.Expect(evaluate(`document.querySelector("main").innerText`)).To(MatchRegexp(`Deployment/demo/web\s+Current`))
	shoot("inventory.jpg", width, tall)

	// The overview in the dark theme, as the system prefers it.
	open("/", "dark", width, height)
	waitFor(has("#held", "Kustomization "+ns+"/demo-app"))
	background := evaluate(`getComputedStyle(document.body).backgroundColor`)
	g.Expect(darkColor(fmt.Sprint(background))).To(BeTrue(), "the dark theme's background: %s", background)
	shoot("overview-dark.jpg", width, tall)

	// The overview on a phone.
	const phoneWidth, phoneHeight = 390, 844
	open("/", "light", phoneWidth, phoneHeight, chromedp.EmulateMobile, chromedp.EmulateTouch)
	waitFor(has("#held", "Kustomization "+ns+"/demo-app"))
	shoot("overview-phone.jpg", phoneWidth, 3*phoneHeight)

	t.Logf("10 screenshots in %s, %d KB in all; the test took %s", dir, total/1024, time.Since(started).Round(time.Millisecond))
	g.Expect(d.Terminate(shutdownGrace)).To(Succeed(), d.Output())
}

// darkColor reports whether the CSS color rgb(R, G, B) (or rgba) is dark.
func darkColor(css string) bool {
	m := regexp.MustCompile(`rgba?\((\d+), (\d+), (\d+)`).FindStringSubmatch(css)
	if m == nil {
		return false
	}
	sum := 0
	for _, c := range m[1:] {
		n, _ := strconv.Atoi(c)
		sum += n
	}
	return sum < 3*96
}
