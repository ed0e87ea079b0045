package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseAPIRequests(t *testing.T) {
	g := NewWithT(t)
	got := parseAPIRequests([]byte(`# TYPE windlass_api_requests_total counter
windlass_api_requests_total{dry_run="false",resource="kustomizations/status",verb="patch"} 12
windlass_api_requests_total{dry_run="true",resource="deployments",verb="patch"} 3
windlass_api_requests_total{dry_run="false",resource="deployments",verb="watch"} 9
windlass_api_requests_total_other 99
`))
	g.Expect(got).To(Equal(requestCounts{"patch kustomizations/status": 12, "patch deployments dry-run": 3}))
}

func TestBudget(t *testing.T) {
	g := NewWithT(t)
	before := requestCounts{"patch kustomizations/status": 5, "get discovery": 10}
	after := requestCounts{
		"patch kustomizations/status": 25, "patch kustomizations": 10, "get discovery": 12,
		"patch gitrepositories/status": 10, "patch configmaps": 20, "create events": 25,
	}
	b := budget(before, after, map[string]int64{"Kustomization": 10, "GitRepository": 10}, 10, "Kustomization")
	g.Expect(b.Total).To(BeEquivalentTo(87))
	g.Expect(b.PerApp).To(Equal(8.7))
	g.Expect(b.ByRequest).To(HaveKeyWithValue("patch kustomizations/status", 2.0))
	g.Expect(b.ByKind).To(Equal(map[string]float64{
		// status 20 + finalizer 10 + applied objects 20 + events 10
		"Kustomization": 6,
		"GitRepository": 2,
		"controller":    0.2,
		// events the list did not see
		"events (unattributed)": 0.5,
	}))
}
