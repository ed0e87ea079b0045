package generator

import (
	"testing"

	. "github.com/onsi/gomega"

	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
)

func TestCheckSpec(t *testing.T) {
	src := func(alias string) sourceextv1beta1.SourceReference {
		return sourceextv1beta1.SourceReference{Alias: alias, Kind: "GitRepository", Name: alias}
	}
	artifact := func(name, from string) sourceextv1beta1.OutputArtifact {
		return sourceextv1beta1.OutputArtifact{Name: name, Copy: []sourceextv1beta1.CopyOperation{{From: from, To: "@artifact/"}}}
	}
	tests := []struct {
		name    string
		spec    sourceextv1beta1.ArtifactGeneratorSpec
		wantErr string
	}{
		{name: "valid", spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources:         []sourceextv1beta1.SourceReference{src("mono"), src("chart")},
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{artifact("a", "@mono/a/**"), artifact("b", "@chart/")}}},
		{name: "valid pattern", spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources: []sourceextv1beta1.SourceReference{src("mono")}, PathPattern: "@mono/apps/{app}",
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{artifact("{app}", "@mono/apps/{app}/**")}}},
		{name: "alias twice", spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources:         []sourceextv1beta1.SourceReference{src("mono"), src("mono")},
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{artifact("a", "@mono/a/**")}},
			wantErr: "duplicate source alias 'mono'"},
		{name: "artifact twice", spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources:         []sourceextv1beta1.SourceReference{src("mono")},
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{artifact("a", "@mono/a/**"), artifact("a", "@mono/b/**")}},
			wantErr: "duplicate artifact name 'a'"},
		{name: "copy from an unknown alias", spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources:         []sourceextv1beta1.SourceReference{src("mono")},
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{artifact("a", "@other/a/**")}},
			wantErr: "artifact 'a': copy[0] from '@other/a/**' names the source alias 'other', which no source has"},
		{name: "revision of an unknown alias", spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources: []sourceextv1beta1.SourceReference{src("mono")},
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{{Name: "a", OriginRevision: "@chart",
				Copy: []sourceextv1beta1.CopyOperation{{From: "@mono/a", To: "@artifact/"}}}}},
			wantErr: "artifact 'a': originRevision names the source alias 'chart', which no source has"},
		{name: "pattern of an unknown alias", spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources: []sourceextv1beta1.SourceReference{src("mono")}, PathPattern: "@other/apps/{app}",
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{artifact("{app}", "@mono/apps/{app}/**")}},
			wantErr: "pathPattern '@other/apps/{app}' names the source alias 'other', which no source has"},
		{name: "pattern that does not parse", spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources: []sourceextv1beta1.SourceReference{src("mono")}, PathPattern: "@mono/apps/{app",
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{artifact("a", "@mono/a/**")}},
			wantErr: "pathPattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckSpec(tt.spec)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}
