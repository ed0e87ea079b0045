// Package bucket lists and downloads the objects of an S3-compatible bucket
// (the Bucket source's "generic" provider) with minio-go.
//
// Everything a bucket lists is untrusted: List and Download refuse object
// keys that could escape the download folder or collide with each other,
// Download reads every object through a size limit, and errors are one line
// that never carries the secret key or a presigned query string.
package bucket

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/windlass-dev/windlass/internal/redact"
)

// maxRetries is how many times minio-go tries a request that failed in a
// way worth retrying (5xx, throttling, a broken connection); the controller
// reconciles again later anyway.
const maxRetries = 3

// Options says which S3 server to talk to and how.
type Options struct {
	// Endpoint is the server's host[:port], without a scheme or path.
	Endpoint string
	// Insecure talks plain HTTP instead of HTTPS.
	Insecure bool
	// Region is the region requests are signed for; empty asks the server
	// for the bucket's location first.
	Region string
	// AccessKey and SecretKey sign the requests (SigV4); both empty makes
	// anonymous requests.
	AccessKey string
	SecretKey string
	// Transport is the base transport (TLS CA, client certificate, proxy);
	// nil uses minio-go's default.
	Transport http.RoundTripper
	// MaxObjects bounds the objects a listing may hold; zero means
	// DefaultMaxObjects.
	MaxObjects int
}

// DefaultMaxObjects bounds a listing: far more files than any bucket of
// manifests holds, and a listing held in memory of a few tens of MiB at
// most (a key is at most 1,024 bytes).
const DefaultMaxObjects = 100_000

// Object is one object of a listing.
type Object struct {
	// Key is the object's key, a slash-separated path.
	Key string
	// ETag is the object's entity tag, without quotes.
	ETag string
	// Size is the object's size in bytes, as listed.
	Size int64
}

// Client lists and downloads the objects of buckets on one S3 server.
type Client struct {
	minio *minio.Client
	core  minio.Core
	// secretKey is kept to scrub it from any error text.
	secretKey  string
	anonymous  bool
	maxObjects int
}

// sharedTransport is the transport of every client that brings none: one
// pool of connections for all the buckets of a process, rather than a pool
// (and its idle connections) per client.
var sharedTransport = sync.OnceValue(func() http.RoundTripper {
	t, err := minio.DefaultTransport(true)
	if err != nil {
		return http.DefaultTransport
	}
	return t
})

// New returns a client for the server o describes. It makes no request.
func New(o Options) (*Client, error) {
	if err := checkEndpoint(o.Endpoint); err != nil {
		return nil, err
	}
	if (o.AccessKey == "") != (o.SecretKey == "") {
		return nil, errors.New("the S3 credentials need both accesskey and secretkey in secretRef, or neither for anonymous access")
	}
	transport := o.Transport
	if transport == nil {
		transport = sharedTransport()
	}
	mc, err := minio.New(o.Endpoint, &minio.Options{
		Creds:      credentials.NewStaticV4(o.AccessKey, o.SecretKey, ""),
		Secure:     !o.Insecure,
		Region:     o.Region,
		Transport:  transport,
		MaxRetries: maxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("invalid S3 endpoint '%s': %s", o.Endpoint, oneLine(err.Error(), o.SecretKey))
	}
	maxObjects := o.MaxObjects
	if maxObjects <= 0 {
		maxObjects = DefaultMaxObjects
	}
	return &Client{minio: mc, core: minio.Core{Client: mc}, secretKey: o.SecretKey, anonymous: o.AccessKey == "", maxObjects: maxObjects}, nil
}

// checkEndpoint refuses an endpoint that is not a bare host[:port]. An
// endpoint with userinfo is not echoed: it may hold a password.
func checkEndpoint(endpoint string) error {
	const want = "set spec.endpoint to host[:port], and spec.insecure for plain HTTP"
	switch {
	case endpoint == "":
		return errors.New("the S3 endpoint is empty: " + want)
	case strings.Contains(endpoint, "@"):
		return errors.New("the S3 endpoint holds user information ('@'): " + want + ", and the credentials in secretRef")
	case strings.Contains(endpoint, "://"):
		return fmt.Errorf("the S3 endpoint '%s' has a scheme: %s", redact.URL(endpoint), want)
	}
	u, err := url.Parse("//" + endpoint)
	if err != nil || u.Host != endpoint || u.Hostname() == "" {
		return fmt.Errorf("the S3 endpoint '%s' is not host[:port] (a path, query or bad port?): %s", redact.URL(endpoint), want)
	}
	return nil
}

// List returns every object of bucket whose key starts with prefix, in all
// folders, sorted by key. Folder markers (keys ending in "/") are left out.
// A listing with an unsafe key (see CheckKey), a key listed twice or a key
// that is also another key's folder is refused whole, and so is one with
// more objects than the client's MaxObjects, as soon as it has them.
func (c *Client) List(ctx context.Context, bucket, prefix string) ([]Object, error) {
	if bucket == "" {
		return nil, errors.New("the bucket name is empty: set spec.bucketName")
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop() // ends minio-go's listing when it is left early
	var objs []Object
	opts := minio.ListObjectsOptions{Prefix: prefix, Recursive: true, FetchOwner: new(bool)}
	for info := range c.minio.ListObjectsIter(ctx, bucket, opts) {
		if info.Err != nil {
			return nil, c.explain(ctx, info.Err, bucket, "", fmt.Sprintf("listing bucket '%s'", bucket))
		}
		if strings.HasSuffix(info.Key, "/") {
			continue
		}
		if len(objs) == c.maxObjects {
			return nil, fmt.Errorf("bucket '%s' lists more than %d objects under prefix '%s': narrow it with spec.prefix", bucket, c.maxObjects, prefix)
		}
		objs = append(objs, Object{Key: info.Key, ETag: info.ETag, Size: info.Size})
	}
	// minio-go ends the listing quietly when ctx ends: that is not the end
	// of the bucket.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("listing bucket '%s' stopped: %w", bucket, err)
	}
	slices.SortFunc(objs, func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
	if err := checkObjects(objs); err != nil {
		return nil, fmt.Errorf("bucket '%s' %w", bucket, err)
	}
	return objs, nil
}

// checkObjects refuses unsafe keys, negative sizes, duplicate keys and a key
// that another key uses as a folder ("a" and "a/b"), which could not both
// be written. Its errors read after "bucket 'x' ".
func checkObjects(objs []Object) error {
	keys := make(map[string]bool, len(objs))
	for _, o := range objs {
		if err := CheckKey(o.Key); err != nil {
			return fmt.Errorf("holds an unsafe object key, refused: %w: rename or remove the object", err)
		}
		if o.Size < 0 {
			return fmt.Errorf("lists object '%s' with a negative size", o.Key)
		}
		if keys[o.Key] {
			return fmt.Errorf("lists object '%s' twice", o.Key)
		}
		keys[o.Key] = true
	}
	for _, o := range objs {
		for i := strings.IndexByte(o.Key, '/'); i >= 0; i = nextSlash(o.Key, i) {
			if keys[o.Key[:i]] {
				return fmt.Errorf("holds both object '%s' and object '%s' under it, which cannot both be files: rename one", o.Key[:i], o.Key)
			}
		}
	}
	return nil
}

// nextSlash returns the index of the first '/' in key after index i, or -1.
func nextSlash(key string, i int) int {
	j := strings.IndexByte(key[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// CheckKey returns an error when key cannot safely be a file path under the
// download folder: empty, not UTF-8, absolute, with a NUL, a backslash or
// another control character, or with a "..", "." or empty path element.
func CheckKey(key string) error {
	if key == "" {
		return errors.New("an object key is empty")
	}
	q := strconv.Quote(key)
	switch {
	case !utf8.ValidString(key):
		return fmt.Errorf("object key %s is not valid UTF-8", q)
	case strings.HasPrefix(key, "/"):
		return fmt.Errorf("object key %s is an absolute path", q)
	case strings.ContainsRune(key, 0):
		return fmt.Errorf("object key %s holds a NUL byte", q)
	case strings.ContainsRune(key, '\\'):
		return fmt.Errorf("object key %s holds a backslash", q)
	case strings.ContainsFunc(key, unicode.IsControl):
		return fmt.Errorf("object key %s holds a control character", q)
	}
	for elem := range strings.SplitSeq(key, "/") {
		switch elem {
		case "..":
			return fmt.Errorf("object key %s climbs out of its folder with '..'", q)
		case ".", "":
			return fmt.Errorf("object key %s has an empty or '.' path element", q)
		}
	}
	return nil
}

// Revision returns "sha256:<hex>" of the keys and ETags of objs, in key
// order: the same listing always gives the same revision, and any added,
// removed or renamed object, or changed ETag, gives another.
func Revision(objs []Object) string {
	sorted := slices.SortedFunc(slices.Values(objs), func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
	h := sha256.New()
	for _, o := range sorted {
		writeField(h, o.Key)
		writeField(h, o.ETag)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// writeField writes s length-prefixed, so that no two listings hash the
// same text.
func writeField(h hash.Hash, s string) {
	_, _ = fmt.Fprintf(h, "%d:%s\n", len(s), s)
}
