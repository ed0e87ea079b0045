package metrics

import (
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRequestLabels(t *testing.T) {
	tests := []struct {
		method, url            string
		verb, resource, dryRun string
	}{
		{"GET", "https://h/api/v1/namespaces/a/configmaps/x", "get", "configmaps", "false"},
		{"GET", "https://h/api/v1/namespaces/a/configmaps", "list", "configmaps", "false"},
		{"GET", "https://h/api/v1/namespaces/a/configmaps?watch={value}", "watch", "configmaps", "false"},
		{"GET", "https://h/api/v1/namespaces/a", "get", "namespaces", "false"},
		{"GET", "https://h/api/v1/namespaces", "list", "namespaces", "false"},
		{"PATCH", "https://h/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/a/kustomizations/k/status", "patch", "kustomizations/status", "false"},
		{"PATCH", "https://h/apis/apps/v1/namespaces/a/deployments/d?dryRun=All&fieldManager=x", "patch", "deployments", "true"},
		{"POST", "https://h/api/v1/namespaces/a/events", "create", "events", "false"},
		{"PUT", "https://h/apis/coordination.k8s.io/v1/namespaces/a/leases/l", "update", "leases", "false"},
		{"DELETE", "https://h/apis/rbac.authorization.k8s.io/v1/clusterroles/r", "delete", "clusterroles", "false"},
		{"DELETE", "https://h/api/v1/namespaces/a/pods", "deletecollection", "pods", "false"},
		{"POST", "https://h/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "create", "selfsubjectaccessreviews", "false"},
		{"GET", "https://h/api", "get", "discovery", "false"},
		{"GET", "https://h/apis/apps/v1", "get", "discovery", "false"},
		{"GET", "https://h/openapi/v3/apis/apps/v1", "get", "discovery", "false"},
		{"GET", "https://h/healthz", "get", "other", "false"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			g := NewWithT(t)
			u, err := url.Parse(tt.url)
			g.Expect(err).NotTo(HaveOccurred())
			verb, resource, dryRun := requestLabels(tt.method, *u)
			g.Expect(verb).To(Equal(tt.verb))
			g.Expect(resource).To(Equal(tt.resource))
			g.Expect(dryRun).To(Equal(tt.dryRun))
		})
	}
}
