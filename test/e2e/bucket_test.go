package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// A user keeps manifests under a prefix of an S3 bucket (with other,
// broken, files beside it) and deploys them with a Bucket made by `windlass
// create source bucket`, the secret key typed on standard input, and a
// Kustomization. A changed object is applied within seconds of `windlass
// reconcile ks --with-source`, and `windlass get sources bucket` shows the
// Bucket Ready at its new revision.
func TestBucket_DeployedAndChangeApplied(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	s3 := testservers.StartS3(t, testservers.S3Options{})
	mc, err := minio.New(s3.Endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(s3.AccessKey, s3.SecretKey, ""), Region: s3.Region, Secure: false})
	g.Expect(err).NotTo(HaveOccurred())
	putObject(g, mc, s3.Bucket, "deploy/settings.yaml", settingsManifest("hello"))
	// Outside the prefix: it would fail the build if it were fetched.
	putObject(g, mc, s3.Bucket, "drafts/broken.yaml", "kind: [not a manifest\n")

	out, errOut, code := runCLIWithInput(g, s3.SecretKey+"\n", "create", "source", "bucket", "app",
		"--bucket-name", s3.Bucket, "--endpoint", s3.Endpoint, "--insecure", "--region", s3.Region, "--prefix", "deploy/",
		"--access-key", s3.AccessKey, "--secret-key-stdin", "-n", ns, "--timeout", cliTimeout)
	g.Expect(code).To(Equal(0), out+errOut)
	g.Expect(out).To(ContainSubstring("✔ Bucket " + ns + "/app reconciled"))
	g.Expect(out + errOut).NotTo(ContainSubstring(s3.SecretKey))
	var secret corev1.Secret
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &secret)).To(Succeed())
	g.Expect(secret.Data).To(HaveKeyWithValue("accesskey", []byte(s3.AccessKey)))
	g.Expect(secret.Data).To(HaveKeyWithValue("secretkey", []byte(s3.SecretKey)), "the secret key is read from stdin")

	out = mustRunCLI(g, "create", "kustomization", "app", "--source", "Bucket/app", "--path", "./",
		"--prune", "--target-namespace", ns, "-n", ns, "--timeout", cliTimeout)
	g.Expect(out).To(ContainSubstring("✔ Kustomization " + ns + "/app reconciled"))
	rev1 := bucketRevision(g, ns)
	g.Expect(kustomization(g, ns).Status.LastAppliedRevision).To(Equal(rev1))
	g.Expect(configMapValue(ctx, env.Client, client.ObjectKey{Namespace: ns, Name: settingsName})).To(Equal("hello"))

	putObject(g, mc, s3.Bucket, "deploy/settings.yaml", settingsManifest("bonjour"))
	start := time.Now()
	out = mustRunCLI(g, "reconcile", "ks", "app", "--with-source", "-n", ns, "--timeout", cliTimeout)
	g.Expect(out).To(ContainSubstring("✔ Bucket " + ns + "/app reconciled"))
	g.Eventually(func() string {
		return configMapValue(ctx, env.Client, client.ObjectKey{Namespace: ns, Name: settingsName})
	}, changeBound, 100*time.Millisecond).Should(Equal("bonjour"))
	elapsed := time.Since(start)
	t.Logf("the changed object was applied %s after `windlass reconcile ks --with-source`", elapsed.Round(time.Millisecond))
	g.Expect(elapsed).To(BeNumerically("<", changeBound))
	rev2 := bucketRevision(g, ns)
	g.Expect(rev2).NotTo(Equal(rev1))
	g.Expect(kustomization(g, ns).Status.LastAppliedRevision).To(Equal(rev2))

	out = mustRunCLI(g, "get", "sources", "bucket", "-n", ns)
	g.Expect(strings.Split(out, "\n")[0]).To(MatchRegexp(`^NAME\s+REVISION\s+SUSPENDED\s+READY\s+MESSAGE\s+AGE$`))
	g.Expect(tableRow(g, out, "app")[1:4]).To(Equal([]string{rev2, "false", "True"}), out)
}

// putObject writes content to key of bucket.
func putObject(g *WithT, mc *minio.Client, bucket, key, content string) {
	_, err := mc.PutObject(context.Background(), bucket, key, strings.NewReader(content), int64(len(content)),
		minio.PutObjectOptions{ContentType: "application/yaml"})
	g.Expect(err).NotTo(HaveOccurred())
}

// bucketRevision returns the revision of the artifact of the Bucket app of
// ns.
func bucketRevision(g *WithT, ns string) string {
	got := &sourcev1.Bucket{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, got)).To(Succeed())
	g.Expect(got.Status.Artifact).NotTo(BeNil(), "artifact of %+v", got.Status)
	return got.Status.Artifact.Revision
}
