package testutil

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// StartRegistry starts go-containerregistry's in-process OCI registry
// (with the referrers API) on loopback and returns its host:port; with
// user set, it asks for basic auth with user and pass.
func StartRegistry(t testing.TB, user, pass string) string {
	t.Helper()
	h := NewRegistryHandler()
	if user != "" {
		h = RequireBasicAuth(h, user, pass)
	}
	return ServeRegistry(t, h)
}

// NewRegistryHandler returns the in-process registry that StartRegistry
// serves, for tests that wrap it (to count, redirect or page its
// requests) before serving it with ServeRegistry.
func NewRegistryHandler() http.Handler {
	return registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true))
}

// RequireBasicAuth wraps h so that it answers 401 Unauthorized, with a
// basic challenge, to every request without the user and pass given.
func RequireBasicAuth(h http.Handler, user, pass string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ServeRegistry serves h on loopback until the test ends and returns its
// host:port.
func ServeRegistry(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// PaginateTags wraps a registry handler so that its tag lists are paged
// as the distribution spec says: at most n tags (the query parameter)
// after the tag last, and a Link header to the next page while there is
// one. The in-process registry cuts a list at n but sends no Link header
// (and ignores a last past its final tag), so a client could not tell
// that more tags follow.
func PaginateTags(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/tags/list") || err != nil || n <= 0 {
			h.ServeHTTP(w, r)
			return
		}
		full := r.Clone(r.Context())
		full.URL.RawQuery = ""
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, full)
		var list struct {
			Name string   `json:"name"`
			Tags []string `json:"tags"`
		}
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &list) != nil {
			copyResponse(w, rec)
			return
		}
		list.Tags = tagsAfter(list.Tags, r.URL.Query().Get("last"))
		if len(list.Tags) > n {
			list.Tags = list.Tags[:n]
			next := url.Values{"n": {strconv.Itoa(n)}, "last": {list.Tags[n-1]}}
			w.Header().Set("Link", "<"+r.URL.Path+"?"+next.Encode()+`>; rel="next"`)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	})
}

// tagsAfter returns the tags of the sorted list that come after last, or
// all of them when last is empty.
func tagsAfter(tags []string, last string) []string {
	if last == "" {
		return tags
	}
	for i, tag := range tags {
		if tag > last {
			return tags[i:]
		}
	}
	return nil
}

// copyResponse writes a recorded response to w.
func copyResponse(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = io.Copy(w, bytes.NewReader(rec.Body.Bytes()))
}

// PushImage pushes one small random image to image (host/repository, over
// plain HTTP) under each of tags, with opts (such as remote.WithAuth).
func PushImage(t testing.TB, image string, tags []string, opts ...remote.Option) {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range tags {
		ref, err := name.NewTag(image+":"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img, opts...); err != nil {
			t.Fatalf("pushing %s: %v", ref, err)
		}
	}
}
