package release

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// objectsOrFail decodes manifest and fails the test on error.
func objectsOrFail(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := ObjectsOf(manifest)
	if err != nil {
		t.Fatalf("ObjectsOf: %v", err)
	}
	return objs
}

func TestConfigDigest(t *testing.T) {
	sum := sha256.Sum256([]byte(`{"a":1,"b":{"c":[true,"x"]}}`))
	want := "sha256:" + hex.EncodeToString(sum[:])
	tests := []struct {
		name   string
		values map[string]any
		same   map[string]any
		other  map[string]any
	}{
		{
			name:   "canonical JSON: keys sorted, no spaces",
			values: map[string]any{"b": map[string]any{"c": []any{true, "x"}}, "a": 1},
			same:   map[string]any{"a": int64(1), "b": map[string]any{"c": []any{true, "x"}}},
			other:  map[string]any{"a": 2, "b": map[string]any{"c": []any{true, "x"}}},
		},
		{
			name:   "nil and empty values are the same",
			values: nil,
			same:   map[string]any{},
			other:  map[string]any{"a": nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := ConfigDigest(tt.values)
			g.Expect(d).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
			g.Expect(ConfigDigest(tt.same)).To(Equal(d))
			g.Expect(ConfigDigest(tt.other)).NotTo(Equal(d))
		})
	}
	NewWithT(t).Expect(ConfigDigest(map[string]any{"a": 1, "b": map[string]any{"c": []any{true, "x"}}})).To(Equal(want))
}

func TestSnapshot(t *testing.T) {
	first := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	last := first.Add(time.Hour)
	base := func(status rcommon.Status, version int, description string) *releasev1.Release {
		return &releasev1.Release{
			Name:      "app",
			Namespace: "apps",
			Version:   version,
			Config:    map[string]any{"greeting": "hi"},
			Chart:     &chart.Chart{Metadata: &chart.Metadata{Name: "basic", Version: "1.2.3", AppVersion: "4.5"}},
			Info:      &releasev1.Info{Status: status, Description: description, FirstDeployed: first, LastDeployed: last},
		}
	}
	withTests := base(rcommon.StatusDeployed, 1, "Install complete")
	withTests.Hooks = []*releasev1.Hook{
		{Name: "app-test", Events: []releasev1.HookEvent{releasev1.HookTest},
			LastRun: releasev1.HookExecution{StartedAt: first, CompletedAt: last, Phase: releasev1.HookPhaseFailed}},
		{Name: "app-test-never-run", Events: []releasev1.HookEvent{releasev1.HookTest}},
		{Name: "app-pre", Events: []releasev1.HookEvent{releasev1.HookPreInstall},
			LastRun: releasev1.HookExecution{Phase: releasev1.HookPhaseSucceeded}},
	}
	tests := []struct {
		name       string
		rel        *releasev1.Release
		wantStatus string
		wantAction string
		wantTests  map[string]string
	}{
		{name: "a first install", rel: base(rcommon.StatusDeployed, 1, "Install complete"), wantStatus: "deployed", wantAction: ActionInstall},
		{name: "a failed upgrade", rel: base(rcommon.StatusFailed, 2, `Upgrade "app" failed: boom`), wantStatus: "failed", wantAction: ActionUpgrade},
		{name: "a superseded upgrade", rel: base(rcommon.StatusSuperseded, 3, "Upgrade complete"), wantStatus: "superseded", wantAction: ActionUpgrade},
		{name: "a rollback", rel: base(rcommon.StatusDeployed, 4, "Rollback to 2"), wantStatus: "deployed", wantAction: ActionRollback},
		{name: "a reinstall with Replace", rel: base(rcommon.StatusDeployed, 5, "Install complete"), wantStatus: "deployed", wantAction: ActionInstall},
		{name: "a pending install", rel: base(rcommon.StatusPendingInstall, 1, "Initial install underway"), wantStatus: "pending-install", wantAction: ActionInstall},
		{name: "a pending rollback", rel: base(rcommon.StatusPendingRollback, 3, "x"), wantStatus: "pending-rollback", wantAction: ActionRollback},
		{
			name: "test hooks and their phases", rel: withTests, wantStatus: "deployed", wantAction: ActionInstall,
			wantTests: map[string]string{"app-test": "Failed", "app-test-never-run": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := Snapshot(tt.rel)
			data, err := json.Marshal(tt.rel)
			g.Expect(err).NotTo(HaveOccurred())
			sum := sha256.Sum256(data)
			g.Expect(s.Digest).To(Equal("sha256:" + hex.EncodeToString(sum[:])))
			g.Expect(s.Name).To(Equal("app"))
			g.Expect(s.Namespace).To(Equal("apps"))
			g.Expect(s.Version).To(Equal(tt.rel.Version))
			g.Expect(s.Status).To(Equal(tt.wantStatus))
			g.Expect(s.Action).To(Equal(tt.wantAction))
			g.Expect(s.ChartName).To(Equal("basic"))
			g.Expect(s.ChartVersion).To(Equal("1.2.3"))
			g.Expect(s.AppVersion).To(Equal("4.5"))
			g.Expect(s.ConfigDigest).To(Equal(ConfigDigest(map[string]any{"greeting": "hi"})))
			g.Expect(s.FirstDeployed.Time.Equal(first)).To(BeTrue())
			g.Expect(s.LastDeployed.Time.Equal(last)).To(BeTrue())
			g.Expect(s.Deleted.IsZero()).To(BeTrue())
			g.Expect(testPhases(s)).To(Equal(tt.wantTests))
		})
	}
	g := NewWithT(t)
	g.Expect(Snapshot(nil)).To(BeNil())
	ts := Snapshot(withTests)
	g.Expect((*ts.TestHooks)["app-test"].LastStarted.Time.Equal(first)).To(BeTrue())
	g.Expect((*ts.TestHooks)["app-test"].LastCompleted.Time.Equal(last)).To(BeTrue())
	g.Expect(Snapshot(base(rcommon.StatusDeployed, 1, "a")).Digest).NotTo(Equal(Snapshot(base(rcommon.StatusDeployed, 1, "b")).Digest))
}

func TestObjectsOf(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []string
		wantErr  string
	}{
		{name: "empty", manifest: "", want: nil},
		{
			name: "a release manifest with source comments and empty documents",
			manifest: `---
# Source: basic/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-cm
---
# Source: basic/templates/empty.yaml
---

---
# Source: basic/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: app-svc
  namespace: other
`,
			want: []string{"v1/ConfigMap//app-cm", "v1/Service/other/app-svc"},
		},
		{
			name: "a List is expanded",
			manifest: `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: a}
- apiVersion: v1
  kind: Secret
  metadata: {name: b}
`,
			want: []string{"v1/ConfigMap//a", "v1/Secret//b"},
		},
		{name: "a document without kind", manifest: "apiVersion: v1\nmetadata: {name: x}\n", wantErr: "document 1 of the manifest has no apiVersion or kind"},
		{name: "a document that is not YAML", manifest: "apiVersion: v1\nkind: ConfigMap\n---\nkind: [\n", wantErr: "decoding document 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := ObjectsOf(tt.manifest)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			var got []string
			for _, o := range objs {
				got = append(got, o.GetAPIVersion()+"/"+o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
