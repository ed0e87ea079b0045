package metrics

import (
	"bufio"
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

var (
	since   = metav1.NewTime(time.Unix(1700000000, 0))
	updated = metav1.NewTime(time.Unix(1700000100, 0))
)

// served starts serving the objects of ks that objs are, until the test
// ends, and returns their series.
func served(t *testing.T, ks []kinds.Kind, objs ...client.Object) *resources {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	r := &resources{sources: map[*resourceSource]struct{}{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go r.Serve(ctx, c, ks, nil)
	NewWithT(t).Eventually(func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.sources)
	}).Should(Equal(1))
	return r
}

// text returns what r writes, parsed as Prometheus parses it.
func text(g Gomega, r *resources) (string, map[string]*dto.MetricFamily) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	r.writeText(context.Background(), &textWriter{w: w})
	g.Expect(w.Flush()).To(Succeed())
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(b.Bytes()))
	g.Expect(err).NotTo(HaveOccurred(), b.String())
	return b.String(), families
}

func TestResourcesReportEveryObjectOfTheServedKinds(t *testing.T) {
	g := NewWithT(t)
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a", Generation: 1}}
	repo.Spec.URL, repo.Spec.Interval = "https://user:secret@git.example.com/app.git", metav1.Duration{Duration: time.Minute}
	repo.Status.Artifact = &meta.Artifact{Revision: "main@sha1:abc", Size: ptr.To[int64](2048), LastUpdateTime: updated}
	repo.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason,
		LastTransitionTime: since, ObservedGeneration: 1}}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a", Generation: 1}}
	ks.Spec.SourceRef.Name, ks.Spec.Suspend = "app", true
	ks.Spec.Interval = metav1.Duration{Duration: 5 * time.Minute}
	ks.Status.LastAppliedRevision = "main@sha1:abc"
	ks.Status.Conditions = []metav1.Condition{
		{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "BuildFailed", LastTransitionTime: since, ObservedGeneration: 1},
		{Type: meta.ApprovedCondition, Status: metav1.ConditionFalse, Reason: meta.GateClosedReason, Message: "gate 'freeze' is closed",
			LastTransitionTime: updated, ObservedGeneration: 1}}
	r := served(t, kinds.Where(func(k kinds.Kind) bool { return k.Controller != kinds.HelmController }), repo, ks)

	out, families := text(g, r)
	g.Expect(out).To(HavePrefix(`# HELP gotk_resource_info The current state of a GitOps Toolkit resource: its kind, readiness, suspension, revision and source.
# TYPE gotk_resource_info gauge
gotk_resource_info{customresource_group="source.toolkit.fluxcd.io",customresource_version="v1",customresource_kind="GitRepository",kind="GitRepository",exported_namespace="team-a",name="app",ready="True",reason="Succeeded",state="Ready",suspended="false",revision="main@sha1:abc",source_name="",url="https://git.example.com/app.git",chart_name=""} 1
gotk_resource_info{customresource_group="kustomize.toolkit.fluxcd.io",customresource_version="v1",customresource_kind="Kustomization",kind="Kustomization",exported_namespace="team-a",name="app",ready="False",reason="BuildFailed",state="Suspended",suspended="true",revision="main@sha1:abc",source_name="app",url="",chart_name=""} 1
# HELP windlass_resource_ready_transition_timestamp_seconds When the object's Ready condition last changed status, in seconds since the epoch.
# TYPE windlass_resource_ready_transition_timestamp_seconds gauge
windlass_resource_ready_transition_timestamp_seconds{kind="GitRepository",exported_namespace="team-a",name="app"} 1.7e+09
windlass_resource_ready_transition_timestamp_seconds{kind="Kustomization",exported_namespace="team-a",name="app"} 1.7e+09
# HELP windlass_resource_interval_seconds The object's spec.interval, in seconds.
# TYPE windlass_resource_interval_seconds gauge
windlass_resource_interval_seconds{kind="GitRepository",exported_namespace="team-a",name="app"} 60
windlass_resource_interval_seconds{kind="Kustomization",exported_namespace="team-a",name="app"} 300
# HELP windlass_artifact_size_bytes The size of the artifact a source publishes, in bytes.
# TYPE windlass_artifact_size_bytes gauge
windlass_artifact_size_bytes{kind="GitRepository",exported_namespace="team-a",name="app"} 2048
# HELP windlass_artifact_last_update_timestamp_seconds When the source's artifact last changed revision, in seconds since the epoch.
# TYPE windlass_artifact_last_update_timestamp_seconds gauge
windlass_artifact_last_update_timestamp_seconds{kind="GitRepository",exported_namespace="team-a",name="app"} 1.7000001e+09
# HELP windlass_gate_held_since_timestamp_seconds Since when a closed gate holds the object back, in seconds since the epoch.
# TYPE windlass_gate_held_since_timestamp_seconds gauge
windlass_gate_held_since_timestamp_seconds{kind="Kustomization",exported_namespace="team-a",name="app"} 1.7000001e+09
`))
	g.Expect(families).To(HaveKey("windlass_cache_objects"))
	g.Expect(families["windlass_cache_objects"].GetMetric()).To(HaveLen(len(kinds.All)-1), "a count per served kind")
}

func TestResourcesReportNothingOnceTheManagerStops(t *testing.T) {
	g := NewWithT(t)
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		&sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a"}}).Build()
	r := &resources{sources: map[*resourceSource]struct{}{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Serve(ctx, c, kinds.All, nil); close(done) }()
	g.Eventually(func(g Gomega) {
		_, families := text(g, r)
		g.Expect(families["gotk_resource_info"].GetMetric()).To(HaveLen(1))
	}).Should(Succeed())
	cancel()
	<-done
	_, families := text(g, r)
	g.Expect(families["gotk_resource_info"].GetMetric()).To(BeEmpty(), "a standby replica reports nothing")
}

func TestResourcesReportOnlyWhatReportsPasses(t *testing.T) {
	g := NewWithT(t)
	held := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "team-a", Labels: map[string]string{"holder": "me"}}}
	other := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "team-a", Labels: map[string]string{"holder": "you"}}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(held, other).Build()
	r := &resources{sources: map[*resourceSource]struct{}{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ks := kinds.Where(func(k kinds.Kind) bool { return k.Kind == sourcev1.GitRepositoryKind })
	go r.Serve(ctx, c, ks, func(kind string, obj client.Object) bool {
		return kind == sourcev1.GitRepositoryKind && obj.GetLabels()["holder"] == "me"
	})
	g.Eventually(func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.sources)
	}).Should(Equal(1))
	out, families := text(g, r)
	g.Expect(families).To(HaveKey("gotk_resource_info"))
	g.Expect(families["gotk_resource_info"].Metric).To(HaveLen(1), out)
	g.Expect(out).To(ContainSubstring(`name="held"`))
	g.Expect(out).NotTo(ContainSubstring(`name="other"`))
	g.Expect(out).To(MatchRegexp(`windlass_cache_objects\{kind="GitRepository"\} 2`), "the cache still holds both")
}
