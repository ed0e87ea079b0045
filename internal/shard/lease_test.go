package shard

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestReadLease(t *testing.T) {
	renewed := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	lease := func(name, ring, holder string, change func(*coordinationv1.Lease)) *coordinationv1.Lease {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "flux-system"},
			Spec: coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(renewed)),
				LeaseDurationSeconds: ptr.To(int32(15))},
		}
		if ring != "" {
			l.Labels = map[string]string{RingLabel: ring}
		}
		if holder != "" {
			l.Spec.HolderIdentity = ptr.To(holder)
		}
		if change != nil {
			change(l)
		}
		return l
	}
	tests := []struct {
		name   string
		lease  *coordinationv1.Lease
		want   MemberLease
		member bool
	}{
		{name: "a member's", lease: lease("windlass-shard-windlass-0", "windlass", "windlass-0", nil),
			want:   MemberLease{Member: "windlass-0", Ring: "windlass", Renewed: renewed, Duration: 15 * time.Second},
			member: true},
		{name: "never renewed", lease: lease("windlass-shard-windlass-0", "windlass-kustomize", "windlass-0",
			func(l *coordinationv1.Lease) { l.Spec.RenewTime = nil }),
			want: MemberLease{Member: "windlass-0", Ring: "windlass-kustomize", Duration: 15 * time.Second}, member: true},
		{name: "without a ring", lease: lease("windlass-shard-windlass-0", "", "windlass-0", nil)},
		{name: "without a holder", lease: lease("windlass-shard-windlass-0", "windlass", "", nil)},
		{name: "named after another holder", lease: lease("windlass-shard-windlass-1", "windlass", "windlass-0", nil)},
		{name: "a leader election's", lease: lease("windlass-leader-election", "windlass", "windlass-0", nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := ReadLease(tt.lease)
			g.Expect(ok).To(Equal(tt.member))
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestMemberLeaseLiveAt(t *testing.T) {
	g := NewWithT(t)
	renewed := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m := MemberLease{Member: "windlass-0", Ring: "windlass", Renewed: renewed, Duration: 15 * time.Second}
	g.Expect(m.Expires()).To(Equal(renewed.Add(15 * time.Second)))
	g.Expect(m.LiveAt(renewed)).To(BeTrue())
	g.Expect(m.LiveAt(renewed.Add(14 * time.Second))).To(BeTrue())
	g.Expect(m.LiveAt(renewed.Add(15*time.Second))).To(BeFalse(), "expired at renew time + duration")
	g.Expect(m.LiveAt(renewed.Add(time.Hour))).To(BeFalse())

	never := MemberLease{Member: "windlass-1", Ring: "windlass", Duration: 15 * time.Second}
	g.Expect(never.Expires().IsZero()).To(BeTrue())
	g.Expect(never.LiveAt(renewed)).To(BeFalse(), "a Lease never renewed is not live")
}
