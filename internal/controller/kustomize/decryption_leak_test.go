package kustomize

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/sopsfixture"
)

// Security row 18: a corrupt or tampered SOPS value fails closed, and the
// error names the file or object, never the value.

// The plaintexts of the story: distinctive, so that any appearance in a
// condition, an event or a log line is a leak.
const (
	manifestCanary  = "canary-manifest-Qx7v3LmZ-plaintext"
	generatorCanary = "canary-generator-Tw9pK2dR-plaintext"
)

// tamperCase is one corruption of the second revision.
type tamperCase struct {
	name string
	// file is the repository file the revision corrupts.
	file string
	// tamper corrupts the encrypted content of file and returns the
	// corrupted content and the corrupted text, which must not leak either.
	tamper func(t *testing.T, content string) (corrupted, evidence string)
	// wantMessage are substrings the Ready message must contain: the file
	// or object the failure is about, and the kind of failure.
	wantMessage []string
}

// TestDecryption_TamperedValueFailsClosedWithoutLeaking applies a
// Kustomization with SOPS decryption (an age key Secret) whose revision
// holds an encrypted Secret manifest and a secretGenerator reading an
// encrypted dotenv file, both with distinctive plaintexts. A second
// revision corrupts one of them: a flipped byte in the data, the IV or the
// GCM tag of one ENC[...] value (the AEAD check fails), a flipped byte in
// the encrypted document MAC, or a changed unencrypted value (the document
// MAC no longer matches); the same revision also changes a ConfigMap. For
// each, the test proves that:
//   - the Kustomization turns Ready=False with reason DecryptionFailed and a
//     message naming the file or the object (status rules checked);
//   - the plaintexts, the age private key and the corrupted ciphertext
//     appear nowhere in the Kustomization (conditions included), in the
//     events of the namespace or in the controller logs;
//   - nothing of the bad revision is applied: the last applied revision,
//     both Secrets and the ConfigMap keep the values of the good one.
func TestDecryption_TamperedValueFailsClosedWithoutLeaking(t *testing.T) {
	tests := []tamperCase{
		{name: "Secret manifest, data of a value flipped", file: "deploy/db.yaml",
			tamper:      flipENC("password: ENC[", "data"),
			wantMessage: []string{"Secret/{ns}/db", "stringData:password"}},
		{name: "Secret manifest, iv of a value flipped", file: "deploy/db.yaml",
			tamper:      flipENC("password: ENC[", "iv"),
			wantMessage: []string{"Secret/{ns}/db", "stringData:password"}},
		{name: "Secret manifest, tag of a value flipped", file: "deploy/db.yaml",
			tamper:      flipENC("password: ENC[", "tag"),
			wantMessage: []string{"Secret/{ns}/db", "stringData:password"}},
		{name: "generator file, data of a value flipped", file: "deploy/creds.env",
			tamper:      flipENC("PASSWORD=ENC[", "data"),
			wantMessage: []string{"creds.env", "PASSWORD"}},
		{name: "generator file, tag of a value flipped", file: "deploy/creds.env",
			tamper:      flipENC("PASSWORD=ENC[", "tag"),
			wantMessage: []string{"creds.env", "PASSWORD"}},
		{name: "generator file, MAC flipped", file: "deploy/creds.env",
			tamper:      flipENC("sops_mac=ENC[", "data"),
			wantMessage: []string{"creds.env", "MAC"}},
		{name: "generator file, unencrypted value changed under the MAC", file: "deploy/creds.env",
			tamper: func(t *testing.T, content string) (string, string) {
				t.Helper()
				out := strings.Replace(content, "NOTE_unencrypted=visible", "NOTE_unencrypted=altered", 1)
				if out == content {
					t.Fatalf("no NOTE_unencrypted entry in\n%s", content)
				}
				return out, "NOTE_unencrypted=altered"
			},
			wantMessage: []string{"creds.env", "MAC"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runTamperCase(t, fmt.Sprintf("tamper-%d", i), tt)
		})
	}
}

// runTamperCase runs the story of one corruption.
func runTamperCase(t *testing.T, name string, tt tamperCase) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	key, err := sopsfixture.NewAgeKey()
	g.Expect(err).NotTo(HaveOccurred())
	privateKey := strings.TrimSpace(string(key.SecretEntry()))

	files := encryptedRevision(g, ns, key)
	repo, src := appRepo(t, name, files)
	applyManifests(g, ns, src)
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-age", Namespace: ns},
		Data: map[string][]byte{"identity.agekey": key.SecretEntry()}})).To(Succeed())
	applyManifests(g, ns, kustomization(name, name,
		"  path: ./deploy\n  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n"))
	ksKey := client.ObjectKey{Namespace: ns, Name: name}
	good := waitForKs(g, ksKey, ksReady(""))
	expectGoodRevisionApplied(g, ns)

	// The bad revision: one file corrupted, and a ConfigMap change that
	// must not be applied either.
	corrupted, evidence := tt.tamper(t, files[tt.file])
	sha := repo.MustCommit(t, "main", map[string]string{
		tt.file:          corrupted,
		"deploy/cm.yaml": configMap(ns, "plain", "2"),
	}, "tamper")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, name)}, "tamper")
	failed := waitForKs(g, ksKey, func(k *kustomizev1.Kustomization) bool {
		return k.Status.LastAttemptedRevision == "main@sha1:"+sha &&
			ksReason("False", kustomizev1.DecryptionFailedReason)(k)
	})

	msg := conditions.Message(failed, meta.ReadyCondition)
	t.Logf("Ready message: %s", msg)
	for _, want := range tt.wantMessage {
		g.Expect(msg).To(ContainSubstring(strings.ReplaceAll(want, "{ns}", ns)))
	}
	g.Expect(failed.Status.LastAppliedRevision).To(Equal(good.Status.LastAppliedRevision))
	g.Expect(failed.Status.Inventory).To(Equal(good.Status.Inventory))

	// Let the failing revision be retried a few times (retryInterval is
	// 1s) before looking for leaks and partial applies.
	g.Consistently(func(g Gomega) {
		expectGoodRevisionApplied(g, ns)
	}, 3*time.Second, interval).Should(Succeed())

	secrets := []string{manifestCanary, generatorCanary, privateKey, evidence}
	status, err := json.Marshal(waitForKs(g, ksKey, ksReason("False", kustomizev1.DecryptionFailedReason)))
	g.Expect(err).NotTo(HaveOccurred())
	ksEvents := testutil.EventMessages(g, env.Client, failed, kustomizev1.KustomizationKind)
	g.Expect(ksEvents).To(ContainElement(HavePrefix(kustomizev1.DecryptionFailedReason+": ")), "the failure is an event")
	var nsEvents corev1.EventList
	g.Expect(env.Client.List(ctx, &nsEvents, client.InNamespace(ns))).To(Succeed())
	logged := logs.String()
	// The logs do hold the failure, so their search is not vacuous.
	g.Expect(logged).To(ContainSubstring(msg[strings.LastIndex(msg, ": ")+2:]), "the failure is logged")
	for _, s := range secrets {
		g.Expect(string(status)).NotTo(ContainSubstring(s), "the Kustomization (conditions included)")
		g.Expect(ksEvents).NotTo(ContainElement(ContainSubstring(s)), "the Kustomization's events")
		for _, e := range nsEvents.Items {
			g.Expect(e.Message).NotTo(ContainSubstring(s), "event %s/%s", e.InvolvedObject.Kind, e.InvolvedObject.Name)
		}
		g.Expect(logged).NotTo(ContainSubstring(s), "the controller logs")
	}
}

// encryptedRevision returns the files of the good revision: a Secret
// manifest encrypted with SOPS (stringData.password is manifestCanary), a
// SOPS-encrypted dotenv file read by a secretGenerator (PASSWORD is
// generatorCanary, NOTE_unencrypted stays clear under the MAC) and a plain
// ConfigMap.
func encryptedRevision(g *WithT, ns string, key *sopsfixture.AgeKey) map[string]string {
	manifest, err := sopsfixture.EncryptYAML([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n"+
		"  namespace: "+ns+"\ntype: Opaque\nstringData:\n  password: "+manifestCanary+"\n"), key.Recipient())
	g.Expect(err).NotTo(HaveOccurred())
	dotenv, err := sopsfixture.Encrypt([]byte("PASSWORD="+generatorCanary+"\nNOTE_unencrypted=visible\n"),
		sopsfixture.FormatDotenv, sopsfixture.Options{KeyGroups: [][]sopsfixture.Recipient{{key}}})
	g.Expect(err).NotTo(HaveOccurred())
	for _, doc := range [][]byte{manifest, dotenv} {
		g.Expect(string(doc)).NotTo(ContainSubstring(manifestCanary))
		g.Expect(string(doc)).NotTo(ContainSubstring(generatorCanary))
	}
	return map[string]string{
		"deploy/kustomization.yaml": "resources: [db.yaml, cm.yaml]\nnamespace: " + ns +
			"\ngeneratorOptions:\n  disableNameSuffixHash: true\nsecretGenerator:\n- name: generated\n  envs: [creds.env]\n",
		"deploy/db.yaml":   string(manifest),
		"deploy/creds.env": string(dotenv),
		"deploy/cm.yaml":   configMap(ns, "plain", "1"),
	}
}

// expectGoodRevisionApplied asserts that the objects of the good revision
// are in the cluster with their values.
func expectGoodRevisionApplied(g Gomega, ns string) {
	ctx := context.Background()
	var db, generated corev1.Secret
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &db)).To(Succeed())
	g.Expect(string(db.Data["password"])).To(Equal(manifestCanary))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "generated"}, &generated)).To(Succeed())
	g.Expect(string(generated.Data["PASSWORD"])).To(Equal(generatorCanary))
	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plain"}, &cm)).To(Succeed())
	g.Expect(cm.Data["value"]).To(Equal("1"))
}

// flipENC returns a tamper function that changes the first base64
// character of field (data, iv or tag) of the ENC[...] value on the line
// holding marker, so that the value stays well-formed and only the
// cryptographic check can reject it. The evidence is the corrupted
// ENC[...] value.
func flipENC(marker, field string) func(t *testing.T, content string) (string, string) {
	return func(t *testing.T, content string) (string, string) {
		t.Helper()
		start := strings.Index(content, marker)
		if start < 0 {
			t.Fatalf("no %q in\n%s", marker, content)
		}
		encStart := start + strings.Index(content[start:], "ENC[")
		encEnd := encStart + strings.Index(content[encStart:], "]") + 1
		enc := content[encStart:encEnd]
		at := strings.Index(enc, ","+field+":")
		if at < 0 {
			t.Fatalf("no %s in %s", field, enc)
		}
		i := at + len(field) + 2
		flipped := byte('A')
		if enc[i] == 'A' {
			flipped = 'B'
		}
		corrupted := enc[:i] + string(flipped) + enc[i+1:]
		return content[:encStart] + corrupted + content[encEnd:], corrupted
	}
}
