package bucket

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// hostileSecret is the secret key clients of the hostile server sign with.
const hostileSecret = "hostile-secret-key-5f0c1e2d3b4a"

// hostile is a small S3 server under a test's control: it lists objects as
// told, whatever their keys and sizes, and answers GetObject with get.
type hostile struct {
	// objects is the listing, sent as is (keys URL-encoded, so that any
	// byte goes through).
	objects []Object
	// list, when set, answers ListObjectsV2 instead.
	list http.HandlerFunc
	// get answers GetObject for key; nil serves "hi" to every key.
	get func(w http.ResponseWriter, r *http.Request, key string)
	// gets counts the GetObject requests.
	gets atomic.Int32
	// serving counts the requests being served.
	serving atomic.Int32
}

// start serves h on loopback and returns a client that signs with
// hostileSecret.
func (h *hostile) start(t *testing.T) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(srv.Close)
	c, err := New(Options{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Insecure: true,
		Region: "us-east-1", AccessKey: "AKHOSTILE", SecretKey: hostileSecret})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (h *hostile) serve(w http.ResponseWriter, r *http.Request) {
	h.serving.Add(1)
	defer h.serving.Add(-1)
	_, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Query().Has("location"):
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><LocationConstraint>us-east-1</LocationConstraint>`)
	case key == "" && h.list != nil:
		h.list(w, r)
	case key == "":
		writeListing(w, h.objects)
	default:
		h.gets.Add(1)
		if h.get == nil {
			serveBody(w, "hi")
			return
		}
		h.get(w, r, key)
	}
}

// waitHandlers fails t unless every request handler returns within 5s.
func (h *hostile) waitHandlers(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); h.serving.Load() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server still serves a client that should have gone")
		}
	}
}

// writeListing answers ListObjectsV2 with objs, keys URL-encoded.
func writeListing(w http.ResponseWriter, objs []Object) {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
	fmt.Fprintf(&b, "<Name>b</Name><KeyCount>%d</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated><EncodingType>url</EncodingType>", len(objs))
	for _, o := range objs {
		fmt.Fprintf(&b, `<Contents><Key>%s</Key><ETag>"%s"</ETag><Size>%d</Size><LastModified>2024-01-02T03:04:05.000Z</LastModified></Contents>`,
			url.QueryEscape(o.Key), o.ETag, o.Size)
	}
	b.WriteString("</ListBucketResult>")
	w.Header().Set("Content-Type", "application/xml")
	fmt.Fprint(w, b.String())
}

// serveBody answers GetObject with body.
func serveBody(w http.ResponseWriter, body string) {
	objectHeaders(w, len(body))
	fmt.Fprint(w, body)
}

// objectHeaders sets what minio-go wants of a GetObject answer; a negative
// size sends no Content-Length.
func objectHeaders(w http.ResponseWriter, size int) {
	w.Header().Set("Last-Modified", "Tue, 02 Jan 2024 03:04:05 GMT")
	w.Header().Set("ETag", `"e"`)
	if size >= 0 {
		w.Header().Set("Content-Length", strconv.Itoa(size))
	}
}

// writeS3Error answers with an S3 error document.
func writeS3Error(w http.ResponseWriter, status int, code, message string) {
	var msg strings.Builder
	_ = xml.EscapeText(&msg, []byte(message))
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>r1</RequestId></Error>`, code, msg.String())
}

func TestCheckKey(t *testing.T) {
	for _, key := range []string{"a", "apps/podinfo.yaml", "a/b/c.d", "..a", "a..b/c", ".hidden/x", "spaces are fine", "ünïcode/ключ"} {
		t.Run("accepts "+key, func(t *testing.T) {
			NewWithT(t).Expect(CheckKey(key)).To(Succeed())
		})
	}
	for _, tc := range []struct{ key, wantErr string }{
		{"", "an object key is empty"},
		{"../escape", `object key "../escape" climbs out of its folder with '..'`},
		{"a/../../b", "climbs out of its folder"},
		{"a/..", "climbs out of its folder"},
		{"..", "climbs out of its folder"},
		{"/abs", `object key "/abs" is an absolute path`},
		{`a\b`, `object key "a\\b" holds a backslash`},
		{`..\evil`, "holds a backslash"},
		{"a\x00b", `object key "a\x00b" holds a NUL byte`},
		{"a\nb", "holds a control character"},
		{"a\xffb", "is not valid UTF-8"},
		{"a//b", "has an empty or '.' path element"},
		{"./a", "has an empty or '.' path element"},
		{"dir/", "has an empty or '.' path element"},
	} {
		t.Run("refuses "+strconv.Quote(tc.key), func(t *testing.T) {
			NewWithT(t).Expect(CheckKey(tc.key)).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}
}

// Security row 26: an object key with ../ (or another unsafe key) is
// refused by List and Download, and nothing is written anywhere.
func TestUnsafeKeysAreRefusedAndNothingIsWritten(t *testing.T) {
	for _, bad := range []string{"../escape", "/abs", "a/../../b", `a\b`, "a\x00b", "a//b", "./a", "ok/..", "x/\n"} {
		t.Run(strconv.Quote(bad), func(t *testing.T) {
			g := NewWithT(t)
			objs := []Object{{Key: "good.yaml", ETag: "1", Size: 2}, {Key: bad, ETag: "2", Size: 2}}
			h := &hostile{objects: objs}
			c := h.start(t)
			ctx := context.Background()

			listed, err := c.List(ctx, "hostile", "")
			g.Expect(err).To(MatchError(ContainSubstring("bucket 'hostile' holds an unsafe object key, refused: object key " + strconv.Quote(bad))))
			g.Expect(err.Error()).To(HaveSuffix("rename or remove the object"))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			g.Expect(listed).To(BeNil())

			root := t.TempDir()
			dir := filepath.Join(root, "sub", "out")
			err = c.Download(ctx, "hostile", objs, dir, DownloadOptions{})
			g.Expect(err).To(MatchError(ContainSubstring("holds an unsafe object key")))
			g.Expect(h.gets.Load()).To(BeZero(), "an object was fetched")
			g.Expect(treeOf(t, root)).To(BeEmpty(), "a file was written")
		})
	}
}

// The second guard: a key that CheckKey accepts still may not reach out of
// dir through a symbolic link already there.
func TestDownloadDoesNotFollowSymbolicLinksOutOfDir(t *testing.T) {
	g := NewWithT(t)
	outside := t.TempDir()
	dir := t.TempDir()
	g.Expect(os.Symlink(outside, filepath.Join(dir, "link"))).To(Succeed())
	h := &hostile{}
	c := h.start(t)

	err := c.Download(context.Background(), "hostile", []Object{{Key: "link/x", Size: 2}}, dir, DownloadOptions{})
	g.Expect(err).To(MatchError("downloading object 'link/x' from bucket 'hostile': its path leaves the download folder or goes through a symbolic link"))
	g.Expect(treeOf(t, outside)).To(BeEmpty())
	g.Expect(h.gets.Load()).To(BeZero())
}

func TestListingsThatCannotBeWrittenAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objects []Object
		wantErr string
	}{
		{"key listed twice", []Object{{Key: "a", Size: 1}, {Key: "b"}, {Key: "a", Size: 2}}, "bucket 'hostile' lists object 'a' twice"},
		{"file and folder", []Object{{Key: "a-z"}, {Key: "a"}, {Key: "a/b/c"}}, "bucket 'hostile' holds both object 'a' and object 'a/b/c' under it, which cannot both be files: rename one"},
		{"negative size", []Object{{Key: "a", Size: -5}}, "bucket 'hostile' lists object 'a' with a negative size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			h := &hostile{objects: tc.objects}
			c := h.start(t)
			_, err := c.List(context.Background(), "hostile", "")
			g.Expect(err).To(MatchError(tc.wantErr))

			dir := t.TempDir()
			g.Expect(c.Download(context.Background(), "hostile", tc.objects, dir, DownloadOptions{})).To(MatchError(tc.wantErr))
			g.Expect(h.gets.Load()).To(BeZero())
		})
	}
}

// endless streams 32 KiB chunks until the client goes away.
func endless(w http.ResponseWriter, r *http.Request) {
	chunk := []byte(strings.Repeat("x", 32<<10))
	for r.Context().Err() == nil {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// Security row 27: a server that sends more (or less) than it listed is
// cut at the listed size, which is at most MaxObjectSize.
func TestDownloadReadsNoMoreThanTheListedSize(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int64
		get     func(w http.ResponseWriter, r *http.Request)
		wantErr string
	}{
		{"endless stream", 1024, func(w http.ResponseWriter, r *http.Request) {
			objectHeaders(w, -1)
			endless(w, r)
		}, "the object is larger than its listed 1024 bytes"},
		{"endless stream under a huge Content-Length", 16, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(1<<40))
			objectHeaders(w, -1)
			endless(w, r)
		}, "the object is larger than its listed 16 bytes"},
		{"larger than listed", 1024, func(w http.ResponseWriter, r *http.Request) {
			serveBody(w, strings.Repeat("y", 2048))
		}, "the object is larger than its listed 1024 bytes"},
		{"shorter than listed", 1024, func(w http.ResponseWriter, r *http.Request) {
			serveBody(w, "0123456789")
		}, "the object ended after 10 of its listed 1024 bytes: it changed since the listing, retry"},
		{"shorter than its Content-Length", 1024, func(w http.ResponseWriter, r *http.Request) {
			objectHeaders(w, 1024)
			fmt.Fprint(w, "0123456789")
		}, "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			h := &hostile{get: func(w http.ResponseWriter, r *http.Request, _ string) { tc.get(w, r) }}
			c := h.start(t)
			dir := t.TempDir()
			objs := []Object{{Key: "apps/big.yaml", Size: tc.size}}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			err := c.Download(ctx, "hostile", objs, dir, DownloadOptions{MaxObjectSize: 1 << 20, MaxTotalSize: 1 << 20})
			g.Expect(err).To(MatchError(ContainSubstring("downloading object 'apps/big.yaml' from bucket 'hostile': " + tc.wantErr)))
			g.Expect(ctx.Err()).NotTo(HaveOccurred(), "the download ran until the deadline")
			g.Expect(treeOf(t, dir)).To(BeEmpty(), "the file of a failed object was left")
			h.waitHandlers(t)
		})
	}
}

// Security row 27: a context deadline stops a server that stalls, before
// or while it sends an object, or while it lists.
func TestDeadlineStopsASlowServer(t *testing.T) {
	stall := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	for _, tc := range []struct {
		name string
		get  func(w http.ResponseWriter, r *http.Request)
	}{
		{"no headers", stall},
		{"one byte then nothing", func(w http.ResponseWriter, r *http.Request) {
			objectHeaders(w, 1024)
			fmt.Fprint(w, "x")
			w.(http.Flusher).Flush()
			stall(w, r)
		}},
	} {
		t.Run("download "+tc.name, func(t *testing.T) {
			g := NewWithT(t)
			h := &hostile{get: func(w http.ResponseWriter, r *http.Request, _ string) { tc.get(w, r) }}
			c := h.start(t)
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()

			err := c.Download(ctx, "hostile", []Object{{Key: "slow", Size: 1024}}, dir, DownloadOptions{})
			g.Expect(err).To(MatchError(context.DeadlineExceeded))
			g.Expect(err).To(MatchError(ContainSubstring("downloading object 'slow' from bucket 'hostile' stopped")))
			g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
			g.Expect(treeOf(t, dir)).To(BeEmpty())
			h.waitHandlers(t)
		})
	}
	t.Run("list", func(t *testing.T) {
		g := NewWithT(t)
		h := &hostile{list: stall}
		c := h.start(t)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.List(ctx, "hostile", "")
		g.Expect(err).To(MatchError(context.DeadlineExceeded))
		g.Expect(err).To(MatchError(ContainSubstring("listing bucket 'hostile' stopped")))
		g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		h.waitHandlers(t)
	})
}

func TestTheFirstErrorStopsTheOtherDownloads(t *testing.T) {
	g := NewWithT(t)
	h := &hostile{get: func(w http.ResponseWriter, r *http.Request, key string) {
		if key == "broken" {
			writeS3Error(w, http.StatusBadRequest, "InvalidRequest", "no")
			return
		}
		<-r.Context().Done()
	}}
	c := h.start(t)
	objs := []Object{{Key: "a", Size: 1}, {Key: "b", Size: 1}, {Key: "broken", Size: 1}}
	for i := range 5 {
		objs = append(objs, Object{Key: fmt.Sprintf("later-%d", i), Size: 1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	err := c.Download(ctx, "hostile", objs, t.TempDir(), DownloadOptions{Concurrency: 3})
	g.Expect(err).To(MatchError("downloading object 'broken' from bucket 'hostile': S3 error InvalidRequest (HTTP 400): no"))
	g.Expect(ctx.Err()).NotTo(HaveOccurred(), "the stalled downloads were not stopped")
	g.Expect(h.gets.Load()).To(BeNumerically("<", len(objs)), "objects after the error were still fetched")
	h.waitHandlers(t)
}

func TestDownloadBoundsTheConcurrentRequests(t *testing.T) {
	for _, tc := range []struct{ concurrency, want int }{{0, 4}, {1, 1}, {3, 3}} {
		t.Run(fmt.Sprintf("concurrency %d", tc.concurrency), func(t *testing.T) {
			g := NewWithT(t)
			var inFlight, most atomic.Int32
			h := &hostile{get: func(w http.ResponseWriter, r *http.Request, _ string) {
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				// Hold the request until the bound is reached, so that
				// an unbounded client would show more.
				for deadline := time.Now().Add(300 * time.Millisecond); inFlight.Load() < int32(tc.want) && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(20 * time.Millisecond)
				serveBody(w, "hi")
			}}
			c := h.start(t)
			var objs []Object
			for i := range 3 * tc.want {
				objs = append(objs, Object{Key: fmt.Sprintf("dir/%02d.yaml", i), Size: 2})
			}
			dir := t.TempDir()

			g.Expect(c.Download(context.Background(), "hostile", objs, dir, DownloadOptions{Concurrency: tc.concurrency})).To(Succeed())
			g.Expect(most.Load()).To(BeEquivalentTo(tc.want))
			g.Expect(h.gets.Load()).To(BeEquivalentTo(len(objs)))
			g.Expect(treeOf(t, dir)).To(HaveLen(len(objs)))
		})
	}
}

// Errors never carry the secret key or a presigned query string, whatever
// the server puts in its messages, and stay on one line.
func TestErrorsFromAHostileServerCarryNoSecrets(t *testing.T) {
	leaky := "denied: see http://127.0.0.1/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKHOSTILE%2F20240102&X-Amz-Signature=deadbeef\n" +
		"signed with " + hostileSecret + " X-Amz-Signature=cafe01 and https://user:" + hostileSecret + "@example.com/x"
	answer := func(w http.ResponseWriter, _ *http.Request) {
		writeS3Error(w, http.StatusBadRequest, "InvalidArgument", leaky)
	}
	h := &hostile{list: answer, get: func(w http.ResponseWriter, r *http.Request, _ string) { answer(w, r) }}
	c := h.start(t)
	ctx := context.Background()

	g := NewWithT(t)
	_, listErr := c.List(ctx, "hostile", "")
	g.Expect(listErr).To(MatchError(HavePrefix("listing bucket 'hostile': S3 error InvalidArgument (HTTP 400): denied: see http://127.0.0.1/b/k")))
	getErr := c.Download(ctx, "hostile", []Object{{Key: "k", Size: 1}}, t.TempDir(), DownloadOptions{})
	g.Expect(getErr).To(MatchError(HavePrefix("downloading object 'k' from bucket 'hostile': S3 error InvalidArgument (HTTP 400): denied")))

	// A server that is gone: the transport's error names the request URL.
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	gone, err := New(Options{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Insecure: true, Region: "us-east-1",
		AccessKey: "AKHOSTILE", SecretKey: hostileSecret})
	g.Expect(err).NotTo(HaveOccurred())
	_, goneErr := gone.List(ctx, "hostile", "apps/")
	g.Expect(goneErr).To(MatchError(ContainSubstring("connection refused")))
	g.Expect(goneErr.Error()).NotTo(ContainSubstring("list-type"), "the query string is in the error")

	for _, err := range []error{listErr, getErr, goneErr} {
		expectNoSecrets(g, err, hostileSecret, "deadbeef", "cafe01", "AKHOSTILE%2F")
	}
}

// security-2 runner-up, Bucket object count: a server that lists pages of
// objects without end is stopped once the listing holds more than
// MaxObjects, with an error that says what to do, after no more pages
// than those take; the objects are never downloaded.
func TestListingOfMoreObjectsThanAllowedIsRefused(t *testing.T) {
	g := NewWithT(t)
	var pages atomic.Int32
	h := &hostile{list: func(w http.ResponseWriter, r *http.Request) {
		page := pages.Add(1)
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
		fmt.Fprintf(&b, "<Name>b</Name><KeyCount>1000</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>"+
			"<NextContinuationToken>page-%d</NextContinuationToken><EncodingType>url</EncodingType>", page+1)
		for i := range 1000 {
			fmt.Fprintf(&b, `<Contents><Key>p%05d/o%04d</Key><ETag>"e"</ETag><Size>1</Size><LastModified>2024-01-02T03:04:05.000Z</LastModified></Contents>`, page, i)
		}
		b.WriteString("</ListBucketResult>")
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, b.String())
	}}
	srv := httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(srv.Close)
	c, err := New(Options{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Insecure: true,
		Region: "us-east-1", AccessKey: "AKHOSTILE", SecretKey: hostileSecret, MaxObjects: 2500})
	g.Expect(err).NotTo(HaveOccurred())

	_, err = c.List(context.Background(), "hostile", "")
	g.Expect(err).To(MatchError("bucket 'hostile' lists more than 2500 objects under prefix '': narrow it with spec.prefix"))
	h.waitHandlers(t)
	g.Expect(pages.Load()).To(BeNumerically("<=", 4), "minio-go reads a page ahead at most")
	g.Expect(h.gets.Load()).To(BeZero())
}

// Security row 28: a server that answers ListObjects or GetObject with a
// redirect to another host (here another port of the same address) never
// gets the credentials sent there: the other host sees no signed request
// (no Authorization header, no session token, no presigned query), and
// the error says the server redirected, without the secret key.
func TestCredentialsNeverFollowARedirectToAnotherHost(t *testing.T) {
	type seen struct {
		url    string
		header http.Header
	}
	var mu sync.Mutex
	var elsewhere []seen
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, seen{url: r.URL.String(), header: r.Header.Clone()})
		mu.Unlock()
		writeListing(w, []Object{{Key: "a", ETag: "1", Size: 2}})
	}))
	t.Cleanup(other.Close)
	redirect := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}
	var redirected atomic.Int32
	h := &hostile{
		list: func(w http.ResponseWriter, r *http.Request) { redirected.Add(1); redirect(w, r) },
		get:  func(w http.ResponseWriter, r *http.Request, _ string) { redirected.Add(1); redirect(w, r) },
	}
	c := h.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	g := NewWithT(t)
	_, listErr := c.List(ctx, "hostile", "")
	dlErr := c.Download(ctx, "hostile", []Object{{Key: "a", Size: 2}}, t.TempDir(), DownloadOptions{})
	g.Expect(redirected.Load()).To(BeNumerically(">=", 2), "the server redirected both requests")

	mu.Lock()
	defer mu.Unlock()
	for _, req := range elsewhere {
		g.Expect(req.header.Get("Authorization")).To(BeEmpty(), "%s got the Authorization header", req.url)
		g.Expect(req.header.Get("X-Amz-Security-Token")).To(BeEmpty(), req.url)
		g.Expect(strings.ToLower(req.url)).NotTo(Or(ContainSubstring("x-amz-credential"), ContainSubstring("x-amz-signature")), req.url)
	}
	for _, err := range []error{listErr, dlErr} {
		expectNoSecrets(g, err, hostileSecret, "AKHOSTILE")
	}
	g.Expect(listErr).To(MatchError(HavePrefix("listing bucket 'hostile': S3 error 307 Temporary Redirect (HTTP 307)")))
	g.Expect(dlErr).To(MatchError(HavePrefix("downloading object 'a' from bucket 'hostile': S3 error 307 Temporary Redirect (HTTP 307)")))
}
