package kustomize

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/sourceref"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// changedFolders is a ChangedPaths that knows the artifacts "old" and "new"
// of one source, between which the folders listed changed.
type changedFolders map[string]bool

func (c changedFolders) PathChanged(old, new meta.Artifact, path string) (bool, bool) {
	if old.Digest != "old" || new.Digest != "new" {
		return false, false
	}
	return c[path], true
}

// TestSourceEventsRankChangedFolders wakes the Kustomizations of a
// monorepo whose artifact changed, with a fake client and a real priority
// queue: those whose folder changed come out of the queue first, with a
// head start over the others; without ChangedPaths every one is woken all
// the same.
func TestSourceEventsRankChangedFolders(t *testing.T) {
	const apps = 20
	changed := changedFolders{"./apps/app-07": true, "./apps/app-13": true}
	var objs []client.Object
	for i := range apps {
		objs = append(objs, &kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("app-%02d", i)},
			Spec: kustomizev1.KustomizationSpec{
				Path:      fmt.Sprintf("./apps/app-%02d", i),
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "mono"},
			},
		})
	}
	// A Kustomization of another source is not woken.
	objs = append(objs, &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"},
		Spec: kustomizev1.KustomizationSpec{Path: "./apps/app-07",
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "other"}},
	})
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithIndex(&kustomizev1.Kustomization{}, reconcile.SourceRefIndex, func(o client.Object) []string {
			return []string{sourceKey(o.(*kustomizev1.Kustomization))}
		}).Build()
	source := func(digest string) *sourcev1.GitRepository {
		return &sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "mono"},
			Status:     sourcev1.GitRepositoryStatus{Artifact: &meta.Artifact{Digest: digest, Path: "gitrepository/default/mono/x.tar.gz"}},
		}
	}
	update := event.UpdateEvent{ObjectOld: source("old"), ObjectNew: source("new")}

	for _, tt := range []struct {
		name    string
		changes ChangedPaths
		first   []string
	}{
		{name: "changed folders first", changes: changed, first: []string{"app-07", "app-13"}},
		{name: "no ChangedPaths", changes: nil, first: nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &KustomizationReconciler{Client: c, Changes: tt.changes}
			q := priorityqueue.New[ctrlreconcile.Request]("test")
			defer q.ShutDown()
			r.sourceEvents(sourcev1.GitRepositoryKind).Update(context.Background(), update, q)
			g.Expect(q.Len()).To(Equal(apps))
			var order []string
			for range apps {
				req, _, _ := q.GetWithPriority()
				order = append(order, req.Name)
				q.Done(req)
			}
			g.Expect(order).To(ContainElements("app-00", "app-19"))
			g.Expect(order).NotTo(ContainElement("other"))
			if tt.first == nil {
				g.Expect(r.heads.bySource).To(BeEmpty(), "no head start when nothing tells which folders changed")
				return
			}
			g.Expect(order[:len(tt.first)]).To(ConsistOf(tt.first))
			hs := r.heads.bySource[sourceref.KeyOf(sourcev1.GitRepositoryKind, update.ObjectNew)]
			g.Expect(hs).NotTo(BeNil(), "the changed Kustomizations get a head start over the others")
			g.Expect(hs.running).To(HaveLen(len(tt.first)))
			for _, name := range tt.first {
				g.Expect(hs.running).To(HaveKey(types.NamespacedName{Namespace: "default", Name: name}))
			}
		})
	}
}
