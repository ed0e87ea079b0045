// Package browser starts Debian's Chromium, headless, for the UI's browser
// stories, and drives it with chromedp.
package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path is where Debian's chromium package installs the browser.
const Path = "/usr/bin/chromium"

// New starts a headless Chromium for t, stopped when t ends, and returns
// the chromedp context of its first tab. Without Chromium the test is
// skipped, but fails under CI (CI=true), which must run the browser
// stories: .ci/run installs the package.
func New(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath(Path)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Chromium at %s, and CI must run the browser stories", Path)
		}
		t.Skipf("no Chromium at %s (apt-get install chromium)", Path)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		// This machine's network is closed: Chromium's own connections
		// would be refused, many at a time.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1280, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// Do runs steps in the tab of ctx (from New), within timeout.
func Do(ctx context.Context, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) error {
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return chromedp.Do(runCtx, steps...)
}

// Text returns the text of the first element sel matches in the tab of
// ctx, once it is visible, within timeout. It asks the page itself each
// time (no node that chromedp cached, which a navigation may have left
// stale), polling until the element is there and visible.
func Text(ctx context.Context, timeout time.Duration, sel string) (string, error) {
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	quoted, err := json.Marshal(sel)
	if err != nil {
		return "", err
	}
	expr := fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e && e.getClientRects().length > 0 ? e.innerText : null })()`, quoted)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		text, err := chromedp.Run(runCtx, chromedp.Evaluate[*string](expr))
		if err != nil {
			return "", err
		}
		if text != nil {
			return *text, nil
		}
		select {
		case <-runCtx.Done():
			return "", fmt.Errorf("%s is not visible: %w", sel, runCtx.Err())
		case <-tick.C:
		}
	}
}
