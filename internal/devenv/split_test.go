package devenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/controlplane"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

func TestNewSplitter(t *testing.T) {
	dir := testutil.WriteTree(t, map[string]string{
		"apps/web/cm.yaml": "a", "apps/Auth/cm.yaml": "b", "envs/prod/web/cm.yaml": "c", "README.md": "d",
	})
	tests := []struct {
		pattern   string
		wantNames []string
		wantErr   string
	}{
		{pattern: "apps/{app}", wantNames: []string{"auth", "web"}},
		{pattern: "/apps/{app}/", wantNames: []string{"auth", "web"}},
		{pattern: "envs/{env}/{app}", wantNames: []string{"prod-web"}},
		{pattern: "services/{app}", wantNames: []string{}},
		{pattern: "apps", wantErr: `--split "apps" has no {name}`},
		{pattern: "apps/{app", wantErr: "--split: pathPattern '@dev/apps/{app' has an unbalanced brace"},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			g := NewWithT(t)
			sp, err := newSplitter(tt.pattern, dir)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			names, err := sp.names()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(names).To(ConsistOf(tt.wantNames))
		})
	}
}

func TestSplitterReport(t *testing.T) {
	ks := func(ready metav1.ConditionStatus, attempted, applied string, reconciling string) *kustomizev1.Kustomization {
		k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "web", Generation: 1}}
		k.Status.ObservedGeneration = 1
		k.Status.LastAttemptedRevision, k.Status.LastAppliedRevision = attempted, applied
		k.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: ready, Reason: "R", Message: "the message"}}
		if reconciling != "" {
			k.Status.Conditions = append(k.Status.Conditions, metav1.Condition{Type: meta.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: reconciling})
		}
		return k
	}
	tests := []struct {
		name string
		said string
		ks   *kustomizev1.Kustomization
		want string
	}{
		{name: "a new revision applied", said: "latest@sha256:1", ks: ks(metav1.ConditionTrue, "latest@sha256:2", "latest@sha256:2", ""),
			want: "✔ Kustomization flux-system/web applied latest@sha256:2"},
		{name: "said already", said: "latest@sha256:2", ks: ks(metav1.ConditionTrue, "latest@sha256:2", "latest@sha256:2", "")},
		{name: "still applying", said: "latest@sha256:1", ks: ks(metav1.ConditionUnknown, "latest@sha256:2", "latest@sha256:1", meta.ProgressingReason)},
		{name: "a new revision failed", said: "latest@sha256:1", ks: ks(metav1.ConditionFalse, "latest@sha256:2", "latest@sha256:1", ""),
			want: "✗ Kustomization flux-system/web did not apply latest@sha256:2: the message"},
		{name: "failed, retrying", said: "latest@sha256:1", ks: ks(metav1.ConditionFalse, "latest@sha256:2", "latest@sha256:1", meta.ProgressingWithRetryReason),
			want: "✗ Kustomization flux-system/web did not apply latest@sha256:2: the message"},
		{name: "the first apply of a new folder", said: "", ks: ks(metav1.ConditionTrue, "latest@sha256:3", "latest@sha256:3", ""),
			want: "✔ Kustomization flux-system/web applied latest@sha256:3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			sp := &splitter{applied: map[string]string{"web": tt.said}}
			g.Expect(sp.report(tt.ks)).To(Equal(tt.want))
			if tt.want != "" {
				g.Expect(sp.report(tt.ks)).To(BeEmpty(), "said once")
			}
		})
	}
}

// TestDevSplitAppliesOnlyTheChangedFolder: with --path and --split, each
// folder of the pattern is one artifact applied by its own Kustomization;
// an edit of one folder is applied by that folder's Kustomization alone
// (the other's artifact does not change), a new folder gets its
// Kustomization, and a folder removed takes its Kustomization and what it
// applied away.
func TestDevSplitAppliesOnlyTheChangedFolder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	assets, err := testenv.AssetsDir()
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	write := func(name, content string) {
		g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
	}
	write("apps/auth/cm.yaml", namedConfigMap("auth", "one"))
	write("apps/web/cm.yaml", namedConfigMap("web", "one"))
	cache := t.TempDir()
	dev := startDev(t, append(childproc.CleanEnv(), devChildEnv+"=1", devChildPathEnv+"="+dir, devChildSplitEnv+"=apps/{app}",
		controlplane.CacheDirEnv+"="+cache, controlplane.AssetsEnv+"="+assets))
	g.Eventually(dev.out.String, startupTimeout, 100*time.Millisecond).Should(ContainSubstring("Windlass dev is running"))
	rec := readRecord(t, cache)
	t.Cleanup(func() { stopAll(rec) })
	out := dev.out.String()
	g.Expect(out).To(ContainSubstring("✔ ArtifactGenerator flux-system/dev: generated 2 artifact(s)"))
	g.Expect(out).To(ContainSubstring("✔ Kustomization flux-system/auth: "))
	g.Expect(out).To(ContainSubstring("✔ Kustomization flux-system/web: "))
	c := kubeClient(t, rec.Kubeconfig)
	artifactOf := func(name string) string {
		var ea sourcev1.ExternalArtifact
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, &ea)).To(Succeed())
		g.Expect(ea.Status.Artifact).NotTo(BeNil())
		return ea.Status.Artifact.Digest
	}
	authBefore := artifactOf("auth")

	write("apps/web/cm.yaml", namedConfigMap("web", "two"))
	g.Eventually(dev.out.String, 2*time.Minute, 100*time.Millisecond).Should(
		MatchRegexp(`(?m)^✔ Kustomization flux-system/web applied latest@sha256:[0-9a-f]{64}$`))
	g.Expect(configMapValue(ctx, c, "web")).To(Equal("two"))
	g.Expect(artifactOf("auth")).To(Equal(authBefore), "the folder not edited keeps its artifact")
	g.Expect(dev.out.String()).NotTo(ContainSubstring("flux-system/auth applied"))

	write("apps/db/cm.yaml", namedConfigMap("db", "one"))
	g.Eventually(dev.out.String, 2*time.Minute, 100*time.Millisecond).Should(
		MatchRegexp(`(?s)✚ created Kustomization flux-system/db for a new folder.*✔ Kustomization flux-system/db applied latest@sha256:`))
	g.Expect(configMapValue(ctx, c, "db")).To(Equal("one"))

	g.Expect(os.RemoveAll(filepath.Join(dir, "apps", "auth"))).To(Succeed())
	g.Eventually(dev.out.String, 2*time.Minute, 100*time.Millisecond).Should(
		ContainSubstring("✚ deleted Kustomization flux-system/auth: its folder is gone"))
	g.Eventually(func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "auth"}, &corev1.ConfigMap{}))
	}, time.Minute, 100*time.Millisecond).Should(BeTrue(), "what the folder's Kustomization applied is pruned")
}

// namedConfigMap is the manifest of the ConfigMap name in default whose
// value is value.
func namedConfigMap(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: default\ndata:\n  value: " + value + "\n"
}

// configMapValue returns the value of the ConfigMap name in default, ""
// when it cannot be read.
func configMapValue(ctx context.Context, c client.Client, name string) string {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &cm); err != nil {
		return ""
	}
	return cm.Data["value"]
}
