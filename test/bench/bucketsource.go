package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/bucket"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// The bucket of a -source bucket run, its region, and the Secret that holds
// its credentials.
const (
	benchBucket       = "bench"
	benchBucketRegion = "us-east-1"
	bucketSecretName  = "bench-s3"
)

// objectGets labels the object downloads counted in front of versitygw.
const objectGets = "object_gets"

// bucketKit serves the applications from one bucket of versitygw (the S3
// gateway of the test servers, which checks SigV4 signatures), each under
// the prefix app-N/, behind a proxy that counts the objects downloaded.
type bucketKit struct {
	proc  *childproc.Process
	proxy *countingProxy
	s3    *minio.Client
	n     int
	// endpoint is versitygw's own host:port; the Buckets use the proxy's.
	endpoint             string
	accessKey, secretKey string

	mu    sync.Mutex
	heads map[string]string
}

// startBucketKit starts versitygw over folder dir with one bucket, the
// counting proxy in front of it, and puts the first revision of n
// applications.
func startBucketKit(ctx context.Context, n int, dir string) (_ *bucketKit, err error) {
	k := &bucketKit{n: n, heads: map[string]string{}}
	if err := k.startGateway(ctx, dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			k.Close()
		}
	}()
	if k.proxy, err = startCountingProxy("http://"+k.endpoint, countObjectGet, objectGets); err != nil {
		return nil, err
	}
	if k.s3, err = minio.New(k.endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(k.accessKey, k.secretKey, ""), Region: benchBucketRegion,
	}); err != nil {
		return nil, fmt.Errorf("creating the S3 client: %w", err)
	}
	err = parallel(ctx, n, 8, func(i int) error {
		_, err := k.put(ctx, i, 1)
		return err
	})
	return k, err
}

// startGateway runs versitygw's posix backend on a free loopback port over
// dir/data, whose folder bench is the bucket, with random root
// credentials passed in its environment, and waits until it answers.
func (k *bucketKit) startGateway(ctx context.Context, dir string) error {
	servers, err := testservers.Dir()
	if err != nil {
		return err
	}
	data, sidecar := filepath.Join(dir, "data"), filepath.Join(dir, "meta")
	for _, d := range []string{filepath.Join(data, benchBucket), sidecar} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	addrs, err := childproc.FreeAddrs(1)
	if err != nil {
		return err
	}
	k.endpoint, k.accessKey, k.secretKey = addrs[0], "AK"+randomHex(9), randomHex(20)
	cmd := exec.Command(filepath.Join(servers, "versitygw"), "--region", benchBucketRegion, "--port", k.endpoint,
		"posix", "--sidecar", sidecar, data)
	cmd.Dir = dir
	// The credentials go through the environment, not the command line
	// that any process may read.
	cmd.Env = append(childproc.CleanEnv(), "HOME="+dir, "ROOT_ACCESS_KEY="+k.accessKey, "ROOT_SECRET_KEY="+k.secretKey)
	if k.proc, err = childproc.Start(cmd); err != nil {
		return err
	}
	return waitListening(ctx, k.proc, k.endpoint, 30*time.Second)
}

// waitListening waits up to d until addr accepts connections, failing at
// once if p exits first.
func waitListening(ctx context.Context, p *childproc.Process, addr string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		if p.Exited() {
			return fmt.Errorf("versitygw exited before it listened on %s: %v\n%s", addr, p.Err(), p.Output())
		}
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			return conn.Close()
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("versitygw did not listen on %s within %s", addr, d)
		}
	}
}

// randomHex returns n random bytes as hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// countObjectGet counts a GET of an object: a path-style
// GET /<bucket>/<key> with a key. Listings (GET /<bucket>/?list-type=2)
// and HEAD requests are not downloads.
func countObjectGet(r *http.Request) string {
	if r.Method != http.MethodGet {
		return ""
	}
	_, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if key == "" {
		return ""
	}
	return objectGets
}

// objectKey is the key of application i's manifests.
func objectKey(i int) string { return appName(i) + "/app.yaml" }

// put writes revision of application i to its object and returns the
// revision its prefix then has (the hex of bucket.Revision, which the
// Bucket controller computes from the listing).
func (k *bucketKit) put(ctx context.Context, i, revision int) (string, error) {
	body := appManifests(revision)
	info, err := k.s3.PutObject(ctx, benchBucket, objectKey(i), strings.NewReader(body), int64(len(body)),
		minio.PutObjectOptions{ContentType: "application/yaml"})
	if err != nil {
		return "", fmt.Errorf("putting %s: %w", objectKey(i), err)
	}
	rev := bucket.Revision([]bucket.Object{{Key: objectKey(i), ETag: strings.Trim(info.ETag, `"`), Size: info.Size}})
	head := strings.TrimPrefix(rev, "sha256:")
	k.mu.Lock()
	k.heads[appName(i)] = head
	k.mu.Unlock()
	return head, nil
}

// Kind implements sourceKit.
func (k *bucketKit) Kind() string { return sourcev1.BucketKind }

// NewObject implements sourceKit.
func (k *bucketKit) NewObject() client.Object { return &sourcev1.Bucket{} }

// NewList implements sourceKit.
func (k *bucketKit) NewList() client.ObjectList { return &sourcev1.BucketList{} }

// Prepare implements sourceKit: the Secret with the bucket's credentials,
// which every Bucket names.
func (k *bucketKit) Prepare(ctx context.Context, c client.Client, ns string) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: bucketSecretName},
		StringData: map[string]string{"accesskey": k.accessKey, "secretkey": k.secretKey},
	}
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating the bucket's credentials Secret: %w", err)
	}
	return nil
}

// Sources implements sourceKit: a Bucket per application, its prefix
// app-N/, through the counting proxy on plain HTTP.
func (k *bucketKit) Sources(ns string) []client.Object {
	sources := make([]client.Object, 0, k.n)
	for _, i := range sortedApps(k.n) {
		sources = append(sources, &sourcev1.Bucket{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: appName(i)},
			Spec: sourcev1.BucketSpec{
				Provider:   sourcev1.BucketProviderGeneric,
				BucketName: benchBucket,
				Endpoint:   k.proxy.Host(),
				Region:     benchBucketRegion,
				Prefix:     appName(i) + "/",
				Insecure:   true,
				SecretRef:  &meta.LocalObjectReference{Name: bucketSecretName},
				Interval:   metav1.Duration{Duration: sourceInterval},
			},
		})
	}
	return sources
}

// SourceName implements sourceKit.
func (k *bucketKit) SourceName(i int) string { return appName(i) }

// AppPath implements sourceKit: the artifact keeps the objects' keys, so
// application i is in its prefix's folder.
func (k *bucketKit) AppPath(i int) string { return appName(i) }

// Heads implements sourceKit: the revision of every prefix.
func (k *bucketKit) Heads() (map[string]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.heads) != k.n {
		return nil, errors.New("not every application was put in the bucket")
	}
	return maps.Clone(k.heads), nil
}

// Change implements sourceKit: application 0's object put again, changed.
func (k *bucketKit) Change(ctx context.Context) (string, error) { return k.put(ctx, 0, 2) }

// Downloads implements sourceKit: the object GETs through the proxy.
func (k *bucketKit) Downloads() map[string]int64 { return k.proxy.Counts() }

// Server implements sourceKit.
func (k *bucketKit) Server() string {
	return "versitygw " + testservers.VersityGWVersion + " behind a counting proxy"
}

// Close implements sourceKit.
func (k *bucketKit) Close() {
	if k.proxy != nil {
		k.proxy.Close()
	}
	if k.proc != nil && !k.proc.Exited() {
		_ = k.proc.Terminate(5 * time.Second)
	}
}
