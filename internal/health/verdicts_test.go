package health

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// verdictsOf is a Verdicts that knows the health of objects by name, and
// notes what it was asked.
type verdictsOf struct {
	known map[string]ObjectStatus
	mu    sync.Mutex
	asked []string
}

func (v *verdictsOf) Verdict(_ context.Context, ref ObjectRef, _ schema.GroupVersionKind) (ObjectStatus, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.asked = append(v.asked, ref.Name)
	s, ok := v.known[ref.Name]
	return s, ok
}

// TestCheckWithVerdicts: a Checker made WithVerdicts takes the health of an
// object from them when they know it, reads the objects they do not know,
// and never asks them about an object an expression judges.
func TestCheckWithVerdicts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	stuck := createDeployment(t, ns, "stuck", 1)
	zero := createDeployment(t, ns, "zero", 0)
	watched := ObjectStatus{Ref: stuck, Status: Current, Message: "judged by the watch", ResourceVersion: "99", Generation: 7}
	verdicts := &verdictsOf{known: map[string]ObjectStatus{"stuck": watched}}
	checker := newChecker().WithVerdicts(verdicts)

	res, err := checker.Check(ctx, []ObjectRef{stuck, zero})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res[0]).To(Equal(watched), "known to the verdicts: not read")
	g.Expect(res[1].Ref).To(Equal(zero))
	// Read: the version and generation of what was read (which
	// kube-controller-manager may have written since: its status).
	g.Expect(res[1].ResourceVersion).NotTo(BeEmpty())
	g.Expect(res[1].Generation).To(Equal(getDeployment(g, ns, "zero").Generation))
	g.Expect(verdicts.asked).To(ConsistOf("stuck", "zero"))

	verdicts.asked = nil
	res, err = checker.Check(ctx, []ObjectRef{stuck}, Expr{APIVersion: "apps/v1", Kind: "Deployment", Current: "status.?readyReplicas.orValue(0) > 0"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res[0].Status).To(Equal(InProgress), "an expression judges the object as read")
	g.Expect(verdicts.asked).To(BeEmpty())
}
