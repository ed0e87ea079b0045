package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/gitserver"
)

// fixedSSHKey returns an ed25519 key made from a fixed seed, so that
// golden files can hold it: the private key as PKCS #8 PEM, and its public
// key. It is a test key, made here and used nowhere else.
func fixedSSHKey(g *WithT, seed byte) (privatePEM []byte, public ssh.PublicKey) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	g.Expect(err).NotTo(HaveOccurred())
	public, err = ssh.NewPublicKey(priv.Public())
	g.Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), public
}

// writeTestFile writes content to a new file of the test and returns its
// path.
func writeTestFile(t *testing.T, g *WithT, name string, content []byte) string {
	path := filepath.Join(t.TempDir(), name)
	g.Expect(os.WriteFile(path, content, 0o600)).To(Succeed())
	return path
}

// TestCreateExport prints every kind that create makes with --export and
// compares it with its golden file.
func TestCreateExport(t *testing.T) {
	g := NewWithT(t)
	identity, _ := fixedSSHKey(g, 1)
	_, hostKey := fixedSSHKey(g, 2)
	keyFile := writeTestFile(t, g, "identity", identity)
	hostsFile := writeTestFile(t, g, "known_hosts", []byte(knownhosts.Line([]string{"git.example.com"}, hostKey)+"\n"))
	tests := []struct {
		golden string
		args   []string
	}{
		{golden: "create-source-git", args: []string{"create", "source", "git", "podinfo", "--url", "https://github.com/stefanprodan/podinfo",
			"--branch", "master", "--interval", "5m", "--secret-ref", "podinfo-auth", "--ignore-paths", "/docs,*.md",
			"--recurse-submodules", "--label", "team=apps,tier=web"}},
		{golden: "create-source-git-github-app", args: []string{"create", "source", "git", "app", "--url", "https://github.com/org/app",
			"--branch", "main", "--provider", "github", "--secret-ref", "github-app"}},
		{golden: "create-source-git-semver", args: []string{"create", "source", "git", "app", "-n", "apps",
			"--url", "ssh://git@git.example.com/org/app", "--tag-semver", ">=1.0.0 <2.0.0"}},
		{golden: "create-kustomization", args: []string{"create", "ks", "podinfo", "--source", "GitRepository/flux-system/podinfo",
			"--path", "./kustomize", "--prune", "--interval", "10m", "--depends-on", "infra,db/postgres", "--target-namespace", "web",
			"--service-account", "deployer", "--wait", "--health-check-timeout", "3m", "--decryption-provider", "sops",
			"--decryption-secret", "sops-age", "--label", "team=apps"}},
		{golden: "create-secret-git-basic-auth", args: []string{"create", "secret", "git", "podinfo-auth",
			"--url", "https://github.com/stefanprodan/podinfo", "--username", "git", "--password", "s3cr3t-token"}},
		{golden: "create-secret-git-ssh", args: []string{"create", "secret", "git", "app-auth", "-n", "apps",
			"--url", "ssh://git@git.example.com/org/app", "--private-key-file", keyFile, "--known-hosts-file", hostsFile}},
		{golden: "create-gate", args: []string{"create", "gate", "sre-approval", "--window", "2h", "--interval", "1m", "--label", "team=sre"}},
		{golden: "create-gate-schedules", args: []string{"create", "gate", "no-deploy-friday", "-n", "apps", "--default", "opened",
			"--schedule", "close 0 0 * * FRI for 24h in Europe/Berlin", "--schedule", "open  0 9 * * MON,TUE  for 90m",
			"--schedule", "close @daily for 1h in America/New_York"}},
		{golden: "create-artifactgenerator-pathpattern", args: []string{"create", "artifactgenerator", "apps", "-n", "apps",
			"--source", "mono=GitRepository/monorepo", "--path-pattern", "@mono/apps/{app}",
			"--copy", "{app}:@mono/apps/{app}/**:@artifact/", "--copy", "{app}:@mono/base/:@artifact/base/"}},
		{golden: "create-artifactgenerator-composite", args: []string{"create", "ag", "podinfo", "--label", "team=web",
			"--source", "chart=ocirepository/podinfo-chart", "--source", "cfg=GitRepository/config/settings",
			"--copy", "podinfo:@chart/:@artifact/", "--copy", "podinfo:@cfg/values/prod.yaml:@artifact/podinfo/values.yaml:Merge",
			"--copy", "settings:@cfg/settings/*.yaml:@artifact/", "--revision", "podinfo=@chart"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			g := NewWithT(t)
			// No cluster: --export works without a kubeconfig.
			var out, errOut bytes.Buffer
			root := NewRootCommand(&out, &errOut)
			root.SetArgs(append(tt.args, "--export", "--kubeconfig", filepath.Join(t.TempDir(), "missing")))
			g.Expect(root.Execute()).To(Succeed())
			g.Expect(errOut.String()).To(BeEmpty())
			expectGolden(t, g, tt.golden, out.String())
		})
	}
}

// TestCreateAgainstTheCluster creates a Secret, a GitRepository that uses
// it against a real git server, and a Kustomization of it; each is read
// back, and the command reports the controller's outcome.
func TestCreateAgainstTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	srv.SetBasicAuth("windlass", "s3cr3t")
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	sha := repo.MustCommit(t, "main", map[string]string{"deploy/cm.yaml": fmt.Sprintf(
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: created\n  namespace: %s\ndata:\n  v: \"1\"\n", ns)}, "one")
	controlled := "--label=" + controlledLabel + "=true"

	out, _, err := run(t, "create", "secret", "git", "app-auth", "--url", base+"/app.git", "-u", "windlass", "-p", "s3cr3t", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✚ Secret " + ns + "/app-auth applied\n"))
	var secret corev1.Secret
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-auth"}, &secret)).To(Succeed())
	g.Expect(secret.Data).To(Equal(map[string][]byte{"username": []byte("windlass"), "password": []byte("s3cr3t")}))

	out, _, err = run(t, "create", "source", "git", "app", "--url", base+"/app.git", "--branch", "main",
		"--secret-ref", "app-auth", "--interval", "1h", controlled, "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal(fmt.Sprintf("✚ GitRepository %[1]s/app applied\n◎ waiting for GitRepository %[1]s/app to be reconciled\n"+
		"✔ GitRepository %[1]s/app reconciled: stored artifact for revision 'main@sha1:%[2]s'\n", ns, sha)))
	var source sourcev1.GitRepository
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &source)).To(Succeed())
	g.Expect(source.Spec.URL).To(Equal(base + "/app.git"))
	g.Expect(source.Spec.Reference).To(Equal(&sourcev1.GitRepositoryRef{Branch: "main"}))
	g.Expect(source.Spec.SecretRef).To(Equal(&meta.LocalObjectReference{Name: "app-auth"}))
	g.Expect(source.Spec.Interval).To(Equal(metav1.Duration{Duration: time.Hour}))
	g.Expect(source.Labels).To(Equal(map[string]string{controlledLabel: "true"}))
	g.Expect(source.ManagedFields).To(ContainElement(HaveField("Manager", fieldOwner)))

	out, _, err = run(t, "create", "kustomization", "app", "--source", "app", "--path", "./deploy", "--prune",
		"--interval", "1h", controlled, "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(HaveSuffix("✔ Kustomization " + ns + "/app reconciled: Applied revision: main@sha1:" + sha + "\n"))
	var ks kustomizev1.Kustomization
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &ks)).To(Succeed())
	g.Expect(ks.Spec.SourceRef).To(Equal(kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "app"}))
	g.Expect(ks.Spec.Path).To(Equal("./deploy"))
	g.Expect(ks.Spec.Prune).To(BeTrue())
	g.Expect(ks.Spec.Interval).To(Equal(metav1.Duration{Duration: time.Hour}))
	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "created"}, &cm)).To(Succeed())

	// Create again with another flag: the object is updated in place.
	out, _, err = run(t, "create", "source", "git", "app", "--url", base+"/app.git", "--tag", "v1", "--secret-ref", "app-auth",
		"--interval", "2h", controlled, "-n", ns, "--timeout", "1m")
	g.Expect(err).To(MatchError(ContainSubstring("GitRepository "+ns+"/app is not Ready")), "there is no tag v1")
	g.Expect(out).To(HavePrefix("✚ GitRepository " + ns + "/app applied\n"))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &source)).To(Succeed())
	g.Expect(source.Spec.Reference).To(Equal(&sourcev1.GitRepositoryRef{Tag: "v1"}))
	g.Expect(source.Spec.Interval).To(Equal(metav1.Duration{Duration: 2 * time.Hour}))
}

// TestCreateSourceGitDefaultBranch: without --branch, a remote that has
// no master is followed at its default branch, and the command says so; a
// remote with master keeps the controller's default.
func TestCreateSourceGitDefaultBranch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	sha := srv.MustInitRepo(t, "trunk.git", "trunk").MustCommit(t, "trunk", map[string]string{"a.txt": "a"}, "one")
	srv.MustInitRepo(t, "classic.git", "master").MustCommit(t, "master", map[string]string{"a.txt": "a"}, "one")
	controlled := "--label=" + controlledLabel + "=true"

	out, errOut, err := run(t, "create", "source", "git", "trunk", "--url", base+"/trunk.git", controlled, "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(errOut).To(Equal("note: the remote has no branch master (the default without --branch): following its default branch trunk\n"))
	g.Expect(out).To(HaveSuffix(fmt.Sprintf("reconciled: stored artifact for revision 'trunk@sha1:%s'\n", sha)))
	var source sourcev1.GitRepository
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "trunk"}, &source)).To(Succeed())
	g.Expect(source.Spec.Reference).To(Equal(&sourcev1.GitRepositoryRef{Branch: "trunk"}))

	out, errOut, err = run(t, "create", "source", "git", "classic", "--url", base+"/classic.git", controlled, "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(errOut).To(BeEmpty())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "classic"}, &source)).To(Succeed())
	g.Expect(source.Spec.Reference).To(BeNil())
}

// TestCreateSecretSSH creates an SSH Secret whose known_hosts is scanned
// from a real SSH git server, and a GitRepository that clones with it.
func TestCreateSecretSSH(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartSSH(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	sha := repo.MustCommit(t, "main", map[string]string{"README.md": "hi"}, "one")
	_, identity := srv.AuthorizedSSHKeyForTest(t)
	keyFile := writeTestFile(t, g, "identity", identity)

	out, errOut, err := run(t, "create", "secret", "git", "ssh-auth", "--url", base+"/app.git", "--private-key-file", keyFile, "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✚ Secret " + ns + "/ssh-auth applied\n"))
	g.Expect(errOut).To(ContainSubstring("◎ scanned the host key of 127.0.0.1:"))
	g.Expect(errOut).To(ContainSubstring(ssh.FingerprintSHA256(srv.HostKey())))
	g.Expect(errOut).NotTo(ContainSubstring("PRIVATE KEY"))
	var secret corev1.Secret
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ssh-auth"}, &secret)).To(Succeed())
	g.Expect(secret.Data).To(Equal(map[string][]byte{"identity": identity, "known_hosts": srv.KnownHosts()}))

	out, _, err = run(t, "create", "source", "git", "app", "--url", base+"/app.git", "--branch", "main", "--secret-ref", "ssh-auth",
		"--label", controlledLabel+"=true", "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("✔ GitRepository " + ns + "/app reconciled: stored artifact for revision 'main@sha1:" + sha + "'"))
}

// TestCreateBadFlags checks that wrong flags are refused, in one line that
// names the flag, before anything reaches the cluster, and that no error
// echoes a secret.
func TestCreateBadFlags(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	identity, _ := fixedSSHKey(g, 1)
	keyFile := writeTestFile(t, g, "identity", identity)
	notAKey := writeTestFile(t, g, "not-a-key", []byte("s3cr3t\n"))
	emptyHosts := writeTestFile(t, g, "known_hosts", []byte("# nothing\n"))
	git := []string{"create", "source", "git", "app", "-n", ns}
	ks := []string{"create", "ks", "app", "-n", ns}
	secret := []string{"create", "secret", "git", "app-auth", "-n", ns}
	gate := []string{"create", "gate", "freeze", "-n", ns}
	tests := []refusedFlags{
		{"missing --url", append(git, "--branch", "main"), "--url is required"},
		{"a URL of another scheme", append(git, "--url", "ftp://example.com/app"), `--url scheme "ftp" is not supported`},
		{"an scp-like URL", append(git, "--url", "git@example.com:org/app"), "--url is not an absolute URL"},
		{"a URL with a password", append(git, "--url", "https://me:s3cr3t@example.com/app"), "--url must not carry a password"},
		{"two refs", append(git, "--url", "https://example.com/app", "--branch", "main", "--tag", "v1"), "pass one of --branch, --tag"},
		{"a commit and a tag", append(git, "--url", "https://example.com/app", "--commit", "abc", "--tag", "v1"), "pass one of --branch, --tag"},
		{"a zero interval", append(git, "--url", "https://example.com/app", "--interval", "0s"), "--interval must be a positive duration"},
		{"a negative interval", append(git, "--url", "https://example.com/app", "--interval=-1m"), "--interval must be a positive duration"},
		{"an interval that is no duration", append(git, "--url", "https://example.com/app", "--interval", "often"), `invalid --interval "often": write a duration like 1m or 30s`},
		{"a label without a value", append(git, "--url", "https://example.com/app", "--label", "team"), `--label "team" is not key=value`},
		{"a bad name", []string{"create", "source", "git", "App_1", "--url", "https://example.com/app", "-n", ns}, `NAME "App_1" is not an object name`},
		{"missing --source", append(ks, "--path", "./deploy"), "--source is required"},
		{"a source of an unknown kind", append(ks, "--source", "HelmRepository/app"), `--source kind "HelmRepository" is not one of GitRepository`},
		{"a source of too many parts", append(ks, "--source", "GitRepository/ns/app/x"), "--source \"GitRepository/ns/app/x\" has too many parts"},
		{"a path outside the source", append(ks, "--source", "app", "--path", "../other"), `--path "../other" leaves the source's root`},
		{"an absolute path", append(ks, "--source", "app", "--path", "/etc"), `--path "/etc" leaves the source's root`},
		{"a decryption secret alone", append(ks, "--source", "app", "--decryption-secret", "keys"), "--decryption-secret needs --decryption-provider sops"},
		{"another decryption provider", append(ks, "--source", "app", "--decryption-provider", "vault"), `--decryption-provider "vault" is not supported`},
		{"a zero health check timeout", append(ks, "--source", "app", "--health-check-timeout", "1ns"), "--health-check-timeout must be a positive duration"},
		{"a secret without credentials", append(secret, "--url", "https://example.com/app"), "an https URL needs --username and --password, or --ca-file"},
		{"a password without a user", append(secret, "--url", "https://example.com/app", "-p", "s3cr3t"), "--username and --password go together"},
		{"a key for https", append(secret, "--url", "https://example.com/app", "--private-key-file", keyFile), "--private-key-file and --known-hosts-file are for ssh URLs"},
		{"ssh without a key", append(secret, "--url", "ssh://git@example.com/app"), "an ssh URL needs --private-key-file"},
		{"ssh with a user name", append(secret, "--url", "ssh://git@example.com/app", "--private-key-file", keyFile, "-u", "me"), "--username is for https"},
		{"a file that is no key", append(secret, "--url", "ssh://git@example.com/app", "--private-key-file", notAKey), "is not an SSH private key"},
		{"a passphrase for a plain key", append(secret, "--url", "ssh://git@example.com/app", "--private-key-file", keyFile, "-p", "s3cr3t"), "the --private-key-file key is not encrypted"},
		{"a known_hosts without keys", append(secret, "--url", "ssh://git@example.com/app", "--private-key-file", keyFile, "--known-hosts-file", emptyHosts), "has no host keys"},
		{"a host that cannot be scanned", append(secret, "--url", "ssh://git@127.0.0.1:1/app", "--private-key-file", keyFile), "scanning the SSH host keys of 127.0.0.1:1"},
		{"a CA file that is missing", append(secret, "--url", "https://example.com/app", "--ca-file", filepath.Join(t.TempDir(), "ca.crt")), "reading --ca-file"},
		{"a CA file that holds no certificate", append(secret, "--url", "https://example.com/app", "--ca-file", notAKey), "holds no PEM certificate"},
		{"a gate's default that is no state", append(gate, "--default", "ajar"), `--default "ajar" is not a state: choose opened or closed`},
		{"a zero window", append(gate, "--window", "0s"), "--window must be a positive duration"},
		{"a negative interval", append(gate, "--interval=-30s"), "--interval must be a positive duration"},
		{"a schedule without its duration", append(gate, "--schedule", "close 0 0 * * FRI"), `--schedule "close 0 0 * * FRI": write "open|close CRON for DURATION [in ZONE]"`},
		{"a schedule with words after its zone", append(gate, "--schedule", "close 0 0 * * FRI for 1h in UTC now"), `write "open|close CRON for DURATION [in ZONE]"`},
		{"a schedule of another action", append(gate, "--schedule", "shut 0 0 * * FRI for 1h"), `"shut" is not an action: choose open or close`},
		{"a schedule with four cron fields", append(gate, "--schedule", "close 0 0 * * for 1h"), `--schedule "close 0 0 * * for 1h": cron "0 0 * *": expected exactly 5 fields`},
		{"a schedule with a minute out of range", append(gate, "--schedule", "close 61 0 * * FRI for 1h"), `cron "61 0 * * FRI": end of range (61) above maximum (59)`},
		{"a schedule in an unknown zone", append(gate, "--schedule", "close 0 0 * * FRI for 1h in Mars/Olympus"), `timeZone "Mars/Olympus" is not an IANA time zone`},
		{"a schedule with the zone in its cron", append(gate, "--schedule", "close TZ=UTC 0 0 * * FRI for 1h"), `name the time zone at the end, "in ZONE"`},
		{"a schedule of days", append(gate, "--schedule", "close 0 0 * * FRI for 1d"), `"1d" is not a duration such as 24h or 90m`},
		{"a schedule of no time", append(gate, "--schedule", "close 0 0 * * FRI for 0s"), `the DURATION of --schedule "close 0 0 * * FRI for 0s" must be a positive duration`},
	}
	expectRefused(t, tests)
	t.Run("nothing reached the cluster", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		var sources sourcev1.GitRepositoryList
		g.Expect(env.Client.List(ctx, &sources, client.InNamespace(ns))).To(Succeed())
		g.Expect(sources.Items).To(BeEmpty())
		var kss kustomizev1.KustomizationList
		g.Expect(env.Client.List(ctx, &kss, client.InNamespace(ns))).To(Succeed())
		g.Expect(kss.Items).To(BeEmpty())
		var secrets corev1.SecretList
		g.Expect(env.Client.List(ctx, &secrets, client.InNamespace(ns))).To(Succeed())
		g.Expect(strings.Join(secretNames(secrets.Items), ",")).NotTo(ContainSubstring("app-auth"))
		var gates gatingv1alpha1.GateList
		g.Expect(env.Client.List(ctx, &gates, client.InNamespace(ns))).To(Succeed())
		g.Expect(gates.Items).To(BeEmpty())
	})
}

// refusedFlags is a command line that must be refused with an error that
// holds wantErr.
type refusedFlags struct {
	name    string
	args    []string
	wantErr string
}

// expectRefused runs each command line against the test control plane and
// checks that it is refused in one line that holds its wantErr and no
// secret ("s3cr3t" in the tests), having printed nothing.
func expectRefused(t *testing.T, tests []refusedFlags) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := runWithInput(t, "", false, tt.args...)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"))
			g.Expect(out).To(BeEmpty())
		})
	}
}

// secretNames returns the names of secrets.
func secretNames(secrets []corev1.Secret) []string {
	names := make([]string, 0, len(secrets))
	for _, s := range secrets {
		names = append(names, s.Name)
	}
	return names
}

// TestCreateSecretPasswordStdin: --password-stdin reads the password from
// standard input (so that it is not in the process list) and writes the
// same Secret as --password does.
func TestCreateSecretPasswordStdin(t *testing.T) {
	exec := func(stdin string, extra ...string) (string, error) {
		var out, errOut bytes.Buffer
		root := NewRootCommand(&out, &errOut)
		root.SetIn(strings.NewReader(stdin))
		root.SetArgs(append([]string{"create", "secret", "git", "podinfo-auth", "--url", "https://github.com/stefanprodan/podinfo",
			"--username", "git", "--export", "--kubeconfig", filepath.Join(t.TempDir(), "missing")}, extra...))
		err := root.Execute()
		return out.String(), err
	}
	g := NewWithT(t)
	out, err := exec("s3cr3t-token\n", "--password-stdin")
	g.Expect(err).NotTo(HaveOccurred())
	expectGolden(t, g, "create-secret-git-basic-auth", out)

	_, err = exec("s3cr3t-token\n", "--password-stdin", "--password", "other")
	g.Expect(err).To(MatchError("--password and --password-stdin: choose one"))
	_, err = exec("", "--password-stdin")
	g.Expect(err).To(MatchError("--password-stdin: standard input holds no password"))
}
