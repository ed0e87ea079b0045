package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
)

// restlessPage replaces its main content every few milliseconds, as the
// UI's live updates do when objects keep changing, carrying the typed
// value and the focus over to the new field; it counts the clicks on its
// button.
const restlessPage = `<!doctype html>
<html><body><main><button id="button">click</button><input id="field"></main>
<script>
window.clicks = 0;
document.addEventListener("click", function (e) { if (e.target.id === "button") window.clicks++; });
setInterval(function () {
  var old = document.querySelector("main"), next = document.createElement("main");
  next.innerHTML = '<button id="button">click</button><input id="field">';
  var focused = document.activeElement && document.activeElement.id;
  next.querySelector("#field").value = old.querySelector("#field").value;
  old.replaceWith(next);
  if (focused) document.getElementById(focused).focus();
}, 20);
</script></body></html>`

// Text, Click and SendKeys reach an element whose node is replaced again and
// again between its lookup and the mouse or the keys.
func TestTextClickAndSendKeys_OnAPageThatKeepsReplacingItsContent(t *testing.T) {
	g := NewWithT(t)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(restlessPage))
	}))
	t.Cleanup(server.Close)
	tab := New(t)
	g.Expect(Do(tab, 30*time.Second, Navigate(server.URL))).To(Succeed())

	text, err := Text(tab, 30*time.Second, "#button")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(text).To(Equal("click"))

	const clicks = 30
	for range clicks {
		g.Expect(Do(tab, 30*time.Second, Click("#button"))).To(Succeed())
	}
	counted, err := chromedp.Run(tab, chromedp.Evaluate[int]("window.clicks"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(counted).To(Equal(clicks), "every click reached the button, once")

	g.Expect(Do(tab, 30*time.Second, SendKeys("#field", "typed through the updates"))).To(Succeed())
	typed, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector("#field").value`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(typed).To(Equal("typed through the updates"))
}

// A click on a link, then the text of the page it leads to: Text waits
// through the navigation, whose start may interrupt its first reading.
func TestClickThenText_ThroughANavigation(t *testing.T) {
	g := NewWithT(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><html><body><a id="next" href="/next">next</a><p id="where">first</p></body></html>`))
	})
	mux.HandleFunc("/next", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><html><body><p id="arrived">arrived</p></body></html>`))
	})
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)
	tab := New(t)
	for range 10 {
		g.Expect(Do(tab, 30*time.Second, Navigate(server.URL))).To(Succeed())
		g.Expect(Do(tab, 30*time.Second, Click("#next"))).To(Succeed())
		text, err := Text(tab, 30*time.Second, "#arrived")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(text).To(Equal("arrived"))
	}
}

// Navigate returns once the document it asked for has loaded, even when
// it is the same address as the page it leaves: what the page says right
// after is the new page's.
func TestNavigate_WaitsForTheNewDocument(t *testing.T) {
	g := NewWithT(t)
	var loads atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r) // the browser asks for /favicon.ico too
			return
		}
		fmt.Fprintf(w, `<!doctype html><html><body><p id="load">%d</p></body></html>`, loads.Add(1))
	}))
	t.Cleanup(server.Close)
	tab := New(t)
	for i := range 10 {
		g.Expect(Do(tab, 30*time.Second, Navigate(server.URL))).To(Succeed())
		shown, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector("#load").innerText`))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(shown).To(Equal(fmt.Sprint(i+1)), "the page of load %d", i+1)
	}
}

// Text waits for the document to be parsed to its end: an element whose
// start has arrived, and its text not yet, is not read as empty.
func TestText_WaitsForTheDocumentToArrive(t *testing.T) {
	g := NewWithT(t)
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><html><body><a id="next" href="/slow">next</a></body></html>`))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><html><body><p id="arrived">`))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte(`arrived</p></body></html>`))
	})
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)
	t.Cleanup(func() { closeOnce(release) })
	tab := New(t)
	g.Expect(Do(tab, 30*time.Second, Navigate(server.URL))).To(Succeed())
	g.Expect(Do(tab, 30*time.Second, Click("#next"))).To(Succeed())
	// The element is there, shown and empty, while the rest is held back.
	g.Eventually(func() (bool, error) {
		return chromedp.Run(tab, chromedp.Evaluate[bool](`(() => {
const e = document.querySelector("#arrived");
return document.readyState === "loading" && !!e && e.getClientRects().length > 0 && e.innerText === "";
})()`))
	}).WithTimeout(30 * time.Second).Should(BeTrue())

	_, err := Text(tab, time.Second, "#arrived")
	g.Expect(err).To(MatchError(context.DeadlineExceeded), "no text is read before the document has arrived")
	closeOnce(release)
	text, err := Text(tab, 30*time.Second, "#arrived")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(text).To(Equal("arrived"))
}

// closeOnce closes ch unless it is closed.
func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}
