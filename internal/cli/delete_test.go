package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// runAnswering runs the windlass command line with args against the test
// control plane, with stdin as its standard input.
func runAnswering(t *testing.T, stdin string, args ...string) (stdout string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewRootCommand(&out, &errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(append(args, "--kubeconfig", kubeconfig))
	err = root.Execute()
	return out.String(), err
}

// expectGone checks whether obj is gone from the cluster.
func expectGone(g *WithT, obj client.Object, gone bool) {
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if gone {
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s/%s is gone", obj.GetNamespace(), obj.GetName())
	} else {
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// TestDeleteAsks deletes only when the answer is yes or --silent is set,
// and refuses an object that does not exist.
func TestDeleteAsks(t *testing.T) {
	ns := env.CreateNamespace(t)
	for _, name := range []string{"yes", "no", "mute", "silent"} {
		src := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/app.git", Interval: metav1.Duration{Duration: time.Minute}}}
		NewWithT(t).Expect(env.Client.Create(context.Background(), src)).To(Succeed())
	}
	source := func(name string) client.Object {
		return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	prompt := func(name string) string {
		return "Are you sure you want to delete GitRepository " + ns + "/" + name + "? [y/N] "
	}

	t.Run("yes deletes", func(t *testing.T) {
		g := NewWithT(t)
		out, err := runAnswering(t, "y\n", "delete", "source", "git", "yes", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(Equal(prompt("yes") + "► deleting GitRepository " + ns + "/yes\n✔ GitRepository " + ns + "/yes deleted\n"))
		expectGone(g, source("yes"), true)
	})
	t.Run("no keeps the object", func(t *testing.T) {
		g := NewWithT(t)
		out, err := runAnswering(t, "n\n", "delete", "source", "git", "no", "-n", ns)
		g.Expect(err).To(MatchError("GitRepository " + ns + "/no was not deleted: the answer was not yes"))
		g.Expect(out).To(Equal(prompt("no")))
		expectGone(g, source("no"), false)
	})
	t.Run("no answer keeps the object", func(t *testing.T) {
		g := NewWithT(t)
		_, err := runAnswering(t, "", "delete", "source", "git", "mute", "-n", ns)
		g.Expect(err).To(MatchError(ContainSubstring("no answer on the standard input (pass --silent")))
		expectGone(g, source("mute"), false)
	})
	t.Run("--silent does not ask", func(t *testing.T) {
		g := NewWithT(t)
		out, err := runAnswering(t, "", "delete", "source", "git", "silent", "-s", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(Equal("► deleting GitRepository " + ns + "/silent\n✔ GitRepository " + ns + "/silent deleted\n"))
		expectGone(g, source("silent"), true)
	})
	t.Run("a finalizer that is not removed times out", func(t *testing.T) {
		g := NewWithT(t)
		held := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held", Finalizers: []string{"example.com/hold"}},
			Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/app.git", Interval: metav1.Duration{Duration: time.Minute}}}
		g.Expect(env.Client.Create(context.Background(), held)).To(Succeed())
		t.Cleanup(func() {
			_ = env.Client.Patch(context.Background(), held, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
		})
		_, err := runAnswering(t, "", "delete", "source", "git", "held", "-s", "-n", ns, "--timeout", "1s")
		g.Expect(err).To(MatchError("GitRepository " + ns + "/held is still there after 1s, waiting for its finalizers [example.com/hold]: is its controller running?"))
		expectGone(g, source("held"), false)
	})
	t.Run("a missing object is an error", func(t *testing.T) {
		g := NewWithT(t)
		_, err := runAnswering(t, "y\n", "delete", "kustomization", "nothing", "-n", ns)
		g.Expect(err).To(MatchError("Kustomization " + ns + "/nothing does not exist: nothing to delete"))
	})
}

// TestDeleteRunsFinalizers deletes a Kustomization that its controller
// reconciles: the command returns once the finalizer has pruned what it
// applied and the object is gone.
func TestDeleteRunsFinalizers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	servedSource(t, g, ns, map[string]string{"deploy/cm.yaml": fmt.Sprintf(
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pruned\n  namespace: %s\n", ns)})
	ks := &kustomizev1.Kustomization{}
	createFromYAML(g, ks, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: %s}
spec: {interval: 1h, path: ./deploy, prune: true, sourceRef: {kind: GitRepository, name: app}}
`, ns))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pruned"}}
	g.Eventually(func() error { return env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm) }, time.Minute).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), ks)).To(Succeed())
	g.Expect(ks.Finalizers).NotTo(BeEmpty(), "the controller guards the Kustomization with a finalizer")

	out, err := runAnswering(t, "", "delete", "ks", "app", "--silent", "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(HaveSuffix("✔ Kustomization " + ns + "/app deleted\n"))
	expectGone(g, ks, true)
	expectGone(g, cm, true)

	out, err = runAnswering(t, "yes\n", "delete", "source", "git", "app", "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectGone(g, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}, true)
}
