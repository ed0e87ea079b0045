package ui

import (
	"embed"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/kinds"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// pages are the parsed templates, one per page, each with the layout.
var pages = parsePages("overview", "object")

// parsePages parses the layout with each page's template.
func parsePages(names ...string) map[string]*template.Template {
	out := make(map[string]*template.Template, len(names))
	for _, name := range names {
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(templateFiles, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}

// funcs are the templates' functions.
var funcs = template.FuncMap{
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

	csrfOnce sync.Once
	csrf     string
}

// Handler returns the handler of every page.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.overview)
	mux.HandleFunc("GET /object/{kind}/{namespace}/{name}", s.object)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("POST /object/{kind}/{namespace}/{name}/{action}", s.act)
	s.csrfOnce.Do(func() { s.csrf = newCSRFToken() })
	static, _ := fs.Sub(staticFiles, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	return securityHeaders(mux)
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
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages[name].Execute(w, data); err != nil {
		s.Log.Error(err, "Rendering a page", "page", name)
	}
}

// fail writes an error page of status with msg.
func (s *Server) fail(w http.ResponseWriter, status int, msg string) {
	http.Error(w, msg, status)
}

// securityHeaders sets the headers that keep the pages from being framed
// or running scripts from elsewhere, and refuses a request for another
// host than a loopback one: a site whose name an attacker points at
// 127.0.0.1 (DNS rebinding) must not read the pages or their token.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
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
