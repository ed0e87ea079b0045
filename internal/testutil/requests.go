package testutil

import (
	"net/http"
	"strings"
	"sync"
)

// RequestCounter counts the API requests that Match accepts, by the
// namespace in their path. Wrap a client's transport with it (a
// testmanager.Suite's Wrap) to count what the controllers send.
type RequestCounter struct {
	// Match tells which requests count.
	Match func(*http.Request) bool

	mu     sync.Mutex
	counts map[string]int
	// paths counts by the path after /namespaces/ (NS/resource/name).
	paths map[string]int
}

// Wrap returns rt counting the requests that match.
func (c *RequestCounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if c.Match(r) {
			if _, rest, ok := strings.Cut(r.URL.Path, "/namespaces/"); ok {
				ns, _, _ := strings.Cut(rest, "/")
				c.mu.Lock()
				if c.counts == nil {
					c.counts, c.paths = map[string]int{}, map[string]int{}
				}
				c.counts[ns]++
				c.paths[rest]++
				c.mu.Unlock()
			}
		}
		return rt.RoundTrip(r)
	})
}

// Of returns the count of the objects of resource named names in ns.
func (c *RequestCounter) Of(ns, resource string, names ...string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, name := range names {
		n += c.paths[ns+"/"+resource+"/"+name]
	}
	return n
}

// In returns the count of namespace ns.
func (c *RequestCounter) In(ns string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[ns]
}

// IsDryRun matches server-side dry runs.
func IsDryRun(r *http.Request) bool { return r.URL.Query().Get("dryRun") != "" }

// IsApply matches server-side applies that are not dry runs.
func IsApply(r *http.Request) bool {
	return r.Method == http.MethodPatch && r.Header.Get("Content-Type") == "application/apply-patch+yaml" && !IsDryRun(r)
}

// IsNamedRead matches the reads of one named namespaced object (a GET,
// not a list or a watch).
func IsNamedRead(r *http.Request) bool {
	if r.Method != http.MethodGet || r.URL.Query().Has("watch") {
		return false
	}
	_, rest, ok := strings.Cut(r.URL.Path, "/namespaces/")
	return ok && strings.Count(rest, "/") == 2
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
