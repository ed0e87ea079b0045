package ssa

import (
	"context"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestApplyForceRecreatesImmutable(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	// Cluster IPs unique to this namespace: namespaces and their Services
	// outlive the test in the test control plane.
	h := fnv.New32a()
	_, _ = h.Write([]byte(ns))
	sum := h.Sum32()
	ip1 := fmt.Sprintf("10.100.%d.%d", sum>>8&0xff, 2+sum%250)
	ip2 := fmt.Sprintf("10.100.%d.%d", sum>>8&0xff, 3+sum%250)
	ips := strings.NewReplacer("${IP1}", ip1, "${IP2}", ip2)
	tests := []struct {
		name       string
		before     string
		after      string
		optForce   bool
		annotation bool
		check      func(g Gomega, live *unstructured.Unstructured)
	}{
		{
			name: "immutable Secret with the force annotation",
			before: `
apiVersion: v1
kind: Secret
metadata: {name: s, namespace: ${NS}}
immutable: true
stringData: {token: first}`,
			after: `
apiVersion: v1
kind: Secret
metadata: {name: s, namespace: ${NS}}
immutable: true
stringData: {token: second}`,
			annotation: true,
			check: func(g Gomega, live *unstructured.Unstructured) {
				v, _, _ := unstructured.NestedString(live.Object, "data", "token")
				g.Expect(v).To(Equal(base64.StdEncoding.EncodeToString([]byte("second"))))
			},
		},
		{
			name: "immutable ConfigMap with ApplyOptions.Force",
			before: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ${NS}}
immutable: true
data: {k: first}`,
			after: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ${NS}}
immutable: true
data: {k: second}`,
			optForce: true,
			check: func(g Gomega, live *unstructured.Unstructured) {
				v, _, _ := unstructured.NestedString(live.Object, "data", "k")
				g.Expect(v).To(Equal("second"))
			},
		},
		{
			name: "Service clusterIP with the force annotation",
			before: `
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ${NS}}
spec: {clusterIP: ${IP1}, ports: [{port: 80}]}`,
			after: `
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ${NS}}
spec: {clusterIP: ${IP2}, ports: [{port: 80}]}`,
			annotation: true,
			check: func(g Gomega, live *unstructured.Unstructured) {
				v, _, _ := unstructured.NestedString(live.Object, "spec", "clusterIP")
				g.Expect(v).To(Equal(ip2))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before := parse(t, ns, ips.Replace(tt.before))
			_, err := m.ApplyAllStaged(ctx, before, ApplyOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			obj := before[0]
			original := get(t, obj.GetAPIVersion(), obj.GetKind(), ns, obj.GetName())
			subject := obj.GetKind() + "/" + ns + "/" + obj.GetName()

			// Without force the change is refused and nothing changes.
			after := parse(t, ns, ips.Replace(tt.after))
			cs, err := m.ApplyAllStaged(ctx, after, ApplyOptions{})
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(subject + ": "))
			g.Expect(cs.Entries).To(BeEmpty())
			g.Expect(get(t, obj.GetAPIVersion(), obj.GetKind(), ns, obj.GetName()).GetUID()).To(Equal(original.GetUID()))

			// With force the object is recreated.
			if tt.annotation {
				after[0].SetAnnotations(map[string]string{ForceKey: "Enabled"})
			}
			cs, err = m.ApplyAllStaged(ctx, after, ApplyOptions{Force: tt.optForce})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cs.String()).To(Equal(subject + " created"))
			live := get(t, obj.GetAPIVersion(), obj.GetKind(), ns, obj.GetName())
			g.Expect(live.GetUID()).NotTo(Equal(original.GetUID()))
			tt.check(g, live)

			// And then it is stable.
			cs, err = m.ApplyAllStaged(ctx, after, ApplyOptions{Force: tt.optForce})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cs.String()).To(Equal(subject + " unchanged"))
		})
	}
}

func TestSecretDataNeverInMessages(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	const first, second = "first-secret-value-1234", "second-secret-value-5678"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	secret := func(value string, extra string) []*unstructured.Unstructured {
		return parse(t, ns, `
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: ${NS}
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"data":{"token":"`+b64(value)+`"}}'
immutable: true
data: {token: `+b64(value)+`}
`+extra)
	}
	secrets := []string{first, second, b64(first), b64(second)}

	tests := []struct {
		name    string
		objs    func() []*unstructured.Unstructured
		wantErr string
	}{
		{name: "create", objs: func() []*unstructured.Unstructured { return secret(first, "") }},
		{name: "unchanged", objs: func() []*unstructured.Unstructured { return secret(first, "") }},
		{
			name:    "immutable change refused",
			objs:    func() []*unstructured.Unstructured { return secret(second, "") },
			wantErr: "Secret/" + ns + "/creds: Invalid: data: Forbidden: field is immutable",
		},
		{
			name: "invalid docker config",
			objs: func() []*unstructured.Unstructured {
				return parse(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: docker, namespace: ${NS}}
type: kubernetes.io/dockerconfigjson
stringData: {.dockerconfigjson: '{"auths": `+second+`'}
`)
			},
			wantErr: "Secret/" + ns + "/docker: Invalid: data[.dockerconfigjson]: FieldValueInvalid",
		},
		{
			name: "force recreate",
			objs: func() []*unstructured.Unstructured {
				objs := secret(second, "")
				objs[0].SetLabels(map[string]string{ForceKey: "Enabled"})
				return objs
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cs, err := m.ApplyAllStaged(ctx, tt.objs(), ApplyOptions{})
			texts := []string{cs.String(), cs.Summary()}
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			if err != nil {
				texts = append(texts, err.Error())
			}
			for _, text := range texts {
				for _, s := range secrets {
					g.Expect(text).NotTo(ContainSubstring(s))
				}
			}
		})
	}

	t.Run("last-applied configuration is not applied", func(t *testing.T) {
		g := NewWithT(t)
		live := get(t, "v1", "Secret", ns, "creds")
		g.Expect(live.GetAnnotations()).NotTo(HaveKey(LastAppliedConfigAnnotation))
		for _, s := range secrets[:2] {
			g.Expect(strings.Contains(live.GetAnnotations()[LastAppliedConfigAnnotation], s)).To(BeFalse())
		}
	})
}
