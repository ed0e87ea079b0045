package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// bigContent is the size of the content a source downloads when it is
// killed: large enough that the download stops midway, small enough for
// every kind's default limits (a chart's file may hold 5 MiB).
const bigContent = 4 << 20

// killedSource is one source kind of TestController_KilledMidDownloadConverges.
type killedSource struct {
	// obj names the source, to read as unstructured.
	obj *unstructured.Unstructured
	// publish makes the server offer a new revision of bigContent bytes,
	// and returns the object to poke for the source to fetch it.
	publish func() client.Object
}

// Security row 37 for the sources that download what they package: a
// controller killed while a Bucket, an OCIRepository or a HelmChart
// downloads a new revision (half of it received) leaves the last artifact
// served and named by the status; the restarted controller downloads the
// revision again, stores it with the digest its status names, and sweeps
// the work folder the killed one left (a HelmChart downloads into memory,
// and leaves none).
func TestController_KilledMidDownloadConverges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, g *WithT, shard, ns string, serve func(target string) string) killedSource
	}{
		{"Bucket", killedBucket},
		{"OCIRepository", killedOCIRepository},
		{"HelmChart", killedHelmChart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			t.Setenv("TMPDIR", t.TempDir()) // the controllers' work folders
			ns := env.CreateNamespace(t)
			shard := "killed-download-" + strings.ToLower(tc.name)
			storage := t.TempDir()
			first := startShardController(t, g, shard, storage)
			proxy := &midwayProxy{midway: make(chan string, 1)}
			src := tc.setup(t, g, shard, ns, func(target string) string { return proxy.serve(t, target) })
			before := waitStored(g, src.obj, storage, "")

			proxy.armed.Store(true)
			testutil.RequestReconcile(g, env.Client, src.publish(), "big")
			select {
			case path := <-proxy.midway:
				first.Kill()
				t.Logf("killed with half of %s received", path)
			case <-time.After(timeout):
				t.Fatalf("no download of %d bytes began; controller output:\n%s", bigContent, first.Output())
			}
			u := src.obj.DeepCopy()
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(u), u)).To(Succeed())
			g.Expect(nestedString(u, "status", "artifact", "revision")).To(Equal(before.revision), "the status still names the last artifact")
			g.Expect(filepath.Join(storage, "artifacts", before.path)).To(BeAnExistingFile(), "the last artifact is still stored")

			left := leftFolders(g, "")
			t.Logf("work folders the killed controller left: %v", left)
			startShardController(t, g, shard, storage)
			var revision string
			g.Eventually(func() string {
				g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(u), u)).To(Succeed())
				revision = nestedString(u, "status", "artifact", "revision")
				return revision
			}, timeout, interval).ShouldNot(Equal(before.revision), "a new revision")
			after := waitStored(g, src.obj, storage, revision)
			g.Expect(after.digest).NotTo(Equal(before.digest))
			for _, dir := range left {
				g.Expect(dir).NotTo(BeADirectory(), "swept by the restarted controller")
			}
		})
	}
}

// killedBucket is a Bucket of an S3 server behind serve.
func killedBucket(t *testing.T, g *WithT, shard, ns string, serve func(string) string) killedSource {
	s3, mc := s3WithSettings(t, g, ns)
	endpoint := strings.TrimPrefix(serve("http://"+s3.Endpoint), "http://")
	bucket := createSharded(g, shard, &sourcev1.Bucket{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: Bucket
metadata: {name: bucket, namespace: %s}
spec: {interval: 10m, bucketName: %s, endpoint: %q, region: %s, insecure: true, secretRef: {name: s3}}
`, ns, s3.Bucket, endpoint, s3.Region))
	return killedSource{obj: sourceObject(sourcev1.BucketKind, ns, "bucket"), publish: func() client.Object {
		putObject(g, mc, s3.Bucket, "big.bin", string(randomBytes(g, bigContent)))
		return bucket
	}}
}

// killedOCIRepository is an OCIRepository of a registry behind serve,
// following a tag.
func killedOCIRepository(t *testing.T, g *WithT, shard, ns string, serve func(string) string) killedSource {
	registry := strings.TrimPrefix(serve("http://"+testutil.StartRegistry(t, "", "")), "http://")
	push := func(files map[string]string) {
		dir := t.TempDir()
		for name, content := range files {
			g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
		}
		out, errOut, code := runWindlass(g, cliEnv{home: t.TempDir()}, "push", "artifact", "oci://"+registry+"/killed:latest",
			"--path", dir, "--source", "https://git.example.com/org/app.git", "--revision", gitRevision(g), "--insecure-registry")
		g.Expect(code).To(Equal(0), out+errOut)
	}
	push(map[string]string{"settings.yaml": settingsManifest("hello")})
	repo := createSharded(g, shard, &sourcev1.OCIRepository{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: oci, namespace: %s}
spec: {interval: 10m, url: "oci://%s/killed", insecure: true, ref: {tag: latest}}
`, ns, registry))
	return killedSource{obj: sourceObject(sourcev1.OCIRepositoryKind, ns, "oci"), publish: func() client.Object {
		push(map[string]string{"settings.yaml": settingsManifest("hello"), "big.bin": string(randomBytes(g, bigContent))})
		return repo
	}}
}

// killedHelmChart is a HelmChart of the newest version of a chart in a
// Helm repository behind serve.
func killedHelmChart(t *testing.T, g *WithT, shard, ns string, serve func(string) string) killedSource {
	charts := helmtest.NewRepo(t, helmtest.WithRelativeURLs())
	charts.Add(t, appChart(t, "1.0.0", "hello"))
	repo := createSharded(g, shard, &sourcev1.HelmRepository{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: %s}
spec: {interval: 10m, url: %q}
`, ns, serve(charts.URL())))
	createSharded(g, shard, &sourcev1.HelmChart{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata: {name: app, namespace: %s}
spec: {interval: 10m, chart: app, version: "*", sourceRef: {kind: HelmRepository, name: charts}}
`, ns))
	return killedSource{obj: sourceObject(sourcev1.HelmChartKind, ns, "app"), publish: func() client.Object {
		charts.Add(t, appChart(t, "2.0.0", "hello", helmtest.WithFile("big.bin", randomBytes(g, bigContent))))
		return repo
	}}
}

// sourceObject returns the source kind ns/name, to read as unstructured.
func sourceObject(kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(sourcev1.GroupVersion.WithKind(kind))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// randomBytes returns n random bytes: content no compression shrinks.
func randomBytes(g *WithT, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	g.Expect(err).NotTo(HaveOccurred())
	return b
}

// midwayProxy serves a server through a reverse proxy. Once armed, the
// first response of at least bigContent bytes stops midway: the proxy
// sends half of it, says so on midway (with its path) and holds the rest
// until the client goes. Later responses pass whole.
type midwayProxy struct {
	armed  atomic.Bool
	midway chan string
}

// serve proxies target (a URL) and returns the proxy's URL.
func (m *midwayProxy) serve(t *testing.T, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.FlushInterval = -1 // what the proxy read, the client has
	p.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method == http.MethodGet && resp.ContentLength >= bigContent && m.armed.CompareAndSwap(true, false) {
			resp.Body = &halfBody{ReadCloser: resp.Body, left: resp.ContentLength / 2, done: resp.Request.Context().Done(),
				said: func() { m.midway <- resp.Request.URL.Path }}
		}
		return nil
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL + strings.TrimSuffix(u.Path, "/")
}

// halfBody reads left bytes of a body, then calls said and blocks until
// done.
type halfBody struct {
	io.ReadCloser
	left int64
	done <-chan struct{}
	said func()
}

func (h *halfBody) Read(p []byte) (int, error) {
	if h.left <= 0 {
		if h.said != nil {
			h.said()
			h.said = nil
		}
		<-h.done
		return 0, context.Canceled
	}
	n, err := h.ReadCloser.Read(p[:min(int64(len(p)), h.left)])
	h.left -= int64(n)
	return n, err
}
