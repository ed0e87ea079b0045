package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/internal/kinds"
)

// TestEveryKindHasItsVerbs: every kind of the registry is on the command
// line under its words and each alias, for every verb that applies to it
// (the reconciliation verbs to the kinds with a status), so that a kind
// added to the registry has its verbs or fails here.
func TestEveryKindHasItsVerbs(t *testing.T) {
	root := NewRootCommand(io.Discard, io.Discard)
	all := []string{"get", "export", "delete"}
	withStatus := []string{"reconcile", "suspend", "resume"}
	for _, k := range kinds.All {
		verbs := all
		if k.Reconciled() {
			verbs = append(append([]string(nil), all...), withStatus...)
		}
		for _, verb := range verbs {
			names := append([]string{k.Words[len(k.Words)-1]}, k.Aliases...)
			for _, name := range names {
				path := append(append([]string{verb}, k.Words[:len(k.Words)-1]...), name)
				t.Run(k.Kind+" "+verb+" "+name, func(t *testing.T) {
					g := NewWithT(t)
					cmd, rest, err := root.Find(path)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(rest).To(BeEmpty(), "windlass %v resolves to a command", path)
					g.Expect(cmd.Parent().Name()).NotTo(Equal("windlass"), "windlass %v is a command of the kind, not of the verb", path)
					g.Expect(cmd.Name()).To(Equal(k.Words[len(k.Words)-1]))
				})
			}
		}
	}
}

// TestObjectKindsFollowTheRegistry: the command line's kinds are the
// registry's, in its order, each with its types and, for a kind with a
// status, the request it last handled.
func TestObjectKindsFollowTheRegistry(t *testing.T) {
	g := NewWithT(t)
	g.Expect(objectKinds).To(HaveLen(len(kinds.All)))
	for i, k := range kinds.All {
		ok := objectKinds[i]
		g.Expect(ok.kind).To(Equal(k.Kind))
		g.Expect(ok.new().GetObjectKind()).NotTo(BeNil())
		list, items := ok.newList()
		g.Expect(list).NotTo(BeNil())
		g.Expect(items()).To(BeEmpty())
		g.Expect(ok.lastHandled == nil).To(Equal(!k.Reconciled()), k.Kind)
		g.Expect(ok.dependsOn == nil).To(Equal(k.DependsOn == nil), k.Kind)
		g.Expect(ok.revision).NotTo(BeNil(), k.Kind)
	}
}

// minimalSpecs are a valid spec of every kind of the registry, for
// TestVerbsOverTheRegistry; a kind added to the registry needs one here.
var minimalSpecs = map[string]string{
	"GitRepository":         `{interval: 1h, url: "https://example.com/app.git"}`,
	"OCIRepository":         `{interval: 1h, url: "oci://example.com/app"}`,
	"Bucket":                `{interval: 1h, bucketName: app, endpoint: example.com}`,
	"Kustomization":         `{interval: 1h, prune: true, sourceRef: {kind: GitRepository, name: app}}`,
	"HelmRepository":        `{interval: 1h, url: "https://example.com/charts"}`,
	"HelmChart":             `{interval: 1h, chart: app, sourceRef: {kind: HelmRepository, name: charts}}`,
	"HelmRelease":           `{interval: 1h, chartRef: {kind: OCIRepository, name: app}}`,
	"ImageRepository":       `{interval: 1h, image: example.com/app}`,
	"ImagePolicy":           `{imageRepositoryRef: {name: app}, policy: {semver: {range: 1.x}}}`,
	"ImageUpdateAutomation": `{interval: 1h, sourceRef: {kind: GitRepository, name: app}, git: {commit: {author: {name: bot, email: bot@example.com}}}}`,
	"Gate":                  `{default: closed}`,
	"Provider":              `{type: generic, address: "https://example.com/hook"}`,
	"Alert":                 `{providerRef: {name: hook}, eventSources: [{kind: GitRepository, name: "*"}]}`,
	"Receiver":              `{type: generic, secretRef: {name: token}, resources: [{kind: GitRepository, name: app}]}`,
	"ArtifactGenerator":     `{sources: [{alias: src, kind: GitRepository, name: app}], artifacts: [{name: out, copy: [{from: "@src/**", to: "@artifact/"}]}]}`,
	"ExternalArtifact":      `{sourceRef: {apiVersion: example.com/v1, kind: Release, name: app}}`,
}

// TestVerbsOverTheRegistry drives every verb of every kind of the
// registry, under the kind's words, against the API server: get lists the
// object; for a kind a controller reconciles, suspend sets spec.suspend
// (or the kind's suspend annotation), reconcile
// refuses the suspended object with the command that resumes it, resume
// waits for the request to be handled (a stand-in answers for the
// controller), reconcile does the same; export writes the object without
// the request annotations; delete removes it.
func TestVerbsOverTheRegistry(t *testing.T) {
	for _, k := range kinds.All {
		t.Run(k.Kind, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			spec, ok := minimalSpecs[k.Kind]
			g.Expect(ok).To(BeTrue(), "no minimal spec of %s in minimalSpecs", k.Kind)
			ns := env.CreateNamespace(t)
			obj := &unstructured.Unstructured{}
			g.Expect(yaml.Unmarshal([]byte(fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: verbs, namespace: %s}\nspec: %s\n",
				k.GroupVersion, k.Kind, ns, spec)), &obj.Object)).To(Succeed())
			g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
			key := client.ObjectKey{Namespace: ns, Name: "verbs"}
			words := func(verb string, args ...string) []string {
				return append(append(append([]string{verb}, k.Words...), args...), "-n", ns)
			}
			done := "✔ " + k.Kind + " " + ns + "/verbs"

			out, _, err := run(t, words("get")...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(ContainSubstring("verbs"))

			if k.Reconciled() {
				answerRequests(t, kindRef{kind: k.Kind, namespace: ns, name: "verbs"})
				suspended := func() bool {
					o, _ := kindOfRef(kindRef{kind: k.Kind})
					got := o.new()
					g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
					return got.IsSuspended()
				}
				out, _, err = run(t, words("suspend", "verbs")...)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(out).To(Equal(done + " suspended\n"))
				g.Expect(suspended()).To(BeTrue())
				_, _, err = run(t, words("reconcile", "verbs")...)
				g.Expect(err).To(MatchError(ContainSubstring("is suspended: resume it with `windlass resume " + strings.Join(k.Words, " ") + " verbs`")))

				out, _, err = run(t, words("resume", "verbs", "--timeout", "30s")...)
				g.Expect(err).NotTo(HaveOccurred(), out)
				g.Expect(out).To(ContainSubstring(done + " reconciled"))
				g.Expect(suspended()).To(BeFalse())
				out, _, err = run(t, words("reconcile", "verbs", "--timeout", "30s")...)
				g.Expect(err).NotTo(HaveOccurred(), out)
				g.Expect(out).To(ContainSubstring(done + " reconciled"))
			}

			out, _, err = run(t, words("export", "verbs")...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(ContainSubstring("kind: " + k.Kind + "\n"))
			g.Expect(out).To(ContainSubstring("name: verbs\n"))
			g.Expect(out).NotTo(ContainSubstring("reconcile.fluxcd.io"))

			out, _, err = run(t, words("delete", "verbs", "--silent")...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(HaveSuffix(done + " deleted\n"))
			err = env.Client.Get(ctx, key, k.New())
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
		})
	}
}
