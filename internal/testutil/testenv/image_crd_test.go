package testenv

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
)

// TestImageManifestsApply applies image manifests as the reference
// documentation writes them (v1 and v1beta2) and reads them back in the
// stored form, with the schema's defaults.
func TestImageManifestsApply(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	for _, manifest := range []string{`
apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImageRepository
metadata: {name: podinfo}
spec:
  image: ghcr.io/stefanprodan/podinfo
  interval: 5m
  secretRef: {name: regcred}
  accessFrom:
    namespaceSelectors:
    - matchLabels: {kubernetes.io/metadata.name: apps}
`, `
apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImagePolicy
metadata: {name: podinfo}
spec:
  imageRepositoryRef: {name: podinfo}
  filterTags:
    pattern: '^main-[a-fA-F0-9]+-(?P<ts>.*)'
    extract: '$ts'
  policy:
    numerical: {order: asc}
`, `
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: flux-system}
spec:
  interval: 30m
  sourceRef: {kind: GitRepository, name: flux-system}
  git:
    checkout: {ref: {branch: main}}
    commit:
      author: {email: fluxcdbot@users.noreply.github.com, name: fluxcdbot}
      messageTemplate: '{{range .Changed.Changes}}{{print .OldValue}} -> {{println .NewValue}}{{end}}'
    push: {branch: main}
  update: {path: ./clusters/my-cluster, strategy: Setters}
`} {
		_, err := createManifest(g, ns, manifest)
		g.Expect(err).NotTo(HaveOccurred(), manifest)
	}
	ctx := context.Background()
	var repo imagev1.ImageRepository
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, &repo)).To(Succeed())
	g.Expect(repo.Spec.ExclusionList).To(Equal([]string{`^.*\.sig$`}), "the default exclusion list")
	g.Expect(repo.Spec.Provider).To(Equal(imagev1.ProviderGeneric))
	var policy imagev1.ImagePolicy
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, &policy)).To(Succeed())
	g.Expect(policy.Spec.DigestReflectionPolicy).To(Equal(imagev1.ReflectNever))
	g.Expect(policy.Spec.Policy.Numerical.Order).To(Equal("asc"))
}

// TestImageManifestsRefused: the schema refuses what no controller could
// make sense of, naming the rule.
func TestImageManifestsRefused(t *testing.T) {
	ns := env.CreateNamespace(t)
	for name, tc := range map[string]struct{ manifest, want string }{
		"two policies": {`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: two}
spec:
  imageRepositoryRef: {name: x}
  policy: {semver: {range: 1.x}, alphabetical: {order: asc}}
`, "exactly one of semver, alphabetical and numerical must be set"},
		"no policy": {`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: none}
spec:
  imageRepositoryRef: {name: x}
  policy: {}
`, "exactly one of semver, alphabetical and numerical must be set"},
		"interval without Always": {`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: interval}
spec:
  imageRepositoryRef: {name: x}
  policy: {semver: {range: 1.x}}
  interval: 5m
`, "spec.interval is only accepted when spec.digestReflectionPolicy is set to 'Always'"},
		"unknown order": {`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: order}
spec:
  imageRepositoryRef: {name: x}
  policy: {alphabetical: {order: up}}
`, `Unsupported value: "up"`},
		"branch and branch template": {`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: both}
spec:
  interval: 1m
  sourceRef: {kind: GitRepository, name: x}
  git:
    commit: {author: {email: a@example.com}}
    push: {branch: main, branchTemplate: 'update-{{ .Policy }}'}
`, "branch and branchTemplate are mutually exclusive"},
		"another update strategy": {`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: strategy}
spec:
  interval: 1m
  sourceRef: {kind: GitRepository, name: x}
  update: {strategy: Kustomize}
`, `Unsupported value: "Kustomize"`},
		"too many exclusions": {`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: many}
spec:
  image: ghcr.io/org/app
  interval: 1m
  exclusionList: [a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u,v,w,x,y,z]
`, "must have at most 25 items"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := createManifest(g, ns, tc.manifest)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}
