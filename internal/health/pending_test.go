package health

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/windlass-dev/windlass/internal/versions"
)

// healthAt is a Watch that holds the health of objects by name.
type healthAt map[string]versions.Health

func (h healthAt) Health(_ context.Context, _ schema.GroupVersionKind, _, name string) (versions.Health, bool) {
	v, ok := h[name]
	return v, ok
}

// TestPendingVerdicts checks when the watch's health of an object stands
// for a read: only for an object the last check found, held by the watch
// at that check's generation or a later one.
func TestPendingVerdicts(t *testing.T) {
	ref := func(name string) ObjectRef {
		return ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: name}
	}
	last := []ObjectStatus{
		{Ref: ref("web"), Status: InProgress, ResourceVersion: "10", Generation: 2},
		{Ref: ref("missing"), Status: NotFound},
	}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	tests := []struct {
		name   string
		ref    ObjectRef
		watch  healthAt
		want   ObjectStatus
		wantOK bool
	}{
		{name: "rolled out since", ref: ref("web"),
			watch:  healthAt{"web": {ResourceVersion: "12", Generation: 2, Status: "Current", Message: "Deployment is available"}},
			want:   ObjectStatus{Ref: ref("web"), Status: Current, Message: "Deployment is available", ResourceVersion: "12", Generation: 2},
			wantOK: true},
		{name: "still rolling out", ref: ref("web"),
			watch:  healthAt{"web": {ResourceVersion: "10", Generation: 2, Status: "InProgress", Message: "Replicas: 0/1"}},
			want:   ObjectStatus{Ref: ref("web"), Status: InProgress, Message: "Replicas: 0/1", ResourceVersion: "10", Generation: 2},
			wantOK: true},
		{name: "a later generation", ref: ref("web"),
			watch:  healthAt{"web": {ResourceVersion: "15", Generation: 3, Status: "InProgress"}},
			want:   ObjectStatus{Ref: ref("web"), Status: InProgress, ResourceVersion: "15", Generation: 3},
			wantOK: true},
		{name: "a watch behind the apply the last check saw", ref: ref("web"),
			watch: healthAt{"web": {ResourceVersion: "8", Generation: 1, Status: "Current"}}},
		{name: "not held by the watch", ref: ref("web"), watch: healthAt{}},
		{name: "not found by the last check", ref: ref("missing"),
			watch: healthAt{"missing": {ResourceVersion: "20", Generation: 1, Status: "Current"}}},
		{name: "not in the last check", ref: ref("other"),
			watch: healthAt{"other": {ResourceVersion: "20", Generation: 1, Status: "Current"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			verdicts := NewPending(tt.watch, last)
			got, ok := verdicts.Verdict(context.Background(), tt.ref, gvk)
			g.Expect(ok).To(Equal(tt.wantOK))
			g.Expect(got).To(Equal(tt.want))
			if ok {
				g.Expect(verdicts.Answered()).To(HaveKeyWithValue(tt.ref, tt.watch[tt.ref.Name]), "kept for refreshVersions")
			} else {
				g.Expect(verdicts.Answered()).To(BeEmpty())
			}
		})
	}
}
