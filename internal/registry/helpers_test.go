package registry

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil"
)

// Credentials of the registries that ask for basic auth.
const (
	testUser = "scanner"
	testPass = "s3cr3t-p4ssw0rd"
)

// testRegistry is an in-process registry whose requests are counted.
type testRegistry struct {
	host string
	// lists counts the tag list requests that reached the registry.
	lists atomic.Int64
	// auth records the Authorization header of every request, by path.
	mu   sync.Mutex
	auth map[string][]string
}

// startRegistry starts a registry; with user set, it asks for basic auth.
// wrap, when set, wraps the registry (behind the counting and the auth).
func startRegistry(t *testing.T, user, pass string, wrap func(http.Handler) http.Handler) *testRegistry {
	t.Helper()
	r := &testRegistry{auth: map[string][]string{}}
	h := testutil.NewRegistryHandler()
	if wrap != nil {
		h = wrap(h)
	}
	if user != "" {
		h = testutil.RequireBasicAuth(h, user, pass)
	}
	r.host = testutil.ServeRegistry(t, r.record(h))
	return r
}

// record wraps h to count tag lists and record Authorization headers.
func (r *testRegistry) record(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/tags/list") {
			r.lists.Add(1)
		}
		r.mu.Lock()
		r.auth[req.URL.Path] = append(r.auth[req.URL.Path], req.Header.Get("Authorization"))
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	})
}

// authHeaders returns the Authorization headers the registry received.
func (r *testRegistry) authHeaders() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []string
	for _, headers := range r.auth {
		all = append(all, headers...)
	}
	return all
}

// image returns the name of a repository of the registry.
func (r *testRegistry) image(repo string) string { return r.host + "/" + repo }

// push pushes one random image to image:tags[0] and tags it with the
// other tags; opts carry the credentials or the transport.
func push(t *testing.T, image string, tags []string, opts ...remote.Option) {
	t.Helper()
	g := NewWithT(t)
	img, err := random.Image(64, 1)
	g.Expect(err).NotTo(HaveOccurred())
	first, err := name.NewTag(image+":"+tags[0], name.WeakValidation)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.Write(first, img, opts...)).To(Succeed())
	desc, err := remote.Get(first, opts...)
	g.Expect(err).NotTo(HaveOccurred())
	for _, tag := range tags[1:] {
		g.Expect(remote.Tag(first.Context().Tag(tag), desc, opts...)).To(Succeed())
	}
}

// deleteTag removes a tag from the registry.
func deleteTag(t *testing.T, image, tag string, opts ...remote.Option) {
	t.Helper()
	ref, err := name.NewTag(image+":"+tag, name.WeakValidation)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(remote.Delete(ref, opts...)).To(Succeed())
}

// basicAuth returns the remote option of the test credentials.
func basicAuth() remote.Option {
	return remote.WithAuth(&authn.Basic{Username: testUser, Password: testPass})
}

// numbered returns n tags prefix0000, prefix0001...
func numbered(prefix string, n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return tags
}

// dockerConfig returns a .dockerconfigjson with the auth form of an
// entry for key.
func dockerConfig(key, user, pass string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, key, auth))
}

// scanned pushes tags to the repository "app" of a new registry and
// scans it into a new store as apps/app.
func scanned(t *testing.T, tags []string) (*testRegistry, *Store, ScanResult) {
	t.Helper()
	reg := startRegistry(t, "", "", nil)
	push(t, reg.image("app"), tags)
	s := newStore(t)
	res, err := s.Scan(context.Background(), "apps", "app", Options{Image: reg.image("app")})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return reg, s, res
}

// newStore returns a store in a temporary folder.
func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := NewStore(t.TempDir())
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return s
}

// storedTags returns the stored tags of ns/name.
func storedTags(t *testing.T, s *Store, ns, name string) []string {
	t.Helper()
	var tags []string
	NewWithT(t).Expect(s.Each(ns, name, func(tag string) bool { tags = append(tags, tag); return true })).To(Succeed())
	return tags
}

// repoFiles returns the names of the files in the folder of ns/name.
func repoFiles(t *testing.T, s *Store, ns, name string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(s.root, ns, name))
	if os.IsNotExist(err) {
		return nil
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// certPEM returns a certificate in PEM.
func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
