package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/gitserver"
)

// createFromYAML creates the object manifest declares, for the tests'
// controllers to reconcile.
func createFromYAML(g *WithT, obj client.Object, manifest string) {
	g.Expect(yaml.UnmarshalStrict([]byte(manifest), obj)).To(Succeed(), manifest)
	obj.SetLabels(map[string]string{controlledLabel: "true"})
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
}

// servedSource serves a repository with files committed on main over HTTP,
// and creates the GitRepository "app" of it in ns, for the tests'
// controllers. It returns the repository, the server's address and the
// commit.
func servedSource(t *testing.T, g *WithT, ns string, files map[string]string) (repo *gitserver.Repo, base, sha string) {
	srv := gitserver.NewForTest(t)
	base = srv.MustStartHTTP(t)
	repo = srv.MustInitRepo(t, "app.git", "main")
	sha = repo.MustCommit(t, "main", files, "one")
	createFromYAML(g, &sourcev1.GitRepository{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: app, namespace: %s}
spec: {interval: 1h, url: %s/app.git, ref: {branch: main}}
`, ns, base))
	return repo, base, sha
}

// TestReconcileSuspendResume drives a GitRepository and a Kustomization
// with the verbs, against running controllers: reconcile waits for the
// outcome (and says when it is not Ready, with a non-zero exit), suspend
// stops the object, reconcile refuses a suspended one with the command that
// resumes it, and resume waits until it is Ready again.
func TestReconcileSuspendResume(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	repo, _, _ := servedSource(t, g, ns, map[string]string{"deploy/cm.yaml": fmt.Sprintf(
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: %s\ndata:\n  v: \"1\"\n", ns)})
	createFromYAML(g, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: %s}
spec: {interval: 1h, path: ./deploy, prune: true, sourceRef: {kind: GitRepository, name: app}}
`, ns))

	sha := repo.MustCommit(t, "main", map[string]string{"deploy/cm.yaml": fmt.Sprintf(
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: %s\ndata:\n  v: \"2\"\n", ns)}, "two")
	out, _, err := run(t, "reconcile", "ks", "app", "-n", ns, "--with-source", "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("✔ GitRepository " + ns + "/app reconciled: stored artifact for revision 'main@sha1:" + sha + "'"))
	g.Expect(out).To(ContainSubstring("✔ Kustomization " + ns + "/app reconciled: Applied revision: main@sha1:" + sha))
	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &cm)).To(Succeed())
	g.Expect(cm.Data["v"]).To(Equal("2"), "--with-source applied the new commit")

	out, _, err = run(t, "suspend", "kustomization", "app", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✔ Kustomization " + ns + "/app suspended\n"))
	ks := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, ks)).To(Succeed())
	g.Expect(ks.Spec.Suspend).To(BeTrue())
	_, _, err = run(t, "reconcile", "kustomization", "app", "-n", ns)
	g.Expect(err).To(MatchError(ContainSubstring("is suspended: resume it with `windlass resume kustomization app`")))

	out, _, err = run(t, "resume", "ks", "--all", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("✔ Kustomization " + ns + "/app reconciled"))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, ks)).To(Succeed())
	g.Expect(ks.Spec.Suspend).To(BeFalse())

	// A revision that does not build: reconcile says why, and fails.
	repo.MustCommit(t, "main", map[string]string{"deploy/kustomization.yaml": "resources: [missing.yaml]\n"}, "broken")
	out, _, err = run(t, "reconcile", "ks", "app", "-n", ns, "--with-source")
	g.Expect(err).To(MatchError(ContainSubstring("Kustomization "+ns+"/app is not Ready")), out)
}

func TestVerbsBadInput(t *testing.T) {
	ns := env.CreateNamespace(t)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "an object that does not exist", args: []string{"reconcile", "source", "git", "nothing", "-n", ns}, wantErr: "GitRepository " + ns + "/nothing not found: check its name and -n"},
		{name: "neither a name nor --all", args: []string{"suspend", "ks", "-n", ns}, wantErr: "name one object, or pass --all"},
		{name: "a name and --all", args: []string{"resume", "ks", "app", "--all", "-n", ns}, wantErr: "name one object, or pass --all"},
		{name: "a timeout out of range", args: []string{"reconcile", "ks", "app", "--timeout", "0s", "-n", ns}, wantErr: "--timeout must be positive"},
		{name: "an unknown kind", args: []string{"get", "widgets", "-n", ns}, wantErr: `unknown kind "widgets" for "windlass get": choose one of alert, alert-provider, all, artifactgenerator, gate, helmrelease, images, kustomization, receiver, shards, sources`},
		{name: "an unknown source kind", args: []string{"reconcile", "source", "svn", "app", "-n", ns}, wantErr: `unknown kind "svn" for "windlass reconcile source": choose one of bucket, chart, git, helm, oci`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, _, err := run(t, tt.args...)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

// TestResumeAllFollowsDependencies: `resume --all` resumes what others
// depend on first, so that each one it waits for can become Ready ("app"
// comes before "db" by name, but depends on it).
func TestResumeAllFollowsDependencies(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	servedSource(t, g, ns, map[string]string{
		"app/cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: %s\n", ns),
		"db/cm.yaml":  fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db\n  namespace: %s\n", ns),
	})
	for _, manifest := range []string{
		`{name: app, namespace: %s}
spec: {suspend: true, interval: 1h, path: ./app, sourceRef: {kind: GitRepository, name: app}, dependsOn: [{name: db}]}`,
		`{name: db, namespace: %s}
spec: {suspend: true, interval: 1h, path: ./db, sourceRef: {kind: GitRepository, name: app}}`,
	} {
		createFromYAML(g, &kustomizev1.Kustomization{}, fmt.Sprintf("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: "+manifest, ns))
	}
	// The source may have no artifact yet when the Kustomizations are
	// resumed: they wait for it, and resume with them (a flake seen in CI
	// when the source was slow; see TestReconcileWaitsForTheSourceArtifact).

	out, _, err := run(t, "resume", "ks", "--all", "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	db := strings.Index(out, "✔ Kustomization "+ns+"/db reconciled")
	app := strings.Index(out, "✔ Kustomization "+ns+"/app reconciled")
	g.Expect(db).To(BeNumerically(">=", 0), out)
	g.Expect(app).To(BeNumerically(">", db), out)
}

// TestCompletionNamesObjects: shell completion offers the names of the
// objects of the kind in the namespace.
func TestCompletionNamesObjects(t *testing.T) {
	g := NewWithT(t)
	ns1, _ := seedObjects(t, g)
	complete := func(args ...string) []string {
		var out, errOut bytes.Buffer
		root := NewRootCommand(&out, &errOut)
		root.SetArgs(append([]string{"__complete"}, args...))
		g.Expect(root.Execute()).To(Succeed())
		return strings.Split(strings.TrimSpace(out.String()), "\n")
	}
	g.Expect(complete("reconcile", "ks", "--kubeconfig", kubeconfig, "-n", ns1, "")).To(HaveExactElements("app", "db", ":4"))
	g.Expect(complete("suspend", "source", "git", "--kubeconfig", kubeconfig, "-n", ns1, "a")).To(HaveExactElements("app", ":4"))
	g.Expect(complete("delete", "kustomization", "--kubeconfig", kubeconfig, "-n", ns1, "d")).To(HaveExactElements("db", ":4"))
	g.Expect(complete("reconcile", "ks", "app", "--kubeconfig", kubeconfig, "-n", ns1, "")).To(HaveExactElements(":4"), "one name only")
	gates := env.CreateNamespace(t)
	g.Expect(env.Client.Create(context.Background(), &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: gates, Name: "freeze"}})).To(Succeed())
	g.Expect(complete("gate", "open", "--kubeconfig", kubeconfig, "-n", gates, "f")).To(HaveExactElements("freeze", ":4"))
	g.Expect(complete("reconcile", "gate", "--kubeconfig", kubeconfig, "-n", gates, "")).To(HaveExactElements("freeze", ":4"))

	var script bytes.Buffer
	root := NewRootCommand(&script, &script)
	root.SetArgs([]string{"completion", "bash"})
	g.Expect(root.Execute()).To(Succeed())
	g.Expect(script.String()).To(ContainSubstring("__start_windlass"))
}
