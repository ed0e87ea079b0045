package generator

import (
	"testing"

	. "github.com/onsi/gomega"

	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/testutil"
)

func TestPlan(t *testing.T) {
	tree := testutil.WriteTree(t, map[string]string{"apps/Auth/a.yaml": "a", "apps/web/w.yaml": "w", "Apps/WEB/w.yaml": "W"})
	artifact := func(name, from, to string) sourceextv1beta1.OutputArtifact {
		return sourceextv1beta1.OutputArtifact{Name: name, Copy: []sourceextv1beta1.CopyOperation{{From: from, To: to}}}
	}
	tests := []struct {
		name      string
		pattern   string
		artifacts []sourceextv1beta1.OutputArtifact
		want      []Planned
		wantErr   string
	}{
		{name: "no pattern: the artifacts as they are", artifacts: []sourceextv1beta1.OutputArtifact{artifact("a", "@m/x", "@artifact/")},
			want: []Planned{{Spec: artifact("a", "@m/x", "@artifact/")}}},
		{name: "one set per folder", pattern: "@m/apps/{app}", artifacts: []sourceextv1beta1.OutputArtifact{artifact("{app}-svc", "@m/apps/{app}/**", "@artifact/{app}/")},
			want: []Planned{
				{Spec: artifact("auth-svc", "@m/apps/Auth/**", "@artifact/Auth/"), Labels: map[string]string{"app": "auth"}},
				{Spec: artifact("web-svc", "@m/apps/web/**", "@artifact/web/"), Labels: map[string]string{"app": "web"}},
			}},
		{name: "two folders, one name", pattern: "@m/{dir}/{app}", artifacts: []sourceextv1beta1.OutputArtifact{artifact("{app}", "@m/{dir}/{app}/**", "@artifact/")},
			wantErr: "folders 'Apps/WEB' and 'apps/web' both make the artifact name 'web'"},
		{name: "a name that is none", pattern: "@m/apps/{app}", artifacts: []sourceextv1beta1.OutputArtifact{artifact("{app}_x", "@m/apps/{app}/**", "@artifact/")},
			wantErr: "folder 'apps/Auth' makes the artifact name 'auth_x', which is not a valid object name"},
		{name: "a placeholder not captured", pattern: "@m/apps/{app}", artifacts: []sourceextv1beta1.OutputArtifact{artifact("{env}", "@m/apps/{app}/**", "@artifact/")},
			wantErr: "'{env}' uses {env}, which the pathPattern does not capture"},
		{name: "no folder", pattern: "@m/services/{app}", artifacts: []sourceextv1beta1.OutputArtifact{artifact("{app}", "@m/x", "@artifact/")},
			wantErr: ErrNoFolder.Error()},
		{name: "an alias without a tree", pattern: "@n/apps/{app}", artifacts: []sourceextv1beta1.OutputArtifact{artifact("{app}", "@m/x", "@artifact/")},
			wantErr: "source alias 'n' not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Plan(sourceextv1beta1.ArtifactGeneratorSpec{PathPattern: tt.pattern, OutputArtifacts: tt.artifacts}, map[string]string{"m": tree})
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
