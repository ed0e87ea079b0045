package image

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestImageUpdateAutomation_SignedCommits: with an SSH signing key the
// pushed commit carries a signature that git verifies (through
// ssh-keygen) against the key's public half; a key that cannot be read
// stalls the automation before anything is cloned.
func TestImageUpdateAutomation_SignedCommits(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ssh-keygen is not installed, and CI must check that signed commits verify")
		}
		t.Skip("ssh-keygen is not installed")
	}
	g := NewWithT(t)
	s := newAutomationStory(t)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	block, err := ssh.MarshalPrivateKey(priv, "automation")
	g.Expect(err).NotTo(HaveOccurred())
	create(g, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "signing"},
		Data: map[string][]byte{"identity": pem.EncodeToMemory(block)}})
	create(g, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "bad-signing"},
		Data: map[string][]byte{"git.asc": []byte("not a key")}})

	bad := s.automation("bad-key")
	bad.Spec.GitSpec.Commit.SigningKey = &imagev1.SigningKey{SecretRef: meta.LocalObjectReference{Name: "bad-signing"}}
	create(g, bad)
	stalled := testutil.WaitFor(g, env.Client, bad, func(a *imagev1.ImageUpdateAutomation) bool {
		return conditions.IsTrue(a, meta.StalledCondition)
	})
	g.Expect(conditions.Reason(stalled, meta.ReadyCondition)).To(Equal(imagev1.ReasonInvalidSigningKey))
	g.Expect(s.repo.Head("main")).To(Equal(s.initial))

	a := s.automation("signed")
	a.Spec.GitSpec.Commit.SigningKey = &imagev1.SigningKey{SecretRef: meta.LocalObjectReference{Name: "signing"}}
	create(g, a)
	a = testutil.WaitFor(g, env.Client, a, func(a *imagev1.ImageUpdateAutomation) bool { return a.Status.LastPushCommit != "" })

	sshPub, err := ssh.NewPublicKey(pub)
	g.Expect(err).NotTo(HaveOccurred())
	allowed := filepath.Join(t.TempDir(), "allowed_signers")
	g.Expect(os.WriteFile(allowed, append([]byte("bot@example.com "), ssh.MarshalAuthorizedKey(sshPub)...), 0o600)).To(Succeed())
	out := s.show(g, "-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile="+allowed, "verify-commit", a.Status.LastPushCommit)
	g.Expect(out).To(ContainSubstring(`Good "git" signature for bot@example.com`))
}
