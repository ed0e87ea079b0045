package v1

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestImageRefString(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ImageRef{Name: "ghcr.io/org/app", Tag: "1.0.0"}.String()).To(Equal("ghcr.io/org/app:1.0.0"))
	g.Expect(ImageRef{Name: "ghcr.io/org/app", Tag: "1.0.0", Digest: "sha256:ab"}.String()).
		To(Equal("ghcr.io/org/app:1.0.0@sha256:ab"))
}

func TestImageRepositoryDefaults(t *testing.T) {
	for _, tc := range []struct {
		interval, timeout time.Duration
		want              time.Duration
	}{
		{interval: time.Minute, want: time.Minute},
		{interval: time.Hour, want: MaxDefaultTimeout},
		{interval: time.Hour, timeout: 20 * time.Second, want: 20 * time.Second},
		{want: MaxDefaultTimeout},
	} {
		r := &ImageRepository{Spec: ImageRepositorySpec{Interval: metav1.Duration{Duration: tc.interval}}}
		if tc.timeout != 0 {
			r.Spec.Timeout = &metav1.Duration{Duration: tc.timeout}
		}
		NewWithT(t).Expect(r.GetTimeout()).To(Equal(tc.want), "%+v", tc)
	}
	g := NewWithT(t)
	r := &ImageRepository{}
	g.Expect(r.GetExclusionList()).To(Equal(DefaultExclusionList))
	r.Spec.ExclusionList = []string{}
	g.Expect(r.GetExclusionList()).To(BeEmpty(), "an empty list set by the user excludes nothing")
}

func TestImagePolicyRequeue(t *testing.T) {
	g := NewWithT(t)
	p := &ImagePolicy{}
	g.Expect(p.GetDigestReflectionPolicy()).To(Equal(ReflectNever))
	g.Expect(p.GetRequeueAfter()).To(BeZero())
	p.Spec.DigestReflectionPolicy = ReflectAlways
	g.Expect(p.GetRequeueAfter()).To(Equal(DefaultDigestInterval))
	p.Spec.Interval = &metav1.Duration{Duration: time.Minute}
	g.Expect(p.GetRequeueAfter()).To(Equal(time.Minute))
	p.Namespace = "apps"
	g.Expect(p.GetRepositoryNamespace()).To(Equal("apps"))
	p.Spec.ImageRepositoryRef.Namespace = "images"
	g.Expect(p.GetRepositoryNamespace()).To(Equal("images"))
}
