package chart

import (
	"testing"

	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// TestWithDigestVersion: charts of OCIRepositories are versioned with their
// digest, and the chart they were given is left as it was.
func TestWithDigestVersion(t *testing.T) {
	tests := []struct {
		name, version, digest, want string
	}{
		{name: "a plain version", version: "1.2.3", digest: "sha256:0123456789abcdef", want: "1.2.3+0123456789ab"},
		{name: "build metadata is replaced", version: "1.2.3+old", digest: "sha256:0123456789abcdef", want: "1.2.3+0123456789ab"},
		{name: "a short digest leaves it", version: "1.2.3", digest: "sha256:0123", want: "1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ch := &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: tt.version}}
			got := WithDigestVersion(ch, tt.digest)
			g.Expect(got.Metadata.Version).To(Equal(tt.want))
			g.Expect(ch.Metadata.Version).To(Equal(tt.version), "the loaded chart is shared: it is not changed")
		})
	}
}
