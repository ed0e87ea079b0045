package versions

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// TestSeen: what is recorded against a basis is known against it only;
// a later record adds to it and forgets what it lost, another basis starts
// afresh, Forget drops all, and a map Known returned never changes.
func TestSeen(t *testing.T) {
	g := NewWithT(t)
	owner := types.NamespacedName{Namespace: "apps", Name: "web"}
	var s Seen[string]
	g.Expect(s.Known(owner, "v1")).To(BeEmpty())

	s.Record(owner, "v1", map[string]string{"a": "5", "b": "6"}, nil)
	first := s.Known(owner, "v1")
	g.Expect(first).To(Equal(map[string]string{"a": "5", "b": "6"}))
	g.Expect(s.Known(owner, "v2")).To(BeEmpty(), "judged against another basis")

	s.Record(owner, "v1", map[string]string{"c": "7"}, []string{"a"})
	g.Expect(s.Known(owner, "v1")).To(Equal(map[string]string{"b": "6", "c": "7"}))
	g.Expect(first).To(Equal(map[string]string{"a": "5", "b": "6"}), "a map Known returned is never changed")

	s.Record(owner, "v2", map[string]string{"d": "8"}, nil)
	g.Expect(s.Known(owner, "v2")).To(Equal(map[string]string{"d": "8"}), "a new basis forgets the old")
	g.Expect(s.Known(owner, "v1")).To(BeEmpty())

	other := types.NamespacedName{Namespace: "apps", Name: "db"}
	s.Record(other, "", map[string]string{"e": "9"}, nil)
	s.Forget(owner)
	g.Expect(s.Known(owner, "v2")).To(BeEmpty())
	g.Expect(s.Known(other, "")).To(HaveKeyWithValue("e", "9"), "other owners are left alone")
}
