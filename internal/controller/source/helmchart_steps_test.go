package source

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/helm/repository"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

func TestChartUpToDate(t *testing.T) {
	stored := func() *sourcev1.HelmChart {
		obj := newHelmChart("apps", "app", sourcev1.HelmRepositoryKind, "repo", "podinfo")
		obj.Generation = 2
		obj.Spec.ValuesFiles = []string{"values.yaml"}
		obj.Status = sourcev1.HelmChartStatus{
			ObservedGeneration: 2, ObservedChartName: "podinfo", ObservedValuesFiles: []string{"values.yaml"},
			ObservedSourceArtifactRevision: "sha256:aaa",
			Artifact:                       &meta.Artifact{Revision: "1.0.0"},
		}
		return obj
	}
	tests := []struct {
		name              string
		change            func(*sourcev1.HelmChart)
		version, revision string
		want              bool
	}{
		{name: "same version", version: "1.0.0", want: true},
		{name: "any version, same source revision", revision: "sha256:aaa", want: true},
		{name: "new version", version: "1.1.0"},
		{name: "new source revision", revision: "sha256:bbb"},
		{name: "no artifact", version: "1.0.0", change: func(o *sourcev1.HelmChart) { o.Status.Artifact = nil }},
		{name: "other chart", version: "1.0.0", change: func(o *sourcev1.HelmChart) { o.Spec.Chart = "other" }},
		{name: "other values files", version: "1.0.0", change: func(o *sourcev1.HelmChart) { o.Spec.ValuesFiles = nil }},
		{name: "new generation", version: "1.0.0", change: func(o *sourcev1.HelmChart) { o.Generation = 3 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := stored()
			if tt.change != nil {
				tt.change(obj)
			}
			g.Expect(chartUpToDate(obj, tt.version, tt.revision)).To(Equal(tt.want))
		})
	}
}

func TestValidateHelmChartSpec(t *testing.T) {
	tests := []struct {
		name   string
		change func(*sourcev1.HelmChart)
		reason string // of the stall; "" for valid
	}{
		{name: "valid"},
		{name: "exact version", change: func(o *sourcev1.HelmChart) { o.Spec.Version = "1.2.3" }},
		{name: "bad range", change: func(o *sourcev1.HelmChart) { o.Spec.Version = "~>>1.0" }, reason: sourcev1.InvalidSemverReason},
		{name: "chart path in a repository", change: func(o *sourcev1.HelmChart) { o.Spec.Chart = "../podinfo" }, reason: sourcev1.InvalidSpecReason},
		{name: "chart path in git", change: func(o *sourcev1.HelmChart) {
			o.Spec.SourceRef.Kind, o.Spec.Chart, o.Spec.Version = sourcev1.GitRepositoryKind, "./charts/app", ">=x"
		}},
		{name: "unknown kind", change: func(o *sourcev1.HelmChart) { o.Spec.SourceRef.Kind = "OCIRepository" }, reason: sourcev1.InvalidSpecReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := newHelmChart("apps", "app", sourcev1.HelmRepositoryKind, "repo", "podinfo")
			if tt.change != nil {
				tt.change(obj)
			}
			err := validateHelmChartSpec(obj)
			if tt.reason == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(conditions.Has(obj, sourcev1.FetchFailedCondition)).To(BeFalse())
				return
			}
			var stalling *outcome.Stalling
			g.Expect(errors.As(err, &stalling)).To(BeTrue(), "%v", err)
			g.Expect(stalling.Reason).To(Equal(tt.reason))
			g.Expect(conditions.Reason(obj, sourcev1.FetchFailedCondition)).To(Equal(tt.reason))
		})
	}
}

func TestDeprecatedTLSData(t *testing.T) {
	tests := []struct {
		name string
		in   map[string][]byte
		want map[string][]byte
	}{
		{name: "none", in: map[string][]byte{"username": []byte("u")}},
		{name: "legacy names", in: map[string][]byte{"caFile": []byte("ca"), "certFile": []byte("c"), "keyFile": []byte("k")},
			want: map[string][]byte{"ca.crt": []byte("ca"), "tls.crt": []byte("c"), "tls.key": []byte("k")}},
		{name: "certSecretRef names", in: map[string][]byte{"ca.crt": []byte("ca"), "password": []byte("p")},
			want: map[string][]byte{"ca.crt": []byte("ca")}},
		{name: "empty values", in: map[string][]byte{"caFile": {}}},
		{name: "both names: the certSecretRef one wins", in: map[string][]byte{"caFile": []byte("old"), "ca.crt": []byte("new")},
			want: map[string][]byte{"ca.crt": []byte("new")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(deprecatedTLSData(tt.in)).To(Equal(tt.want))
		})
	}
}

// TestPullHTTPChartReadsTheIndexOnce: a HelmChart reads the index of its
// HelmRepository from the shared cache when the HelmRepository put it
// there, else once from storage (checked against its digest), and never
// parses it again for the next HelmCharts.
func TestPullHTTPChartReadsTheIndexOnce(t *testing.T) {
	idx, err := repository.ParseIndex([]byte("apiVersion: v1\nentries:\n  podinfo:\n  - version: 1.0.0\n    urls: [podinfo-1.0.0.tgz]\n"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	normalised, err := repository.Normalise(idx)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	repoMeta := metav1.ObjectMeta{Namespace: "unit", Name: "index-" + t.Name()}
	stored := storage.NewArtifactFor(sourcev1.HelmRepositoryKind, &repoMeta, repository.Revision(normalised), "index.yaml")
	NewWithT(t).Expect(storage.Copy(&stored, bytesReader(normalised))).To(Succeed())
	tampered := stored
	tampered.Path = stored.Path[:len(stored.Path)-len("index.yaml")] + "tampered.yaml"
	NewWithT(t).Expect(storage.Copy(&tampered, bytesReader(append([]byte("# x\n"), normalised...)))).To(Succeed())
	tampered.Digest = stored.Digest

	tests := []struct {
		name       string
		artifact   meta.Artifact
		cached     bool
		wantErr    string
		wantMisses int64
	}{
		{name: "put in the cache by the HelmRepository", cached: true,
			artifact: meta.Artifact{Path: "helmrepository/unit/gone/index.yaml", Digest: "sha256:0123", Revision: "sha256:0123"}},
		{name: "read from storage once", artifact: stored, wantMisses: 1},
		{name: "altered in storage", artifact: tampered, wantErr: "does not match its digest", wantMisses: 1},
		{name: "gone from storage", wantErr: "not found", wantMisses: 1,
			artifact: meta.Artifact{Path: "helmrepository/unit/gone/index.yaml", Digest: "sha256:4567", Revision: "sha256:4567"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cache := repository.NewIndexCache(2, 1<<20, time.Minute)
			if tt.cached {
				cache.Set(tt.artifact.Digest, idx)
			}
			r := &HelmChartReconciler{Storage: storage, IndexCache: cache}
			repo := newHelmRepository("unit", "repo", "https://charts.example.com")
			repo.Status.Artifact = &tt.artifact
			for range 2 {
				obj := newHelmChart("unit", "app", sourcev1.HelmRepositoryKind, "repo", "podinfo")
				obj.Status = sourcev1.HelmChartStatus{ObservedChartName: "podinfo", Artifact: &meta.Artifact{Revision: "1.0.0"}}
				sc := &helmChartScope{}
				err := r.pullHTTPChart(context.Background(), obj, repo, sc)
				if tt.wantErr != "" {
					g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
					g.Expect(conditions.Reason(obj, sourcev1.FetchFailedCondition)).To(Equal(sourcev1.ChartPullFailedReason))
					break
				}
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(sc.upToDate).To(BeTrue(), "version 1.0.0 is stored: nothing to download")
				g.Expect(sc.sourceRevision).To(Equal(tt.artifact.Revision))
			}
			g.Expect(cache.Misses()).To(Equal(tt.wantMisses))
		})
	}
	_ = os.Remove(storage.LocalPath(stored))
	_ = os.Remove(storage.LocalPath(tampered))
}
