package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/event"
)

// recordEvent creates a core/v1 Event about obj, as an older recorder
// would, last seen ago before now.
func recordEvent(g *WithT, obj client.Object, apiVersion, kind, eventType, reason, message string, ago time.Duration) {
	at := metav1.NewTime(time.Now().Add(-ago))
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), GenerateName: obj.GetName() + "."},
		InvolvedObject: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: obj.GetNamespace(),
			Name: obj.GetName(), UID: obj.GetUID()},
		Type: eventType, Reason: reason, Message: message, FirstTimestamp: at, LastTimestamp: at, Count: 1,
		Source: corev1.EventSource{Component: "windlass-test"},
	}
	g.Expect(env.Client.Create(context.Background(), e)).To(Succeed())
}

// eventScenario creates, in a new namespace, the GitRepositories app and
// infra, the Kustomization app (from app) and other (from infra), events
// about each and about a ConfigMap; and one event recorded by the
// controllers' own recorder through the events.k8s.io API, last.
func eventScenario(t *testing.T, g *WithT) string {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	interval := metav1.Duration{Duration: time.Minute}
	git := func(name string) *sourcev1.GitRepository {
		obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/" + name + ".git", Interval: interval}}
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
		return obj
	}
	ks := func(name, source string) *kustomizev1.Kustomization {
		obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: kustomizev1.KustomizationSpec{Interval: interval, Prune: true,
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: source}}}
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
		return obj
	}
	gitApp, gitInfra, ksApp, ksOther := git("app"), git("infra"), ks("app", "app"), ks("other", "infra")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())

	gitV, ksV := sourcev1.GroupVersion.String(), kustomizev1.GroupVersion.String()
	recordEvent(g, gitApp, gitV, sourcev1.GitRepositoryKind, "Normal", "NewArtifact", "stored artifact for revision 'main@sha1:1111'", 5*time.Minute)
	recordEvent(g, ksApp, ksV, kustomizev1.KustomizationKind, "Normal", "ReconciliationSucceeded",
		"Applied revision: main@sha1:1111\nConfigMap/demo/app created", 4*time.Minute)
	recordEvent(g, ksOther, ksV, kustomizev1.KustomizationKind, "Warning", "BuildFailed", "kustomize build failed: missing resource", 3*time.Minute)
	recordEvent(g, gitInfra, gitV, sourcev1.GitRepositoryKind, "Warning", "GitOperationFailed", "failed to checkout 'main'", 2*time.Minute)
	recordEvent(g, cm, "v1", "ConfigMap", "Normal", "Updated", "not a Windlass object", time.Minute)

	// The controllers' recorder, with a URL credential it must redact.
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kubernetes.NewForConfigOrDie(env.Config).EventsV1()})
	stop := make(chan struct{})
	broadcaster.StartRecordingToSink(stop)
	t.Cleanup(func() { close(stop); broadcaster.Shutdown() })
	recorder := &event.Recorder{Kubernetes: broadcaster.NewRecorder(env.Scheme, "kustomize-controller")}
	recorder.Warning(ctx, ksApp, "HealthCheckFailed", "main@sha1:1111", "health check failed after 30s: fetching https://user:s3cret@example.com failed")
	g.Eventually(func() bool {
		var list corev1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{"reason": "HealthCheckFailed"})).To(Succeed())
		return len(list.Items) == 1
	}, 10*time.Second).Should(BeTrue())
	return ns
}

func TestEvents(t *testing.T) {
	g := NewWithT(t)
	ns := eventScenario(t, g)
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{name: "a namespace", args: []string{"events", "-n", ns}, golden: "events-namespace"},
		{name: "a Kustomization and its source", args: []string{"events", "-n", ns, "--for", "Kustomization/app"}, golden: "events-for-kustomization"},
		{name: "by an alias", args: []string{"events", "-n", ns, "--for", "ks/app"}, golden: "events-for-kustomization"},
		{name: "in any case", args: []string{"events", "-n", ns, "--for", "KUSTOMIZATION/app"}, golden: "events-for-kustomization"},
		{name: "a source", args: []string{"events", "-n", ns, "--for", "GitRepository/infra"}, golden: "events-for-source"},
		{name: "warnings", args: []string{"events", "-n", ns, "--types", "warning"}, golden: "events-warnings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(t, tt.args...)
			g.Expect(err).NotTo(HaveOccurred())
			expectGolden(t, g, tt.golden, out)
			g.Expect(out).NotTo(ContainSubstring("s3cret"))
		})
	}

	t.Run("every namespace", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "events", "-A")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(MatchRegexp(`^NAMESPACE\s+LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n`))
		g.Expect(out).To(MatchRegexp(`\n` + ns + `\s+10h\s+Warning\s+BuildFailed\s+Kustomization/other\s+kustomize build failed: missing resource\n`))
		g.Expect(out).NotTo(ContainSubstring("ConfigMap/app"))
		g.Expect(strings.Index(out, "NewArtifact")).To(BeNumerically("<", strings.Index(out, "HealthCheckFailed")), "oldest first")
	})
	t.Run("a namespace without events says so", func(t *testing.T) {
		g := NewWithT(t)
		empty := env.CreateNamespace(t)
		out, errOut, err := run(t, "events", "-n", empty)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(BeEmpty())
		g.Expect(errOut).To(Equal("no events found in namespace " + empty + "\n"))
	})
	t.Run("an object that is gone shows its own events", func(t *testing.T) {
		g := NewWithT(t)
		out, errOut, err := run(t, "events", "-n", ns, "--for", "ks/gone")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(BeEmpty())
		g.Expect(errOut).To(ContainSubstring("Kustomization " + ns + "/gone not found: showing its events only"))
	})
	t.Run("bad flags are one-line errors", func(t *testing.T) {
		for args, want := range map[string]string{
			"--for Foo/app":     `unknown kind "Foo": use one of GitRepository (gitrepository, gitrepositories), OCIRepository (ocirepository, ocirepositories, ocirepo), Bucket (bucket, buckets), HelmRepository (helmrepository, helmrepositories, helmrepo)`,
			"--for app":         `invalid --for "app": write KIND/NAME, e.g. Kustomization/app`,
			"--types Error":     `invalid --types "Error": choose Normal, Warning or both`,
			"--for ks/app -A":   "--for names an object of one namespace: use -n, not -A",
			"--for source/app/": `unknown kind "source"`,
		} {
			g := NewWithT(t)
			_, _, err := run(t, append([]string{"events", "-n", ns}, strings.Fields(args)...)...)
			g.Expect(err).To(MatchError(ContainSubstring(want)), args)
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
		}
	})
}

// TestEventsWatch: --watch prints the table, then a row for each new
// event, and ends without an error when its context does.
func TestEventsWatch(t *testing.T) {
	g := NewWithT(t)
	ns := eventScenario(t, g)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now = func() time.Time { return time.Now().Add(10 * time.Hour) }
	t.Cleanup(func() { now = time.Now })
	var out, errOut syncBuffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs([]string{"events", "-n", ns, "--for", "ks/app", "--watch", "--kubeconfig", kubeconfig})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	g.Eventually(out.String).Should(ContainSubstring("HealthCheckFailed"))
	g.Expect(out.String()).To(HavePrefix("LAST SEEN"))
	g.Consistently(out.String, time.Second).Should(HaveLen(len(out.String())), "nothing printed twice while nothing happens")

	var source sourcev1.GitRepository
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &source)).To(Succeed())
	recordEvent(g, &source, sourcev1.GroupVersion.String(), sourcev1.GitRepositoryKind, "Warning", "AuthenticationFailed", "authentication required", 0)
	var other kustomizev1.Kustomization
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "other"}, &other)).To(Succeed())
	recordEvent(g, &other, kustomizev1.GroupVersion.String(), kustomizev1.KustomizationKind, "Warning", "NotOurs", "another object", 0)
	g.Eventually(out.String).Should(MatchRegexp(`\n10h\s+Warning\s+AuthenticationFailed\s+GitRepository/app\s+authentication required\n$`))
	g.Consistently(out.String, time.Second).ShouldNot(ContainSubstring("NotOurs"))
	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
}
