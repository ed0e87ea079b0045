package registry

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
)

func TestDigest(t *testing.T) {
	reg := startRegistry(t, testUser, testPass, nil)
	img, err := random.Image(128, 1)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ref, err := name.NewTag(reg.image("app")+":1.2.3", name.WeakValidation)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(remote.Write(ref, img, basicAuth())).To(Succeed())
	want, err := img.Digest()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	creds := dockerConfig(reg.host, testUser, testPass)

	for _, tc := range []struct {
		name     string
		ref      string
		config   []byte
		check    func(g Gomega, err error)
		wantSpec bool
	}{
		{name: "tag", ref: reg.image("app") + ":1.2.3", config: creds},
		{name: "unknown tag", ref: reg.image("app") + ":9.9.9", config: creds,
			check: func(g Gomega, err error) { g.Expect(IsNotFound(err)).To(BeTrue(), "%v", err) }},
		{name: "refused", ref: reg.image("app") + ":1.2.3", config: dockerConfig(reg.host, testUser, "nope-"+testPass),
			check: func(g Gomega, err error) {
				g.Expect(IsAuthError(err)).To(BeTrue(), "%v", err)
				g.Expect(err.Error()).NotTo(ContainSubstring("nope-" + testPass))
			}},
		{name: "no tag", ref: reg.image("app"), wantSpec: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Digest(context.Background(), tc.ref, Options{DockerConfigs: [][]byte{tc.config}})
			switch {
			case tc.wantSpec:
				var spec *InvalidSpecError
				g.Expect(errors.As(err, &spec)).To(BeTrue(), "%v", err)
			case tc.check != nil:
				g.Expect(err).To(HaveOccurred())
				tc.check(g, err)
			default:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(want.String()))
				g.Expect(got).To(HavePrefix("sha256:"))
			}
		})
	}
}
