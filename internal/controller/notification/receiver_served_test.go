package notification

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// TestUnservedReceiverValues: type gcr, which the schema accepts, stalls
// the Receiver with a reason naming it and publishes no webhook path; an
// ExternalArtifact, which nothing reconciles, is refused by the API server
// with a message that says so.
func TestUnservedReceiverValues(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	createTokenSecret(g, ns, "token", "gcr-token-0042")
	rcv := createReceiver(g, ns, "gcr", notificationv1.ReceiverTypeGCR, nil,
		notificationv1.ResourceReference{Kind: sourcev1.GitRepositoryKind, Name: "webapp"})
	latest := waitStalled(g, rcv)
	g.Expect(conditions.Reason(latest, meta.ReadyCondition)).To(Equal(UnsupportedTypeReason))
	g.Expect(conditions.Message(latest, meta.ReadyCondition)).To(ContainSubstring("receiver type 'gcr' is not served by Windlass"))
	g.Expect(latest.Status.WebhookPath).To(BeEmpty())

	for _, kind := range []string{"ExternalArtifact"} {
		bad := &notificationv1.Receiver{
			ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns},
			Spec: notificationv1.ReceiverSpec{Type: notificationv1.ReceiverTypeGeneric, SecretRef: meta.LocalObjectReference{Name: "token"},
				Resources: []notificationv1.ResourceReference{{Kind: sourcev1.GitRepositoryKind, Name: "webapp"}, {Kind: kind, Name: "x"}}},
		}
		err := env.Client.Create(context.Background(), bad)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", kind, err)
		g.Expect(err.Error()).To(ContainSubstring("kind " + kind + " is not reconciled: its producer writes it"))
	}
}
