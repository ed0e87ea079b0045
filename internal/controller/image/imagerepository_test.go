package image

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// scansCounted returns windlass_image_scans_total for result. It counts
// the scans of the whole process, other tests' too: compare its increases
// only.
func scansCounted(result string) float64 {
	return promtestutil.ToFloat64(metrics.ImageScans.WithLabelValues(result))
}

// TestImageRepository_ScansTagsOnDisk: hundreds of tags are scanned into
// the store (the cosign signature tag left out), reported in the status
// and served over HTTP, and counted a success; a scan that finds the same
// tags writes nothing.
func TestImageRepository_ScansTagsOnDisk(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startRegistry(t, "", "")
	tags := numberedTags("build-", 300)
	reg.push(t, "app", append(tags, "sha256-abc.sig")...)

	scans := scansCounted(metrics.ResultSuccess)
	repo := imageRepository(ns, "app", reg.host+"/app")
	create(g, repo)
	repo = ready(g, repo)
	g.Expect(scansCounted(metrics.ResultSuccess)).To(BeNumerically(">", scans))
	g.Expect(repo.Status.CanonicalImageName).To(Equal(reg.host + "/app"))
	g.Expect(repo.Status.LastScanResult.TagCount).To(Equal(300))
	g.Expect(repo.Status.LastScanResult.LatestTags).To(HaveLen(10))
	g.Expect(repo.Status.LastScanResult.LatestTags[0]).To(Equal("build-99"), "reverse alphabetical order")
	g.Expect(repo.Status.ObservedExclusionList).To(Equal(imagev1.DefaultExclusionList))
	g.Expect(conditions.Message(repo, meta.ReadyCondition)).To(Equal("successful scan: found 300 tags"))

	code, body := getTags(g, "/images/"+ns+"/app/tags?limit=1000")
	g.Expect(code).To(Equal(200))
	g.Expect(body.Count).To(Equal(300))
	g.Expect(body.Tags).To(ConsistOf(toAny(tags)...))
	g.Expect(body.Revision).To(Equal(repo.Status.LastScanResult.Revision))

	// The interval is one second: more scans come, and none writes.
	version, lists := repo.ResourceVersion, reg.lists.Load()
	g.Eventually(reg.lists.Load, 20*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", lists+3))
	g.Expect(get(g, repo).ResourceVersion).To(Equal(version), "an unchanged tag list writes no status")

	// A new tag is a new revision.
	reg.push(t, "app", "build-300")
	repo = testutil.WaitFor(g, env.Client, repo, func(r *imagev1.ImageRepository) bool {
		return r.Status.LastScanResult.TagCount == 301
	})
	g.Expect(repo.Status.LastScanResult.Revision).NotTo(Equal(body.Revision))
}

// TestImageRepository_RegistryDown: a registry that fails keeps the last
// tags served and in the status, and the scan is counted a failure; the
// repository says why it is not Ready, and recovers.
func TestImageRepository_RegistryDown(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startRegistry(t, "", "")
	reg.push(t, "app", "1.0.0", "1.1.0")
	repo := imageRepository(ns, "app", reg.host+"/app")
	create(g, repo)
	ready(g, repo)

	failures := scansCounted(metrics.ResultFailure)
	reg.down.Store(true)
	failed := notReady(g, repo, imagev1.ReasonScanFailed)
	g.Expect(scansCounted(metrics.ResultFailure)).To(BeNumerically(">", failures))
	g.Expect(conditions.Message(failed, meta.ReadyCondition)).To(ContainSubstring("scan failed"))
	g.Expect(failed.Status.LastScanResult.TagCount).To(Equal(2), "the last good scan stays in the status")
	code, body := getTags(g, "/images/"+ns+"/app/tags")
	g.Expect(code).To(Equal(200))
	g.Expect(body.Tags).To(Equal([]string{"1.0.0", "1.1.0"}), "the last good tags stay served")

	reg.down.Store(false)
	ready(g, repo)
}

// TestImageRepository_Credentials: a registry that asks for a password is
// scanned with a dockerconfigjson Secret; without it, or with a wrong
// password, the repository is not Ready and no password is shown.
func TestImageRepository_Credentials(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startRegistry(t, "robot", "s3cr3t-pass")
	reg.pushAuth(t, "private", "robot", "s3cr3t-pass", "v1")

	repo := imageRepository(ns, "private", reg.host+"/private")
	repo.Spec.SecretRef = &meta.LocalObjectReference{Name: "regcred"}
	create(g, repo)
	failed := notReady(g, repo, imagev1.ReasonAuthenticationFailed)
	g.Expect(conditions.Message(failed, meta.ReadyCondition)).To(ContainSubstring("secret '" + ns + "/regcred' not found"))

	create(g, dockerSecret(ns, "regcred", reg.host, "robot", "wrong-pass"))
	failed = testutil.WaitFor(g, env.Client, repo, func(r *imagev1.ImageRepository) bool {
		return conditions.IsFalse(r, meta.ReadyCondition) && strings.Contains(conditions.Message(r, meta.ReadyCondition), "scan failed")
	})
	g.Expect(conditions.Reason(failed, meta.ReadyCondition)).To(Equal(imagev1.ReasonAuthenticationFailed))
	g.Expect(conditions.Message(failed, meta.ReadyCondition)).NotTo(ContainSubstring("wrong-pass"))
	for _, msg := range testutil.EventMessages(g, env.Client, repo, imagev1.ImageRepositoryKind) {
		g.Expect(msg).NotTo(ContainSubstring("wrong-pass"))
	}

	var s corev1.Secret
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "regcred"}, &s)).To(Succeed())
	s.Data = dockerSecret(ns, "regcred", reg.host, "robot", "s3cr3t-pass").Data
	g.Expect(env.Client.Update(context.Background(), &s)).To(Succeed())
	testutil.RequestReconcile(g, env.Client, repo, "after-fix")
	repo = ready(g, repo)
	g.Expect(repo.Status.LastScanResult.TagCount).To(Equal(1))

	// The image pull secrets of a service account work too.
	create(g, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "puller"},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}})
	bySA := imageRepository(ns, "by-service-account", reg.host+"/private")
	bySA.Spec.ServiceAccountName = "puller"
	create(g, bySA)
	g.Expect(ready(g, bySA).Status.LastScanResult.TagCount).To(Equal(1))
}

// TestImageRepository_InvalidSpec: a spec no retry can fix stalls.
func TestImageRepository_InvalidSpec(t *testing.T) {
	for _, tc := range []struct {
		name, reason, message string
		mutate                func(*imagev1.ImageRepository)
	}{
		{"tagged", imagev1.ReasonInvalidImage, "invalid spec.image", func(r *imagev1.ImageRepository) { r.Spec.Image += ":v1" }},
		{"exclusion", imagev1.ReasonInvalidSpec, "spec.exclusionList[0]: invalid regular expression", func(r *imagev1.ImageRepository) {
			r.Spec.ExclusionList = []string{"(unclosed"}
		}},
		{"provider", meta.UnsupportedProviderReason, "spec.provider 'aws' is not served by Windlass", func(r *imagev1.ImageRepository) { r.Spec.Provider = "aws" }},
		{"provider-gcp", meta.UnsupportedProviderReason, "spec.provider 'gcp' is not served by Windlass", func(r *imagev1.ImageRepository) { r.Spec.Provider = "gcp" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			defer func() {
				if t.Failed() {
					t.Log(logs.String())
				}
			}()
			ns := env.CreateNamespace(t)
			repo := imageRepository(ns, "bad", "127.0.0.1:1/app")
			tc.mutate(repo)
			create(g, repo)
			stalled := testutil.WaitFor(g, env.Client, repo, func(r *imagev1.ImageRepository) bool {
				return conditions.IsTrue(r, meta.StalledCondition)
			})
			g.Expect(conditions.Reason(stalled, meta.StalledCondition)).To(Equal(tc.reason))
			g.Expect(conditions.Message(stalled, meta.ReadyCondition)).To(ContainSubstring(tc.message))
		})
	}
}

// TestImageRepository_Deleted: deleting a repository removes its tags.
func TestImageRepository_Deleted(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startRegistry(t, "", "")
	reg.push(t, "app", "1.0.0")
	repo := imageRepository(ns, "app", reg.host+"/app")
	create(g, repo)
	ready(g, repo)
	g.Expect(env.Client.Delete(context.Background(), repo)).To(Succeed())
	g.Eventually(func() bool { _, ok := store.Revision(ns, "app"); return ok }, 20*time.Second).Should(BeFalse())
	code, _ := getTags(g, "/images/"+ns+"/app/tags")
	g.Expect(code).To(Equal(404))
}

// dockerSecret returns a kubernetes.io/dockerconfigjson Secret for host.
func dockerSecret(ns, name, host, user, pass string) *corev1.Secret {
	config := `{"auths":{"` + host + `":{"username":"` + user + `","password":"` + pass + `"}}}`
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(config)},
	}
}

// get reads obj again.
func get[T client.Object](g Gomega, obj T) T {
	got := obj.DeepCopyObject().(T)
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got)).To(Succeed())
	return got
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i := range s {
		out[i] = s[i]
	}
	return out
}
