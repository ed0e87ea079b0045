package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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

// served starts serving the objects of ks that objs are, on a registry of
// its own, until the test ends.
func served(t *testing.T, ks []kinds.Kind, objs ...client.Object) *prometheus.Registry {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	r := &resources{sources: map[*resourceSource]struct{}{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go r.Serve(ctx, c, ks)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r)
	NewWithT(t).Eventually(func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.sources)
	}).Should(Equal(1))
	return reg
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
	reg := served(t, kinds.Where(func(k kinds.Kind) bool { return k.Controller != kinds.HelmController }), repo, ks)

	g.Expect(testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP gotk_resource_info The current state of a GitOps Toolkit resource: its kind, readiness, suspension, revision and source.
# TYPE gotk_resource_info gauge
gotk_resource_info{chart_name="",customresource_group="kustomize.toolkit.fluxcd.io",customresource_kind="Kustomization",customresource_version="v1",exported_namespace="team-a",kind="Kustomization",name="app",ready="False",reason="BuildFailed",revision="main@sha1:abc",source_name="app",state="Suspended",suspended="true",url=""} 1
gotk_resource_info{chart_name="",customresource_group="source.toolkit.fluxcd.io",customresource_kind="GitRepository",customresource_version="v1",exported_namespace="team-a",kind="GitRepository",name="app",ready="True",reason="Succeeded",revision="main@sha1:abc",source_name="",state="Ready",suspended="false",url="https://git.example.com/app.git"} 1
# HELP windlass_artifact_size_bytes The size of the artifact a source publishes, in bytes.
# TYPE windlass_artifact_size_bytes gauge
windlass_artifact_size_bytes{exported_namespace="team-a",kind="GitRepository",name="app"} 2048
# HELP windlass_artifact_last_update_timestamp_seconds When the source's artifact last changed revision, in seconds since the epoch.
# TYPE windlass_artifact_last_update_timestamp_seconds gauge
windlass_artifact_last_update_timestamp_seconds{exported_namespace="team-a",kind="GitRepository",name="app"} 1.7000001e+09
# HELP windlass_gate_held_since_timestamp_seconds Since when a closed gate holds the object back, in seconds since the epoch.
# TYPE windlass_gate_held_since_timestamp_seconds gauge
windlass_gate_held_since_timestamp_seconds{exported_namespace="team-a",kind="Kustomization",name="app"} 1.7000001e+09
# HELP windlass_resource_interval_seconds The object's spec.interval, in seconds.
# TYPE windlass_resource_interval_seconds gauge
windlass_resource_interval_seconds{exported_namespace="team-a",kind="GitRepository",name="app"} 60
windlass_resource_interval_seconds{exported_namespace="team-a",kind="Kustomization",name="app"} 300
# HELP windlass_resource_ready_transition_timestamp_seconds When the object's Ready condition last changed status, in seconds since the epoch.
# TYPE windlass_resource_ready_transition_timestamp_seconds gauge
windlass_resource_ready_transition_timestamp_seconds{exported_namespace="team-a",kind="GitRepository",name="app"} 1.7e+09
windlass_resource_ready_transition_timestamp_seconds{exported_namespace="team-a",kind="Kustomization",name="app"} 1.7e+09
`), "gotk_resource_info", "windlass_artifact_size_bytes", "windlass_artifact_last_update_timestamp_seconds",
		"windlass_gate_held_since_timestamp_seconds", "windlass_resource_interval_seconds",
		"windlass_resource_ready_transition_timestamp_seconds")).To(Succeed())
	g.Expect(testutil.GatherAndCount(reg, "windlass_cache_objects")).To(Equal(len(kinds.All)-1), "a count per served kind")
}

func TestResourcesReportNothingOnceTheManagerStops(t *testing.T) {
	g := NewWithT(t)
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		&sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a"}}).Build()
	r := &resources{sources: map[*resourceSource]struct{}{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Serve(ctx, c, kinds.All); close(done) }()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r)
	g.Eventually(func() (int, error) { return testutil.GatherAndCount(reg, "gotk_resource_info") }).Should(Equal(1))
	cancel()
	<-done
	g.Expect(testutil.GatherAndCount(reg, "gotk_resource_info")).To(BeZero(), "a standby replica reports nothing")
}
