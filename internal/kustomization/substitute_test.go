package kustomization

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/build"
	"github.com/windlass-dev/windlass/internal/substitute"
)

// TestSubstituteVars reads substituteFrom from the test control plane: the
// sources merge in order, substitute last; an optional missing object has
// no variables, a required one is a *SubstituteFromError.
func TestSubstituteVars(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"},
			Data: map[string]string{"region": "eu", "app": "from-first", "tier": "front"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"},
			Data: map[string][]byte{"app": []byte("from-second"), "token": []byte("s3cret")}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	configMap := func(name string, optional bool) kustomizev1.SubstituteReference {
		return kustomizev1.SubstituteReference{Kind: "ConfigMap", Name: name, Optional: optional}
	}
	secret := kustomizev1.SubstituteReference{Kind: "Secret", Name: "second"}
	tests := []struct {
		name      string
		postBuild *kustomizev1.PostBuild
		noClient  bool
		want      map[string]string
		errText   string
		notFound  bool
	}{
		{name: "no postBuild", want: nil},
		{name: "substitute only", postBuild: &kustomizev1.PostBuild{Substitute: map[string]string{"a": "1"}},
			want: map[string]string{"a": "1"}},
		{name: "a later source overrides, substitute last",
			postBuild: &kustomizev1.PostBuild{Substitute: map[string]string{"tier": "inline"},
				SubstituteFrom: []kustomizev1.SubstituteReference{configMap("first", false), secret}},
			want: map[string]string{"region": "eu", "app": "from-second", "tier": "inline", "token": "s3cret"}},
		{name: "the order of substituteFrom counts",
			postBuild: &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{secret, configMap("first", false)}},
			want:      map[string]string{"region": "eu", "app": "from-first", "tier": "front", "token": "s3cret"}},
		{name: "an optional missing object has none",
			postBuild: &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{configMap("missing", true), configMap("first", false)}},
			want:      map[string]string{"region": "eu", "app": "from-first", "tier": "front"}},
		{name: "a required missing object",
			postBuild: &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{configMap("first", false), configMap("missing", false)}},
			errText:   "substituteFrom ConfigMap " + ns + "/missing not found: create it, or mark it optional", notFound: true},
		{name: "a kind that is neither",
			postBuild: &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "Pod", Name: "p"}}},
			errText:   `substituteFrom kind "Pod" is neither ConfigMap nor Secret: fix the Kustomization`},
		{name: "without a client substituteFrom is skipped", noClient: true,
			postBuild: &kustomizev1.PostBuild{Substitute: map[string]string{"a": "1"},
				SubstituteFrom: []kustomizev1.SubstituteReference{configMap("missing", false)}},
			want: map[string]string{"a": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
				Spec: kustomizev1.KustomizationSpec{PostBuild: tt.postBuild}}
			var c client.Reader = env.Client
			if tt.noClient {
				c = nil
			}
			vars, err := SubstituteVars(ctx, c, obj)
			if tt.errText != "" {
				g.Expect(err).To(MatchError(tt.errText))
				var from *SubstituteFromError
				g.Expect(errors.As(err, &from) && from.NotFound()).To(Equal(tt.notFound))
				g.Expect(vars).To(BeNil())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(vars).To(Equal(tt.want))
		})
	}
}

// TestSubstituteVarsReadFailure reads substituteFrom as a user who may not:
// the error names the object, wraps the API error and is not NotFound.
func TestSubstituteVarsReadFailure(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{
			SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "Secret", Name: "vars", Optional: true}}}}}
	_, err = SubstituteVars(context.Background(), c, obj)
	var from *SubstituteFromError
	g.Expect(errors.As(err, &from)).To(BeTrue(), "%v", err)
	g.Expect(from.NotFound()).To(BeFalse())
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the API error is wrapped")
	g.Expect(err.Error()).To(HavePrefix("reading substituteFrom Secret " + ns + "/vars: "))
}

func TestSubstitute(t *testing.T) {
	doc := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  k: ${x:=default}\n")
	big := strings.Repeat("b", substitute.MaxValueSize)
	grows := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  a: ${big}\n  b: ${big}\n")
	tests := []struct {
		name      string
		postBuild *kustomizev1.PostBuild
		docs      [][]byte
		vars      map[string]string
		strict    bool
		want      string // data.k of the first document
		wantErr   error
		errText   string
	}{
		{name: "no postBuild", docs: [][]byte{doc}, vars: map[string]string{"x": "v"}, want: "${x:=default}"},
		{name: "no variables", postBuild: &kustomizev1.PostBuild{}, docs: [][]byte{doc}, want: "${x:=default}"},
		{name: "no variables, strategy WithVariables", postBuild: &kustomizev1.PostBuild{SubstituteStrategy: "WithVariables"},
			docs: [][]byte{doc}, want: "${x:=default}"},
		{name: "no variables, strategy Always", postBuild: &kustomizev1.PostBuild{SubstituteStrategy: "Always"},
			docs: [][]byte{doc}, want: "default"},
		{name: "variables", postBuild: &kustomizev1.PostBuild{}, docs: [][]byte{doc}, vars: map[string]string{"x": "v"}, want: "v"},
		{name: "strict and unset", postBuild: &kustomizev1.PostBuild{}, vars: map[string]string{"y": "v"}, strict: true,
			docs:    [][]byte{[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  k: ${unset}\n")},
			wantErr: substitute.ErrMissingVariable, errText: "post-build substitution failed: ConfigMap/app: "},
		{name: "past the growth of a build", postBuild: &kustomizev1.PostBuild{}, vars: map[string]string{"big": big},
			docs:    [][]byte{grows, grows, grows, grows, grows, grows, grows, grows, grows},
			wantErr: substitute.ErrOutputTooLarge, errText: "post-build substitution failed: substitution output too large: the documents would grow by more than 16777216 bytes in all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := &kustomizev1.KustomizationSpec{PostBuild: tt.postBuild}
			objs, err := substituted(spec, tt.docs, tt.vars, tt.strict)
			if tt.wantErr != nil {
				g.Expect(errors.Is(err, tt.wantErr)).To(BeTrue(), "%v", err)
				g.Expect(err.Error()).To(HavePrefix(tt.errText))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(objs).To(HaveLen(len(tt.docs)))
			g.Expect(objs[0].Object["data"]).To(HaveKeyWithValue("k", tt.want))
		})
	}
}

// TestSubstitutionRefusesInvalidNames: a variable whose name is not valid
// is refused before any document is read.
func TestSubstitutionRefusesInvalidNames(t *testing.T) {
	g := NewWithT(t)
	spec := &kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{}}
	edit, err := Substitution(spec, map[string]string{"1x": "v"}, true)
	g.Expect(edit).To(BeNil())
	g.Expect(errors.Is(err, substitute.ErrInvalidName)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(HavePrefix("post-build substitution failed: "))
}

// substituted decodes docs as the controller does a build's documents,
// substituted as spec says.
func substituted(spec *kustomizev1.KustomizationSpec, docs [][]byte, vars map[string]string, strict bool) ([]*unstructured.Unstructured, error) {
	edit, err := Substitution(spec, vars, strict)
	if err != nil {
		return nil, err
	}
	return build.FromYAML(docs).Objects(edit)
}
