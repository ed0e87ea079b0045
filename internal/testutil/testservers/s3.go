package testservers

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// S3Options configures StartS3; empty fields take the defaults below.
type S3Options struct {
	// AccessKey and SecretKey are the root credentials the gateway checks
	// every SigV4 signature against (default: random).
	AccessKey string
	SecretKey string
	// Bucket is created before the gateway starts (default "windlass").
	Bucket string
}

// S3 is a running S3 gateway (versitygw) over a folder: it checks SigV4
// signatures against its root credentials and refuses anything else.
type S3 struct {
	// Endpoint is the gateway's host:port on 127.0.0.1 (plain HTTP).
	Endpoint string
	// AccessKey and SecretKey are the root credentials.
	AccessKey string
	SecretKey string
	// Region is the region the gateway signs for.
	Region string
	// Bucket is the bucket created at start.
	Bucket string
	// Dir is the folder the gateway serves: each bucket is a folder in it,
	// each object a file.
	Dir string
}

// URL returns the gateway's base URL, http://host:port.
func (s *S3) URL() string { return "http://" + s.Endpoint }

// StartS3 runs versitygw's posix backend on a free loopback port over a
// temporary folder with one bucket, waits until it answers, and stops it
// when t ends. It fails t when the test servers are not built.
func StartS3(t testing.TB, opts S3Options) *S3 {
	t.Helper()
	bin := binary(t, versitygwBinary)
	dir := t.TempDir()
	s := &S3{
		Endpoint:  freeAddr(t),
		AccessKey: opts.AccessKey,
		SecretKey: opts.SecretKey,
		Region:    "us-east-1",
		Bucket:    opts.Bucket,
		Dir:       filepath.Join(dir, "data"),
	}
	if s.AccessKey == "" {
		s.AccessKey = "AK" + randomHex(t)[:18]
	}
	if s.SecretKey == "" {
		s.SecretKey = randomHex(t) + randomHex(t)[:8]
	}
	if s.Bucket == "" {
		s.Bucket = "windlass"
	}
	// The posix backend serves each folder of its root as a bucket.
	if err := os.MkdirAll(filepath.Join(s.Dir, s.Bucket), 0o755); err != nil {
		t.Fatal(err)
	}

	// Metadata goes to a sidecar folder rather than extended attributes,
	// which some temporary filesystems lack.
	meta := filepath.Join(dir, "meta")
	if err := os.Mkdir(meta, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--region", s.Region, "--port", s.Endpoint, "posix", "--sidecar", meta, s.Dir)
	cmd.Dir = dir
	// The credentials go through the environment (versitygw's --access and
	// --secret), not the command line that any process may read.
	cmd.Env = serverEnv(dir, "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	proc := start(t, "versitygw", cmd)
	waitHTTP(t, "versitygw", proc, s.URL()+"/", nil)
	return s
}
