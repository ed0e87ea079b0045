package chart

import (
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// WithDigestVersion returns ch with its version's build metadata replaced by
// the first 12 hex digits of digest, as charts of OCIRepositories are
// versioned: a new digest under the same tag is a new version, so it
// upgrades the release. ch itself is not changed; a digest too short to cut
// (or a chart without metadata) returns ch as it is.
func WithDigestVersion(ch *chart.Chart, digest string) *chart.Chart {
	hex := strings.TrimPrefix(digest, "sha256:")
	if len(hex) < 12 || ch.Metadata == nil {
		return ch
	}
	md := *ch.Metadata
	base, _, _ := strings.Cut(md.Version, "+")
	md.Version = base + "+" + hex[:12]
	out := *ch
	out.Metadata = &md
	return &out
}
