package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	imagectrl "github.com/windlass-dev/windlass/internal/controller/image"
	"github.com/windlass-dev/windlass/internal/kubeauth"
	"github.com/windlass-dev/windlass/internal/registry"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// scanTime is when the seeded ImageRepositories last scanned.
var scanTime = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

// seedImageObjects creates, in a new namespace, a scanned ImageRepository
// and one whose scan failed, a Ready ImagePolicy and a pinned one of
// another namespace's repository, an ImageUpdateAutomation that pushed and
// a suspended one that never ran.
func seedImageObjects(t *testing.T, g *WithT) string {
	ns := env.CreateNamespace(t)
	interval := metav1.Duration{Duration: 5 * time.Minute}
	podinfo := &imagev1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
		Spec: imagev1.ImageRepositorySpec{Image: "ghcr.io/stefanprodan/podinfo", Interval: interval}}
	createWithStatus(g, podinfo, func() {
		podinfo.Status.CanonicalImageName = "ghcr.io/stefanprodan/podinfo"
		podinfo.Status.LastScanResult = &imagev1.ScanResult{Revision: "sha256:5e1a2b3c", TagCount: 42, ScanTime: scanTime,
			LatestTags: []string{"6.5.0", "6.4.1"}}
		conditions.MarkTrue(podinfo, meta.ReadyCondition, meta.SucceededReason, "successful scan: found 42 tags")
	})
	private := &imagev1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "private"},
		Spec: imagev1.ImageRepositorySpec{Image: "registry.example.com/org/private", Interval: interval}}
	createWithStatus(g, private, func() {
		conditions.MarkFalse(private, meta.ReadyCondition, imagev1.ReasonAuthenticationFailed, "registry.example.com refused the credentials\nsecond line")
	})
	latest := &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
		Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: "podinfo"},
			Policy: imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "6.x"}}}}
	createWithStatus(g, latest, func() {
		latest.Status.LatestRef = &imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.5.0", Digest: testDigest}
		conditions.MarkTrue(latest, meta.ReadyCondition, meta.SucceededReason, "Latest image tag for ghcr.io/stefanprodan/podinfo resolved to 6.5.0")
	})
	pinned := &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared",
		Annotations: map[string]string{imagev1.PinAnnotation: "1.2.3"}},
		Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: "shared", Namespace: "infra"},
			Policy: imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{Order: "asc"}}}}
	createWithStatus(g, pinned, func() {
		pinned.Status.LatestRef = &imagev1.ImageRef{Name: "ghcr.io/org/shared", Tag: "1.2.3"}
		conditions.MarkTrue(pinned, meta.ReadyCondition, meta.SucceededReason, "Latest image tag for ghcr.io/org/shared resolved to 1.2.3 (pinned by the %s annotation)", imagev1.PinAnnotation)
	})
	pushed := &imagev1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"},
		Spec: imagev1.ImageUpdateAutomationSpec{Interval: interval,
			SourceRef: imagev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "fleet", Namespace: "infra"},
			GitSpec:   &imagev1.GitSpec{Commit: imagev1.CommitSpec{Author: imagev1.CommitUser{Email: "bot@example.com"}}}}}
	createWithStatus(g, pushed, func() {
		pushed.Status.LastAutomationRunTime = &scanTime
		pushed.Status.LastPushTime = &scanTime
		pushed.Status.LastPushCommit = "8f4e2a1c9b7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f"
		conditions.MarkTrue(pushed, meta.ReadyCondition, meta.SucceededReason, "pushed commit '8f4e2a1c9b7d' to branch 'main'")
	})
	idle := &imagev1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "staging"},
		Spec: imagev1.ImageUpdateAutomationSpec{Interval: interval, Suspend: true,
			SourceRef: imagev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "staging"},
			GitSpec:   &imagev1.GitSpec{Commit: imagev1.CommitSpec{Author: imagev1.CommitUser{Email: "bot@example.com"}}}}}
	g.Expect(env.Client.Create(context.Background(), idle)).To(Succeed())
	return ns
}

// TestImageGetKinds lists the image kinds with get: each in its own
// columns, and all three together.
func TestImageGetKinds(t *testing.T) {
	g := NewWithT(t)
	ns := seedImageObjects(t, g)
	tests := []struct {
		args   []string
		golden string
	}{
		{args: []string{"get", "images", "repository"}, golden: "image-get-repositories"},
		{args: []string{"get", "image", "imgrepo"}, golden: "image-get-repositories"},
		{args: []string{"get", "images", "policy"}, golden: "image-get-policies"},
		{args: []string{"get", "images", "imagepolicies"}, golden: "image-get-policies"},
		{args: []string{"get", "images", "update"}, golden: "image-get-updates"},
		{args: []string{"get", "images", "iua"}, golden: "image-get-updates"},
		{args: []string{"get", "images", "all"}, golden: "image-get-all"},
		{args: []string{"get", "all"}, golden: "image-get-all"},
		{args: []string{"get", "images", "all", "--status-selector", "ready=false"}, golden: "image-get-all-not-ready"},
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
		out, _, err := run(t, "get", "images", "policy", "-n", ns, "-o", "json")
		g.Expect(err).NotTo(HaveOccurred())
		var list struct{ Items []imagev1.ImagePolicy }
		g.Expect(json.Unmarshal([]byte(out), &list)).To(Succeed(), out)
		g.Expect(list.Items).To(HaveLen(2))
		g.Expect(list.Items[0].Status.LatestRef.Digest).To(Equal(testDigest))
	})
}

// TestImageVerbs drives the image kinds through the verbs the kind table
// gives them, against the real API server: suspend and resume flip
// spec.suspend (resume then waits for a controller, which is not running
// here), export prints the manifests, events shows an object's events,
// and delete removes the object.
func TestImageVerbs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := seedImageObjects(t, g)
	key := client.ObjectKey{Namespace: ns, Name: "podinfo"}
	var repo imagev1.ImageRepository

	out, _, err := run(t, "suspend", "image", "repository", "podinfo", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✔ ImageRepository " + ns + "/podinfo suspended\n"))
	g.Expect(env.Client.Get(ctx, key, &repo)).To(Succeed())
	g.Expect(repo.Spec.Suspend).To(BeTrue())

	_, _, err = run(t, "reconcile", "image", "repository", "podinfo", "-n", ns)
	g.Expect(err).To(MatchError(ContainSubstring("is suspended: resume it with `windlass resume image repository podinfo`")))

	out, _, err = run(t, "resume", "image", "imgrepo", "podinfo", "-n", ns, "--timeout", "2s")
	g.Expect(err).To(MatchError(ContainSubstring("ImageRepository " + ns + "/podinfo was not reconciled within 2s")))
	g.Expect(out).To(HavePrefix("◎ waiting for ImageRepository " + ns + "/podinfo to be reconciled\n"))
	g.Expect(env.Client.Get(ctx, key, &repo)).To(Succeed())
	g.Expect(repo.Spec.Suspend).To(BeFalse())
	g.Expect(repo.Annotations).To(HaveKey(meta.ReconcileRequestAnnotation))

	out, _, err = run(t, "suspend", "image", "policy", "--all", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✔ ImagePolicy " + ns + "/podinfo suspended\n✔ ImagePolicy " + ns + "/shared suspended\n"))
	var policy imagev1.ImagePolicy
	g.Expect(env.Client.Get(ctx, key, &policy)).To(Succeed())
	g.Expect(policy.Spec.Suspend).To(BeTrue())

	out, _, err = run(t, "export", "image", "policy", "--all", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	expectGolden(t, g, "image-export-policies", strings.ReplaceAll(out, ns, "NS"))

	recordEvent(g, &repo, imagev1.GroupVersion.String(), imagev1.ImageRepositoryKind, corev1.EventTypeWarning,
		imagev1.ReasonScanFailed, "listing the tags of ghcr.io/stefanprodan/podinfo: 503 Service Unavailable", time.Minute)
	out, _, err = run(t, "events", "--for", "imgrepo/podinfo", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("ImageRepository/podinfo"))
	g.Expect(out).To(ContainSubstring("503 Service Unavailable"))

	out, _, err = run(t, "delete", "image", "update", "staging", "-n", ns, "--silent")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HaveSuffix("✔ ImageUpdateAutomation " + ns + "/staging deleted\n"))
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "staging"}, &imagev1.ImageUpdateAutomation{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
}

// startTagsServer pushes tags to an in-process registry, scans them into
// a store as the ImageRepository podinfo of ns, and serves them on listen
// with the image reflector's tags server, which orders them by the
// ImagePolicies of the cluster: it creates podinfo in ns (semver 6.x) and
// shared in a namespace of its own (alphabetical, 6.4 only). It returns
// the server's address, the scanned image and shared's namespace.
func startTagsServer(t *testing.T, g *WithT, listen, ns string, guard *kubeauth.Guard) (address, image, other string) {
	ctx := context.Background()
	image = testutil.StartRegistry(t, "", "") + "/stefanprodan/podinfo"
	img, err := random.Image(64, 1)
	g.Expect(err).NotTo(HaveOccurred())
	for _, tag := range []string{"6.5.0", "6.3.0", "latest", "6.4.1", "sha256-3f0a9c2e.sig"} {
		ref, err := name.NewTag(image + ":" + tag)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(remote.Write(ref, img)).To(Succeed())
	}
	store, err := registry.NewStore(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	_, err = store.Scan(ctx, ns, "podinfo", registry.Options{Image: image})
	g.Expect(err).NotTo(HaveOccurred())

	other = env.CreateNamespace(t)
	g.Expect(env.Client.Create(ctx, &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
		Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: "podinfo"},
			Policy: imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "6.x"}}}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "shared"},
		Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: "podinfo", Namespace: ns},
			Policy:     imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{Order: imagev1.OrderAsc}},
			FilterTags: &imagev1.TagFilter{Pattern: `^6\.4\.`}}})).To(Succeed())

	ln, err := net.Listen("tcp", listen)
	g.Expect(err).NotTo(HaveOccurred())
	server := &http.Server{Handler: imagectrl.TagsHandler(env.Client, store, guard), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.Serve(ln) }()
	t.Cleanup(func() { _ = server.Close() })
	return ln.Addr().String(), image, other
}

// TestImageTags lists the tags that the image reflector's HTTP API
// answers: as served, in the policy's order, cut by --limit, as JSON, and
// its errors in one line.
func TestImageTags(t *testing.T) {
	ns := env.CreateNamespace(t)
	listening, image, other := startTagsServer(t, NewWithT(t), "127.0.0.1:0", ns, nil)
	address := "http://" + listening
	tests := []struct {
		name    string
		args    []string
		want    string
		wantErr string
		stderr  string
	}{
		{name: "as scanned, signatures left out", args: []string{"podinfo"}, want: "6.3.0\n6.4.1\n6.5.0\nlatest\n"},
		{name: "the first two", args: []string{"podinfo", "--limit", "2"}, want: "6.3.0\n6.4.1\n",
			stderr: "2 of the 4 tags of " + image + " (see --limit)\n"},
		{name: "in the policy's order", args: []string{"podinfo", "--policy", "podinfo"}, want: "6.5.0\n6.4.1\n6.3.0\n"},
		{name: "the best two", args: []string{"podinfo", "--policy", "podinfo", "--limit", "2"}, want: "6.5.0\n6.4.1\n"},
		{name: "a policy of another namespace", args: []string{"podinfo", "--policy", other + "/shared"}, want: "6.4.1\n"},
		{name: "a repository not scanned", args: []string{"nothing"},
			wantErr: "listing the tags of ImageRepository " + ns + "/nothing: the image reflector at " + listening + " answered 404 Not Found: not found: no tags are stored for " + ns + "/nothing"},
		{name: "a policy that is not there", args: []string{"podinfo", "--policy", "other"},
			wantErr: "answered 404 Not Found: ordering the tags by the policy other: not found: ImagePolicy '" + ns + "/other' not found"},
		{name: "a negative limit", args: []string{"podinfo", "--limit=-1"}, wantErr: "--limit must be from 1 to 1000, or 0"},
		{name: "a limit past the most", args: []string{"podinfo", "--limit=1001"}, wantErr: "--limit must be from 1 to 1000, or 0"},
		{name: "a bad policy name", args: []string{"podinfo", "--policy", "Other_1"}, wantErr: `--policy "Other_1" is not an object name`},
		{name: "another output", args: []string{"podinfo", "-o", "yaml"}, wantErr: `invalid --output "yaml": choose text or json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, errOut, err := run(t, append([]string{"image", "tags", "-n", ns, "--address", address}, tt.args...)...)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
				g.Expect(out).To(BeEmpty())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(Equal(tt.want))
			g.Expect(errOut).To(Equal(tt.stderr))
		})
	}
	t.Run("as JSON, the answer as it is", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "image", "tags", "podinfo", "-n", ns, "--address", address+"/", "--policy", "podinfo", "--limit", "1", "-o", "json")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(HavePrefix(`{"image":"` + image + `","revision":"sha256:`))
		g.Expect(strings.Count(out, "\n")).To(Equal(1), "the handler's one line")
		var answer registry.TagsResponse
		g.Expect(json.Unmarshal([]byte(out), &answer)).To(Succeed())
		g.Expect(answer).To(Equal(registry.TagsResponse{Image: image, Revision: answer.Revision, Count: 4, Tags: []string{"6.5.0"}, Policy: "podinfo"}))
	})
	t.Run("from an image reflector that serves only those who may get the repository", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.CreateNamespace(t)
		listening, _, _ := startTagsServer(t, g, "127.0.0.1:0", ns, tagsGuard())
		address := "http://" + listening
		_, _, err := run(t, "image", "tags", "podinfo", "-n", ns, "--address", address)
		g.Expect(err).To(MatchError(ContainSubstring("the image reflector at " + listening + " answered 401 Unauthorized: send a bearer token")))
		stranger := tokenKubeconfig(t, g, testutil.ServiceAccountToken(g, env.Config, env.CreateNamespace(t), "stranger"))
		_, _, err = runWith(t, stranger, "image", "tags", "podinfo", "-n", ns, "--address", address)
		g.Expect(err).To(MatchError(ContainSubstring("answered 403 Forbidden: system:serviceaccount:")))
		g.Expect(err).To(MatchError(ContainSubstring(`:stranger may not get imagerepositories in the namespace "` + ns + `"`)))
		out, _, err := runWith(t, tagsReader(t, g, ns), "image", "tags", "podinfo", "-n", ns, "--address", address, "--policy", "podinfo")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(Equal("6.5.0\n6.4.1\n6.3.0\n"))
	})
	t.Run("an address that is no URL", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := run(t, "image", "tags", "podinfo", "-n", ns, "--address", "127.0.0.1:9292")
		g.Expect(err).To(MatchError(ContainSubstring(`--address "127.0.0.1:9292" must be an http or https URL`)))
		_, _, err = run(t, "image", "tags", "podinfo", "-n", ns, "--address", "bot:s3cr3t@127.0.0.1:9292")
		g.Expect(err).To(MatchError(ContainSubstring("--address (not shown: it may hold a password) must be an http or https URL")))
		g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"))
	})
}

// TestImageTagsThroughTheAPIServer asks for the tags without --address:
// through the API server's proxy to the Service image-reflector-controller
// of the controller namespace, whose endpoint is the test's server (on an
// address of this host that the API server may proxy to: not loopback).
func TestImageTagsThroughTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, controllers := env.CreateNamespace(t), env.CreateNamespace(t)
	ip := proxyableAddress(g)
	listening, _, _ := startTagsServer(t, g, net.JoinHostPort(ip, "0"), ns, tagsGuard())
	_, port, err := net.SplitHostPort(listening)
	g.Expect(err).NotTo(HaveOccurred())
	portNumber, err := strconv.Atoi(port)
	g.Expect(err).NotTo(HaveOccurred())

	_, _, err = run(t, "image", "tags", "podinfo", "-n", ns, "--controller-namespace", controllers)
	g.Expect(err).To(MatchError(ContainSubstring("the Service " + controllers + "/image-reflector-controller (through the API server) answered 404 Not Found")))
	g.Expect(err).To(MatchError(ContainSubstring("is the image reflector running there?")))

	g.Expect(env.Client.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: controllers, Name: imageReflectorService},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(int32(portNumber))}}}})).To(Succeed())
	// The API server proxies to an endpoint address of a Pod with that IP.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: controllers, Name: "image-reflector"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "windlass"}}}}
	g.Expect(env.Client.Create(ctx, pod)).To(Succeed())
	pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	g.Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: controllers, Name: imageReflectorService}, //nolint:staticcheck // the API server's proxy reads it
		Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // as above
			Addresses: []corev1.EndpointAddress{{IP: ip, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: controllers, Name: pod.Name}}}, //nolint:staticcheck // as above
			Ports:     []corev1.EndpointPort{{Name: "http", Port: int32(portNumber)}}}}})).To(Succeed())                                            //nolint:staticcheck // as above

	// The API server drops the Authorization header of what it proxies:
	// the token goes in a header of Windlass's own. The administrator's
	// kubeconfig, with a client certificate, has none to send.
	_, _, err = run(t, "image", "tags", "podinfo", "-n", ns, "--controller-namespace", controllers)
	g.Expect(err).To(MatchError(ContainSubstring("answered 401 Unauthorized: send a bearer token")))
	g.Expect(err).To(MatchError(ContainSubstring("such as one with a client certificate, sends none")))
	reader := tagsReader(t, g, ns, rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"services/proxy"}})
	out, _, err := runWith(t, reader, "image", "tags", "podinfo", "-n", ns, "--controller-namespace", controllers, "--policy", "podinfo", "--limit", "2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("6.5.0\n6.4.1\n"))
	_, _, err = runWith(t, reader, "image", "tags", "nothing", "-n", ns, "--controller-namespace", controllers)
	g.Expect(err).To(MatchError(ContainSubstring("the Service " + controllers + "/image-reflector-controller (through the API server) answered 404 Not Found: not found: no tags are stored for " + ns + "/nothing")))
	g.Expect(err.Error()).NotTo(ContainSubstring("is the image reflector running there?"), "the image reflector answered")
}

// tagsGuard returns the guard of an image reflector that serves the tags
// only to those who may get the ImageRepository.
func tagsGuard() *kubeauth.Guard {
	return &kubeauth.Guard{Tokens: &kubeauth.TokenReviewer{Client: env.Client}, Access: &kubeauth.AccessReviewer{Client: env.Client}}
}

// tagsReader returns the kubeconfig of a new service account of ns that
// may get the ImageRepositories and ImagePolicies of ns, and do what
// controllerRules say in every namespace.
func tagsReader(t *testing.T, g *WithT, ns string, controllerRules ...rbacv1.PolicyRule) string {
	token := testutil.ServiceAccountToken(g, env.Config, ns, "tags-reader")
	testutil.GrantRole(g, env.Client, ns, "tags-reader", ns, "tags-reader", rbacv1.PolicyRule{Verbs: []string{"get"},
		APIGroups: []string{imagev1.GroupVersion.Group}, Resources: []string{"imagerepositories", "imagepolicies"}})
	if len(controllerRules) > 0 {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "tags-reader-"}, Rules: controllerRules}
		g.Expect(env.Client.Create(context.Background(), role)).To(Succeed())
		g.Expect(env.Client.Create(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "tags-reader"}}})).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), role) })
	}
	return tokenKubeconfig(t, g, token)
}

// tokenKubeconfig writes a kubeconfig of the test control plane whose
// user authenticates with token, and returns its path.
func tokenKubeconfig(t *testing.T, g *WithT, token string) string {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
	return path
}

// proxyableAddress returns an IPv4 address of this host that is not
// loopback or link-local: the API server proxies to no other.
func proxyableAddress(g *WithT) string {
	addrs, err := net.InterfaceAddrs()
	g.Expect(err).NotTo(HaveOccurred())
	for _, a := range addrs {
		if ipNet, ok := a.(*net.IPNet); ok && ipNet.IP.To4() != nil && !ipNet.IP.IsLoopback() && !ipNet.IP.IsLinkLocalUnicast() {
			return ipNet.IP.String()
		}
	}
	g.Expect(addrs).To(ContainElement(Not(BeNil())), "this host has no IPv4 address but loopback and link-local ones")
	return ""
}

// seedPinScenario creates, in a new namespace, the ImagePolicy app
// (labelled team=apps) and ImageUpdateAutomations: all (no selector),
// apps (team=apps), web (team=web), held (no selector, suspended); and in
// another namespace one without a selector. It returns both namespaces.
func seedPinScenario(t *testing.T, g *WithT) (ns, other string) {
	ctx := context.Background()
	ns, other = env.CreateNamespace(t), env.CreateNamespace(t)
	g.Expect(env.Client.Create(ctx, &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app",
		Labels: map[string]string{"team": "apps"}},
		Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: "app"},
			Policy: imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "1.x"}}}})).To(Succeed())
	automation := func(namespace, name string, selector map[string]string, suspend bool) {
		a := &imagev1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: imagev1.ImageUpdateAutomationSpec{Interval: metav1.Duration{Duration: time.Hour}, Suspend: suspend,
				SourceRef: imagev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "fleet"},
				GitSpec:   &imagev1.GitSpec{Commit: imagev1.CommitSpec{Author: imagev1.CommitUser{Email: "bot@example.com"}}}}}
		if selector != nil {
			a.Spec.PolicySelector = &metav1.LabelSelector{MatchLabels: selector}
		}
		g.Expect(env.Client.Create(ctx, a)).To(Succeed())
	}
	automation(ns, "all", nil, false)
	automation(ns, "apps", map[string]string{"team": "apps"}, false)
	automation(ns, "web", map[string]string{"team": "web"}, false)
	automation(ns, "held", nil, true)
	automation(other, "elsewhere", nil, false)
	return ns, other
}

// requested returns the reconcile request of the automation name of ns,
// "" without one.
func requested(g *WithT, ns, name string) string {
	var a imagev1.ImageUpdateAutomation
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &a)).To(Succeed())
	return a.Annotations[meta.ReconcileRequestAnnotation]
}

// TestImageSet pins an ImagePolicy to a tag and removes the pin: the
// annotation is written and removed, and the policy and exactly the
// automations that apply it are asked to reconcile.
func TestImageSet(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, other := seedPinScenario(t, g)
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	var policy imagev1.ImagePolicy

	out, _, err := run(t, "image", "set", "app", "1.2.3", "-n", ns, "--no-wait")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✚ ImagePolicy " + ns + "/app pinned to tag 1.2.3\n" +
		"► ImageUpdateAutomation " + ns + "/all will commit it\n" +
		"► ImageUpdateAutomation " + ns + "/apps will commit it\n" +
		"⚠ ImageUpdateAutomation " + ns + "/held selects it but is suspended: it commits nothing until resumed\n" +
		"✔ ImageUpdateAutomation " + ns + "/all asked to reconcile\n" +
		"✔ ImageUpdateAutomation " + ns + "/apps asked to reconcile\n"))
	g.Expect(env.Client.Get(ctx, key, &policy)).To(Succeed())
	g.Expect(policy.Annotations).To(HaveKeyWithValue(imagev1.PinAnnotation, "1.2.3"))
	token := policy.Annotations[meta.ReconcileRequestAnnotation]
	g.Expect(token).NotTo(BeEmpty())
	g.Expect(requested(g, ns, "all")).To(Equal(token))
	g.Expect(requested(g, ns, "apps")).To(Equal(token))
	g.Expect(requested(g, ns, "web")).To(BeEmpty(), "its selector does not select the policy")
	g.Expect(requested(g, ns, "held")).To(BeEmpty(), "it is suspended")
	g.Expect(requested(g, other, "elsewhere")).To(BeEmpty(), "it is of another namespace")

	out, _, err = run(t, "get", "images", "policy", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`\napp\s+app\s+-\s+1\.2\.3\s+Unknown`))

	out, _, err = run(t, "image", "set", "app", "--clear", "-n", ns, "--no-wait")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("✚ ImagePolicy " + ns + "/app unpinned: it elects by its rule again\n"))
	g.Expect(env.Client.Get(ctx, key, &policy)).To(Succeed())
	g.Expect(policy.Annotations).NotTo(HaveKey(imagev1.PinAnnotation))
	g.Expect(policy.Annotations[meta.ReconcileRequestAnnotation]).NotTo(Equal(token))
	g.Expect(requested(g, ns, "apps")).To(Equal(policy.Annotations[meta.ReconcileRequestAnnotation]))

	t.Run("no controller takes the pin", func(t *testing.T) {
		g := NewWithT(t)
		before := requested(g, ns, "all")
		out, _, err := run(t, "image", "set", "app", "1.2.4", "-n", ns, "--timeout", "1s")
		g.Expect(err).To(MatchError(ContainSubstring("ImagePolicy " + ns + "/app was not reconciled within 1s")))
		g.Expect(err).To(MatchError(ContainSubstring("the automations were not asked to reconcile")))
		g.Expect(out).To(ContainSubstring("◎ waiting for ImagePolicy " + ns + "/app to be reconciled\n"))
		g.Expect(requested(g, ns, "all")).To(Equal(before), "the policy did not elect the tag yet")
	})
	t.Run("refused", func(t *testing.T) {
		for args, want := range map[string]string{
			"app":                             "pass the POLICY and the TAG to pin it to, or --clear",
			"app 1.2.3 --clear":               "--clear removes the pin: pass the POLICY alone",
			"app .1.2.3":                      `TAG ".1.2.3" is not an image tag`,
			"app 1.2.3+build":                 `TAG "1.2.3+build" is not an image tag`,
			"app " + strings.Repeat("v", 129): "is not an image tag",
			"nothing 1.2.3":                   "ImagePolicy " + ns + "/nothing not found: check its name and -n",
		} {
			g := NewWithT(t)
			_, _, err := run(t, append([]string{"image", "set", "-n", ns, "--no-wait"}, strings.Fields(args)...)...)
			g.Expect(err).To(MatchError(ContainSubstring(want)), args)
		}
		_, _, err := run(t, "suspend", "image", "policy", "app", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred())
		_, _, err = run(t, "image", "set", "app", "1.2.3", "-n", ns)
		g.Expect(err).To(MatchError(ContainSubstring("is suspended, so it elects nothing")))
	})
}

// TestImageSetWaits pins a policy of a real registry's repository and
// waits for the image policy controller to elect the tag, then asks the
// automations to reconcile, and only then; --clear gives the rule back.
func TestImageSetWaits(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	host := testutil.StartRegistry(t, "", "")
	testutil.PushImage(t, host+"/app", []string{"1.2.3", "1.3.0"})
	createFromYAML(g, &imagev1.ImageRepository{}, fmt.Sprintf(`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: %s}
spec: {image: %s/app, interval: 1h, insecure: true}
`, ns, host))
	createFromYAML(g, &imagev1.ImagePolicy{}, fmt.Sprintf(`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app, namespace: %s}
spec: {imageRepositoryRef: {name: app}, policy: {semver: {range: 1.x}}}
`, ns))
	g.Expect(env.Client.Create(ctx, &imagev1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"},
		Spec: imagev1.ImageUpdateAutomationSpec{Interval: metav1.Duration{Duration: time.Hour},
			SourceRef: imagev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "fleet"},
			GitSpec:   &imagev1.GitSpec{Commit: imagev1.CommitSpec{Author: imagev1.CommitUser{Email: "bot@example.com"}}}}})).To(Succeed())
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	latest := func() string {
		var p imagev1.ImagePolicy
		if env.Client.Get(ctx, key, &p) != nil || p.Status.LatestRef == nil {
			return ""
		}
		return p.Status.LatestRef.Tag
	}
	g.Eventually(latest, time.Minute, 100*time.Millisecond).Should(Equal("1.3.0"))

	out, _, err := run(t, "image", "set", "app", "1.2.3", "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(latest()).To(Equal("1.2.3"))
	g.Expect(out).To(ContainSubstring("✔ ImagePolicy " + ns + "/app elects " + host + "/app:1.2.3: Latest image tag for " + host +
		"/app resolved to 1.2.3 (pinned by the " + imagev1.PinAnnotation + " annotation)\n"))
	g.Expect(out).To(HaveSuffix("✔ ImageUpdateAutomation " + ns + "/apps asked to reconcile\n"))
	g.Expect(requested(g, ns, "apps")).NotTo(BeEmpty())

	_, _, err = run(t, "image", "set", "app", "--clear", "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(latest()).To(Equal("1.3.0"))
}
