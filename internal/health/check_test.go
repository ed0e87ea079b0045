package health

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCheck(t *testing.T) {
	ns := env.CreateNamespace(t)
	createDeployment(t, ns, "zero", 0)
	createDeployment(t, ns, "stuck", 1)
	createWidget(t, widgetV1, ns, "stalled", stalled("the widget broke"))
	createWidget(t, widgetV1, ns, "ready", map[string]any{"conditions": []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "Done", "message": "all good",
		"lastTransitionTime": "2024-01-01T00:00:00Z",
	}}})
	createWidget(t, widgetV1, ns, "reconciling", map[string]any{"conditions": []any{map[string]any{
		"type": "Reconciling", "status": "True", "reason": "Working", "message": "still working",
		"lastTransitionTime": "2024-01-01T00:00:00Z",
	}}})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: ns}}
	NewWithT(t).Expect(env.Client.Create(context.Background(), cm)).To(Succeed())

	tests := []struct {
		name        string
		ref         ObjectRef
		wantStatus  Status
		wantMessage string
		wantRef     ObjectRef // when it differs from ref
	}{
		{name: "deployment scaled to zero", ref: deploymentRef(ns, "zero"), wantStatus: Current, wantMessage: "Deployment is available"},
		{name: "deployment that cannot run", ref: deploymentRef(ns, "stuck"), wantStatus: InProgress, wantMessage: "Available: 0/1"},
		{name: "missing deployment", ref: deploymentRef(ns, "missing"), wantStatus: NotFound, wantMessage: "object not found"},
		{name: "stalled custom resource", ref: ObjectRef{APIVersion: widgetV1, Kind: widgetKind, Namespace: ns, Name: "stalled"}, wantStatus: Failed, wantMessage: "the widget broke"},
		{name: "ready custom resource", ref: ObjectRef{APIVersion: widgetV1, Kind: widgetKind, Namespace: ns, Name: "ready"}, wantStatus: Current, wantMessage: "Resource is Ready"},
		{name: "reconciling custom resource", ref: ObjectRef{APIVersion: widgetV1, Kind: widgetKind, Namespace: ns, Name: "reconciling"}, wantStatus: InProgress, wantMessage: "still working"},
		{name: "custom resource read in another version", ref: ObjectRef{APIVersion: widgetV2, Kind: widgetKind, Namespace: ns, Name: "stalled"}, wantStatus: Failed, wantMessage: "the widget broke"},
		{name: "config map", ref: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "config"}, wantStatus: Current},
		{name: "unknown kind", ref: ObjectRef{APIVersion: "nothing.windlass.dev/v1", Kind: "Nothing", Namespace: ns, Name: "x"}, wantStatus: NotFound, wantMessage: "no kind Nothing in nothing.windlass.dev/v1"},
		{name: "cluster-scoped object", ref: ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: ns}, wantStatus: Current},
		{name: "namespace of a cluster-scoped object is ignored", ref: ObjectRef{APIVersion: "v1", Kind: "Namespace", Namespace: "ignored", Name: ns},
			wantStatus: Current, wantRef: ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: ns}},
	}
	checker := newChecker()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			wantRef := tt.ref
			if tt.wantRef != (ObjectRef{}) {
				wantRef = tt.wantRef
			}
			// The controllers write statuses asynchronously: wait for the
			// expected one.
			g.Eventually(func(g Gomega) {
				res, err := checker.Check(context.Background(), []ObjectRef{tt.ref})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(res).To(HaveLen(1))
				g.Expect(res[0].Ref).To(Equal(wantRef))
				g.Expect(res[0].Status).To(Equal(tt.wantStatus), res[0].Message)
				g.Expect(res[0].Message).To(ContainSubstring(tt.wantMessage))
			}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		})
	}

	t.Run("many objects keep their order", func(t *testing.T) {
		g := NewWithT(t)
		var refs []ObjectRef
		for range 5 {
			for _, tt := range tests {
				refs = append(refs, tt.ref)
			}
		}
		g.Eventually(func(g Gomega) {
			res, err := checker.Check(context.Background(), refs)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res).To(HaveLen(len(refs)))
			for i, s := range res {
				g.Expect(s.Ref.Name).To(Equal(refs[i].Name))
				g.Expect(s.Status).To(Equal(tests[i%len(tests)].wantStatus), s.String())
			}
			g.Expect(res.AllCurrent()).To(BeFalse())
			g.Expect(res.Failed()).To(HaveLen(2 * 5))
			g.Expect(res.NotReady()).To(HaveLen(6 * 5))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	})
}

func TestCheckInvalidRefs(t *testing.T) {
	tests := []struct {
		name    string
		ref     ObjectRef
		wantErr string
	}{
		{name: "bad apiVersion", ref: ObjectRef{APIVersion: "a/b/c", Kind: "Deployment", Namespace: "ns", Name: "x"}, wantErr: "invalid apiVersion"},
		{name: "no apiVersion", ref: ObjectRef{Kind: "Deployment", Namespace: "ns", Name: "x"}, wantErr: "has no version"},
		{name: "no kind", ref: ObjectRef{APIVersion: "apps/v1", Namespace: "ns", Name: "x"}, wantErr: "kind and name are required"},
		{name: "no name", ref: ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns"}, wantErr: "kind and name are required"},
		{name: "namespaced without namespace", ref: ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "x"}, wantErr: "needs a namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			refs := []ObjectRef{deploymentRef("default", "fine"), tt.ref}
			_, err := newChecker().Check(context.Background(), refs)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestObjectStatusString(t *testing.T) {
	tests := []struct {
		in   ObjectStatus
		want string
	}{
		{in: ObjectStatus{Ref: deploymentRef("ns", "app"), Status: InProgress, Message: "Available: 0/1"},
			want: "Deployment/ns/app status: 'InProgress': Available: 0/1"},
		{in: ObjectStatus{Ref: ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "ns"}, Status: Current},
			want: "Namespace/ns status: 'Current'"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			NewWithT(t).Expect(tt.in.String()).To(Equal(tt.want))
		})
	}
}
