package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/oci"
)

// Labels of the registry downloads counted by the OCI kit: GETs of a
// manifest and of a blob. HEAD requests, which resolve a tag to its
// digest without a body, are not downloads.
const (
	manifestGets = "manifest_gets"
	blobGets     = "blob_gets"
)

// ociTag is the tag every application's artifact is pushed to.
const ociTag = "latest"

// ociKit serves the applications as OCI artifacts, one repository each
// (app-N:latest), from go-containerregistry's in-process registry on
// loopback, and counts the manifests and blobs it serves.
type ociKit struct {
	srv  *http.Server
	host string
	dir  string
	n    int

	mu     sync.Mutex
	counts map[string]int64
	heads  map[string]string
}

// startOCIKit starts the registry and pushes the first revision of n
// applications, building them in folder dir.
func startOCIKit(ctx context.Context, n int, dir string) (_ *ociKit, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	k := &ociKit{host: ln.Addr().String(), dir: dir, n: n,
		counts: map[string]int64{manifestGets: 0, blobGets: 0}, heads: map[string]string{}}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true))
	k.srv = &http.Server{
		ReadHeaderTimeout: 30 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k.count(r)
			reg.ServeHTTP(w, r)
		}),
	}
	go func() { _ = k.srv.Serve(ln) }()
	defer func() {
		if err != nil {
			k.Close()
		}
	}()
	err = parallel(ctx, n, 8, func(i int) error {
		_, err := k.push(ctx, i, 1)
		return err
	})
	return k, err
}

// count records a GET of a manifest or a blob.
func (k *ociKit) count(r *http.Request) {
	if what := classifyRegistryGet(r); what != "" {
		k.mu.Lock()
		k.counts[what]++
		k.mu.Unlock()
	}
}

// classifyRegistryGet names what a registry request downloads:
// manifestGets for GET /v2/<name>/manifests/<ref>, blobGets for GET
// /v2/<name>/blobs/<digest>; "" for anything else (HEAD requests,
// uploads, tag listings).
func classifyRegistryGet(r *http.Request) string {
	if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/v2/") {
		return ""
	}
	switch p := r.URL.Path; {
	case strings.Contains(p, "/manifests/"):
		return manifestGets
	case strings.Contains(p, "/blobs/") && !strings.Contains(p, "/blobs/uploads/"):
		return blobGets
	}
	return ""
}

// push builds revision of application i and pushes it to app-i:latest,
// with a source and a revision annotation, and returns its digest's hex.
func (k *ociKit) push(ctx context.Context, i, revision int) (string, error) {
	dir := filepath.Join(k.dir, fmt.Sprintf("%s-r%d", appName(i), revision))
	manifests := appManifests(revision)
	if err := os.MkdirAll(filepath.Join(dir, k.AppPath(i)), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, k.AppPath(i), "app.yaml"), []byte(manifests), 0o644); err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	tag, err := name.NewTag(k.host+"/"+appName(i)+":"+ociTag, name.Insecure)
	if err != nil {
		return "", err
	}
	sum := sha1.Sum([]byte(manifests))
	pushed, err := oci.Push(ctx, tag, oci.PushRequest{
		Dir:      dir,
		Source:   "https://git.bench.invalid/" + appName(i) + ".git",
		Revision: branch + "@sha1:" + hex.EncodeToString(sum[:]),
		Created:  oci.ReproducibleCreated,
	}, oci.Options{Insecure: true, Keychain: authn.NewMultiKeychain(), UserAgent: "windlass-bench"})
	if err != nil {
		return "", err
	}
	head := pushed.Digest.Hex
	k.mu.Lock()
	k.heads[appName(i)] = head
	k.mu.Unlock()
	return head, nil
}

// Kind implements sourceKit.
func (k *ociKit) Kind() string { return sourcev1.OCIRepositoryKind }

// NewObject implements sourceKit.
func (k *ociKit) NewObject() client.Object { return &sourcev1.OCIRepository{} }

// NewList implements sourceKit.
func (k *ociKit) NewList() client.ObjectList { return &sourcev1.OCIRepositoryList{} }

// Prepare implements sourceKit: the registry asks for no credentials.
func (k *ociKit) Prepare(context.Context, client.Client, string) error { return nil }

// Sources implements sourceKit: an OCIRepository per application, on
// plain HTTP (spec.insecure), following the latest tag.
func (k *ociKit) Sources(ns string) []client.Object {
	sources := make([]client.Object, 0, k.n)
	for _, i := range sortedApps(k.n) {
		sources = append(sources, &sourcev1.OCIRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: appName(i)},
			Spec: sourcev1.OCIRepositorySpec{
				URL:       oci.Scheme + k.host + "/" + appName(i),
				Reference: &sourcev1.OCIRepositoryRef{Tag: ociTag},
				Insecure:  true,
				Interval:  metav1.Duration{Duration: sourceInterval},
			},
		})
	}
	return sources
}

// SourceName implements sourceKit.
func (k *ociKit) SourceName(i int) string { return appName(i) }

// AppPath implements sourceKit: the folder app of its artifact, as in its
// own git repository.
func (k *ociKit) AppPath(int) string { return "app" }

// Heads implements sourceKit: the digest each tag points at.
func (k *ociKit) Heads() (map[string]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.heads), nil
}

// Change implements sourceKit: a new artifact pushed to app-0:latest.
func (k *ociKit) Change(ctx context.Context) (string, error) { return k.push(ctx, 0, 2) }

// Downloads implements sourceKit: the GETs of manifests and blobs.
func (k *ociKit) Downloads() map[string]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.counts)
}

// Server implements sourceKit.
func (k *ociKit) Server() string {
	return "in-process OCI registry (go-containerregistry) at " + k.host
}

// Close implements sourceKit.
func (k *ociKit) Close() { _ = k.srv.Close() }
