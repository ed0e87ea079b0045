package impersonation

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/api/meta"
)

func TestCheckServed(t *testing.T) {
	secretRef := &meta.SecretKeyReference{Name: "kubeconfig"}
	configMapRef := &meta.LocalObjectReference{Name: "cluster"}
	for _, tc := range []struct {
		name    string
		kc      *meta.KubeConfigReference
		refused bool
	}{
		{name: "no kubeConfig: the local cluster", kc: nil},
		{name: "secretRef is served", kc: &meta.KubeConfigReference{SecretRef: secretRef}},
		{name: "configMapRef is not served", kc: &meta.KubeConfigReference{ConfigMapRef: configMapRef}, refused: true},
		{name: "both (stored before the CEL rule) are refused", kc: &meta.KubeConfigReference{SecretRef: secretRef, ConfigMapRef: configMapRef}, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckServed(tc.kc)
			if !tc.refused {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ErrUnservedKubeConfig))
			g.Expect(err.Error()).To(ContainSubstring("configMapRef 'cluster'"))
		})
	}
}

// TestForRefusesConfigMapRef: a kubeConfig with only configMapRef gets no
// target at all, so nothing can reach the local cluster by mistake.
func TestForRefusesConfigMapRef(t *testing.T) {
	g := NewWithT(t)
	tgt, err := newFactory().For(context.Background(), Identity{
		Namespace:  "default",
		KubeConfig: &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "cluster"}},
	}, env.Client)
	g.Expect(err).To(MatchError(ErrUnservedKubeConfig))
	g.Expect(tgt).To(BeNil())
}
