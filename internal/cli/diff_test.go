package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/cli/term"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// appsFiles are the files of the git repository of the applied scenario:
// the folder apps (a ConfigMap, a Secret and the Kustomization db) and the
// folder db (a ConfigMap), every object in ns.
func appsFiles(ns string) map[string]string {
	return map[string]string{
		"apps/settings.yaml": fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: %s}
data:
  color: blue
  size: large
`, ns),
		"apps/credentials.yaml": fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: credentials, namespace: %s}
stringData:
  password: s3cret
  user: admin
`, ns),
		"apps/db.yaml": fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: db
  namespace: %s
  labels: {%s: "true"}
spec: {interval: 1h, path: ./db, prune: true, sourceRef: {kind: GitRepository, name: app}}
`, ns, controlledLabel),
		"db/settings.yaml": fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: db-settings, namespace: %s}
data: {engine: postgres}
`, ns),
	}
}

// appliedScenario serves appsFiles from a git server, and has the tests'
// controllers apply them: the GitRepository app and the Kustomization
// apps, which applies the Kustomization db. It returns the namespace, the
// git server's address and the commit, once both Kustomizations applied
// it.
func appliedScenario(t *testing.T, g *WithT) (ns, base, sha string) {
	ns = env.CreateNamespace(t)
	_, base, sha = servedSource(t, g, ns, appsFiles(ns))
	createFromYAML(g, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: %s}
spec: {interval: 1h, path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: app}}
`, ns))
	for _, name := range []string{"apps", "db"} {
		g.Eventually(func(g Gomega) {
			ks := &kustomizev1.Kustomization{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ks)).To(Succeed())
			g.Expect(conditions.IsTrue(ks, meta.ReadyCondition)).To(BeTrue())
			g.Expect(ks.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))
		}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "Kustomization %s applies", name)
	}
	return ns, base, sha
}

// localFolder writes the files of appsFiles under apps/, changed by edit,
// into a new folder, and returns it.
func localFolder(t *testing.T, ns string, edit func(files map[string]string)) string {
	t.Helper()
	files := map[string]string{}
	for name, data := range appsFiles(ns) {
		if rest, ok := strings.CutPrefix(name, "apps/"); ok {
			files[rest] = data
		}
	}
	edit(files)
	return writeFolder(t, files)
}

// TestDiff compares local folders with what the controller applied from
// git: the same folder differs in nothing; a changed ConfigMap and a new
// one, a changed Secret (whose values never show) and a removed object
// differ, with exit code 1.
func TestDiff(t *testing.T) {
	g := NewWithT(t)
	ns, _, _ := appliedScenario(t, g)

	t.Run("nothing changed", func(t *testing.T) {
		g := NewWithT(t)
		dir := localFolder(t, ns, func(map[string]string) {})
		out, _, err := run(t, "diff", "kustomization", "apps", "-n", ns, "--path", dir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(BeEmpty())
	})
	t.Run("nothing changed, on a terminal", func(t *testing.T) {
		g := NewWithT(t)
		isTerminal = func(io.Writer) bool { return true }
		t.Cleanup(func() { isTerminal = term.IsTerminal })
		dir := localFolder(t, ns, func(map[string]string) {})
		out, _, err := run(t, "diff", "kustomization", "apps", "-n", ns, "--path", dir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(Equal("✔ no changes\n"))
	})

	tests := []struct {
		name   string
		edit   func(files map[string]string)
		golden string
	}{
		{name: "a ConfigMap changed and one added", golden: "diff-configmap", edit: func(files map[string]string) {
			files["settings.yaml"] = strings.Replace(files["settings.yaml"], "color: blue", "color: green", 1)
			files["extra.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: %s}\n", ns)
		}},
		{name: "a Secret changed", golden: "diff-secret", edit: func(files map[string]string) {
			files["credentials.yaml"] = strings.Replace(files["credentials.yaml"], "password: s3cret", "password: n3w-pa55", 1)
		}},
		{name: "an object removed", golden: "diff-deleted", edit: func(files map[string]string) {
			delete(files, "db.yaml")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(t, "diff", "ks", "apps", "-n", ns, "--path", localFolder(t, ns, tt.edit))
			var exit *ExitError
			g.Expect(errors.As(err, &exit)).To(BeTrue(), "%v", err)
			g.Expect(exit.Code).To(Equal(1))
			g.Expect(exit.Err).NotTo(HaveOccurred())
			for _, secret := range []string{"s3cret", "n3w-pa55", "admin"} {
				g.Expect(out).NotTo(ContainSubstring(secret))
				g.Expect(out).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(secret))))
			}
			expectGolden(t, g, tt.golden, strings.ReplaceAll(out, ns, "NS"))
		})
	}

	t.Run("the cluster is left as it was", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "diff", "ks", "apps", "-n", ns, "--path", localFolder(t, ns, func(map[string]string) {}))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(BeEmpty())
	})
}

func TestDiffBadInput(t *testing.T) {
	ns := env.CreateNamespace(t)
	dir := localFolder(t, ns, func(map[string]string) {})
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "a missing folder", args: []string{"diff", "ks", "apps", "-n", ns, "--path", filepath.Join(dir, "missing")},
			wantErr: "does not exist: pass --path the local folder"},
		{name: "a Kustomization that does not exist", args: []string{"diff", "ks", "nothing", "-n", ns, "--path", dir},
			wantErr: "Kustomization " + ns + "/nothing not found: check its name and -n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, _, err := run(t, tt.args...)
			var exit *ExitError
			g.Expect(errors.As(err, &exit)).To(BeTrue(), "%v", err)
			g.Expect(exit.Code).To(Equal(2))
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
		})
	}
}
