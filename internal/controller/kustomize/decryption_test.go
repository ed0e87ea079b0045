package kustomize

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil/sopsfixture"
)

func TestSOPSEncryptedSecretLandsDecrypted(t *testing.T) {
	const password = "s3cr3t-hunter2-value"
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	key, err := sopsfixture.NewAgeKey()
	g.Expect(err).NotTo(HaveOccurred())
	wrong, err := sopsfixture.NewAgeKey()
	g.Expect(err).NotTo(HaveOccurred())
	encrypted, err := sopsfixture.EncryptYAML([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: "+ns+
		"\ntype: Opaque\nstringData:\n  password: "+password+"\n"), key.Recipient())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(encrypted)).NotTo(ContainSubstring(password))

	_, src := appRepo(t, "app", map[string]string{"deploy/db.yaml": string(encrypted)})
	applyManifests(g, ns, src)
	for name, k := range map[string]*sopsfixture.AgeKey{"right": key, "wrong": wrong} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-" + name, Namespace: ns},
			Data: map[string][]byte{"identity.agekey": k.SecretEntry()}}
		g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	}

	// The wrong key fails, and says so without any secret material.
	applyManifests(g, ns, kustomization("wrong", "app", "  path: ./deploy\n  decryption:\n    provider: sops\n    secretRef:\n      name: sops-wrong\n"))
	got := waitForKs(g, client.ObjectKey{Namespace: ns, Name: "wrong"}, ksReason("False", kustomizev1.DecryptionFailedReason))
	msg := conditions.Message(got, meta.ReadyCondition)
	g.Expect(msg).NotTo(ContainSubstring(password))
	g.Expect(msg).NotTo(ContainSubstring(strings.TrimSpace(string(wrong.SecretEntry()))))
	g.Expect(got.Status.Inventory).To(BeNil(), "nothing is applied")

	applyManifests(g, ns, kustomization("right", "app", "  path: ./deploy\n  decryption:\n    provider: sops\n    secretRef:\n      name: sops-right\n"))
	waitForKs(g, client.ObjectKey{Namespace: ns, Name: "right"}, ksReady(""))
	var secret corev1.Secret
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &secret)).To(Succeed())
	g.Expect(string(secret.Data["password"])).To(Equal(password))
	g.Expect(secret.Annotations).NotTo(HaveKey(ContainSubstring("sops")))

	var events corev1.EventList
	g.Expect(env.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	for _, e := range events.Items {
		g.Expect(e.Message).NotTo(ContainSubstring(password))
	}
}
