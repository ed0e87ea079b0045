package image

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/internal/event"
)

// sinkOf keeps the messages of the events it is handed.
type sinkOf struct {
	mu       sync.Mutex
	messages []string
}

func (s *sinkOf) Forward(_ context.Context, _ client.Object, e event.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages = append(s.messages, e.Message)
}

// TestRecordAnnouncesEachElectionOnce: the record step announces an image
// when the policy's status does not hold it yet, once: a run that reads a
// stale copy of the policy (the status the run before wrote not yet in the
// cache) writes the same status and announces nothing; an election that
// moves back announces again, and so does one after the policy is
// forgotten.
func TestRecordAnnouncesEachElectionOnce(t *testing.T) {
	g := NewWithT(t)
	sink := &sinkOf{}
	r := &ImagePolicyReconciler{Events: &event.Recorder{Sink: sink}}
	v1 := imagev1.ImageRef{Name: "reg/app", Tag: "1.0.0"}
	v2 := imagev1.ImageRef{Name: "reg/app", Tag: "2.0.0"}
	policy := func(latest *imagev1.ImageRef) *imagev1.ImagePolicy {
		return &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"},
			Status: imagev1.ImagePolicyStatus{LatestRef: latest}}
	}
	for _, step := range []struct {
		name     string
		cached   *imagev1.ImageRef
		elected  imagev1.ImageRef
		forget   bool
		announce string
	}{
		{name: "first election", elected: v1, announce: "Latest image tag for reg/app resolved to 1.0.0"},
		{name: "stale copy, same election", elected: v1},
		{name: "status holds it", cached: &v1, elected: v1},
		{name: "new tag", cached: &v1, elected: v2, announce: "Latest image tag for reg/app updated from 1.0.0 to 2.0.0"},
		{name: "stale copy of the new tag", cached: &v1, elected: v2},
		{name: "back to the old tag", cached: &v2, elected: v1, announce: "Latest image tag for reg/app updated from 2.0.0 to 1.0.0"},
		{name: "forgotten, then seen again", forget: true, cached: &v2, elected: v1, announce: "Latest image tag for reg/app updated from 2.0.0 to 1.0.0"},
	} {
		if step.forget {
			r.policyKind().Forget(types.NamespacedName{Namespace: "ns", Name: "app"})
		}
		sink.messages = nil
		obj := policy(step.cached)
		_, err := r.record(context.Background(), obj, &policyScope{latest: step.elected})
		g.Expect(err).NotTo(HaveOccurred(), step.name)
		g.Expect(obj.Status.LatestRef).To(Equal(&step.elected), step.name)
		if step.announce == "" {
			g.Expect(sink.messages).To(BeEmpty(), step.name)
		} else {
			g.Expect(sink.messages).To(Equal([]string{step.announce}), step.name)
		}
	}
}
