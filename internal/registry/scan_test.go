package registry

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil"
)

func TestScanStoresTags(t *testing.T) {
	g := NewWithT(t)
	tags := numbered("v", 300)
	reg, s, res := scanned(t, tags)
	g.Expect(res.TagCount).To(Equal(300))
	g.Expect(res.Changed).To(BeTrue())
	g.Expect(res.ScanTime.IsZero()).To(BeFalse())
	g.Expect(res.LatestTags).To(Equal([]string{"v0299", "v0298", "v0297", "v0296", "v0295", "v0294", "v0293", "v0292", "v0291", "v0290"}))
	g.Expect(storedTags(t, s, "apps", "app")).To(Equal(tags))

	data, err := os.ReadFile(filepath.Join(s.root, "apps", "app", tagsFileName))
	g.Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256(data)
	g.Expect(res.Revision).To(Equal("sha256:"+hex.EncodeToString(sum[:])), "the revision is the hash of the tags file")
	rev, ok := s.Revision("apps", "app")
	g.Expect(ok).To(BeTrue())
	g.Expect(rev).To(Equal(res.Revision))

	snap, err := s.Open("apps", "app")
	g.Expect(err).NotTo(HaveOccurred())
	defer snap.Close()
	g.Expect(snap.Image).To(Equal(reg.image("app")))
	g.Expect(snap.Count).To(Equal(300))
	g.Expect(repoFiles(t, s, "apps", "app")).To(ConsistOf(tagsFileName, metaFileName), "no temporary file is left")
}

func TestScanFewTags(t *testing.T) {
	g := NewWithT(t)
	_, _, res := scanned(t, []string{"b", "a"})
	g.Expect(res.LatestTags).To(Equal([]string{"b", "a"}))
	g.Expect(res.TagCount).To(Equal(2))
}

func TestScanExclusions(t *testing.T) {
	reg := startRegistry(t, "", "", nil)
	push(t, reg.image("app"), []string{"1.0.0", "1.1.0", "sha256-abc.sig", "sha256-abc.att", "1.2.0-rc.1"})
	for _, tc := range []struct {
		name       string
		exclusions []string
		want       []string
		wantField  string
	}{
		{name: "default leaves out signatures", want: []string{"1.0.0", "1.1.0", "1.2.0-rc.1", "sha256-abc.att"}},
		{name: "empty list keeps all", exclusions: []string{},
			want: []string{"1.0.0", "1.1.0", "1.2.0-rc.1", "sha256-abc.att", "sha256-abc.sig"}},
		{name: "several", exclusions: []string{`^sha256-`, `-rc\.`}, want: []string{"1.0.0", "1.1.0"}},
		{name: "invalid expression", exclusions: []string{`^ok$`, `(`}, wantField: "exclusionList[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newStore(t)
			lists := reg.lists.Load()
			res, err := s.Scan(context.Background(), "apps", "app", Options{Image: reg.image("app"), Exclusions: tc.exclusions})
			if tc.wantField != "" {
				var spec *InvalidSpecError
				g.Expect(errors.As(err, &spec)).To(BeTrue(), "%v", err)
				g.Expect(spec.Field).To(Equal(tc.wantField))
				g.Expect(reg.lists.Load()).To(Equal(lists), "a wrong spec asks the registry nothing")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(storedTags(t, s, "apps", "app")).To(Equal(tc.want))
			g.Expect(res.TagCount).To(Equal(len(tc.want)))
		})
	}
}

// TestScanUnchangedWritesNothing proves that a second scan of the same
// list costs one list request and writes nothing: the stored files keep
// their inode and modification time, and no temporary file is made.
func TestScanUnchangedWritesNothing(t *testing.T) {
	g := NewWithT(t)
	reg, s, first := scanned(t, numbered("1.", 120))
	opts := Options{Image: reg.image("app")}
	before := statFiles(t, s, "apps", "app")
	lists := reg.lists.Load()

	second, err := s.Scan(context.Background(), "apps", "app", opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Changed).To(BeFalse())
	g.Expect(second.Revision).To(Equal(first.Revision))
	g.Expect(second.LatestTags).To(Equal(first.LatestTags))
	g.Expect(second.TagCount).To(Equal(120))
	g.Expect(reg.lists.Load()-lists).To(BeEquivalentTo(1), "one list request")
	after := statFiles(t, s, "apps", "app")
	for file, info := range before {
		g.Expect(os.SameFile(info, after[file])).To(BeTrue(), "%s was replaced", file)
		g.Expect(after[file].ModTime()).To(Equal(info.ModTime()), "%s was written", file)
	}
	g.Expect(repoFiles(t, s, "apps", "app")).To(ConsistOf(tagsFileName, metaFileName))
}

// statFiles returns the file info of the stored files of ns/name.
func statFiles(t *testing.T, s *Store, ns, name string) map[string]os.FileInfo {
	t.Helper()
	infos := map[string]os.FileInfo{}
	for _, f := range []string{tagsFileName, metaFileName} {
		info, err := os.Stat(filepath.Join(s.root, ns, name, f))
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		infos[f] = info
	}
	return infos
}

// TestScanChangedList changes the list at its start, its middle and its
// end, so that the line-by-line comparison diverges at each place.
func TestScanChangedList(t *testing.T) {
	g := NewWithT(t)
	reg, s, _ := scanned(t, []string{"b", "d", "f"})
	image := reg.image("app")
	opts := Options{Image: image}

	for _, step := range []struct {
		name string
		edit func()
		want []string
	}{
		{name: "added in the middle", edit: func() { push(t, image, []string{"c"}) }, want: []string{"b", "c", "d", "f"}},
		{name: "added at the start", edit: func() { push(t, image, []string{"a"}) }, want: []string{"a", "b", "c", "d", "f"}},
		{name: "added at the end", edit: func() { push(t, image, []string{"g"}) }, want: []string{"a", "b", "c", "d", "f", "g"}},
		{name: "removed at the end", edit: func() { deleteTag(t, image, "g") }, want: []string{"a", "b", "c", "d", "f"}},
		{name: "removed in the middle", edit: func() { deleteTag(t, image, "c") }, want: []string{"a", "b", "d", "f"}},
	} {
		step.edit()
		res, err := s.Scan(context.Background(), "apps", "app", opts)
		g.Expect(err).NotTo(HaveOccurred(), step.name)
		g.Expect(res.Changed).To(BeTrue(), step.name)
		g.Expect(storedTags(t, s, "apps", "app")).To(Equal(step.want), step.name)
		g.Expect(res.TagCount).To(Equal(len(step.want)), step.name)
		g.Expect(res.LatestTags[0]).To(Equal(step.want[len(step.want)-1]), step.name)
		g.Expect(repoFiles(t, s, "apps", "app")).To(ConsistOf(tagsFileName, metaFileName), step.name)
		g.Expect(res.Revision).To(Equal(revisionOf(step.want)), step.name)
	}
}

// TestScanNewImageSameTags proves that a changed image is stored even
// when its tags are those stored: the meta file is rewritten, the tags
// file is not.
func TestScanNewImageSameTags(t *testing.T) {
	g := NewWithT(t)
	reg := startRegistry(t, "", "", nil)
	push(t, reg.image("one"), []string{"1", "2"})
	push(t, reg.image("two"), []string{"1", "2"})
	s := newStore(t)
	_, err := s.Scan(context.Background(), "apps", "app", Options{Image: reg.image("one")})
	g.Expect(err).NotTo(HaveOccurred())
	before := statFiles(t, s, "apps", "app")
	res, err := s.Scan(context.Background(), "apps", "app", Options{Image: reg.image("two")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(BeTrue())
	after := statFiles(t, s, "apps", "app")
	g.Expect(os.SameFile(before[tagsFileName], after[tagsFileName])).To(BeTrue())
	snap, err := s.Open("apps", "app")
	g.Expect(err).NotTo(HaveOccurred())
	defer snap.Close()
	g.Expect(snap.Image).To(Equal(reg.image("two")))
}

func TestScanPages(t *testing.T) {
	g := NewWithT(t)
	reg := startRegistry(t, "", "", testutil.PaginateTags)
	tags := numbered("t", 100)
	push(t, reg.image("app"), tags)
	s := newStore(t)
	opts := Options{Image: reg.image("app"), PageSize: 7}
	res, err := s.Scan(context.Background(), "apps", "app", opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reg.lists.Load()).To(BeEquivalentTo(15), "100 tags in pages of 7")
	g.Expect(res.TagCount).To(Equal(100))
	g.Expect(storedTags(t, s, "apps", "app")).To(Equal(tags))
}

// unsorted wraps a registry so that its tag lists come in reverse order,
// with a repeat, as a registry that ignores the distribution spec's order
// might send them.
func unsorted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/tags/list") {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var list struct {
			Name string   `json:"name"`
			Tags []string `json:"tags"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		slices.Reverse(list.Tags)
		list.Tags = append(list.Tags, list.Tags[0])
		_ = json.NewEncoder(w).Encode(list)
	})
}

func TestScanUnsortedRegistry(t *testing.T) {
	g := NewWithT(t)
	tags := numbered("r", 50)
	sortedReg := startRegistry(t, "", "", nil)
	push(t, sortedReg.image("app"), tags)
	reversedReg := startRegistry(t, "", "", unsorted)
	push(t, reversedReg.image("app"), tags)
	s := newStore(t)

	want, err := s.Scan(context.Background(), "apps", "sorted", Options{Image: sortedReg.image("app")})
	g.Expect(err).NotTo(HaveOccurred())
	res, err := s.Scan(context.Background(), "apps", "reversed", Options{Image: reversedReg.image("app")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Revision).To(Equal(want.Revision), "the revision does not depend on the registry's order")
	g.Expect(res.TagCount).To(Equal(50), "the repeat is stored once")
	g.Expect(res.LatestTags).To(Equal(want.LatestTags))
	g.Expect(storedTags(t, s, "apps", "reversed")).To(Equal(tags))
	g.Expect(repoFiles(t, s, "apps", "reversed")).To(ConsistOf(tagsFileName, metaFileName), "no run or raw file is left")

	before := statFiles(t, s, "apps", "reversed")
	again, err := s.Scan(context.Background(), "apps", "reversed", Options{Image: reversedReg.image("app")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Changed).To(BeFalse(), "an unsorted but unchanged list writes nothing")
	g.Expect(os.SameFile(before[tagsFileName], statFiles(t, s, "apps", "reversed")[tagsFileName])).To(BeTrue())
}

func TestScanAuth(t *testing.T) {
	reg := startRegistry(t, testUser, testPass, nil)
	push(t, reg.image("private"), []string{"1.0", "2.0"}, basicAuth())
	wrongAuth := base64.StdEncoding.EncodeToString([]byte(testUser + ":wrong-" + testPass))
	for _, tc := range []struct {
		name       string
		config     []byte
		wantAuth   bool
		wantSpec   bool
		mustNotSay []string
	}{
		{name: "auth entry", config: dockerConfig(reg.host, testUser, testPass)},
		{name: "username and password", config: []byte(`{"auths":{"` + reg.host + `":{"username":"` + testUser + `","password":"` + testPass + `"}}}`)},
		{name: "URL key", config: dockerConfig("http://"+reg.host+"/v2/", testUser, testPass)},
		{name: "wrong password", config: dockerConfig(reg.host, testUser, "wrong-"+testPass), wantAuth: true,
			mustNotSay: []string{"wrong-" + testPass, wrongAuth}},
		{name: "entry of another registry", config: dockerConfig("ghcr.io", testUser, testPass), wantAuth: true,
			mustNotSay: []string{testPass}},
		{name: "no secret", wantAuth: true},
		{name: "malformed secret", config: []byte(`{"auths":{"` + reg.host + `":{"auth":"not base64 ` + testPass + `"}}}`), wantSpec: true,
			mustNotSay: []string{testPass}},
		{name: "not JSON", config: []byte(`{auths: ` + testPass), wantSpec: true, mustNotSay: []string{testPass}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newStore(t)
			_, err := s.Scan(context.Background(), "apps", "private", Options{Image: reg.image("private"), DockerConfigs: [][]byte{tc.config}})
			switch {
			case tc.wantAuth:
				g.Expect(IsAuthError(err)).To(BeTrue(), "%v", err)
				g.Expect(err.Error()).To(ContainSubstring("401"))
				g.Expect(IsNotFound(err)).To(BeFalse())
			case tc.wantSpec:
				var spec *InvalidSpecError
				g.Expect(errors.As(err, &spec)).To(BeTrue(), "%v", err)
				g.Expect(spec.Field).To(Equal("secretRef"))
			default:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(storedTags(t, s, "apps", "private")).To(Equal([]string{"1.0", "2.0"}))
				return
			}
			for _, secret := range tc.mustNotSay {
				g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			}
			_, err = s.Open("apps", "private")
			g.Expect(IsNotFound(err)).To(BeTrue(), "nothing is stored")
		})
	}
}

func TestScanNotFound(t *testing.T) {
	g := NewWithT(t)
	reg := startRegistry(t, "", "", nil)
	_, err := newStore(t).Scan(context.Background(), "apps", "app", Options{Image: reg.image("missing")})
	g.Expect(IsNotFound(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(reg.image("missing")))
}

// TestScanRegistryDown proves that a failed scan keeps the stored tags,
// which are still served.
func TestScanRegistryDown(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(testutil.NewRegistryHandler())
	image := strings.TrimPrefix(srv.URL, "http://") + "/app"
	push(t, image, []string{"1", "2", "3"})
	s := newStore(t)
	first, err := s.Scan(context.Background(), "apps", "app", Options{Image: image})
	g.Expect(err).NotTo(HaveOccurred())
	srv.Close()

	_, err = s.Scan(context.Background(), "apps", "app", Options{Image: image})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("listing the tags of " + image))
	g.Expect(IsAuthError(err) || IsNotFound(err)).To(BeFalse())
	g.Expect(storedTags(t, s, "apps", "app")).To(Equal([]string{"1", "2", "3"}))
	rev, _ := s.Revision("apps", "app")
	g.Expect(rev).To(Equal(first.Revision))
	body := getJSON(t, NewHandler(s, nil), "/images/apps/app/tags", http.StatusOK)
	g.Expect(body.Tags).To(Equal([]string{"1", "2", "3"}))
}

func TestScanMaxTags(t *testing.T) {
	g := NewWithT(t)
	reg := startRegistry(t, "", "", nil)
	push(t, reg.image("app"), numbered("m", 30))
	s := newStore(t)

	_, err := s.Scan(context.Background(), "apps", "new", Options{Image: reg.image("app"), MaxTags: 29})
	g.Expect(err).To(MatchError(ContainSubstring("more than 29 tags")))
	g.Expect(repoFiles(t, s, "apps", "new")).To(BeEmpty(), "nothing written")

	_, err = s.Scan(context.Background(), "apps", "old", Options{Image: reg.image("app"), Exclusions: []string{"m002"}})
	g.Expect(err).NotTo(HaveOccurred())
	before := statFiles(t, s, "apps", "old")
	push(t, reg.image("app"), []string{"n"})
	_, err = s.Scan(context.Background(), "apps", "old", Options{Image: reg.image("app"), MaxTags: 30, Exclusions: []string{"m002"}})
	g.Expect(err).To(MatchError(ContainSubstring("more than 30 tags")), "excluded tags count")
	g.Expect(os.SameFile(before[tagsFileName], statFiles(t, s, "apps", "old")[tagsFileName])).To(BeTrue())
	g.Expect(storedTags(t, s, "apps", "old")).To(HaveLen(20))
	g.Expect(repoFiles(t, s, "apps", "old")).To(ConsistOf(tagsFileName, metaFileName))
}

func TestScanResponseTooLarge(t *testing.T) {
	g := NewWithT(t)
	reg := startRegistry(t, "", "", nil)
	push(t, reg.image("app"), numbered("long-tag-name-", 200))
	s := newStore(t)
	_, err := s.Scan(context.Background(), "apps", "app", Options{Image: reg.image("app"), responseLimit: 2048})
	g.Expect(err).To(MatchError(ContainSubstring("larger than 2048 bytes")))
	g.Expect(repoFiles(t, s, "apps", "app")).To(BeEmpty())
}

func TestScanInvalidTag(t *testing.T) {
	g := NewWithT(t)
	reg := startRegistry(t, "", "", func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/tags/list") {
				_, _ = w.Write([]byte(`{"name":"app","tags":["ok","bad\ntag"]}`))
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	_, err := newStore(t).Scan(context.Background(), "apps", "app", Options{Image: reg.image("app")})
	g.Expect(err).To(MatchError(ContainSubstring(`"bad\ntag", which is not a valid tag`)))
}

func TestScanTLS(t *testing.T) {
	srv := httptest.NewTLSServer(testutil.NewRegistryHandler())
	defer srv.Close()
	image := strings.TrimPrefix(srv.URL, "https://") + "/app"
	push(t, image, []string{"1.0"}, remote.WithTransport(srv.Client().Transport))
	ca := certPEM(srv.Certificate().Raw)
	for _, tc := range []struct {
		name      string
		ca        []byte
		wantErr   string
		wantField string
	}{
		{name: "trusted CA", ca: ca},
		{name: "no CA", wantErr: "certificate"},
		{name: "not a certificate", ca: []byte("nope"), wantField: "certSecretRef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newStore(t)
			_, err := s.Scan(context.Background(), "apps", "app", Options{Image: image, CA: tc.ca})
			switch {
			case tc.wantField != "":
				var spec *InvalidSpecError
				g.Expect(errors.As(err, &spec)).To(BeTrue(), "%v", err)
				g.Expect(spec.Field).To(Equal(tc.wantField))
			case tc.wantErr != "":
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			default:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(storedTags(t, s, "apps", "app")).To(Equal([]string{"1.0"}))
			}
		})
	}
}

// TestRedirectCarriesNoCredentials proves that a registry that redirects
// its tag list to another host (here another port of the same address)
// does not get the credentials sent there.
func TestRedirectCarriesNoCredentials(t *testing.T) {
	g := NewWithT(t)
	other := startRegistry(t, "", "", nil)
	push(t, other.image("app"), []string{"elsewhere"})
	reg := startRegistry(t, testUser, testPass, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/tags/list") {
				http.Redirect(w, r, "http://"+other.host+r.URL.RequestURI(), http.StatusTemporaryRedirect)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	s := newStore(t)
	_, err := s.Scan(context.Background(), "apps", "app", Options{Image: reg.image("app"), DockerConfigs: [][]byte{dockerConfig(reg.host, testUser, testPass)}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(storedTags(t, s, "apps", "app")).To(Equal([]string{"elsewhere"}), "the redirect was followed")
	g.Expect(reg.authHeaders()).To(ContainElement(HavePrefix("Basic ")), "the registry got the credentials")
	g.Expect(other.lists.Load()).To(BeEquivalentTo(1))
	g.Expect(other.authHeaders()).To(HaveEach(BeEmpty()), "the other host got none")
}

// TestNextPageOffTheRegistryIsRefused: a page of tags whose body links
// its next page to another host (go-containerregistry follows a body's
// "next" wherever it points, with the registry's credentials) fails the
// scan; the other host gets no request, and the stored tags stay.
func TestNextPageOffTheRegistryIsRefused(t *testing.T) {
	g := NewWithT(t)
	other := startRegistry(t, "", "", nil)
	push(t, other.image("app"), []string{"elsewhere"})
	var hostile atomic.Bool
	reg := startRegistry(t, "", "", func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hostile.Load() && strings.HasSuffix(r.URL.Path, "/tags/list") {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"name":"app","tags":["1.0.0"],"next":"http://%s/v2/app/tags/list?n=1"}`, other.host)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	push(t, reg.image("app"), []string{"1.0.0", "1.1.0"})
	s := newStore(t)
	opts := Options{Image: reg.image("app")}
	_, err := s.Scan(context.Background(), "apps", "app", opts)
	g.Expect(err).NotTo(HaveOccurred())

	hostile.Store(true)
	_, err = s.Scan(context.Background(), "apps", "app", opts)
	g.Expect(err).To(MatchError(ContainSubstring("links to a next one off the registry")))
	g.Expect(other.lists.Load()).To(BeZero(), "the other host got no request")
	g.Expect(storedTags(t, s, "apps", "app")).To(Equal([]string{"1.0.0", "1.1.0"}), "the last good tags stay")
}

func TestScanChecksNames(t *testing.T) {
	g := NewWithT(t)
	s := newStore(t)
	for _, ns := range []string{"..", "a/b", "", "UPPER"} {
		_, err := s.Scan(context.Background(), ns, "app", Options{Image: "example.com/app"})
		g.Expect(err).To(MatchError(ErrBadRequest), ns)
	}
	for _, name := range []string{"..", "a/b", "", ".hidden"} {
		_, err := s.Scan(context.Background(), "apps", name, Options{Image: "example.com/app"})
		g.Expect(err).To(MatchError(ErrBadRequest), name)
	}
}

// TestScanDeadlineStopsASlowRegistry proves that the scan's timeout
// bounds a registry that sends the headers of a tag list and then stalls
// in its body: the scan fails within a few seconds with a deadline error
// that says so, and the tags and revision stored by the previous scan are
// kept.
func TestScanDeadlineStopsASlowRegistry(t *testing.T) {
	g := NewWithT(t)
	var stall atomic.Bool
	release := make(chan struct{})
	stalled := make(chan struct{}, 1)
	reg := startRegistry(t, "", "", func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !stall.Load() || !strings.HasSuffix(r.URL.Path, "/tags/list") {
				h.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"name":"app","tags":["`))
			w.(http.Flusher).Flush()
			select {
			case stalled <- struct{}{}:
			default:
			}
			<-release // until the test ends, whatever the client does
		})
	})
	// Registered after the server's Close, so it runs before it: Close
	// waits for the stalled handler.
	t.Cleanup(func() { close(release) })
	push(t, reg.image("app"), []string{"1", "2", "3"})
	s := newStore(t)
	first, err := s.Scan(context.Background(), "apps", "app", Options{Image: reg.image("app")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.TagCount).To(Equal(3))

	stall.Store(true)
	// The caller's own bound is far longer, so that a scan that ignored
	// its timeout fails the assertions below instead of hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = s.Scan(ctx, "apps", "app", Options{Image: reg.image("app"), Timeout: 300 * time.Millisecond})
	elapsed := time.Since(start)
	g.Expect(stalled).To(Receive(), "the registry stalled in the body of a tag list")
	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	g.Expect(err).To(MatchError("listing the tags of " + reg.image("app") + ": no answer within the timeout of 300ms"))
	g.Expect(IsAuthError(err) || IsNotFound(err)).To(BeFalse())
	g.Expect(elapsed).To(BeNumerically("<", 10*time.Second), "the timeout bounds the scan")
	g.Expect(elapsed).To(BeNumerically(">=", 300*time.Millisecond), "the scan waited for the timeout")

	g.Expect(storedTags(t, s, "apps", "app")).To(Equal([]string{"1", "2", "3"}))
	rev, ok := s.Revision("apps", "app")
	g.Expect(ok).To(BeTrue())
	g.Expect(rev).To(Equal(first.Revision))
	g.Expect(repoFiles(t, s, "apps", "app")).To(ConsistOf(tagsFileName, metaFileName), "no temporary file is left")
}
