package imageupdate

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseMarker(t *testing.T) {
	for _, tc := range []struct {
		comment string
		want    marker
	}{
		{`# {"$imagepolicy": "apps:podinfo"}`, marker{policy: podinfo, field: fieldFull, setter: "apps:podinfo"}},
		{`#{"$imagepolicy":"apps:podinfo:tag"}`, marker{policy: podinfo, field: fieldTag, setter: "apps:podinfo:tag"}},
		{"#\t{ \"$imagepolicy\" :\t\"apps:podinfo:name\" }  ", marker{policy: podinfo, field: fieldName, setter: "apps:podinfo:name"}},
		{`# {"$imagepolicy": " flux-system:my.policy:digest "}`, marker{
			policy: PolicyKey{Namespace: "flux-system", Name: "my.policy"}, field: fieldDigest, setter: "flux-system:my.policy:digest",
		}},
	} {
		t.Run(tc.comment, func(t *testing.T) {
			g := NewWithT(t)
			got, err := parseMarker(tc.comment)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(podinfo.String()).To(Equal("apps/podinfo"))
	g.Expect(testRefs[podinfo].String()).To(Equal("ghcr.io/org/app:1.0.1"))
	g.Expect(testRefs[pinned].String()).To(Equal("ghcr.io/org/pinned:2.0.0@" + testDigest))
	g.Expect(ObjectIdentifier{Kind: "Kustomization"}.String()).To(Equal("Kustomization"))
	g.Expect(ObjectIdentifier{}.String()).To(Equal(""))
}
