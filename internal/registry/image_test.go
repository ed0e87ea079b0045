package registry

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseImage(t *testing.T) {
	for _, tc := range []struct {
		image   string
		want    string
		wantErr string
	}{
		{image: "nginx", want: "index.docker.io/library/nginx"},
		{image: "docker.io/org/app", want: "index.docker.io/org/app"},
		{image: "ghcr.io/org/team/app", want: "ghcr.io/org/team/app"},
		{image: "localhost:5000/app", want: "localhost:5000/app"},
		{image: "", wantErr: "is empty"},
		{image: " ghcr.io/org/app", wantErr: "blanks"},
		{image: "ghcr.io/org/app:1.0", wantErr: "names a tag"},
		{image: "nginx:latest", wantErr: "names a tag"},
		{image: "localhost:5000", wantErr: "names a tag, or no repository"},
		{image: "ghcr.io/org/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", wantErr: "names a digest"},
		{image: "https://ghcr.io/org/app", wantErr: "URL scheme"},
		{image: "ghcr.io/Org/App", wantErr: "is not an image repository"},
	} {
		t.Run(tc.image, func(t *testing.T) {
			g := NewWithT(t)
			repo, err := ParseImage(tc.image)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				var spec *InvalidSpecError
				g.Expect(errors.As(err, &spec)).To(BeTrue())
				g.Expect(spec.Field).To(Equal("image"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(CanonicalName(repo)).To(Equal(tc.want))
		})
	}
}

func TestParseTag(t *testing.T) {
	for _, tc := range []struct {
		ref     string
		want    string
		wantErr string
	}{
		{ref: "nginx:1.25", want: "index.docker.io/library/nginx:1.25"},
		{ref: "localhost:5000/app:v1", want: "localhost:5000/app:v1"},
		{ref: "localhost:5000/app", wantErr: "has no tag"},
		{ref: "nginx", wantErr: "has no tag"},
		{ref: "https://ghcr.io/app:1", wantErr: "URL scheme"},
		{ref: "ghcr.io/app:bad tag", wantErr: "not a valid tag"},
		{ref: "ghcr.io/app:-bad", wantErr: "not a valid tag"},
		{ref: "ghcr.io/App:1", wantErr: "not an image reference"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			g := NewWithT(t)
			tag, err := parseTag(tc.ref, false)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tag.Name()).To(Equal(tc.want))
		})
	}
}
