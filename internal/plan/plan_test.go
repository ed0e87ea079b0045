package plan

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestObjectDiff: a drifted object's diff leaves out what changes by
// itself, and never shows a Secret's values, not even in the annotation
// of a client-side apply: a changed one is marked.
func TestObjectDiff(t *testing.T) {
	obj := func(kind string, data map[string]any, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind,
			"metadata": map[string]any{"name": "app", "namespace": "demo", "resourceVersion": rv}, "data": data}}
		return u
	}
	withLastApplied := func(u *unstructured.Unstructured, password string) *unstructured.Unstructured {
		u.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"password":"` + password + `"}}`})
		return u
	}
	tests := []struct {
		name         string
		live, result *unstructured.Unstructured
		want         []string
		never        []string
	}{
		{name: "a ConfigMap's value", live: obj("ConfigMap", map[string]any{"color": "blue"}, "1"),
			result: obj("ConfigMap", map[string]any{"color": "green"}, "2"),
			want:   []string{"-  color: blue\n", "+  color: green\n"}, never: []string{"resourceVersion"}},
		{name: "a Secret's values", live: obj("Secret", map[string]any{"password": "aHVudGVyMg==", "user": "YWRh"}, "1"),
			result: obj("Secret", map[string]any{"password": "c3dvcmRmaXNo", "user": "YWRh"}, "2"),
			want:   []string{"-  password: '***'\n", "+  password: '*** (changed)'\n"},
			never:  []string{"aHVudGVyMg==", "c3dvcmRmaXNo", "YWRh"}},
		{name: "a Secret's last applied configuration", live: withLastApplied(obj("Secret", map[string]any{"password": "aHVudGVyMg=="}, "1"), "hunter2"),
			result: withLastApplied(obj("Secret", map[string]any{"password": "c3dvcmRmaXNo"}, "2"), "swordfish"),
			want:   []string{"+  password: '*** (changed)'\n"},
			never:  []string{"hunter2", "swordfish", "aHVudGVyMg==", "c3dvcmRmaXNo"}},
		{name: "nothing but the resource version", live: obj("ConfigMap", map[string]any{"a": "b"}, "1"),
			result: obj("ConfigMap", map[string]any{"a": "b"}, "2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d, err := ObjectDiff(tt.live, tt.result)
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want == nil {
				g.Expect(d).To(BeEmpty())
			}
			for _, w := range tt.want {
				g.Expect(d).To(ContainSubstring(w))
			}
			for _, n := range tt.never {
				g.Expect(d).NotTo(ContainSubstring(n))
			}
			g.Expect(tt.live.Object["data"]).NotTo(ContainElement(SecretMask), "the objects compared are left as they were")
		})
	}
}
