package testutil

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions/check"
)

// Default bounds of WaitFor.
const (
	WaitTimeout  = 60 * time.Second
	WaitInterval = 100 * time.Millisecond
)

// WaitFor reads obj from the API server through c (uncached) until cond
// holds for it, and returns it, after checking the status rules of
// conditions/check on it with the kind's negative conditions.
func WaitFor[T check.Object](g Gomega, c client.Client, obj T, cond func(T) bool, negative ...string) T {
	key := client.ObjectKeyFromObject(obj)
	got := obj.DeepCopyObject().(T)
	g.Eventually(func() bool {
		if err := c.Get(context.Background(), key, got); err != nil {
			return false
		}
		return cond(got)
	}, WaitTimeout, WaitInterval).Should(BeTrue(), func() string {
		return fmt.Sprintf("conditions of %s: %+v", key, got.GetConditions())
	})
	g.Expect(check.Status(got, negative...)).To(Succeed())
	return got
}

// RequestReconcile annotates obj with a new reconcile request token, as
// `windlass reconcile` does.
func RequestReconcile(g Gomega, c client.Client, obj client.Object, token string) {
	patch := []byte(`{"metadata":{"annotations":{"` + meta.ReconcileRequestAnnotation + `":"` + token + `"}}}`)
	g.Expect(c.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
}

// Events returns the Kubernetes events about obj (by kind and name).
func Events(g Gomega, c client.Client, obj client.Object, kind string) []corev1.Event {
	var list corev1.EventList
	g.Expect(c.List(context.Background(), &list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == obj.GetName() && (kind == "" || e.InvolvedObject.Kind == kind) {
			out = append(out, e)
		}
	}
	return out
}

// EventMessages returns "reason: message" of each event about obj.
func EventMessages(g Gomega, c client.Client, obj client.Object, kind string) []string {
	var msgs []string
	for _, e := range Events(g, c, obj, kind) {
		msgs = append(msgs, e.Reason+": "+e.Message)
	}
	return msgs
}

// WarningReasons returns the reasons of the Warning events about obj.
func WarningReasons(g Gomega, c client.Client, obj client.Object, kind string) []string {
	var reasons []string
	for _, e := range Events(g, c, obj, kind) {
		if e.Type == corev1.EventTypeWarning {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}
