package metrics

import (
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRequestVerbResource(t *testing.T) {
	tests := []struct {
		method, url    string
		verb, resource string
	}{
		{"GET", "https://h/api/v1/namespaces/a/configmaps/x", "get", "configmaps"},
		{"GET", "https://h/api/v1/namespaces/a/configmaps", "list", "configmaps"},
		{"GET", "https://h/api/v1/namespaces/a/configmaps?watch={value}", "watch", "configmaps"},
		{"GET", "https://h/api/v1/namespaces/a", "get", "namespaces"},
		{"GET", "https://h/api/v1/namespaces", "list", "namespaces"},
		{"PATCH", "https://h/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/a/kustomizations/k/status", "patch", "kustomizations/status"},
		{"PATCH", "https://h/apis/apps/v1/namespaces/a/deployments/d?dryRun=All&fieldManager=x", "patch", "deployments"},
		{"POST", "https://h/api/v1/namespaces/a/events", "create", "events"},
		{"PUT", "https://h/apis/coordination.k8s.io/v1/namespaces/a/leases/l", "update", "leases"},
		{"DELETE", "https://h/apis/rbac.authorization.k8s.io/v1/clusterroles/r", "delete", "clusterroles"},
		{"DELETE", "https://h/api/v1/namespaces/a/pods", "deletecollection", "pods"},
		{"POST", "https://h/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "create", "selfsubjectaccessreviews"},
		{"GET", "https://h/api", "get", "discovery"},
		{"GET", "https://h/apis/apps/v1", "get", "discovery"},
		{"GET", "https://h/openapi/v3/apis/apps/v1", "get", "discovery"},
		{"GET", "https://h/healthz", "get", "other"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			g := NewWithT(t)
			u, err := url.Parse(tt.url)
			g.Expect(err).NotTo(HaveOccurred())
			verb, resource := RequestVerbResource(tt.method, *u)
			g.Expect(verb).To(Equal(tt.verb))
			g.Expect(resource).To(Equal(tt.resource))
		})
	}
}
