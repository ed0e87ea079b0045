package bucket

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// fixture is a versitygw server with objects put through its S3 API.
type fixture struct {
	s3    *testservers.S3
	admin *minio.Client
}

// startS3 starts versitygw and puts files (key → content) into its bucket.
func startS3(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	s3 := testservers.StartS3(t, testservers.S3Options{})
	admin, err := minio.New(s3.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(s3.AccessKey, s3.SecretKey, ""),
		Region: s3.Region,
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{s3: s3, admin: admin}
	for key, content := range files {
		f.put(t, key, content)
	}
	return f
}

// put writes one object.
func (f *fixture) put(t *testing.T, key, content string) {
	t.Helper()
	_, err := f.admin.PutObject(context.Background(), f.s3.Bucket, key, strings.NewReader(content),
		int64(len(content)), minio.PutObjectOptions{})
	if err != nil {
		t.Fatalf("putting %s: %v", key, err)
	}
}

// client returns a Client for the fixture's server with the root
// credentials, after change (if any) edits the options.
func (f *fixture) client(t *testing.T, change func(*Options)) *Client {
	t.Helper()
	o := Options{Endpoint: f.s3.Endpoint, Insecure: true, Region: f.s3.Region,
		AccessKey: f.s3.AccessKey, SecretKey: f.s3.SecretKey}
	if change != nil {
		change(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sampleFiles is a bucket with nested keys.
var sampleFiles = map[string]string{
	"readme.md":                    "# hello\n",
	"apps/podinfo.yaml":            "kind: Deployment\n",
	"apps/base/kustomization.yaml": "resources: []\n",
	"infra/a/b/c/deep.yaml":        "kind: ConfigMap\n",
}

func keysOf(objs []Object) []string {
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
}

func TestListReturnsSortedObjectsUnderPrefix(t *testing.T) {
	f := startS3(t, sampleFiles)
	// A folder marker, as consoles create, is not an object to download.
	f.put(t, "empty/", "")
	c := f.client(t, nil)
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"apps/base/kustomization.yaml", "apps/podinfo.yaml", "infra/a/b/c/deep.yaml", "readme.md"}},
		{"apps/", []string{"apps/base/kustomization.yaml", "apps/podinfo.yaml"}},
		{"infra/a", []string{"infra/a/b/c/deep.yaml"}},
		{"nothing/", []string{}},
	} {
		t.Run("prefix "+tc.prefix, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := c.List(context.Background(), f.s3.Bucket, tc.prefix)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(keysOf(objs)).To(Equal(tc.want))
			for _, o := range objs {
				g.Expect(o.Size).To(BeEquivalentTo(len(sampleFiles[o.Key])), o.Key)
				g.Expect(o.ETag).NotTo(BeEmpty(), o.Key)
				g.Expect(o.ETag).NotTo(ContainSubstring(`"`), o.Key)
			}
		})
	}
}

func TestRevisionFollowsTheObjects(t *testing.T) {
	g := NewWithT(t)
	f := startS3(t, sampleFiles)
	c := f.client(t, nil)
	ctx := context.Background()
	list := func() []Object {
		objs, err := c.List(ctx, f.s3.Bucket, "")
		g.Expect(err).NotTo(HaveOccurred())
		return objs
	}

	first := list()
	rev := Revision(first)
	g.Expect(rev).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
	g.Expect(Revision(list())).To(Equal(rev), "the same listing gave another revision")
	reversed := []Object{first[3], first[2], first[1], first[0]}
	g.Expect(Revision(reversed)).To(Equal(rev), "the revision depends on the order of the listing")

	f.put(t, "apps/podinfo.yaml", "kind: Deployment\nmetadata: {name: changed}\n")
	changed := Revision(list())
	g.Expect(changed).NotTo(Equal(rev), "a changed object kept the revision")

	f.put(t, "apps/new.yaml", "kind: Service\n")
	g.Expect(Revision(list())).NotTo(BeElementOf(rev, changed), "an added object kept the revision")

	// The same keys with another ETag, or an ETag moved to another key.
	g.Expect(Revision([]Object{{Key: "a", ETag: "1"}})).NotTo(Equal(Revision([]Object{{Key: "a", ETag: "2"}})))
	g.Expect(Revision([]Object{{Key: "a", ETag: "1"}, {Key: "b", ETag: "2"}})).
		NotTo(Equal(Revision([]Object{{Key: "a", ETag: "2"}, {Key: "b", ETag: "1"}})))
	g.Expect(Revision([]Object{{Key: "ab", ETag: "c"}})).NotTo(Equal(Revision([]Object{{Key: "a", ETag: "bc"}})))
}

func TestDownloadWritesNestedKeys(t *testing.T) {
	g := NewWithT(t)
	f := startS3(t, sampleFiles)
	c := f.client(t, nil)
	ctx := context.Background()
	objs, err := c.List(ctx, f.s3.Bucket, "")
	g.Expect(err).NotTo(HaveOccurred())

	dir := filepath.Join(t.TempDir(), "out")
	g.Expect(c.Download(ctx, f.s3.Bucket, objs, dir, DownloadOptions{Concurrency: 2})).To(Succeed())

	g.Expect(treeOf(t, dir)).To(Equal(sampleFiles))
	for key := range sampleFiles {
		info, err := os.Stat(filepath.Join(dir, filepath.FromSlash(key)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o644)), key)
	}
	info, err := os.Stat(filepath.Join(dir, "infra", "a", "b"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.IsDir()).To(BeTrue())
	g.Expect(info.Mode().Perm()&0o022).To(BeZero(), "a folder is writable by others")

	err = c.Download(ctx, f.s3.Bucket, objs, dir, DownloadOptions{})
	g.Expect(err).To(MatchError(ContainSubstring("file exists")), "a second download overwrote the files")
}

func TestDownloadEnforcesSizeLimits(t *testing.T) {
	f := startS3(t, map[string]string{"small": "12345", "big": strings.Repeat("x", 100)})
	c := f.client(t, nil)
	objs, err := c.List(context.Background(), f.s3.Bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		opts    DownloadOptions
		wantErr string
	}{
		{"object over its limit", DownloadOptions{MaxObjectSize: 99}, "object 'big' of bucket 'windlass' is 100 bytes, more than the limit of 99 bytes"},
		{"total over its limit", DownloadOptions{MaxTotalSize: 104}, "the objects of bucket 'windlass' add up to more than the limit of 104 bytes"},
		{"both at their limits", DownloadOptions{MaxObjectSize: 100, MaxTotalSize: 105}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			err := c.Download(context.Background(), f.s3.Bucket, objs, dir, tc.opts)
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(treeOf(t, dir)).To(HaveLen(2))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			g.Expect(treeOf(t, dir)).To(BeEmpty(), "objects were written past a limit")
		})
	}
}

func TestWrongCredentialsGiveAClearErrorWithoutSecrets(t *testing.T) {
	f := startS3(t, sampleFiles)
	const wrongSecret = "wrong-secret-key-0123456789abcdef"
	for _, tc := range []struct {
		name    string
		change  func(*Options)
		wantErr string
	}{
		{"wrong secret key", func(o *Options) { o.SecretKey = wrongSecret },
			"the S3 server refused the credentials (SignatureDoesNotMatch): check accesskey and secretkey of secretRef"},
		{"wrong access key", func(o *Options) { o.AccessKey = "NOSUCHKEY"; o.SecretKey = wrongSecret },
			"the S3 server refused the credentials (XAdminUserNotFound): check accesskey and secretkey of secretRef"},
		{"anonymous", func(o *Options) { o.AccessKey, o.SecretKey = "", "" },
			"the S3 server denied anonymous access (AccessDenied): set a secretRef with accesskey and secretkey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := f.client(t, tc.change)
			ctx := context.Background()

			_, listErr := c.List(ctx, f.s3.Bucket, "")
			g.Expect(listErr).To(MatchError(ContainSubstring("listing bucket 'windlass': " + tc.wantErr)))

			objs := []Object{{Key: "readme.md", Size: int64(len(sampleFiles["readme.md"]))}}
			dir := t.TempDir()
			getErr := c.Download(ctx, f.s3.Bucket, objs, dir, DownloadOptions{})
			g.Expect(getErr).To(MatchError(ContainSubstring("downloading object 'readme.md' from bucket 'windlass': " + tc.wantErr)))
			g.Expect(treeOf(t, dir)).To(BeEmpty())

			for _, err := range []error{listErr, getErr} {
				g.Expect(errors.Is(err, ErrAccessDenied)).To(BeTrue(), err.Error())
				expectNoSecrets(g, err, wrongSecret, f.s3.SecretKey)
			}
		})
	}
}

func TestMissingBucketIsAClearError(t *testing.T) {
	f := startS3(t, nil)
	// Without a region, minio-go asks for the bucket's location first.
	for _, region := range []string{f.s3.Region, ""} {
		t.Run("region "+region, func(t *testing.T) {
			g := NewWithT(t)
			c := f.client(t, func(o *Options) { o.Region = region })
			objs, err := c.List(context.Background(), "missing", "")
			g.Expect(err).To(MatchError("bucket 'missing' does not exist"))
			g.Expect(errors.Is(err, ErrBucketNotFound)).To(BeTrue())
			g.Expect(objs).To(BeNil())

			objs, err = c.List(context.Background(), f.s3.Bucket, "")
			g.Expect(err).NotTo(HaveOccurred(), "the bucket that exists")
			g.Expect(objs).To(BeEmpty())
		})
	}
}

func TestListStopsWithTheContext(t *testing.T) {
	g := NewWithT(t)
	f := startS3(t, sampleFiles)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.client(t, nil).List(ctx, f.s3.Bucket, "")
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(err).To(MatchError(ContainSubstring("listing bucket 'windlass' stopped")))

	ctx, cancel = context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	err = f.client(t, nil).Download(ctx, f.s3.Bucket, []Object{{Key: "readme.md", Size: 8}}, t.TempDir(), DownloadOptions{})
	g.Expect(err).To(MatchError(context.DeadlineExceeded))
}

func TestNewRefusesEndpointsThatAreNotHostAndPort(t *testing.T) {
	for _, tc := range []struct {
		name, endpoint, wantErr string
	}{
		{"empty", "", "the S3 endpoint is empty"},
		{"scheme", "https://s3.example.com", "the S3 endpoint 'https://s3.example.com' has a scheme"},
		{"path", "s3.example.com/bucket", "the S3 endpoint 's3.example.com/bucket' is not host[:port]"},
		{"query", "s3.example.com?x=1", "is not host[:port]"},
		{"bad port", "s3.example.com:http", "is not host[:port]"},
		{"userinfo", "key:s3cretpw@s3.example.com", "the S3 endpoint holds user information"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := New(Options{Endpoint: tc.endpoint})
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			g.Expect(err.Error()).To(ContainSubstring("set spec.endpoint to host[:port]"))
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cretpw"))
			g.Expect(c).To(BeNil())
		})
	}
	g := NewWithT(t)
	_, err := New(Options{Endpoint: "s3.example.com", AccessKey: "only-the-access-key"})
	g.Expect(err).To(MatchError(ContainSubstring("need both accesskey and secretkey")))
	for _, ok := range []string{"s3.example.com", "127.0.0.1:9000", "[::1]:9000", "storage.googleapis.com"} {
		_, err := New(Options{Endpoint: ok})
		g.Expect(err).NotTo(HaveOccurred(), ok)
	}
}

// expectNoSecrets fails unless err is one line without any of the secrets
// or a presigned query parameter.
func expectNoSecrets(g Gomega, err error, secrets ...string) {
	msg := err.Error()
	g.Expect(msg).NotTo(ContainSubstring("\n"))
	g.Expect(strings.ToLower(msg)).NotTo(ContainSubstring("x-amz-signature"))
	g.Expect(strings.ToLower(msg)).NotTo(ContainSubstring("x-amz-credential"))
	for _, s := range secrets {
		g.Expect(msg).NotTo(ContainSubstring(s))
	}
}

// treeOf returns the regular files under dir, by slash-separated path, with
// their contents; it fails on anything else, such as a symbolic link.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			t.Errorf("%s is not a regular file", path)
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
