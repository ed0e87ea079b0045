package oci

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil"
)

func TestSelectLayer(t *testing.T) {
	content := v1.Descriptor{MediaType: ContentMediaType, Size: 1}
	helm := v1.Descriptor{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Size: 2}
	other := v1.Descriptor{MediaType: "application/octet-stream", Size: 3}
	cases := map[string]struct {
		layers    []v1.Descriptor
		mediaType string
		want      v1.Descriptor
		wantErr   string
	}{
		"first layer":         {layers: []v1.Descriptor{helm, content}, want: helm},
		"by media type":       {layers: []v1.Descriptor{helm, content}, mediaType: string(ContentMediaType), want: content},
		"first of that type":  {layers: []v1.Descriptor{other, content, {MediaType: ContentMediaType, Size: 9}}, mediaType: string(ContentMediaType), want: content},
		"no layer":            {wantErr: "the artifact has no layer"},
		"no layer, with type": {mediaType: string(ContentMediaType), wantErr: "the artifact has no layer"},
		"no such media type": {layers: []v1.Descriptor{other, helm, other}, mediaType: string(ContentMediaType),
			wantErr: `the artifact has no layer of media type "` + string(ContentMediaType) + `": its layers are of media type ` +
				`"application/octet-stream", "application/vnd.cncf.helm.chart.content.v1.tar+gzip"`},
	}
	for title, c := range cases {
		t.Run(title, func(t *testing.T) {
			g := NewWithT(t)
			got, err := SelectLayer(&v1.Manifest{Layers: c.layers}, c.mediaType)
			if c.wantErr != "" {
				g.Expect(err).To(MatchError(c.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(c.want))
		})
	}
}

func TestOpenLayer(t *testing.T) {
	g := NewWithT(t)
	host, requests := startLoggedRegistry(t)
	ctx := context.Background()
	layer := craftLayer(t, file("a.yaml", "a: 1\n"), file("b.yaml", strings.Repeat("b", 10000)))
	ref, _ := ParseTag("oci://"+host+"/app:v1", anonymous)
	digest := pushRaw(t, ref, layer)
	m, err := GetManifest(ctx, ref.Context().Digest(digest.String()), anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	d, err := SelectLayer(m, string(ContentMediaType))
	g.Expect(err).NotTo(HaveOccurred())

	rc, err := OpenLayer(ctx, ref.Context(), d, int64(len(layer)), anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := io.ReadAll(rc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(layer))
	g.Expect(rc.Close()).To(Succeed())

	// Closed before the end: Close reads the rest and verifies it.
	rc, err = OpenLayer(ctx, ref.Context(), d, 0, anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = rc.Read(make([]byte, 10))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rc.Close()).To(Succeed())

	// Over the limit: refused before any request.
	requests.reset()
	_, err = OpenLayer(ctx, ref.Context(), d, int64(len(layer))-1, anonymous)
	g.Expect(err).To(MatchError(ErrTooLarge))
	g.Expect(err).To(MatchError(HavePrefix(fmt.Sprintf("refusing the layer %s of oci://%s/app: it is %d bytes", d.Digest, host, len(layer)))))
	g.Expect(requests.matching("", "/")).To(BeEmpty())

	// A descriptor that names no sha256 blob.
	bad := d
	bad.Digest = v1.Hash{Algorithm: "sha256", Hex: "../../x"}
	_, err = OpenLayer(ctx, ref.Context(), bad, 0, anonymous)
	g.Expect(err).To(MatchError(ContainSubstring("its digest is not a sha256 digest")))
	g.Expect(requests.matching("", "/")).To(BeEmpty())
}

// hostileLayer is the layer a hostile registry describes in its manifest.
var hostileLayer = bytes.Repeat([]byte("layer-"), 10000)

// streamForever writes chunks of zeros until the client goes away.
func streamForever(w http.ResponseWriter, r *http.Request) {
	chunk := make([]byte, 32<<10)
	for r.Context().Err() == nil {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// trickle writes one byte every 10 ms until the client goes away.
func trickle(w http.ResponseWriter, r *http.Request) {
	for r.Context().Err() == nil {
		if _, err := w.Write([]byte{'x'}); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		time.Sleep(10 * time.Millisecond)
	}
}

// serveBytes returns a blob handler that sends b, announcing length when
// it is not negative.
func serveBytes(b []byte, length int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if length >= 0 {
			w.Header().Set("Content-Length", strconv.Itoa(length))
		}
		_, _ = w.Write(b)
	}
}

func TestOpenLayerHostileRegistry(t *testing.T) {
	declared := v1.Descriptor{MediaType: ContentMediaType, Size: int64(len(hostileLayer)), Digest: sha256Of(hostileLayer)}
	tampered := bytes.ToUpper(hostileLayer)
	cases := map[string]struct {
		blob      http.HandlerFunc
		size      int64 // the declared size, when not len(hostileLayer)
		maxSize   int64
		timeout   time.Duration
		readAll   bool // read to the end, else half and Close
		wantOpen  error
		wantRead  error
		wantText  string
		noRequest bool
	}{
		"streams forever": {blob: streamForever, readAll: true, wantRead: ErrTooLarge,
			wantText: "the registry sent more than the 60000 bytes its descriptor declares"},
		"announces more than declared": {blob: serveBytes(append(hostileLayer, 'x'), len(hostileLayer)+1), wantOpen: ErrTooLarge,
			wantText: "the registry announces 60001 bytes"},
		"declares more than the limit": {blob: streamForever, maxSize: 1000, wantOpen: ErrTooLarge, noRequest: true,
			wantText: "it is 60000 bytes, larger than the limit of 1000 bytes"},
		"ends early": {blob: serveBytes(hostileLayer[:100], -1), readAll: true, wantRead: io.ErrUnexpectedEOF,
			wantText: "the stream ended after 100 of the 60000 bytes"},
		"tampered content": {blob: serveBytes(tampered, len(tampered)), readAll: true, wantRead: ErrDigestMismatch,
			wantText: "the registry sent content of digest " + sha256Of(tampered).String()},
		"tampered content, caught by Close": {blob: serveBytes(tampered, len(tampered)), wantRead: ErrDigestMismatch},
		"slow stream": {blob: trickle, timeout: 300 * time.Millisecond, readAll: true, wantRead: context.DeadlineExceeded,
			wantText: "stopped after"},
	}
	for title, c := range cases {
		t.Run(title, func(t *testing.T) {
			g := NewWithT(t)
			reg := &hostileRegistry{manifest: artifactManifest(t, declared), blob: c.blob}
			host := reg.start(t)
			ctx := context.Background()
			if c.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.timeout)
				defer cancel()
			}
			repo, _ := name.NewRepository(host + "/app")
			m, err := GetManifest(ctx, repo.Digest(sha256Of(reg.manifest).String()), anonymous)
			g.Expect(err).NotTo(HaveOccurred())
			d, err := SelectLayer(m, "")
			g.Expect(err).NotTo(HaveOccurred())

			start := time.Now()
			rc, err := OpenLayer(ctx, repo, d, c.maxSize, anonymous)
			g.Expect(reg.log.matching(http.MethodGet, "/blobs/")).To(HaveLen(map[bool]int{false: 1}[c.noRequest]))
			if c.wantOpen != nil {
				g.Expect(err).To(MatchError(c.wantOpen))
				g.Expect(err).To(MatchError(ContainSubstring(c.wantText)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			var read []byte
			if c.readAll {
				read, err = io.ReadAll(rc)
			} else {
				read = make([]byte, len(hostileLayer)/2)
				_, err = io.ReadFull(rc, read)
				g.Expect(err).NotTo(HaveOccurred())
			}
			closeErr := rc.Close()
			g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
			g.Expect(int64(len(read))).To(BeNumerically("<=", d.Size))
			g.Expect(closeErr).To(MatchError(c.wantRead))
			if c.readAll {
				g.Expect(err).To(MatchError(c.wantRead))
				g.Expect(err).To(MatchError(ContainSubstring(c.wantText)))
				g.Expect(err).To(MatchError(HavePrefix("downloading the layer " + d.Digest.String() + " of oci://" + host + "/app: ")))
				g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			}
		})
	}
}

// redirectingRegistry is the in-process registry behind basic auth, which
// answers blob GETs with a 307 redirect to a second server on another
// port; that server serves the blob from the same storage and records the
// Authorization headers it receives.
type redirectingRegistry struct {
	host, blobHost string
	mu             sync.Mutex
	blobAuth       []string
}

// startRedirectingRegistry starts a redirectingRegistry for user and pass.
func startRedirectingRegistry(t *testing.T, user, pass string) *redirectingRegistry {
	t.Helper()
	inner := newInProcessRegistry()
	rr := &redirectingRegistry{}
	rr.blobHost = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rr.mu.Lock()
		rr.blobAuth = append(rr.blobAuth, r.Header.Get("Authorization"))
		rr.mu.Unlock()
		inner.ServeHTTP(w, r)
	}))
	rr.host = serve(t, withBasicAuth(user, pass, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			http.Redirect(w, r, "http://"+rr.blobHost+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		inner.ServeHTTP(w, r)
	})))
	return rr
}

// authorizations returns the Authorization headers the blob server saw.
func (rr *redirectingRegistry) authorizations() []string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]string(nil), rr.blobAuth...)
}

func TestOpenLayerRedirectSendsNoCredentials(t *testing.T) {
	g := NewWithT(t)
	rr := startRedirectingRegistry(t, "alice", "redirect-Secret-42")
	o := Options{Username: "alice", Password: "redirect-Secret-42"}
	files := map[string]string{"app/deploy.yaml": "kind: Deployment\n"}
	pushed := pushFolder(t, "oci://"+rr.host+"/app:v1", files, o)
	ctx := context.Background()

	m, err := GetManifest(ctx, pushed.Ref.Context().Digest(pushed.Digest.String()), o)
	g.Expect(err).NotTo(HaveOccurred())
	d, err := SelectLayer(m, "")
	g.Expect(err).NotTo(HaveOccurred())
	rc, err := OpenLayer(ctx, pushed.Ref.Context(), d, 0, o)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := io.ReadAll(rc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rc.Close()).To(Succeed())
	g.Expect(sha256Of(got)).To(Equal(d.Digest))

	// Pull follows the same path, with credentials from a keychain too.
	kc, err := KeychainFromDockerConfigs([]byte(`{"auths":{"` + rr.host + `":{"auth":"` +
		base64.StdEncoding.EncodeToString([]byte("alice:redirect-Secret-42")) + `"}}}`))
	g.Expect(err).NotTo(HaveOccurred())
	out := filepath.Join(t.TempDir(), "out")
	_, err = Pull(ctx, pushed.Ref, out, 0, Options{Keychain: kc})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testutil.ReadTree(t, out)).To(Equal(files))

	seen := rr.authorizations()
	g.Expect(seen).To(HaveLen(2))
	g.Expect(seen).To(HaveEach(BeEmpty()))
}

func TestErrorsCarryNoCredentials(t *testing.T) {
	const user, password = "alice", "Hunter2-Recognisable-9x7q"
	// The registry echoes what it received in its error bodies.
	host := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		u, p, _ := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"errors":[{"code":"DENIED","message":"%s with %s (%s) is not welcome at https://%s:%s@r.example/"}]}`,
			u, p, r.Header.Get("Authorization"), u, p)
	}))
	kc, err := KeychainFromDockerConfigs([]byte(`{"auths":{"http://` + host + `/v2/":{"username":"` + user + `","password":"` + password + `"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag(host + "/app:v1")
	digest := ref.Context().Digest(sha256Of([]byte("x")).String())
	layer := v1.Descriptor{MediaType: ContentMediaType, Size: 1, Digest: sha256Of([]byte("x"))}
	src := testutil.WriteTree(t, map[string]string{"a": "a"})
	calls := map[string]func(context.Context, Options) error{
		"Resolve":     func(ctx context.Context, o Options) error { _, err := Resolve(ctx, ref, o); return err },
		"GetManifest": func(ctx context.Context, o Options) error { _, err := GetManifest(ctx, digest, o); return err },
		"LatestSemverTag": func(ctx context.Context, o Options) error {
			_, err := LatestSemverTag(ctx, ref.Context(), "*", "", o)
			return err
		},
		"OpenLayer": func(ctx context.Context, o Options) error {
			_, err := OpenLayer(ctx, ref.Context(), layer, 0, o)
			return err
		},
		"Pull": func(ctx context.Context, o Options) error { _, err := Pull(ctx, ref, t.TempDir(), 0, o); return err },
		"List": func(ctx context.Context, o Options) error { _, err := List(ctx, ref.Context(), o); return err },
		"Tag":  func(ctx context.Context, o Options) error { _, err := Tag(ctx, ref, "v2", o); return err },
		"Push": func(ctx context.Context, o Options) error {
			_, err := Push(ctx, ref, PushRequest{Dir: src}, o)
			return err
		},
	}
	options := map[string]Options{"creds": {Username: user, Password: password}, "keychain": {Keychain: kc}}
	for call, fn := range calls {
		for how, o := range options {
			t.Run(call+" with "+how, func(t *testing.T) {
				g := NewWithT(t)
				err := fn(context.Background(), o)
				g.Expect(err).To(HaveOccurred())
				if call != "Push" { // Push fails on a HEAD, whose answer has no body
					g.Expect(err.Error()).To(ContainSubstring("is not welcome"), "the registry's message is shown")
				}
				g.Expect(err.Error()).NotTo(ContainSubstring(password))
				g.Expect(err.Error()).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(user + ":" + password))))
				g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			})
		}
	}
}
