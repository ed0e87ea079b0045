package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// runWithInput runs the windlass command line with args and stdin as its
// standard input; with export, as --export without a cluster, else against
// the test control plane.
func runWithInput(t *testing.T, stdin string, export bool, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewRootCommand(&out, &errOut)
	root.SetIn(strings.NewReader(stdin))
	if export {
		args = append(args, "--export", "--kubeconfig", filepath.Join(t.TempDir(), "missing"))
	} else {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// testDigest is a well-formed digest for the tests.
const testDigest = "sha256:3f0a9c2e6b1d4f5a8c7e9b0d1f2a3c4e5b6d7f8a9c0e1b2d3f4a5c6e7b8d9f0a"

// TestOCICreateExport prints the OCIRepositories, Buckets and registry
// Secrets that create makes with --export, and compares them with their
// golden files; no secret appears but in the exported Secret.
func TestOCICreateExport(t *testing.T) {
	tests := []struct {
		golden string
		stdin  string
		args   []string
	}{
		{golden: "oci-create-source", args: []string{"create", "source", "oci", "podinfo",
			"--url", "oci://ghcr.io/stefanprodan/manifests/podinfo", "--tag-semver", ">=6.0.0 <7.0.0", "--semver-filter", `^6\.`,
			"--interval", "5m", "--fetch-timeout", "2m", "--secret-ref", "ghcr-auth", "--cert-ref", "ghcr-ca", "--proxy-secret-ref", "proxy",
			"--ignore-paths", "/docs,*.md", "--layer-media-type", "application/vnd.cncf.flux.content.v1.tar+gzip", "--layer-operation", "copy",
			"--verify-provider", "cosign", "--verify-issuer", "^https://token.actions.githubusercontent.com$",
			"--verify-subject", "^https://github.com/stefanprodan/podinfo/", "--verify-trusted-root-secret-ref", "sigstore-root",
			"--label", "team=apps"}},
		{golden: "oci-create-source-digest", args: []string{"create", "source", "ocirepository", "app", "-n", "apps",
			"--url", "oci://registry.example.com:5000/org/app", "--digest", testDigest, "--service-account", "puller", "--insecure",
			"--verify-provider", "cosign", "--verify-secret-ref", "cosign-keys"}},
		{golden: "bucket-create-source", args: []string{"create", "source", "bucket", "podinfo",
			"--bucket-name", "podinfo", "--endpoint", "minio.example.com:9000", "--region", "us-east-1", "--prefix", "manifests/",
			"--insecure", "--secret-ref", "minio-auth", "--cert-ref", "minio-ca", "--proxy-secret-ref", "proxy",
			"--ignore-paths", "*.md", "--interval", "10m", "--fetch-timeout", "90s", "--label", "team=apps"}},
		{golden: "bucket-create-source-access-key", stdin: "s3cr3t-key\n", args: []string{"create", "source", "bucket", "assets", "-n", "apps",
			"--bucket-name", "assets", "--endpoint", "s3.amazonaws.com", "--region", "eu-west-1",
			"--access-key", "AKIAEXAMPLE", "--secret-key-stdin"}},
		{golden: "oci-create-secret", stdin: "s3cr3t-token\n", args: []string{"create", "secret", "oci", "ghcr-auth",
			"--url", "oci://ghcr.io/stefanprodan/manifests", "--username", "bot", "--password-stdin", "--label", "team=apps"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			g := NewWithT(t)
			out, errOut, err := runWithInput(t, tt.stdin, true, tt.args...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(errOut).To(BeEmpty())
			g.Expect(out).NotTo(ContainSubstring("s3cr3t"), "secrets are exported in base64 only")
			expectGolden(t, g, tt.golden, out)
		})
	}

	t.Run("the registry Secret is what docker login writes", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := runWithInput(t, "", true, "create", "secret", "oci", "ghcr-auth", "--url", "https://ghcr.io/v2/", "-u", "bot", "-p", "s3cr3t-token")
		g.Expect(err).NotTo(HaveOccurred())
		var secret corev1.Secret
		g.Expect(yaml.UnmarshalStrict([]byte(out), &secret)).To(Succeed())
		g.Expect(secret.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
		var config dockerConfigJSON
		g.Expect(json.Unmarshal(secret.Data[corev1.DockerConfigJsonKey], &config)).To(Succeed())
		g.Expect(config.Auths).To(Equal(map[string]dockerConfigAuth{"ghcr.io": {Username: "bot", Password: "s3cr3t-token",
			Auth: base64.StdEncoding.EncodeToString([]byte("bot:s3cr3t-token"))}}))
	})
}

// TestOCICreateBadFlags checks that wrong flags of the new kinds are
// refused in one line that names the flag, before anything reaches the
// cluster, and that no error echoes a secret.
func TestOCICreateBadFlags(t *testing.T) {
	ns := env.CreateNamespace(t)
	ociSource := []string{"create", "source", "oci", "app", "-n", ns}
	// Clipped, so that each case appends to a copy.
	withURL := slices.Clip(append(slices.Clone(ociSource), "--url", "oci://ghcr.io/org/app"))
	bucket := []string{"create", "source", "bucket", "app", "-n", ns}
	withEndpoint := slices.Clip(append(slices.Clone(bucket), "--bucket-name", "app", "--endpoint", "minio.example.com:9000"))
	secret := []string{"create", "secret", "oci", "app-auth", "-n", ns}
	tests := []refusedFlags{
		{"oci: missing --url", append(ociSource, "--tag", "v1"), "--url is required"},
		{"oci: an https URL", append(ociSource, "--url", "https://ghcr.io/org/app"), "--url must start with oci://"},
		{"oci: a URL with credentials", append(ociSource, "--url", "oci://me:s3cr3t@ghcr.io/org/app"), "--url must not carry credentials"},
		{"oci: a URL with a tag", append(ociSource, "--url", "oci://ghcr.io/org/app:v1"), "--url names a tag or a digest"},
		{"oci: a URL with a digest", append(ociSource, "--url", "oci://ghcr.io/org/app@"+testDigest), "--url names a tag or a digest"},
		{"oci: a URL without a repository", append(ociSource, "--url", "oci://ghcr.io"), "--url is not a repository"},
		{"oci: a URL in capitals", append(ociSource, "--url", "oci://ghcr.io/Org/App"), "--url is not a repository"},
		{"oci: a tag and a digest", append(withURL, "--tag", "v1", "--digest", testDigest), "pass one of --tag, --tag-semver or --digest"},
		{"oci: a tag and a range", append(withURL, "--tag", "v1", "--tag-semver", ">=1.0.0"), "pass one of --tag, --tag-semver or --digest"},
		{"oci: a semver filter alone", append(withURL, "--tag", "v1", "--semver-filter", "^v"), "--semver-filter needs --tag-semver"},
		{"oci: a range that is no range", append(withURL, "--tag-semver", "one or two"), `--tag-semver "one or two" is not a semver range`},
		{"oci: a filter that is no regexp", append(withURL, "--tag-semver", ">=1.0.0", "--semver-filter", "(v"), `--semver-filter "(v" is not a regular expression`},
		{"oci: a tag that is no tag", append(withURL, "--tag", "-v1"), `--tag "-v1" is not a tag`},
		{"oci: a digest that is no digest", append(withURL, "--digest", "sha256:abc"), `--digest "sha256:abc" is not a digest`},
		{"oci: another provider", append(withURL, "--provider", "oracle"), `--provider "oracle" is not a provider: use generic`},
		{"oci: a cloud provider", append(withURL, "--provider", "gcp", "--secret-ref", "auth"), "--provider gcp is not served by Windlass"},
		{"oci: a bad secret name", append(withURL, "--secret-ref", "Auth_1"), `--secret-ref "Auth_1" is not an object name`},
		{"oci: a bad service account", append(withURL, "--service-account", "Bot!"), `--service-account "Bot!" is not an object name`},
		{"oci: another layer operation", append(withURL, "--layer-operation", "unpack"), `--layer-operation "unpack" is not supported: choose extract or copy`},
		{"oci: verify flags without a provider", append(withURL, "--verify-secret-ref", "keys"), "need --verify-provider cosign"},
		{"oci: notation", append(withURL, "--verify-provider", "notation", "--verify-secret-ref", "keys"), "--verify-provider notation is not supported: use cosign"},
		{"oci: another verify provider", append(withURL, "--verify-provider", "gpg"), `--verify-provider "gpg" is not supported: use cosign`},
		{"oci: cosign without keys or identity", append(withURL, "--verify-provider", "cosign"), "--verify-provider cosign needs --verify-secret-ref"},
		{"oci: keys and keyless", append(withURL, "--verify-provider", "cosign", "--verify-secret-ref", "keys", "--verify-issuer", ".*", "--verify-subject", ".*"),
			"--verify-secret-ref (public keys) and --verify-issuer/--verify-subject (keyless): choose one"},
		{"oci: an issuer without a subject", append(withURL, "--verify-provider", "cosign", "--verify-issuer", ".*"), "--verify-issuer and --verify-subject go together"},
		{"oci: a trusted root with keys", append(withURL, "--verify-provider", "cosign", "--verify-secret-ref", "keys", "--verify-trusted-root-secret-ref", "root"),
			"--verify-trusted-root-secret-ref is for keyless verification"},
		{"oci: a subject that is no regexp", append(withURL, "--verify-provider", "cosign", "--verify-issuer", ".*", "--verify-subject", "[a"), `--verify-subject "[a" is not a regular expression`},
		{"oci: a zero interval", append(withURL, "--interval", "0s"), "--interval must be a positive duration"},
		{"oci: a negative fetch timeout", append(withURL, "--fetch-timeout=-1s"), "--fetch-timeout must be a positive duration"},
		{"bucket: missing --bucket-name", append(bucket, "--endpoint", "minio.example.com"), "--bucket-name is required"},
		{"bucket: a bucket name with a folder", append(bucket, "--bucket-name", "app/deploy", "--endpoint", "minio.example.com"), `--bucket-name "app/deploy" is not a bucket name`},
		{"bucket: missing --endpoint", append(bucket, "--bucket-name", "app"), "--endpoint is required"},
		{"bucket: an endpoint with a scheme", append(bucket, "--bucket-name", "app", "--endpoint", "https://me:s3cr3t@minio.example.com"), "--endpoint is a host[:port], without a scheme"},
		{"bucket: an endpoint with credentials", append(bucket, "--bucket-name", "app", "--endpoint", "me:s3cr3t@minio.example.com"), "--endpoint must not carry credentials"},
		{"bucket: an endpoint with a path", append(bucket, "--bucket-name", "app", "--endpoint", "minio.example.com/app"), "without a path: a folder of the bucket goes in --prefix"},
		{"bucket: an endpoint with a bad port", append(bucket, "--bucket-name", "app", "--endpoint", "minio.example.com:99999"), "has no valid port"},
		{"bucket: another provider", append(withEndpoint, "--provider", "ceph"), `--provider "ceph" is not a provider: use generic`},
		{"bucket: a secret and an access key", append(withEndpoint, "--secret-ref", "auth", "--access-key", "AK", "--secret-key-stdin"), "--secret-ref and --access-key: choose one"},
		{"bucket: an access key alone", append(withEndpoint, "--access-key", "AK"), "--access-key needs --secret-key-stdin"},
		{"bucket: a secret key alone", append(withEndpoint, "--secret-key-stdin"), "--secret-key-stdin needs --access-key"},
		{"bucket: a cloud provider", append(withEndpoint, "--provider", "azure", "--access-key", "AK", "--secret-key-stdin"), "--provider azure is not served by Windlass"},
		{"bucket: no secret key on stdin", append(withEndpoint, "--access-key", "AK", "--secret-key-stdin"), "--secret-key-stdin: standard input holds no secret key"},
		{"bucket: a zero interval", append(withEndpoint, "--interval", "0s"), "--interval must be a positive duration"},
		{"secret: missing --url", append(secret, "-u", "bot", "-p", "s3cr3t"), "--url is required"},
		{"secret: a URL of another scheme", append(secret, "--url", "ftp://ghcr.io", "-u", "bot", "-p", "s3cr3t"), "--url must be a registry's host"},
		{"secret: a URL with credentials", append(secret, "--url", "bot:s3cr3t@ghcr.io", "-u", "bot", "-p", "s3cr3t"), "--url must not carry credentials"},
		{"secret: a URL that is no host", append(secret, "--url", "oci://GHCR io", "-u", "bot", "-p", "s3cr3t"), "--url is not a registry host"},
		{"secret: missing --username", append(secret, "--url", "ghcr.io", "-p", "s3cr3t"), "--username is required"},
		{"secret: a user name with a colon", append(secret, "--url", "ghcr.io", "-u", "bot:x", "-p", "s3cr3t"), "--username must not contain ':'"},
		{"secret: missing --password", append(secret, "--url", "ghcr.io", "-u", "bot"), "--password or --password-stdin is required"},
		{"secret: both passwords", append(secret, "--url", "ghcr.io", "-u", "bot", "-p", "s3cr3t", "--password-stdin"), "--password and --password-stdin: choose one"},
		{"secret: no password on stdin", append(secret, "--url", "ghcr.io", "-u", "bot", "--password-stdin"), "--password-stdin: standard input holds no password"},
	}
	expectRefused(t, tests)
	t.Run("nothing reached the cluster", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		var repos sourcev1.OCIRepositoryList
		g.Expect(env.Client.List(ctx, &repos, client.InNamespace(ns))).To(Succeed())
		g.Expect(repos.Items).To(BeEmpty())
		var buckets sourcev1.BucketList
		g.Expect(env.Client.List(ctx, &buckets, client.InNamespace(ns))).To(Succeed())
		g.Expect(buckets.Items).To(BeEmpty())
		var secrets corev1.SecretList
		g.Expect(env.Client.List(ctx, &secrets, client.InNamespace(ns))).To(Succeed())
		g.Expect(secretNames(secrets.Items)).NotTo(ContainElements("app", "app-auth"))
	})
}

// TestOCICreateAgainstTheCluster applies what create makes to the real
// API server, whose schema accepts it: an OCIRepository and a Bucket (with
// its Secret of credentials) are applied, then waited for, and since no
// controller of their kinds runs here, the wait ends at --timeout; a
// registry Secret is applied.
func TestOCICreateAgainstTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)

	out, _, err := run(t, "create", "source", "oci", "app", "-n", ns, "--url", "oci://ghcr.io/org/app", "--tag-semver", "1.x",
		"--verify-provider", "cosign", "--verify-issuer", "^https://accounts.google.com$", "--verify-subject", "@example.com$",
		"--layer-operation", "copy", "--fetch-timeout", "30s", "--timeout", "2s")
	g.Expect(err).To(MatchError(ContainSubstring("OCIRepository " + ns + "/app was not reconciled within 2s")))
	g.Expect(out).To(HavePrefix("✚ OCIRepository " + ns + "/app applied\n◎ waiting for OCIRepository " + ns + "/app to be reconciled\n"))
	var repo sourcev1.OCIRepository
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &repo)).To(Succeed())
	g.Expect(repo.Spec.Reference).To(Equal(&sourcev1.OCIRepositoryRef{SemVer: "1.x"}))
	g.Expect(repo.Spec.Verify.MatchOIDCIdentity).To(Equal([]sourcev1.OIDCIdentityMatch{{Issuer: "^https://accounts.google.com$", Subject: "@example.com$"}}))
	g.Expect(repo.Spec.LayerSelector).To(Equal(&sourcev1.OCILayerSelector{Operation: sourcev1.OCILayerCopy}))
	g.Expect(repo.Spec.Timeout).To(Equal(&metav1.Duration{Duration: 30 * time.Second}))
	g.Expect(repo.ManagedFields).To(ContainElement(HaveField("Manager", fieldOwner)))

	out, _, err = runWithInput(t, "s3cr3t-key\n", false, "create", "source", "bucket", "assets", "-n", ns, "--bucket-name", "assets",
		"--endpoint", "127.0.0.1:9000", "--insecure", "--access-key", "AKIAEXAMPLE", "--secret-key-stdin", "--timeout", "2s")
	g.Expect(err).To(MatchError(ContainSubstring("Bucket " + ns + "/assets was not reconciled within 2s")))
	g.Expect(out).To(HavePrefix("✚ Secret " + ns + "/assets applied\n✚ Bucket " + ns + "/assets applied\n"))
	g.Expect(out).NotTo(ContainSubstring("s3cr3t"))
	var secret corev1.Secret
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "assets"}, &secret)).To(Succeed())
	g.Expect(secret.Data).To(Equal(map[string][]byte{"accesskey": []byte("AKIAEXAMPLE"), "secretkey": []byte("s3cr3t-key")}))
	var bucket sourcev1.Bucket
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "assets"}, &bucket)).To(Succeed())
	g.Expect(bucket.Spec.SecretRef).To(Equal(&meta.LocalObjectReference{Name: "assets"}))
	g.Expect(bucket.Spec.Endpoint).To(Equal("127.0.0.1:9000"))
	g.Expect(bucket.Spec.Insecure).To(BeTrue())

	out, _, err = runWithInput(t, "s3cr3t-token\n", false, "create", "secret", "oci", "ghcr-auth", "-n", ns, "--url", "ghcr.io",
		"-u", "bot", "--password-stdin")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✚ Secret " + ns + "/ghcr-auth applied\n"))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ghcr-auth"}, &secret)).To(Succeed())
	g.Expect(secret.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
	g.Expect(string(secret.Data[corev1.DockerConfigJsonKey])).To(Equal(
		`{"auths":{"ghcr.io":{"username":"bot","password":"s3cr3t-token","auth":"Ym90OnMzY3IzdC10b2tlbg=="}}}`))
}

// seedOCIObjects creates, in a new namespace, a Ready OCIRepository, a
// suspended one without an artifact, a Ready Bucket and one whose last
// run failed.
func seedOCIObjects(t *testing.T, g *WithT) string {
	ns := env.CreateNamespace(t)
	interval := metav1.Duration{Duration: time.Minute}
	artifact := func(revision string) *meta.Artifact {
		return &meta.Artifact{Revision: revision, Path: "p", URL: "http://x/p", Digest: "sha256:0", LastUpdateTime: metav1.Now()}
	}
	podinfo := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
		Spec: sourcev1.OCIRepositorySpec{URL: "oci://ghcr.io/stefanprodan/manifests/podinfo", Interval: interval}}
	createWithStatus(g, podinfo, func() {
		podinfo.Status.Artifact = artifact("6.5.0@sha256:3f0a9c2e6b1d")
		conditions.MarkTrue(podinfo, meta.ReadyCondition, meta.SucceededReason, "stored artifact for digest '6.5.0@sha256:3f0a9c2e6b1d'")
	})
	held := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: sourcev1.OCIRepositorySpec{URL: "oci://ghcr.io/org/app", Interval: interval, Suspend: true}}
	g.Expect(env.Client.Create(context.Background(), held)).To(Succeed())
	assets := &sourcev1.Bucket{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "assets"},
		Spec: sourcev1.BucketSpec{BucketName: "assets", Endpoint: "minio.example.com", Interval: interval}}
	createWithStatus(g, assets, func() {
		assets.Status.Artifact = artifact("sha256:9d2b4c6e8f0a")
		conditions.MarkTrue(assets, meta.ReadyCondition, meta.SucceededReason, "stored artifact for revision 'sha256:9d2b4c6e8f0a'")
	})
	broken := &sourcev1.Bucket{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"},
		Spec: sourcev1.BucketSpec{BucketName: "broken", Endpoint: "minio.example.com", Interval: interval}}
	createWithStatus(g, broken, func() {
		conditions.MarkFalse(broken, meta.ReadyCondition, "BucketOperationFailed", "listing bucket 'broken': access denied\nsecond line")
	})
	return ns
}

// TestOCIGetKinds lists the new kinds with get: each alone in the default
// columns, and among every source.
func TestOCIGetKinds(t *testing.T) {
	g := NewWithT(t)
	ns := seedOCIObjects(t, g)
	tests := []struct {
		args   []string
		golden string
	}{
		{args: []string{"get", "sources", "oci"}, golden: "oci-get-sources"},
		{args: []string{"get", "sources", "ocirepo"}, golden: "oci-get-sources"},
		{args: []string{"get", "sources", "bucket"}, golden: "bucket-get-sources"},
		{args: []string{"get", "source", "buckets", "--status-selector", "ready=false"}, golden: "bucket-get-sources-not-ready"},
		{args: []string{"get", "sources", "all"}, golden: "oci-get-sources-all"},
		{args: []string{"get", "all"}, golden: "oci-get-sources-all"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(t, append(tt.args, "-n", ns)...)
			g.Expect(err).NotTo(HaveOccurred())
			expectGolden(t, g, tt.golden, out)
		})
	}
	t.Run("as YAML", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "get", "sources", "oci", "-n", ns, "-o", "yaml", "--status-selector", "ready=true")
		g.Expect(err).NotTo(HaveOccurred())
		var list struct{ Items []sourcev1.OCIRepository }
		g.Expect(yaml.Unmarshal([]byte(out), &list)).To(Succeed(), out)
		g.Expect(list.Items).To(HaveLen(1))
		g.Expect(list.Items[0].Kind).To(Equal(sourcev1.OCIRepositoryKind))
		g.Expect(list.Items[0].Status.Artifact.Revision).To(Equal("6.5.0@sha256:3f0a9c2e6b1d"))
	})
}

// TestOCIResumeWithoutAControllerAndExports: resume of an OCIRepository
// that no controller answers says so after its timeout, with spec.suspend
// cleared and the request left; suspend --all takes every Bucket; export
// prints the manifests (golden). TestVerbsOverTheRegistry drives every
// verb of every kind.
func TestOCIResumeWithoutAControllerAndExports(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := seedOCIObjects(t, g)
	key := client.ObjectKey{Namespace: ns, Name: "podinfo"}
	var repo sourcev1.OCIRepository

	_, _, err := run(t, "suspend", "source", "oci", "podinfo", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	out, _, err := run(t, "resume", "source", "oci", "podinfo", "-n", ns, "--timeout", "2s")
	g.Expect(err).To(MatchError(ContainSubstring("OCIRepository " + ns + "/podinfo was not reconciled within 2s")))
	g.Expect(out).To(HavePrefix("◎ waiting for OCIRepository " + ns + "/podinfo to be reconciled\n"))
	g.Expect(env.Client.Get(ctx, key, &repo)).To(Succeed())
	g.Expect(repo.Spec.Suspend).To(BeFalse())
	g.Expect(repo.Annotations).To(HaveKey(meta.ReconcileRequestAnnotation))

	out, _, err = run(t, "suspend", "source", "bucket", "--all", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✔ Bucket " + ns + "/assets suspended\n✔ Bucket " + ns + "/broken suspended\n"))

	out, _, err = run(t, "export", "source", "oci", "--all", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	expectGolden(t, g, "oci-export-sources", strings.ReplaceAll(out, ns, "NS"))
	out, _, err = run(t, "export", "source", "bucket", "assets", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	expectGolden(t, g, "bucket-export-source", strings.ReplaceAll(out, ns, "NS"))
}
