package values

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
)

const ns = "apps"

// secretValue is the content of a Secret in the tests; no error may quote
// it.
const secretValue = "s3cr3t-p4ssw0rd"

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func release(values string, refs ...helmv2.ValuesReference) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	hr.Spec.ValuesFrom = refs
	if values != "" {
		hr.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(values)}
	}
	return hr
}

func fakeClient(objs ...client.Object) client.Client {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func cmRef(name string) helmv2.ValuesReference {
	return helmv2.ValuesReference{Kind: "ConfigMap", Name: name}
}

func TestCompose(t *testing.T) {
	objs := []client.Object{
		configMap("base", map[string]string{"values.yaml": "replicas: 1\nimage:\n  repository: app\n  tag: v1\nports: [80, 443]\n"}),
		configMap("override", map[string]string{"values.yaml": "image:\n  tag: v2\nports: [8080]\n", "other.yaml": "replicas: 5\n"}),
		configMap("empty", map[string]string{"values.yaml": ""}),
		configMap("single", map[string]string{"host": "example.com", "csv": "a,b=c,{d}", "quoted": `"true"`,
			"bool": "true", "int": "42", "zero": "0123", "backslash": `C:\dir`}),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "binary"},
			BinaryData: map[string][]byte{"values.yaml": []byte("fromBinary: true\n")}},
		secret("creds", map[string]string{"values.yaml": "password: " + secretValue + "\n", "token": secretValue}),
		configMap("bad", map[string]string{"values.yaml": "a: [unclosed\n"}),
		configMap("list", map[string]string{"values.yaml": "- a\n- b\n"}),
	}
	c := fakeClient(objs...)

	tests := []struct {
		name   string
		hr     *helmv2.HelmRelease
		want   map[string]any
		errSub string
		check  func(g *WithT, err error)
	}{
		{
			name: "nothing gives an empty map",
			hr:   release(""),
			want: map[string]any{},
		},
		{
			name: "deep merge in order, lists replaced, inline values last",
			hr:   release(`{"replicas":3}`, cmRef("base"), cmRef("override")),
			want: map[string]any{
				"replicas": float64(3),
				"image":    map[string]any{"repository": "app", "tag": "v2"},
				"ports":    []any{float64(8080)},
			},
		},
		{
			name: "a later entry overrides an earlier one whatever its kind",
			hr: release("", cmRef("override"), cmRef("base"),
				helmv2.ValuesReference{Kind: "ConfigMap", Name: "override", ValuesKey: "other.yaml"}),
			want: map[string]any{
				"replicas": float64(5),
				"image":    map[string]any{"repository": "app", "tag": "v1"},
				"ports":    []any{float64(80), float64(443)},
			},
		},
		{
			name: "a scalar replaces a map and a map replaces a scalar",
			hr:   release(`{"image":"flat","replicas":{"min":1}}`, cmRef("base")),
			want: map[string]any{"image": "flat", "replicas": map[string]any{"min": float64(1)}, "ports": []any{float64(80), float64(443)}},
		},
		{
			name: "empty document and binaryData",
			hr:   release("", cmRef("empty"), cmRef("binary")),
			want: map[string]any{"fromBinary": true},
		},
		{
			name: "secret values",
			hr:   release("", helmv2.ValuesReference{Kind: "Secret", Name: "creds"}),
			want: map[string]any{"password": secretValue},
		},
		{
			name: "targetPath nested, over merged values",
			hr: release("", cmRef("base"),
				helmv2.ValuesReference{Kind: "ConfigMap", Name: "single", ValuesKey: "host", TargetPath: "image.registry.host"}),
			want: map[string]any{
				"replicas": float64(1),
				"image":    map[string]any{"repository": "app", "tag": "v1", "registry": map[string]any{"host": "example.com"}},
				"ports":    []any{float64(80), float64(443)},
			},
		},
		{
			name: "targetPath list index keeps the other items",
			hr: release("", cmRef("base"),
				helmv2.ValuesReference{Kind: "ConfigMap", Name: "single", ValuesKey: "int", TargetPath: "ports[1]"}),
			want: map[string]any{
				"replicas": float64(1),
				"image":    map[string]any{"repository": "app", "tag": "v1"},
				"ports":    []any{float64(80), int64(42)},
			},
		},
		{
			name: "targetPath list index then key",
			hr:   release("", helmv2.ValuesReference{Kind: "ConfigMap", Name: "single", ValuesKey: "host", TargetPath: "hosts[0].name"}),
			want: map[string]any{"hosts": []any{map[string]any{"name": "example.com"}}},
		},
		{
			name: "targetPath value with commas, equals and braces is one string",
			hr:   release("", helmv2.ValuesReference{Kind: "ConfigMap", Name: "single", ValuesKey: "csv", TargetPath: "a.b"}),
			want: map[string]any{"a": map[string]any{"b": "a,b=c,{d}"}},
		},
		{
			name: "targetPath typing: bool, int, leading zero, quoted, backslash",
			hr: release("",
				helmv2.ValuesReference{Kind: "ConfigMap", Name: "single", ValuesKey: "bool", TargetPath: "b"},
				helmv2.ValuesReference{Kind: "ConfigMap", Name: "single", ValuesKey: "int", TargetPath: "i"},
				helmv2.ValuesReference{Kind: "ConfigMap", Name: "single", ValuesKey: "zero", TargetPath: "z"},
				helmv2.ValuesReference{Kind: "ConfigMap", Name: "single", ValuesKey: "quoted", TargetPath: "q"},
				helmv2.ValuesReference{Kind: "ConfigMap", Name: "single", ValuesKey: "backslash", TargetPath: "p"}),
			want: map[string]any{"b": true, "i": int64(42), "z": "0123", "q": "true", "p": `C:\dir`},
		},
		{
			name: "targetPath with an escaped dot",
			hr:   release("", helmv2.ValuesReference{Kind: "ConfigMap", Name: "single", ValuesKey: "host", TargetPath: `annotations.example\.com/host`}),
			want: map[string]any{"annotations": map[string]any{"example.com/host": "example.com"}},
		},
		{
			name: "targetPath from a Secret, then inline values override it",
			hr:   release(`{"auth":{"user":"me"}}`, helmv2.ValuesReference{Kind: "Secret", Name: "creds", ValuesKey: "token", TargetPath: "auth.token"}),
			want: map[string]any{"auth": map[string]any{"token": secretValue, "user": "me"}},
		},
		{
			name: "optional missing object and missing key are skipped",
			hr: release(`{"x":1}`,
				helmv2.ValuesReference{Kind: "ConfigMap", Name: "absent", Optional: true},
				helmv2.ValuesReference{Kind: "Secret", Name: "creds", ValuesKey: "nope", Optional: true, TargetPath: "y"}),
			want: map[string]any{"x": float64(1)},
		},
		{
			name:   "missing object",
			hr:     release("", helmv2.ValuesReference{Kind: "Secret", Name: "absent"}),
			errSub: "spec.valuesFrom[0]: valuesFrom: Secret apps/absent not found",
			check: func(g *WithT, err error) {
				g.Expect(IsNotFound(err)).To(BeTrue())
				g.Expect(IsInvalid(err)).To(BeFalse())
				var nf *NotFoundError
				g.Expect(errors.As(err, &nf)).To(BeTrue())
				g.Expect(nf.MissingKey).To(BeFalse())
			},
		},
		{
			name:   "missing key",
			hr:     release("", cmRef("base"), helmv2.ValuesReference{Kind: "ConfigMap", Name: "base", ValuesKey: "prod.yaml"}),
			errSub: "spec.valuesFrom[1]: valuesFrom: key 'prod.yaml' not found in ConfigMap apps/base",
			check:  func(g *WithT, err error) { g.Expect(IsNotFound(err)).To(BeTrue()) },
		},
		{
			name:   "invalid YAML in a ConfigMap keeps the parser's message",
			hr:     release("", helmv2.ValuesReference{Kind: "ConfigMap", Name: "bad"}),
			errSub: "invalid values in ConfigMap apps/bad key 'values.yaml': not valid YAML: ",
			check:  func(g *WithT, err error) { g.Expect(IsInvalid(err)).To(BeTrue()) },
		},
		{
			name:   "a list is not a map",
			hr:     release("", helmv2.ValuesReference{Kind: "ConfigMap", Name: "list"}),
			errSub: "the document is a list, not a map",
			check:  func(g *WithT, err error) { g.Expect(IsInvalid(err)).To(BeTrue()) },
		},
		{
			name:   "inline values that are not a map",
			hr:     release(`[1,2]`),
			errSub: "invalid values in spec.values: the document is a list, not a map",
		},
		{
			name:   "a targetPath through a scalar",
			hr:     release("", cmRef("base"), helmv2.ValuesReference{Kind: "ConfigMap", Name: "single", ValuesKey: "host", TargetPath: "replicas.x"}),
			errSub: "cannot set targetPath 'replicas.x'",
			check:  func(g *WithT, err error) { g.Expect(IsInvalid(err)).To(BeTrue()) },
		},
		{
			name:   "a targetPath with a comma is refused",
			hr:     release("", helmv2.ValuesReference{Kind: "ConfigMap", Name: "single", ValuesKey: "host", TargetPath: "a,b=c"}),
			errSub: "targetPath 'a,b=c' may only hold",
		},
		{
			name:   "unknown kind",
			hr:     release("", helmv2.ValuesReference{Kind: "Pod", Name: "x"}),
			errSub: "the kind must be ConfigMap or Secret",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Compose(context.Background(), c, tt.hr)
			if tt.errSub != "" {
				g.Expect(err).To(HaveOccurred())
				g.Expect(err.Error()).To(ContainSubstring(tt.errSub))
				if tt.check != nil {
					tt.check(g, err)
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// TestComposeSecretNeverInErrors feeds Secrets whose content breaks each
// step and checks that no error quotes it.
func TestComposeSecretNeverInErrors(t *testing.T) {
	tests := []struct {
		name   string
		data   string
		ref    helmv2.ValuesReference
		errSub string
	}{
		{
			name:   "a scalar document",
			data:   secretValue,
			ref:    helmv2.ValuesReference{Kind: "Secret", Name: "s"},
			errSub: "the document is a string, not a map",
		},
		{
			name:   "broken YAML",
			data:   "password: " + secretValue + "\n  broken: [" + secretValue + "\n",
			ref:    helmv2.ValuesReference{Kind: "Secret", Name: "s"},
			errSub: "not valid YAML at line",
		},
		{
			name:   "a type the parser names",
			data:   "? [" + secretValue + "]\n: x\n",
			ref:    helmv2.ValuesReference{Kind: "Secret", Name: "s"},
			errSub: "invalid values in Secret apps/s key 'values.yaml'",
		},
		{
			name:   "an anchor the parser names",
			data:   "key: *" + secretValue + "\n",
			ref:    helmv2.ValuesReference{Kind: "Secret", Name: "s"},
			errSub: "not valid YAML",
		},
		{
			name:   "a tag the parser quotes the value of",
			data:   "key: !!int " + secretValue + "\n",
			ref:    helmv2.ValuesReference{Kind: "Secret", Name: "s"},
			errSub: "not valid YAML",
		},
		{
			name:   "a targetPath that cannot be set",
			data:   secretValue + ",x=y",
			ref:    helmv2.ValuesReference{Kind: "Secret", Name: "s", TargetPath: "a[99999]"},
			errSub: "cannot set targetPath",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fakeClient(secret("s", map[string]string{"values.yaml": tt.data}))
			tt.ref.ValuesKey = "values.yaml"
			_, err := Compose(context.Background(), c, release("", tt.ref))
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tt.errSub))
			g.Expect(err.Error()).NotTo(ContainSubstring(secretValue))
			for e := err; e != nil; e = errors.Unwrap(e) {
				g.Expect(e.Error()).NotTo(ContainSubstring(secretValue))
			}
		})
	}
}

func TestComposeSizeLimit(t *testing.T) {
	big := "k: " + strings.Repeat("x", MaxDocumentSize) + "\n"
	tests := []struct {
		name string
		hr   *helmv2.HelmRelease
	}{
		{name: "valuesFrom document", hr: release("", cmRef("big"))},
		{name: "targetPath value", hr: release("", helmv2.ValuesReference{Kind: "ConfigMap", Name: "big", TargetPath: "a"})},
		{name: "inline values", hr: release(`{"k":"` + strings.Repeat("x", MaxDocumentSize) + `"}`)},
	}
	c := fakeClient(configMap("big", map[string]string{"values.yaml": big}))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Compose(context.Background(), c, tt.hr)
			g.Expect(IsInvalid(err)).To(BeTrue())
			g.Expect(err.Error()).To(ContainSubstring("more than the limit"))
		})
	}
}

// TestComposeReadError checks that a failed read that is not a NotFound is
// neither NotFound nor Invalid, so that the caller retries it.
func TestComposeReadError(t *testing.T) {
	g := NewWithT(t)
	// A client without the core types cannot read ConfigMaps.
	c := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build()
	_, err := Compose(context.Background(), c, release("", cmRef("base")))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("reading ConfigMap apps/base"))
	g.Expect(IsNotFound(err)).To(BeFalse())
	g.Expect(IsInvalid(err)).To(BeFalse())
}

func TestDigest(t *testing.T) {
	tests := []struct {
		name string
		a, b map[string]any
		same bool
	}{
		{
			name: "key order does not matter",
			a:    map[string]any{"a": 1, "b": map[string]any{"x": true, "y": "z"}},
			b:    map[string]any{"b": map[string]any{"y": "z", "x": true}, "a": 1},
			same: true,
		},
		{name: "nil is the empty map", a: nil, b: map[string]any{}, same: true},
		{name: "a changed value changes the digest", a: map[string]any{"a": 1}, b: map[string]any{"a": 2}},
		{name: "list order matters", a: map[string]any{"l": []any{1, 2}}, b: map[string]any{"l": []any{2, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			da, db := Digest(tt.a), Digest(tt.b)
			g.Expect(da).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
			g.Expect(da == db).To(Equal(tt.same))
		})
	}
	// The digest is the sha256 of the JSON encoding, as the release
	// package's config digest is.
	NewWithT(t).Expect(Digest(map[string]any{})).To(Equal("sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"))
}
