// Package browser starts Debian's Chromium, headless, for the UI's browser
// stories, and drives it with chromedp.
package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
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

// Navigate loads url in the tab and waits until the new document has
// loaded (document.readyState "complete"). It marks the document it
// leaves and polls the page until the document is another, rather than
// wait for the browser's lifecycle and load events as chromedp.Navigate
// does: a condition it checks itself, which no missed event can leave
// waiting until its context ends. url must lead to another document (not
// only another fragment of this one).
func Navigate(url string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.Evaluate[bool](`window.__leftBehind = true`)(ctx, t); err != nil && !isNavigation(err) {
			return chromedp.Void{}, err
		}
		res, err := cdp.Call(ctx, t, page.Navigate, page.NavigateParams{URL: url})
		switch {
		case err != nil:
			return chromedp.Void{}, fmt.Errorf("navigating to %s: %w", url, err)
		case res.ErrorText != "":
			return chromedp.Void{}, fmt.Errorf("navigating to %s: %s", url, res.ErrorText)
		}
		_, err = poll[bool](`(() => !window.__leftBehind && document.readyState === "complete" ? true : null)()`, false)(ctx, t)
		if err != nil {
			return chromedp.Void{}, fmt.Errorf("loading %s: %w", url, err)
		}
		return chromedp.Void{}, nil
	}
}

// Text returns the text of the first element that the CSS selector sel
// matches in the tab of ctx, once it is visible and its document parsed to
// its end, within timeout. It asks the page itself each time (no node that
// chromedp cached, which a navigation or a live update may have left
// stale), polling until the element is there and visible.
func Text(ctx context.Context, timeout time.Duration, sel string) (string, error) {
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return chromedp.Run(runCtx, onElement[string](sel, "return e.innerText;", false))
}

// Click clicks the first element that the CSS selector sel matches, once
// it is there and visible, in one task of the page's script (the
// element's click(): a submit button submits its form, a link navigates).
// The UI's live updates replace the page's content whenever an object
// changes: a node that chromedp found may be gone before the mouse
// reaches it, or be replaced between the mouse's press and its release,
// which then clicks nothing. A navigation that interrupts the click's
// script is taken for the click's own (the link's or the form's), so a
// click must come once the page it clicks on has loaded (after a Text of
// it, say), not while an earlier click's navigation is under way.
func Click(sel string) chromedp.Action[chromedp.Void] {
	return done(onElement[bool](sel, `e.scrollIntoView({block: "center"});
if (typeof e.click === "function") e.click();
else e.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true, view: window}));
return true;`, true))
}

// SendKeys focuses the first element that the CSS selector sel matches,
// once it is there and visible, in one task of the page's script, then
// types text with the keyboard into the element that has the focus. The
// UI's live updates give the focus and what was typed to the element that
// replaces a field.
func SendKeys(sel, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(done(onElement[bool](sel, "e.focus(); return true;", false)), chromedp.KeyEvent(text))
}

// onElement evaluates body, a script's body in which e is the first
// element that the CSS selector sel matches, in one task of the page's
// script, as soon as e is there and visible in a document parsed to its
// end (an element whose start tag has arrived may not have its text yet;
// polling every 50 ms, and again when a navigation interrupts the
// script), and returns what body returns. With navigated, a navigation
// that interrupts the script ends the action, without error (body's value
// is then the zero value).
func onElement[T any](sel, body string, navigated bool) chromedp.Action[T] {
	return func(ctx context.Context, t *chromedp.Target) (T, error) {
		var zero T
		quoted, err := json.Marshal(sel)
		if err != nil {
			return zero, err
		}
		expr := fmt.Sprintf(`(() => {
if (document.readyState === "loading") return null;
const e = document.querySelector(%s);
if (!e || e.getClientRects().length === 0) return null;
%s
})()`, quoted, body)
		value, err := poll[T](expr, navigated)(ctx, t)
		if err != nil {
			return zero, fmt.Errorf("waiting for %s: %w", sel, err)
		}
		return value, nil
	}
}

// poll evaluates expr in the tab every 50 ms until its value is not null
// (again when a navigation interrupts the script), and returns the value.
// With navigated, a navigation that interrupts the script ends the poll,
// without error (the value is then the zero value).
func poll[T any](expr string, navigated bool) chromedp.Action[T] {
	return func(ctx context.Context, t *chromedp.Target) (T, error) {
		var zero T
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			value, err := chromedp.Evaluate[*T](expr)(ctx, t)
			switch {
			case ctx.Err() != nil:
				return zero, ctx.Err()
			case isNavigation(err) && navigated:
				return zero, nil
			case err != nil && !isNavigation(err):
				return zero, err
			case value != nil:
				return *value, nil
			}
			select {
			case <-ctx.Done():
				return zero, ctx.Err()
			case <-tick.C:
			}
		}
	}
}

// done makes an action whose value is dropped.
func done[T any](action chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := action(ctx, t)
		return chromedp.Void{}, err
	}
}

// isNavigation tells the browser's answers to a script that a navigation
// interrupted: the page it ran in is gone.
func isNavigation(err error) bool {
	var e *cdproto.Error
	if err == nil || !errors.As(err, &e) {
		return false
	}
	for _, gone := range []string{"Inspected target navigated or closed", "Execution context was destroyed",
		"Cannot find context with specified id"} {
		if strings.Contains(e.Message, gone) {
			return true
		}
	}
	return false
}
