package cli

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/shard"
)

// exportNamespace is the namespace of the export tests, named so that the
// golden files hold it.
const exportNamespace = "windlass-export"

// seedExportObjects creates, in exportNamespace, two GitRepositories and a
// Kustomization with a status, cluster-written annotations and labels (the
// shard bucket), and a user's annotation and labels.
func seedExportObjects(t *testing.T, g *WithT) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: exportNamespace}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	om := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: exportNamespace, Name: name, Labels: map[string]string{"team": "apps", shard.BucketLabel: "17"},
			Annotations: map[string]string{meta.ReconcileRequestAnnotation: "2024-01-01T00:00:00Z", "example.com/owner": "apps"}}
	}
	app := &sourcev1.GitRepository{ObjectMeta: om("app"), Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/app.git",
		Interval: metav1.Duration{Duration: 5 * time.Minute}, Reference: &sourcev1.GitRepositoryRef{Branch: "main"},
		SecretRef: &meta.LocalObjectReference{Name: "app-auth"}}}
	createWithStatus(g, app, func() {
		app.Status.Artifact = &meta.Artifact{Revision: "main@sha1:0123456789abcdef", Path: "p", URL: "http://x/p", Digest: "sha256:0", LastUpdateTime: metav1.Now()}
		conditions.MarkTrue(app, meta.ReadyCondition, meta.SucceededReason, "stored artifact for revision 'main@sha1:0123456789abcdef'")
	})
	infra := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: exportNamespace, Name: "infra"},
		Spec: sourcev1.GitRepositorySpec{URL: "ssh://git@example.com/infra.git", Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.GitRepositoryRef{Tag: "v1.2.0"}, Suspend: true}}
	g.Expect(env.Client.Create(ctx, infra)).To(Succeed())
	ks := &kustomizev1.Kustomization{ObjectMeta: om("app"), Spec: kustomizev1.KustomizationSpec{
		Interval: metav1.Duration{Duration: 10 * time.Minute}, Path: "./deploy", Prune: true,
		SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"}}}
	createWithStatus(g, ks, func() {
		ks.Status.LastAppliedRevision = "main@sha1:0123456789abcdef"
		conditions.MarkTrue(ks, meta.ReadyCondition, kustomizev1.ReconciliationSucceededReason, "Applied revision: main@sha1:0123456789abcdef")
	})
	// The namespace outlives the test (no controller empties it): the
	// objects go, so that no later test counts their holder.
	t.Cleanup(func() {
		for _, o := range []client.Object{app, infra, ks} {
			_ = env.Client.Delete(context.Background(), o)
		}
	})
}

// TestExport prints objects of a namespace as YAML for Git: without
// status, without what the cluster writes, one document each.
func TestExport(t *testing.T) {
	g := NewWithT(t)
	seedExportObjects(t, g)
	tests := []struct {
		golden string
		args   []string
	}{
		{golden: "export-sources-git-all", args: []string{"export", "source", "git", "--all"}},
		{golden: "export-source-git", args: []string{"export", "source", "git", "infra"}},
		{golden: "export-kustomization", args: []string{"export", "ks", "app"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			g := NewWithT(t)
			out, errOut, err := run(t, append(tt.args, "-n", exportNamespace)...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(errOut).To(BeEmpty())
			expectGolden(t, g, tt.golden, out)
		})
	}

	t.Run("the export applies back unchanged", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "export", "kustomization", "app", "-n", exportNamespace)
		g.Expect(err).NotTo(HaveOccurred())
		var exported kustomizev1.Kustomization
		g.Expect(yaml.UnmarshalStrict([]byte(out[len("---\n"):]), &exported)).To(Succeed())
		var live kustomizev1.Kustomization
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: exportNamespace, Name: "app"}, &live)).To(Succeed())
		g.Expect(exported.Spec).To(Equal(live.Spec))
		g.Expect(exported.Status).To(BeZero())
	})
	t.Run("an empty namespace says so", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.CreateNamespace(t)
		out, errOut, err := run(t, "export", "ks", "--all", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(BeEmpty())
		g.Expect(errOut).To(Equal("no Kustomization objects found in namespace " + ns + "\n"))
	})
	t.Run("an object that does not exist", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := run(t, "export", "source", "git", "nothing", "-n", exportNamespace)
		g.Expect(err).To(MatchError(ContainSubstring("GitRepository " + exportNamespace + "/nothing not found: check its name and -n")))
	})
	t.Run("neither a name nor --all", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := run(t, "export", "ks", "-n", exportNamespace)
		g.Expect(err).To(MatchError("name one object, or pass --all"))
	})
}
