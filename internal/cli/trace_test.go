package cli

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/imageupdate"
)

// TestTrace traces a ConfigMap that a Kustomization, itself applied by
// another, applied from a real git source; and an object no Kustomization
// applied.
func TestTrace(t *testing.T) {
	g := NewWithT(t)
	ns, base, sha := appliedScenario(t, g)
	normalize := traceNormalizer(ns, sha, base)

	for _, args := range [][]string{
		{"trace", "configmap", "db-settings", "-n", ns},
		{"trace", "ConfigMap/db-settings", "-n", ns},
		{"trace", "cm", "db-settings", "--api-version", "v1", "-n", ns},
	} {
		t.Run(strings.Join(args[:len(args)-2], " "), func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(t, args...)
			g.Expect(err).NotTo(HaveOccurred())
			expectGolden(t, g, "trace-configmap", normalize(out))
		})
	}

	t.Run("a Kustomization applied by another", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "trace", "kustomization", "db", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(HavePrefix("Object:         Kustomization/db\n"))
		g.Expect(out).To(ContainSubstring("Kustomization:  apps\n"))
	})

	t.Run("an object not managed by Windlass", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-hand"}})).To(Succeed())
		out, _, err := run(t, "trace", "configmaps", "by-hand", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred())
		expectGolden(t, g, "trace-unmanaged", normalize(out))
	})

	t.Run("a cluster-scoped object", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "trace", "namespace", ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(Equal("Object:         Namespace/" + ns + "\nStatus:         Not managed by Windlass (it has no kustomize.toolkit.fluxcd.io/name label)\n"))
	})
}

func TestTraceBadInput(t *testing.T) {
	ns := env.CreateNamespace(t)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "an unknown kind", args: []string{"trace", "frobnicator", "x", "-n", ns},
			wantErr: `the cluster serves no kind "frobnicator": check the spelling`},
		{name: "a kind in the wrong API version", args: []string{"trace", "configmap", "x", "--api-version", "apps/v1", "-n", ns},
			wantErr: `the cluster serves no kind "configmap" in apps/v1`},
		{name: "a bad API version", args: []string{"trace", "configmap", "x", "--api-version", "a/b/c", "-n", ns},
			wantErr: `--api-version "a/b/c": want group/version`},
		{name: "an object that does not exist", args: []string{"trace", "configmap", "nothing", "-n", ns},
			wantErr: "ConfigMap nothing not found in namespace " + ns + ": check the name and -n"},
		{name: "no name", args: []string{"trace", "configmap", "-n", ns},
			wantErr: "name the object as KIND NAME or KIND/NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, _, err := run(t, tt.args...)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
		})
	}
}

// TestTraceImageUpdate: an object applied from a commit of image update
// automation traces to the automation, the policy and the values it
// rewrote, read from the commit's git note.
func TestTraceImageUpdate(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	sha := repo.MustCommit(t, "main", map[string]string{"deploy/cm.yaml": fmt.Sprintf(
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: %s\ndata:\n  image: ghcr.io/org/web:1.1.0\n", ns)}, "update")
	note, err := imageupdate.UpdateNote{
		Automation: ns + "/fleet",
		Policies: []imageupdate.NotePolicy{{Name: ns + "/web", Image: "ghcr.io/org/web:1.1.0",
			Previous: "ghcr.io/org/web:1.0.0", Reason: "latest by policy: semver ^1.0"}},
		Changes: []imageupdate.NoteChange{{File: "deploy/cm.yaml", Object: "ConfigMap/" + ns + "/web", Setter: ns + ":web",
			OldValue: "ghcr.io/org/web:1.0.0", NewValue: "ghcr.io/org/web:1.1.0"}},
	}.Note()
	g.Expect(err).NotTo(HaveOccurred())
	out, err := srv.GitCommand(repo.Path(), "notes", "add", "-m", note, sha).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	createFromYAML(g, &sourcev1.GitRepository{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: app, namespace: %s}
spec: {interval: 1h, url: %s/app.git, ref: {branch: main}}
`, ns, base))
	createFromYAML(g, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: web, namespace: %s}
spec: {interval: 1h, path: ./deploy, prune: true, sourceRef: {kind: GitRepository, name: app}}
`, ns))
	g.Eventually(func() error {
		_, _, err := run(t, "trace", "configmap", "web", "-n", ns)
		return err
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())

	out2, _, err := run(t, "trace", "configmap", "web", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	normalize := traceNormalizer(ns, sha, base)
	expectGolden(t, g, "trace-image-update", normalize(out2))
}

// commitTime matches the time of a commit in a trace.
var commitTime = regexp.MustCompile(`(?m)^(Committed: +)\S+$`)

// traceNormalizer returns what makes a trace the same from run to run:
// the namespace, commit hash, git server and commit time replaced.
func traceNormalizer(ns, sha, base string) func(string) string {
	names := strings.NewReplacer(ns, "NS", sha, "SHA", base, "http://GIT")
	return func(s string) string {
		return commitTime.ReplaceAllString(names.Replace(s), "${1}TIME")
	}
}
