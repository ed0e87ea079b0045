package ssa

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/inventory"
)

func TestApplyAllStagedAnnouncesWritesFirst(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	deleteLater(t, "v1", "Namespace", ns+"-wa")
	deleteLater(t, "scheduling.k8s.io/v1", "PriorityClass", ns+"-wa")
	objs := parse(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: ${NS}-wa}
data: {k: v}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: ${NS}-wa, namespace: ${NS}} # cluster-scoped: announced without the namespace
value: 10
---
apiVersion: v1
kind: Namespace
metadata: {name: ${NS}-wa}
`)
	var announced [][]string
	record := func(ctx context.Context, entries []inventory.Entry) error {
		var ids []string
		for _, e := range entries {
			id, err := e.ObjMetadata()
			if err != nil {
				return err
			}
			// Announced before written: the object is not there yet.
			if live := get(t, map[string]string{"": "v1", "scheduling.k8s.io": "scheduling.k8s.io/v1"}[id.Group], id.Kind, id.Namespace, id.Name); live != nil {
				return errors.New(id.ID() + " was written before it was announced")
			}
			ids = append(ids, e.ID)
		}
		announced = append(announced, ids)
		return nil
	}

	t.Run("a refused announcement writes nothing", func(t *testing.T) {
		g := NewWithT(t)
		_, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{BeforeWrite: func(context.Context, []inventory.Entry) error {
			return errors.New("status not writable")
		}})
		g.Expect(err).To(MatchError("status not writable"))
		g.Expect(get(t, "v1", "Namespace", "", ns+"-wa")).To(BeNil())
	})

	t.Run("each stage is announced before it is written", func(t *testing.T) {
		g := NewWithT(t)
		announced = nil
		cs, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{BeforeWrite: record})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(announced).To(Equal([][]string{
			{"_" + ns + "-wa__Namespace"},
			{"_" + ns + "-wa_scheduling.k8s.io_PriorityClass"},
			{ns + "-wa_cfg__ConfigMap"},
		}))
		var all []inventory.Entry
		for _, ids := range announced {
			for _, id := range ids {
				all = append(all, inventory.Entry{ID: id})
			}
		}
		g.Expect(inventory.Diff(cs.Inventory(), all)).To(BeEmpty(), "every applied object was announced")
	})

	t.Run("an apply that changes nothing announces nothing", func(t *testing.T) {
		g := NewWithT(t)
		announced = nil
		_, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{BeforeWrite: record})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(announced).To(BeEmpty())
	})
}
