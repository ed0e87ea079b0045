package ui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/kinds"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// pages are the parsed templates, one per page, each with the layout.
var pages = parsePages("overview", "object", "images", "gates", "graph", "signin", "preview", "inventory", "pods")

// parsePages parses the layout with each page's template.
func parsePages(names ...string) map[string]*template.Template {
	out := make(map[string]*template.Template, len(names))
	for _, name := range names {
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(templateFiles, "templates/layout.html", "templates/parts.html", "templates/"+name+".html"))
	}
	return out
}

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"eventList": func(events []recentEvent, none, withObject bool, now time.Time) eventList {
		return eventList{Events: events, NoEvents: none, WithObject: withObject, Now: now}
	},
	"diffLines": diffLines,
	"subject":   subjectOf,
	"words":     func(s string) string { return strings.ReplaceAll(s, "-", " ") },
	"ago": func(t time.Time, now time.Time) string {
		if t.IsZero() {
			return ""
		}
		return now.Sub(t).Round(time.Second).String()
	},
}

// Server serves the UI's pages.
type Server struct {
	// Reader reads the objects: the shared informer cache, in the
	// controller.
	Reader client.Reader
	// Kinds are the kinds the pages show, in the registry's order.
	Kinds []kinds.Kind
	// Log logs the pages that could not be served.
	Log logr.Logger
	// Now returns the time; nil stands for time.Now.
	Now func() time.Time
	// Changes, when set, tells the open pages to update (/events).
	Changes *Changes
	// Actions, when set, performs the pages' actions (reconcile, suspend,
	// resume) as its user; nil makes the UI read-only. Only a UI that
	// serves one user, with that user's credentials, sets it.
	Actions client.Client
	// Events, when set, are the latest events the controllers of this
	// process recorded: the overview and the object pages show them.
	Events *Recent
	// Holder, when set, names the replica that holds an object, when the
	// replicas share the objects (controller --shards=auto).
	Holder func(client.Object) string
	// Logs, when set, are the latest lines the controllers of this process
	// logged about objects: the object pages show them.
	Logs *Logs
	// SignIn, when set, serves signed-in users only, each what the API
	// server lets them see and do; Actions is then not used.
	SignIn *SignIn
	// Previews, by kind, tell what applying an object's next revision
	// would change; the object pages of the kinds without one offer none.
	Previews map[string]Previewer
	// Live, when set, reads what the cache does not hold (the objects a
	// Kustomization applied), uncached, as the UI's one user; with sign-in,
	// the user's own impersonating client reads them instead.
	Live client.Client
	// Pods, with Live, reads the pods' logs as the UI's one user.
	Pods corev1client.PodsGetter

	setUp sync.Once
	// previews holds a token per preview running.
	previews chan struct{}
	// csrf is the token the forms carry without sign-in (and the sign-in
	// form): another site cannot read it, so it cannot make the browser act.
	csrf   string
	signer signer
}

// Handler returns the handler of every page.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.overview)
	mux.HandleFunc("GET /object/{kind}/{namespace}/{name}", s.object)
	mux.HandleFunc("GET /object/{kind}/{namespace}/{name}/preview", s.preview)
	mux.HandleFunc("GET /object/{kind}/{namespace}/{name}/inventory", s.inventory)
	mux.HandleFunc("GET /object/{kind}/{namespace}/{name}/pods", s.pods)
	mux.HandleFunc("GET /images", s.images)
	mux.HandleFunc("GET /gates", s.gates)
	mux.HandleFunc("GET /graph", s.graph)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("POST /object/{kind}/{namespace}/{name}/{action}", s.act)
	s.setUp.Do(s.prepare)
	static, _ := fs.Sub(staticFiles, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	if s.SignIn == nil {
		return securityHeaders(s.withPageWriter(mux), true)
	}
	mux.HandleFunc("GET /signin", s.signInForm)
	mux.HandleFunc("POST /signin/token", s.signInWithToken)
	mux.HandleFunc("GET /signin/oidc", s.signInWithOIDC)
	mux.HandleFunc("GET /auth/callback", s.oidcCallback)
	mux.HandleFunc("POST /signout", s.signOut)
	// Signed-in pages need no loopback host: a site pointed at this
	// address does not have the session's cookie.
	return securityHeaders(s.withPageWriter(s.requireSignIn(mux)), false)
}

// now returns the time of a page.
func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// render writes the page name with data, or a server error.
func (s *Server) render(w http.ResponseWriter, name string, data any) {
	s.renderStatus(w, http.StatusOK, name, data)
}

// renderStatus writes the page name with data and status, or a server
// error.
func (s *Server) renderStatus(w http.ResponseWriter, status int, name string, data any) {
	var page bytes.Buffer
	if err := pages[name].Execute(&page, data); err != nil {
		s.Log.Error(err, "Rendering a page", "page", name)
		s.fail(w, http.StatusInternalServerError, "rendering the page failed")
		return
	}
	out := page.Bytes()
	if pw, ok := w.(*pageWriter); ok {
		out = pw.fill(out)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// Markers of the layout that a page's writer fills in (html/template drops
// comments, so elements mark them): who is signed in, and the count of
// changes the page has seen.
const (
	signedInMarker = `<span class="user" id="user"></span>`
	changesMarker  = `<body>`
)

// pageWriter is the response writer of a page's request: what the layout
// says beyond the page's data.
type pageWriter struct {
	http.ResponseWriter
	// signedIn says who is signed in, with the form that signs out.
	signedIn string
	// changes is the count of changes before the page read anything: the
	// live updates' stream, told it, says at once when more came.
	changes uint64
	live    bool
}

// fill writes into a rendered page what the layout leaves to its writer.
func (w *pageWriter) fill(page []byte) []byte {
	if w.signedIn != "" {
		page = bytes.Replace(page, []byte(signedInMarker), []byte(`<span class="user" id="user">`+w.signedIn+`</span>`), 1)
	}
	if w.live {
		page = bytes.Replace(page, []byte(changesMarker), fmt.Appendf(nil, `<body data-changes="%d">`, w.changes), 1)
	}
	return page
}

// Flush sends what was written (the live updates' stream).
func (w *pageWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// withPageWriter hands every request a pageWriter, with the count of changes
// taken before the handler reads anything.
func (s *Server) withPageWriter(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pw := &pageWriter{ResponseWriter: w}
		if s.Changes != nil {
			pw.changes, pw.live = s.Changes.Count(), true
		}
		h.ServeHTTP(pw, r)
	})
}

// prepare makes the server's secrets and, with sign-in, its reader of
// what each user may read.
func (s *Server) prepare() {
	s.csrf = randomID()
	s.previews = make(chan struct{}, maxPreviews)
	if s.SignIn == nil {
		return
	}
	s.signer = newSigner(s.SignIn.Key)
	c := s.SignIn.Client
	s.Reader = &accessReader{inner: s.Reader, access: newAccess(c, s.now), scheme: c.Scheme(), mapper: c.RESTMapper()}
}

// fail writes an error page of status with msg.
func (s *Server) fail(w http.ResponseWriter, status int, msg string) {
	http.Error(w, msg, status)
}

// securityHeaders sets the headers that keep the pages from being framed
// or running scripts from elsewhere and, when loopbackOnly (a UI without
// sign-in), refuses a request for another host than a loopback one: a
// site whose name an attacker points at 127.0.0.1 (DNS rebinding) must
// not read the pages or their token.
func securityHeaders(h http.Handler, loopbackOnly bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loopbackOnly && !loopbackHost(r.Host) {
			http.Error(w, "this UI answers only on a loopback address (127.0.0.1, ::1, localhost)", http.StatusMisdirectedRequest)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "same-origin") // "no-referrer" would make Origin "null"
		h.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether host (a Host header) names a loopback
// address or localhost.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
