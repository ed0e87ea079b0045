package ssa

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestStageOf(t *testing.T) {
	tests := []struct {
		gk   schema.GroupKind
		want int
	}{
		{gk: schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, want: 0},
		{gk: schema.GroupKind{Kind: "Namespace"}, want: 0},
		{gk: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}, want: 0},
		{gk: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}, want: 0},
		{gk: schema.GroupKind{Group: "storage.k8s.io", Kind: "StorageClass"}, want: 1},
		{gk: schema.GroupKind{Group: "networking.k8s.io", Kind: "IngressClass"}, want: 1},
		{gk: schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"}, want: 1},
		{gk: schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "GatewayClass"}, want: 1},
		{gk: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"}, want: 2},
		{gk: schema.GroupKind{Group: "apps", Kind: "Deployment"}, want: 2},
		{gk: schema.GroupKind{Group: "example.com", Kind: "Classroom"}, want: 2},
		{gk: schema.GroupKind{Kind: "ConfigMap"}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.gk.String(), func(t *testing.T) {
			NewWithT(t).Expect(stageOf(tt.gk)).To(Equal(tt.want))
		})
	}
}
