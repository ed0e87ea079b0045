package postrender

import (
	"log/slog"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	release "helm.sh/helm/v4/pkg/release/v1"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

const hookTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-hook
  annotations:
    helm.sh/hook: pre-install
    helm.sh/hook-delete-policy: before-hook-creation
data:
  phase: pre
`

// TestWithHelm renders a chart through the Helm SDK's install (client
// side only) with the chain, in each of Helm's post-render strategies:
// Helm must split the output back into its templates and hooks, the hooks
// keep their annotations, and the chain's changes are in the release.
func TestWithHelm(t *testing.T) {
	ch := helmtest.Chart(t, "app", "1.0.0", helmtest.WithTemplate("hook.yaml", hookTemplate))
	hr := newRelease([]helmv2.PostRenderer{kustomizeWith([]kustomizev1.Patch{{
		Patch:  `[{"op":"add","path":"/data/patched","value":"yes"}]`,
		Target: &kustomizev1.Selector{Kind: "ConfigMap"},
	}}, nil)}, &kustomizev1.CommonMetadata{Annotations: map[string]string{"team": "blue"}})
	for _, strategy := range []action.PostRenderStrategy{action.PostRenderStrategyCombined, action.PostRenderStrategySeparate} {
		t.Run(string(strategy), func(t *testing.T) {
			g := NewWithT(t)
			pr, err := New(hr)
			g.Expect(err).NotTo(HaveOccurred())
			install := action.NewInstall(action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler)))
			install.DryRunStrategy = action.DryRunClient
			install.ReleaseName, install.Namespace = "rel", "team"
			install.PostRenderer, install.PostRenderStrategy = pr, strategy
			out, err := install.Run(ch, map[string]any{"greeting": "hi, there"})
			g.Expect(err).NotTo(HaveOccurred())
			rel := out.(*release.Release)

			g.Expect(rel.Manifest).To(ContainSubstring("name: rel-cm"))
			g.Expect(rel.Manifest).To(ContainSubstring("helm.toolkit.fluxcd.io/name: app"))
			g.Expect(rel.Manifest).To(ContainSubstring("helm.toolkit.fluxcd.io/namespace: team"))
			g.Expect(rel.Manifest).To(ContainSubstring("patched: \"yes\""))
			g.Expect(rel.Manifest).To(ContainSubstring("greeting: hi, there"))
			g.Expect(rel.Manifest).To(ContainSubstring("team: blue"))
			g.Expect(rel.Manifest).To(ContainSubstring("# Source: app/templates/configmap.yaml"))
			g.Expect(rel.Manifest).NotTo(ContainSubstring("postrender-filename"))
			g.Expect(rel.Manifest).NotTo(ContainSubstring("rel-hook"))

			g.Expect(rel.Hooks).To(HaveLen(1))
			hook := rel.Hooks[0]
			g.Expect(hook.Name).To(Equal("rel-hook"))
			g.Expect(hook.Events).To(ConsistOf(release.HookPreInstall))
			g.Expect(hook.DeletePolicies).To(ConsistOf(release.HookBeforeHookCreation))
			g.Expect(hook.Path).To(Equal("app/templates/hook.yaml"))
			g.Expect(hook.Manifest).To(ContainSubstring("helm.toolkit.fluxcd.io/name: app"))
			g.Expect(strings.Contains(hook.Manifest, "patched: \"yes\"")).To(BeTrue())
		})
	}
}
