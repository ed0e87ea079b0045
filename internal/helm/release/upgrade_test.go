package release

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rcommon "helm.sh/helm/v4/pkg/release/common"

	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

func TestUpgrade(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.install(t, "app", basicChart(t, "1.0.0"), map[string]any{"greeting": "one"})

	rel, err := f.runner.Upgrade(context.Background(), basicChart(t, "1.1.0"), map[string]any{"greeting": "two"}, UpgradeOptions{
		ReleaseName: "app", Wait: true, ServerSideApply: SSAAuto, Description: "upgraded by the test",
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(2))
	g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed))
	g.Expect(rel.Chart.Metadata.Version).To(Equal("1.1.0"))
	g.Expect(rel.ApplyMethod).To(Equal("ssa"), "auto keeps the apply method of the last release")
	g.Expect(f.greeting("app-cm")).To(Equal("two"))

	hist, err := f.runner.History("app", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(versions(hist)).To(Equal([]string{"v2=deployed", "v1=superseded"}))
	g.Expect(Snapshot(hist[0]).Action).To(Equal(ActionUpgrade))
	g.Expect(secretNames(t, f.storage)).To(ContainElements("sh.helm.release.v1.app.v1", "sh.helm.release.v1.app.v2"))

	newest, err := f.runner.History("app", 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(versions(newest)).To(Equal([]string{"v2=deployed"}))
}

func TestUpgradeValues(t *testing.T) {
	ch := basicChart(t, "1.0.0", helmtest.WithTemplate("extra.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-extra
data:
  extra: {{ .Values.extra | default "none" | quote }}
`))
	tests := []struct {
		name     string
		preserve bool
		values   map[string]any
		want     map[string]any
	}{
		{
			name:     "PreserveValues merges the new values over the last release's",
			preserve: true,
			values:   map[string]any{"greeting": "two"},
			want:     map[string]any{"greeting": "two", "extra": "kept"},
		},
		{
			name:   "without PreserveValues the last release's values are dropped",
			values: map[string]any{"greeting": "two"},
			want:   map[string]any{"greeting": "two"},
		},
		{
			name:   "without PreserveValues empty values are not replaced by the last release's",
			values: nil,
			want:   nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			f.install(t, "app", ch, map[string]any{"greeting": "one", "extra": "kept"})
			rel, err := f.runner.Upgrade(context.Background(), ch, tt.values, UpgradeOptions{
				ReleaseName: "app", PreserveValues: tt.preserve,
			})
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want == nil {
				g.Expect(rel.Config).To(BeEmpty())
			} else {
				g.Expect(rel.Config).To(Equal(tt.want))
			}
			g.Expect(Snapshot(rel).ConfigDigest).To(Equal(ConfigDigest(tt.want)))
		})
	}
}

func TestUpgradeMaxHistory(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.install(t, "app", basicChart(t, "1.0.0"), nil)
	for _, greeting := range []string{"a", "b", "c", "d"} {
		_, err := f.runner.Upgrade(context.Background(), basicChart(t, "1.0.0"), map[string]any{"greeting": greeting}, UpgradeOptions{
			ReleaseName: "app", MaxHistory: 2,
		})
		g.Expect(err).NotTo(HaveOccurred())
	}
	hist, err := f.runner.History("app", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(versions(hist)).To(Equal([]string{"v5=deployed", "v4=superseded"}))
	g.Expect(secretNames(t, f.storage)).To(ConsistOf("sh.helm.release.v1.app.v4", "sh.helm.release.v1.app.v5"))
}

func TestUpgradeRefusals(t *testing.T) {
	tests := []struct {
		name    string
		install bool
		opts    UpgradeOptions
		wantErr string
	}{
		{name: "a release that does not exist", opts: UpgradeOptions{ReleaseName: "app"}, wantErr: "has no deployed releases"},
		{name: "another namespace", install: true, opts: UpgradeOptions{ReleaseName: "app", Namespace: "elsewhere"}, wantErr: `not "elsewhere"`},
		{name: "an unknown apply mode", install: true, opts: UpgradeOptions{ReleaseName: "app", ServerSideApply: "maybe"}, wantErr: `unknown server-side apply mode "maybe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			if tt.install {
				f.install(t, "app", basicChart(t, "1.0.0"), nil)
			}
			_, err := f.runner.Upgrade(context.Background(), basicChart(t, "1.0.0"), nil, tt.opts)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

// brokenChart renders, when .Values.broken is set, a ConfigMap whose name
// the API server refuses.
func brokenChart(t *testing.T) []helmtest.ChartOption {
	t.Helper()
	return []helmtest.ChartOption{helmtest.WithTemplate("broken.yaml", `{{- if .Values.broken }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: Not_A_Valid_Name
{{- end }}
`)}
}

func TestFailedUpgradeThenRollback(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	ch := basicChart(t, "1.0.0", brokenChart(t)...)
	f.install(t, "app", ch, map[string]any{"greeting": "good"})

	rel, err := f.runner.Upgrade(context.Background(), ch, map[string]any{"greeting": "bad", "broken": true}, UpgradeOptions{
		ReleaseName: "app",
	})
	g.Expect(err).To(MatchError(ContainSubstring("Not_A_Valid_Name")))
	g.Expect(rel.Version).To(Equal(2))
	g.Expect(rel.Info.Status).To(Equal(rcommon.StatusFailed))
	hist, err := f.runner.History("app", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(versions(hist)).To(Equal([]string{"v2=failed", "v1=deployed"}))

	rel, err = f.runner.Rollback(context.Background(), "app", RollbackOptions{Wait: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(3))
	g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed))
	g.Expect(rel.Info.Description).To(Equal("Rollback to 1"))
	g.Expect(rel.Config).To(Equal(map[string]any{"greeting": "good"}))
	g.Expect(Snapshot(rel).Action).To(Equal(ActionRollback))
	g.Expect(f.greeting("app-cm")).To(Equal("good"))
	hist, err = f.runner.History("app", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(versions(hist)).To(Equal([]string{"v3=deployed", "v2=failed", "v1=superseded"}))
}

func TestRollbackOptions(t *testing.T) {
	tests := []struct {
		name        string
		opts        RollbackOptions
		wantErr     string
		wantContent string
	}{
		{name: "to a given version", opts: RollbackOptions{Version: 1}, wantContent: "one"},
		{name: "to the previous version", opts: RollbackOptions{}, wantContent: "two"},
		{name: "to a version that does not exist", opts: RollbackOptions{Version: 9}, wantErr: "no version 9"},
		{name: "with client-side apply and force", opts: RollbackOptions{Version: 1, ServerSideApply: SSADisabled, Force: true}, wantContent: "one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			f.install(t, "app", basicChart(t, "1.0.0"), map[string]any{"greeting": "one"})
			f.upgrade(t, "app", basicChart(t, "1.0.0"), map[string]any{"greeting": "two"})
			f.upgrade(t, "app", basicChart(t, "1.0.0"), map[string]any{"greeting": "three"})
			rel, err := f.runner.Rollback(context.Background(), "app", tt.opts)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rel.Version).To(Equal(4))
			g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed))
			g.Expect(f.greeting("app-cm")).To(Equal(tt.wantContent))
		})
	}
}

func TestRollbackWithFailingHookIsNotLeftPending(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	// A pre-rollback hook Pod never completes here (there is no kubelet).
	ch := basicChart(t, "1.0.0", helmtest.WithTemplate("hook.yaml", hookPod("pre-rollback", "{{ .Release.Name }}-pre-rollback")))
	f.install(t, "app", ch, map[string]any{"greeting": "one"})
	f.upgrade(t, "app", ch, map[string]any{"greeting": "two"})

	rel, err := f.runner.Rollback(context.Background(), "app", RollbackOptions{Timeout: 2 * time.Second})
	g.Expect(err).To(HaveOccurred())
	g.Expect(rel.Version).To(Equal(3))
	g.Expect(rel.Info.Status).To(Equal(rcommon.StatusFailed))
	last, err := f.runner.Last("app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(last.Info.Status).To(Equal(rcommon.StatusFailed))

	// Nothing is pending, so the release can be upgraded again.
	rel = f.upgrade(t, "app", basicChart(t, "1.0.0"), map[string]any{"greeting": "three"})
	g.Expect(rel.Version).To(Equal(4))
	g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed))
}
