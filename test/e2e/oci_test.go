package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

const (
	// cliTimeout is the --timeout of the commands that wait for an outcome.
	cliTimeout = "90s"
	// changeBound is the loose bound on the time from `windlass reconcile`
	// to the change in the cluster; it is measured and logged too.
	changeBound = 30 * time.Second
	// settingsName is the ConfigMap that the artifacts and buckets of these
	// tests declare.
	settingsName = "settings"
)

// A release engineer pushes a folder of manifests to a registry that wants
// a login, as an OCI artifact, signs it with cosign and deploys it with an
// OCIRepository that verifies the signature and a Kustomization. A new
// signed push to the same tag is applied within seconds of `windlass
// reconcile`; an unsigned one is refused, and the cluster keeps what was
// last verified.
func TestOCI_SignedArtifactDeployedUnsignedRefused(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	reg := testservers.StartRegistry(t, testservers.RegistryOptions{Username: "ci", Password: "registry-pass-7f3e"})
	u := newRegistryUser(t, g, reg)
	repo := reg.Host + "/app"

	rev1 := gitRevision(g)
	digest1 := u.push(t, g, repo+":v1", "hello", rev1)
	u.sign(t, repo, digest1)
	deployVerifiedOCI(t, g, u, ns)

	source := ociRepository(g, ns)
	g.Expect(conditions.IsTrue(source, sourcev1.SourceVerifiedCondition)).To(BeTrue(), conditions.Message(source, sourcev1.SourceVerifiedCondition))
	g.Expect(source.Status.Artifact.Revision).To(Equal("v1@" + digest1))
	g.Expect(source.Status.Artifact.OriginRevision()).To(Equal(rev1))
	ks := kustomization(g, ns)
	g.Expect(ks.Status.LastAppliedRevision).To(Equal("v1@" + digest1))
	g.Expect(ks.Status.LastAppliedOriginRevision).To(Equal(rev1))
	g.Expect(configMapValue(ctx, env.Client, client.ObjectKey{Namespace: ns, Name: settingsName})).To(Equal("hello"))

	// A new signed artifact under the same tag.
	rev2 := gitRevision(g)
	digest2 := u.push(t, g, repo+":v1", "bonjour", rev2)
	u.sign(t, repo, digest2)
	start := time.Now()
	mustRunCLI(g, "reconcile", "source", "oci", "app", "-n", ns, "--timeout", cliTimeout)
	mustRunCLI(g, "reconcile", "ks", "app", "-n", ns, "--timeout", cliTimeout)
	g.Eventually(func() string {
		return configMapValue(ctx, env.Client, client.ObjectKey{Namespace: ns, Name: settingsName})
	}, changeBound, 100*time.Millisecond).Should(Equal("bonjour"))
	elapsed := time.Since(start)
	t.Logf("the new signed artifact was applied %s after `windlass reconcile source oci`", elapsed.Round(time.Millisecond))
	g.Expect(elapsed).To(BeNumerically("<", changeBound))
	g.Expect(kustomization(g, ns).Status.LastAppliedOriginRevision).To(Equal(rev2))

	// An unsigned artifact under the same tag is refused.
	u.push(t, g, repo+":v1", "hola", gitRevision(g))
	out, errOut, code := runCLIWithInput(g, "", "reconcile", "source", "oci", "app", "-n", ns, "--timeout", cliTimeout)
	g.Expect(code).NotTo(Equal(0), out+errOut)
	g.Expect(errOut).To(ContainSubstring("OCIRepository " + ns + "/app is not Ready"))
	g.Expect(out + errOut).NotTo(ContainSubstring(reg.Password))
	t.Logf("the unsigned artifact is refused: %s", strings.TrimSpace(errOut))
	source = ociRepository(g, ns)
	g.Expect(conditions.IsFalse(source, sourcev1.SourceVerifiedCondition)).To(BeTrue(), "SourceVerified of %+v", source.Status.Conditions)
	g.Expect(conditions.Reason(source, sourcev1.SourceVerifiedCondition)).To(Equal(sourcev1.VerificationErrorReason))
	g.Expect(source.Status.Artifact.Revision).To(Equal("v1@"+digest2), "the verified artifact stays served")

	mustRunCLI(g, "reconcile", "ks", "app", "-n", ns, "--timeout", cliTimeout)
	ks = kustomization(g, ns)
	g.Expect(ks.Status.LastAppliedRevision).To(Equal("v1@" + digest2))
	g.Expect(ks.Status.LastAppliedOriginRevision).To(Equal(rev2))
	g.Expect(configMapValue(ctx, env.Client, client.ObjectKey{Namespace: ns, Name: settingsName})).To(Equal("bonjour"))

	out = mustRunCLI(g, "get", "sources", "oci", "-n", ns)
	g.Expect(tableRow(g, out, "app")).To(ContainElement("False"), "READY of\n%s", out)
}

// deployVerifiedOCI creates, with the binary, what the user of u deploys
// the artifact app:v1 with: the registry's credentials, the cosign public
// key, the OCIRepository app that verifies with it, and the Kustomization
// app that applies it into ns.
func deployVerifiedOCI(t *testing.T, g *WithT, u *registryUser, ns string) {
	t.Helper()
	out, errOut, code := runCLIWithInput(g, u.reg.Password+"\n",
		"create", "secret", "oci", "registry-auth", "--url", u.reg.Host, "--username", u.reg.Username, "--password-stdin", "-n", ns)
	g.Expect(code).To(Equal(0), out+errOut)
	g.Expect(out + errOut).NotTo(ContainSubstring(u.reg.Password))

	// There is no `create secret` for public keys: a user runs kubectl
	// create secret generic cosign-pub --from-file=cosign.pub.
	pub := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cosign-pub", Namespace: ns},
		Data: map[string][]byte{"cosign.pub": u.publicKey}}
	g.Expect(env.Client.Create(context.Background(), pub)).To(Succeed())

	out = mustRunCLI(g, "create", "source", "oci", "app", "--url", "oci://"+u.reg.Host+"/app", "--tag", "v1",
		"--secret-ref", "registry-auth", "--verify-provider", "cosign", "--verify-secret-ref", "cosign-pub",
		"--insecure", "-n", ns, "--timeout", cliTimeout)
	g.Expect(out).To(ContainSubstring("✔ OCIRepository " + ns + "/app reconciled"))
	out = mustRunCLI(g, "create", "kustomization", "app", "--source", "OCIRepository/app", "--path", "./",
		"--prune", "--target-namespace", ns, "-n", ns, "--timeout", cliTimeout)
	g.Expect(out).To(ContainSubstring("✔ Kustomization " + ns + "/app reconciled"))
}

// registryUser is the machine of someone who pushes to a registry: a
// docker login (a docker config in HOME) and a cosign key pair.
type registryUser struct {
	reg *testservers.Registry
	// keysDir holds cosign.key and cosign.pub; its home folder is the HOME
	// of cosign and of `windlass push`.
	keysDir   string
	publicKey []byte
}

// newRegistryUser makes a cosign key pair and logs in to reg, as `docker
// login` does, in a docker config that windlass and cosign both read.
func newRegistryUser(t *testing.T, g *WithT, reg *testservers.Registry) *registryUser {
	t.Helper()
	dir, pub := testservers.GenerateKeyPair(t)
	u := &registryUser{reg: reg, keysDir: dir, publicKey: pub}
	auth := base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))
	config, err := json.Marshal(map[string]any{"auths": map[string]any{reg.Host: map[string]string{"auth": auth}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.MkdirAll(filepath.Join(u.home(), ".docker"), 0o700)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(u.home(), ".docker", "config.json"), config, 0o600)).To(Succeed())
	return u
}

// home is the user's HOME folder, the one testservers.RunCosign uses.
func (u *registryUser) home() string { return filepath.Join(u.keysDir, "home") }

// push pushes a folder with the settings ConfigMap of value to ref
// (host/repository:tag) with `windlass push artifact`, recording the Git
// revision rev, and returns the digest pushed.
func (u *registryUser) push(t *testing.T, g *WithT, ref, value, rev string) string {
	t.Helper()
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "settings.yaml"), []byte(settingsManifest(value)), 0o644)).To(Succeed())
	out, errOut, code := runWindlass(g, cliEnv{home: u.home()}, "push", "artifact", "oci://"+ref,
		"--path", dir, "--source", "https://git.example.com/org/app.git", "--revision", rev, "--insecure-registry", "-o", "json")
	g.Expect(code).To(Equal(0), out+errOut)
	var res struct {
		Digest string `json:"digest"`
	}
	g.Expect(json.Unmarshal([]byte(out), &res)).To(Succeed(), out)
	g.Expect(res.Digest).To(HavePrefix("sha256:"))
	return res.Digest
}

// sign signs repo@digest with the user's cosign key, in the bundle format
// of cosign v3.
func (u *registryUser) sign(t *testing.T, repo, digest string) {
	t.Helper()
	testservers.SignWithKey(t, u.keysDir, repo+"@"+digest, false)
}

// settingsManifest is the settings ConfigMap with v set to value.
func settingsManifest(value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  v: %q\n", settingsName, value)
}

// gitRevision returns a revision of a Git branch, main@sha1:<40 hex>, that
// no other call returns.
func gitRevision(g *WithT) string {
	b := make([]byte, 20)
	_, err := rand.Read(b)
	g.Expect(err).NotTo(HaveOccurred())
	return "main@sha1:" + hex.EncodeToString(b)
}

// ociRepository returns the OCIRepository app of ns.
func ociRepository(g *WithT, ns string) *sourcev1.OCIRepository {
	got := &sourcev1.OCIRepository{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, got)).To(Succeed())
	g.Expect(got.Status.Artifact).NotTo(BeNil(), "artifact of %+v", got.Status)
	return got
}

// kustomization returns the Kustomization app of ns, which must be Ready.
func kustomization(g *WithT, ns string) *kustomizev1.Kustomization {
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, got)).To(Succeed())
	g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue(), conditions.Message(got, meta.ReadyCondition))
	return got
}

// tableRow returns the cells of the row of name in the table `windlass
// get` printed.
func tableRow(g *WithT, table, name string) []string {
	for _, line := range strings.Split(table, "\n") {
		if cells := strings.Fields(line); len(cells) > 0 && cells[0] == name {
			return cells
		}
	}
	g.Expect(table).To(ContainSubstring(name), "no row of %s", name)
	return nil
}

// cliEnv is what a run of the binary gets besides its arguments.
type cliEnv struct {
	// stdin is its standard input.
	stdin string
	// home, when set, is its HOME, whose docker config holds the registry
	// logins.
	home string
}

// runWindlass runs the binary with args as a user types them (no
// --kubeconfig added), and returns its output and exit code.
func runWindlass(g *WithT, e cliEnv, args ...string) (stdout, stderr string, code int) {
	cmd := exec.Command(windlassBin, args...)
	cmd.Env = childproc.CleanEnv()
	if e.home != "" {
		cmd.Env = append(withoutVars(cmd.Env, "HOME", "DOCKER_CONFIG"), "HOME="+e.home)
	}
	cmd.Stdin = strings.NewReader(e.stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	g.Expect(err).NotTo(HaveOccurred())
	return out.String(), errOut.String(), 0
}

// runCLIWithInput runs the binary with args against the test control
// plane, stdin on its standard input.
func runCLIWithInput(g *WithT, stdin string, args ...string) (stdout, stderr string, code int) {
	return runWindlass(g, cliEnv{stdin: stdin}, append(args, "--kubeconfig", kubeconfig)...)
}

// mustRunCLI runs the binary with args against the test control plane,
// expects it to succeed, and returns its output.
func mustRunCLI(g *WithT, args ...string) string {
	out, errOut, code := runCLIWithInput(g, "", args...)
	g.ExpectWithOffset(1, code).To(Equal(0), "windlass %s\n%s%s", strings.Join(args, " "), out, errOut)
	return out
}

// withoutVars returns env without the variables named.
func withoutVars(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}
