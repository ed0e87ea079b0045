package testenv

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

var env *Environment

func TestMain(m *testing.M) { os.Exit(Run(m, &env)) }

// TestSeedManifestsApply applies the seed's v1beta1 manifests unchanged and
// reads them back in the stored v1 form.
func TestSeedManifestsApply(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	data, err := os.ReadFile(filepath.Join("testdata", "seed-001.yaml"))
	g.Expect(err).NotTo(HaveOccurred())

	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var applied int
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else {
			g.Expect(err).NotTo(HaveOccurred())
		}
		u.SetNamespace(ns)
		g.Expect(env.Client.Create(ctx, u)).To(Succeed(), u.GetKind()+"/"+u.GetName())
		applied++
	}
	g.Expect(applied).To(Equal(6))

	var repo sourcev1.GitRepository
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "webapp"}, &repo)).To(Succeed())
	g.Expect(repo.Spec.Reference.Branch).To(Equal("master"))
	g.Expect(repo.Spec.Interval.Duration.String()).To(Equal("1m0s"))

	var ks kustomizev1.Kustomization
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "webapp-backend"}, &ks)).To(Succeed())
	g.Expect(ks.Spec.Prune).To(BeTrue())
	g.Expect(ks.Spec.DependsOn[0].Name).To(Equal("webapp-common"))
	g.Expect(ks.Spec.HealthChecks[0].Kind).To(Equal("Deployment"))
	g.Expect(ks.Spec.SourceRef.Name).To(Equal("webapp"))
	g.Expect(ks.Status.ObservedGeneration).To(Equal(int64(-1)))
}

// TestCRDValidation checks that the schema refuses what can never work, so
// that one bad object cannot stop a whole kind.
func TestCRDValidation(t *testing.T) {
	ns := env.CreateNamespace(t)
	tests := []struct {
		name, manifest, wantErr string
	}{
		{"git url scheme", `{"apiVersion":"source.toolkit.fluxcd.io/v1","kind":"GitRepository","metadata":{"name":"a"},"spec":{"interval":"1m","url":"git@host:org/repo"}}`, "spec.url"},
		{"git interval", `{"apiVersion":"source.toolkit.fluxcd.io/v1","kind":"GitRepository","metadata":{"name":"b"},"spec":{"interval":"-1s","url":"https://h/r"}}`, "spec.interval"},
		{"git timeout", `{"apiVersion":"source.toolkit.fluxcd.io/v1","kind":"GitRepository","metadata":{"name":"c"},"spec":{"interval":"1m","timeout":"1y","url":"https://h/r"}}`, "spec.timeout"},
		{"ks interval", `{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","metadata":{"name":"d"},"spec":{"interval":"0","prune":true,"sourceRef":{"kind":"GitRepository","name":"x"}}}`, "spec.interval"},
		{"ks source kind", `{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","metadata":{"name":"e"},"spec":{"interval":"1m","prune":true,"sourceRef":{"kind":"HelmRepository","name":"x"}}}`, "spec.sourceRef.kind"},
		{"ks prune required", `{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","metadata":{"name":"f"},"spec":{"interval":"1m","sourceRef":{"kind":"GitRepository","name":"x"}}}`, "spec.prune"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := &unstructured.Unstructured{}
			g.Expect(u.UnmarshalJSON([]byte(tt.manifest))).To(Succeed())
			u.SetNamespace(ns)
			g.Expect(env.Client.Create(context.Background(), u)).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}
