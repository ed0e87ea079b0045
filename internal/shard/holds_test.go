package shard

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// newKustomization creates a Kustomization called name in ns, held by
// holder (none when empty).
func newKustomization(g Gomega, ns, name, holder string) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"}}}
	if holder != "" {
		ks.Labels = map[string]string{HolderLabel: holder}
	}
	g.Expect(env.Client.Create(context.Background(), ks)).To(Succeed())
	return ks
}

func TestHolds(t *testing.T) {
	tests := []struct {
		name       string
		holder     string
		owner      string
		ready      bool
		released   bool
		wantHeld   bool
		wantHolder string
	}{
		{name: "nobody's", holder: "", owner: "me", ready: true, wantHolder: ""},
		{name: "another's", holder: "other", owner: "me", ready: true, wantHolder: "other"},
		{name: "mine, owned", holder: "me", owner: "me", ready: true, wantHeld: true, wantHolder: "me"},
		{name: "mine, owned by another: handed over", holder: "me", owner: "other", ready: true, wantHolder: "other"},
		{name: "mine, before the ring is known", holder: "me", owner: "other", wantHeld: true, wantHolder: "me"},
		{name: "mine in a stale cache, handed over already", holder: "me", owner: "me", ready: true, released: true, wantHolder: "me"},
	}
	ring := NewRing("me", "other")
	ns := env.CreateNamespace(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ks := newKustomization(g, ns, nameOwnedBy(g, ring, ns, tt.owner), tt.holder)
			m := &Member{opts: Options{Name: "me", By: ByObject}, released: map[types.UID]time.Time{}}
			if tt.ready {
				m.ring, m.ready = ring, true
			}
			if tt.released {
				m.released[ks.UID] = time.Now()
			}
			held, err := m.Holds(context.Background(), env.Client, "Kustomization", ks.DeepCopy())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(held).To(Equal(tt.wantHeld))
			stored := &kustomizev1.Kustomization{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), stored)).To(Succeed())
			g.Expect(stored.Labels[HolderLabel]).To(Equal(tt.wantHolder))
			_, released := m.released[ks.UID]
			g.Expect(released).To(Equal(tt.released || tt.wantHolder == "other" && tt.holder == "me"), "released")
		})
	}
}

// taken are the names nameOwnedBy gave out.
var taken = map[string]bool{}

// nameOwnedBy returns the name of a new object of namespace ns that ring
// gives to member, hashed by object.
func nameOwnedBy(g Gomega, ring Ring, ns, member string) string {
	for i := range 1000 {
		name := fmt.Sprintf("app-%d", i)
		if !taken[ns+"/"+name] && ring.Owner(ns+"/"+name) == member {
			taken[ns+"/"+name] = true
			return name
		}
	}
	g.Expect(false).To(BeTrue(), "no name owned by %s", member)
	return ""
}

func TestHoldsHandsOverOnlyWhatItHolds(t *testing.T) {
	g := NewWithT(t)
	ring := NewRing("me", "other")
	ns := env.CreateNamespace(t)
	ks := newKustomization(g, ns, nameOwnedBy(g, ring, ns, "other"), "third")
	m := &Member{opts: Options{Name: "me", By: ByObject}, released: map[types.UID]time.Time{}, ring: ring, ready: true}
	stale := ks.DeepCopy()
	stale.Labels[HolderLabel] = "me"
	held, err := m.Holds(context.Background(), env.Client, "Kustomization", stale)
	g.Expect(err).NotTo(HaveOccurred(), "a failed handover is not an error: the object is no longer ours")
	g.Expect(held).To(BeFalse())
	stored := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), stored)).To(Succeed())
	g.Expect(stored.Labels[HolderLabel]).To(Equal("third"), "the handover is conditional on holding the object")
}

func TestPredicates(t *testing.T) {
	g := NewWithT(t)
	m := &Member{opts: Options{Name: "me"}}
	at := func(holder, key string) *kustomizev1.Kustomization {
		return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{HolderLabel: holder, KeyLabel: key}}}
	}
	mine, moves := m.Mine(), m.Moves()
	g.Expect(mine.Create(event.CreateEvent{Object: at("me", "")})).To(BeTrue())
	g.Expect(mine.Create(event.CreateEvent{Object: at("other", "")})).To(BeFalse())
	g.Expect(mine.Update(event.UpdateEvent{ObjectOld: at("me", ""), ObjectNew: at("other", "")})).To(BeTrue(), "handed away")
	g.Expect(mine.Update(event.UpdateEvent{ObjectOld: at("", ""), ObjectNew: at("me", "")})).To(BeTrue(), "claimed")
	g.Expect(mine.Delete(event.DeleteEvent{Object: at("other", "")})).To(BeFalse())
	g.Expect(moves.Update(event.UpdateEvent{ObjectOld: at("", ""), ObjectNew: at("me", "")})).To(BeTrue())
	g.Expect(moves.Update(event.UpdateEvent{ObjectOld: at("me", "a"), ObjectNew: at("me", "b")})).To(BeTrue())
	g.Expect(moves.Update(event.UpdateEvent{ObjectOld: at("me", "a"), ObjectNew: at("me", "a")})).To(BeFalse())
}

func TestKey(t *testing.T) {
	g := NewWithT(t)
	obj := &metav1.ObjectMeta{Namespace: "team-a", Name: "app"}
	g.Expect(Key(obj, ByNamespace)).To(Equal("team-a"))
	g.Expect(Key(obj, ByObject)).To(Equal("team-a/app"))
	obj.Labels = map[string]string{KeyLabel: "shard1"}
	g.Expect(Key(obj, ByNamespace)).To(Equal("key:shard1"))
	g.Expect(Key(obj, ByObject)).To(Equal("key:shard1"))
	_, err := ParseBy("kind")
	g.Expect(err).To(MatchError(ContainSubstring(`unknown sharding "kind"`)))
	g.Expect(CheckMemberName("windlass-7d9f8c6b5-x2k4j")).To(Succeed())
	g.Expect(CheckMemberName("")).To(MatchError(ContainSubstring("empty")))
	g.Expect(CheckMemberName("Upper_Case.ok")).To(MatchError(ContainSubstring("Lease name")))
}

func TestReports(t *testing.T) {
	g := NewWithT(t)
	ring := NewRing("me", "other")
	m := &Member{opts: Options{Name: "me", By: ByObject}, ring: ring, ready: true}
	obj := func(name, holder string) *kustomizev1.Kustomization {
		o := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if holder != "" {
			o.Labels = map[string]string{HolderLabel: holder}
		}
		return o
	}
	g.Expect(m.Reports("Kustomization", obj("a", "me"))).To(BeTrue())
	g.Expect(m.Reports("Kustomization", obj("a", "other"))).To(BeFalse())
	g.Expect(m.Reports("Kustomization", obj("a", ""))).To(BeFalse(), "nobody holds it yet")
	mine, others := nameOwnedBy(g, ring, "ns", "me"), nameOwnedBy(g, ring, "ns", "other")
	g.Expect(m.Reports("Alert", obj(mine, ""))).To(BeTrue(), "an Alert that the ring gives to this member")
	g.Expect(m.Reports("Alert", obj(others, ""))).To(BeFalse())

	// Owns asks the ring only, whoever holds the object now.
	g.Expect(m.Owns("GitRepository", obj(mine, "gone"))).To(BeTrue(), "the ring gives it to this member, which will claim it")
	g.Expect(m.Owns("GitRepository", obj(others, "me"))).To(BeFalse(), "held here, but the ring gives it to another")
}

func TestImageReflectorKindsAreHeldAsOne(t *testing.T) {
	g := NewWithT(t)
	ring := NewRing("a", "b", "c")
	m := &Member{opts: Options{Name: "a", By: ByObject}, ring: ring, ready: true}
	owners := map[string]bool{}
	for i := range 50 {
		for _, kind := range []string{"ImageRepository", "ImagePolicy"} {
			obj := &metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d", i), Name: "app"}
			owners[ring.Owner(m.keyOf(kind, obj))] = true
		}
	}
	g.Expect(owners).To(HaveLen(1), "an ImagePolicy is held with the ImageRepository whose tags it reads")
	spread := map[string]bool{}
	for i := range 50 {
		spread[ring.Owner(m.keyOf("Kustomization", &metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d", i), Name: "app"}))] = true
	}
	g.Expect(spread).To(HaveLen(3))
}
