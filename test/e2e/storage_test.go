package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// servedArtifact is what a source's status says of its artifact.
type servedArtifact struct {
	revision, digest, path string
}

// A pod rescheduled elsewhere starts with an empty /data: every source
// kind, a GitRepository, an OCIRepository, a Bucket, a HelmRepository and a
// HelmChart, stores its artifact again at the revision its status names,
// with the digest its status names, and stays Ready.
func TestController_WipedStorageIsStoredAgain(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	const shard = "wiped-storage"
	storage := t.TempDir()
	first := startShardController(t, g, shard, storage)
	objects := createEverySourceKind(t, g, shard, ns)

	before := map[string]servedArtifact{}
	for _, obj := range objects {
		before[obj.GetKind()] = waitStored(g, obj, storage, "")
	}
	first.Kill()
	g.Expect(os.RemoveAll(filepath.Join(storage, "artifacts"))).To(Succeed())

	startShardController(t, g, shard, storage)
	for _, obj := range objects {
		after := waitStored(g, obj, storage, before[obj.GetKind()].revision)
		g.Expect(after.path).To(Equal(before[obj.GetKind()].path), obj.GetKind())
	}
}

// createEverySourceKind creates, for shard in ns, a source of every kind,
// each with a server of its own, and returns them (to read as
// unstructured).
func createEverySourceKind(t *testing.T, g *WithT, shard, ns string) []*unstructured.Unstructured {
	gitURL, _ := servedRepo(t, "wiped.git", map[string]string{"deploy/a.yaml": configMapYAML(ns, "a")})
	createSharded(g, shard, &sourcev1.GitRepository{}, gitRepositoryYAML(ns, "git", gitURL))

	registry := testutil.StartRegistry(t, "", "")
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "settings.yaml"), []byte(settingsManifest("hello")), 0o644)).To(Succeed())
	out, errOut, code := runWindlass(g, cliEnv{home: t.TempDir()}, "push", "artifact", "oci://"+registry+"/wiped:v1",
		"--path", dir, "--source", "https://git.example.com/org/app.git",
		"--revision", gitRevision(g), "--insecure-registry")
	g.Expect(code).To(Equal(0), out+errOut)
	createSharded(g, shard, &sourcev1.OCIRepository{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: oci, namespace: %s}
spec: {interval: 10m, url: "oci://%s/wiped", insecure: true, ref: {tag: v1}}
`, ns, registry))

	s3, _ := s3WithSettings(t, g, ns)
	createSharded(g, shard, &sourcev1.Bucket{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: Bucket
metadata: {name: bucket, namespace: %s}
spec: {interval: 10m, bucketName: %s, endpoint: %q, region: %s, insecure: true, secretRef: {name: s3}}
`, ns, s3.Bucket, s3.Endpoint, s3.Region))

	charts := helmtest.NewRepo(t)
	charts.Add(t, appChart(t, "1.0.0", "hello"))
	createSharded(g, shard, &sourcev1.HelmRepository{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: %s}
spec: {interval: 10m, url: %q}
`, ns, charts.URL()))
	createSharded(g, shard, &sourcev1.HelmChart{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata: {name: app, namespace: %s}
spec: {interval: 10m, chart: app, version: 1.0.0, sourceRef: {kind: HelmRepository, name: charts}}
`, ns))

	return []*unstructured.Unstructured{sourceObject(sourcev1.GitRepositoryKind, ns, "git"),
		sourceObject(sourcev1.OCIRepositoryKind, ns, "oci"), sourceObject(sourcev1.BucketKind, ns, "bucket"),
		sourceObject(sourcev1.HelmRepositoryKind, ns, "charts"), sourceObject(sourcev1.HelmChartKind, ns, "app")}
}

// s3WithSettings starts an S3 server whose bucket holds settings.yaml,
// creates in ns the Secret "s3" of its keys, and returns the server and a
// client of it.
func s3WithSettings(t *testing.T, g *WithT, ns string) (*testservers.S3, *minio.Client) {
	s3 := testservers.StartS3(t, testservers.S3Options{})
	mc, err := minio.New(s3.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s3.AccessKey, s3.SecretKey, ""), Region: s3.Region})
	g.Expect(err).NotTo(HaveOccurred())
	putObject(g, mc, s3.Bucket, "settings.yaml", settingsManifest("hello"))
	g.Expect(env.Client.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3"},
		Data: map[string][]byte{"accesskey": []byte(s3.AccessKey), "secretkey": []byte(s3.SecretKey)}})).To(Succeed())
	return s3, mc
}

// waitStored waits until obj is Ready for its generation with an artifact
// (of revision, when not empty) whose file under storage has the digest
// the status names, and returns what the status says.
func waitStored(g *WithT, obj *unstructured.Unstructured, storage, revision string) servedArtifact {
	var got servedArtifact
	g.Eventually(func(g Gomega) {
		u := obj.DeepCopy()
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), u)).To(Succeed())
		g.Expect(readyStatus(u)).To(Equal("True"), "Ready")
		got = servedArtifact{revision: nestedString(u, "status", "artifact", "revision"),
			digest: nestedString(u, "status", "artifact", "digest"), path: nestedString(u, "status", "artifact", "path")}
		g.Expect(got.path).NotTo(BeEmpty())
		if revision != "" {
			g.Expect(got.revision).To(Equal(revision))
		}
		data, err := os.ReadFile(filepath.Join(storage, "artifacts", got.path))
		g.Expect(err).NotTo(HaveOccurred(), "the artifact's file")
		sum := sha256.Sum256(data)
		g.Expect("sha256:" + hex.EncodeToString(sum[:])).To(Equal(got.digest))
	}, timeout, interval).Should(Succeed(), "%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
	return got
}

// readyStatus returns the status of the Ready condition of u when it is
// for u's generation, else "".
func readyStatus(u *unstructured.Unstructured) string {
	c := readyCondition(u)
	if gen, _ := c["observedGeneration"].(int64); gen != u.GetGeneration() {
		return ""
	}
	status, _ := c["status"].(string)
	return status
}

// readyMessage returns the message of the Ready condition of u.
func readyMessage(u *unstructured.Unstructured) string {
	msg, _ := readyCondition(u)["message"].(string)
	return msg
}

// readyCondition returns the Ready condition of u, nil when it has none.
func readyCondition(u *unstructured.Unstructured) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == meta.ReadyCondition {
			return m
		}
	}
	return nil
}
