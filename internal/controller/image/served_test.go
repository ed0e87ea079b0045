package image

import (
	"testing"

	. "github.com/onsi/gomega"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestImageRepositoryUnservedProviderScansNothing: a cloud provider, which
// the schema accepts and Windlass does not serve, stalls the repository
// (UnsupportedProvider, as on the source kinds) before the registry is
// asked for anything, even though it is scanned every second; behind a
// gate too, which would otherwise only hold it.
func TestImageRepositoryUnservedProviderScansNothing(t *testing.T) {
	for _, gated := range []bool{false, true} {
		t.Run(map[bool]string{false: "ungated", true: "gated"}[gated], func(t *testing.T) {
			unservedProviderScansNothing(t, gated)
		})
	}
}

func unservedProviderScansNothing(t *testing.T, gated bool) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startRegistry(t, "", "")
	reg.push(t, "app", "1.0.0")
	repo := imageRepository(ns, "azure", reg.host+"/app")
	repo.Spec.Provider = "azure"
	if gated {
		repo.Spec.Gates = []meta.NamespacedObjectReference{{Name: "missing"}}
	}
	create(g, repo)
	stalled := testutil.WaitFor(g, env.Client, repo, func(r *imagev1.ImageRepository) bool {
		return conditions.IsTrue(r, meta.StalledCondition)
	})
	g.Expect(conditions.Reason(stalled, meta.ReadyCondition)).To(Equal(meta.UnsupportedProviderReason))
	g.Expect(conditions.Message(stalled, meta.ReadyCondition)).To(ContainSubstring("spec.provider 'azure' is not served by Windlass"))
	g.Consistently(reg.lists.Load, "2s", "200ms").Should(BeZero(), "the registry is never asked for the tags")
}
