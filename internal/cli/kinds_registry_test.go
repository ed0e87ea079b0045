package cli

import (
	"io"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/kinds"
)

// TestEveryKindHasItsVerbs: every kind of the registry is on the command
// line under its words and each alias, for every verb that applies to it
// (the reconciliation verbs to the kinds with a status), so that a kind
// added to the registry has its verbs or fails here.
func TestEveryKindHasItsVerbs(t *testing.T) {
	root := NewRootCommand(io.Discard, io.Discard)
	all := []string{"get", "export", "delete"}
	withStatus := []string{"reconcile", "suspend", "resume"}
	for _, k := range kinds.All {
		verbs := all
		if !k.Static {
			verbs = append(append([]string(nil), all...), withStatus...)
		}
		for _, verb := range verbs {
			names := append([]string{k.Words[len(k.Words)-1]}, k.Aliases...)
			for _, name := range names {
				path := append(append([]string{verb}, k.Words[:len(k.Words)-1]...), name)
				t.Run(k.Kind+" "+verb+" "+name, func(t *testing.T) {
					g := NewWithT(t)
					cmd, rest, err := root.Find(path)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(rest).To(BeEmpty(), "windlass %v resolves to a command", path)
					g.Expect(cmd.Parent().Name()).NotTo(Equal("windlass"), "windlass %v is a command of the kind, not of the verb", path)
					g.Expect(cmd.Name()).To(Equal(k.Words[len(k.Words)-1]))
				})
			}
		}
	}
}

// TestObjectKindsFollowTheRegistry: the command line's kinds are the
// registry's, in its order, each with its types and, for a kind with a
// status, the request it last handled.
func TestObjectKindsFollowTheRegistry(t *testing.T) {
	g := NewWithT(t)
	g.Expect(objectKinds).To(HaveLen(len(kinds.All)))
	for i, k := range kinds.All {
		ok := objectKinds[i]
		g.Expect(ok.kind).To(Equal(k.Kind))
		g.Expect(ok.new().GetObjectKind()).NotTo(BeNil())
		list, items := ok.newList()
		g.Expect(list).NotTo(BeNil())
		g.Expect(items()).To(BeEmpty())
		g.Expect(ok.lastHandled == nil).To(Equal(k.Static), k.Kind)
		g.Expect(ok.dependsOn == nil).To(Equal(k.DependsOn == nil), k.Kind)
		g.Expect(ok.revision).NotTo(BeNil(), k.Kind)
	}
}
