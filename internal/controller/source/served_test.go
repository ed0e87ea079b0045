package source

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

func TestCheckServedSteps(t *testing.T) {
	cosign := &sourcev1.OCIRepositoryVerification{Provider: sourcev1.VerificationProviderCosign}
	notation := &sourcev1.OCIRepositoryVerification{Provider: sourcev1.VerificationProviderNotation}
	oci := func(provider string, v *sourcev1.OCIRepositoryVerification) func() error {
		obj := &sourcev1.OCIRepository{Spec: sourcev1.OCIRepositorySpec{Provider: provider, Verify: v}}
		return func() error { return (&OCIRepositoryReconciler{}).checkServed(obj) }
	}
	bucket := func(provider string) func() error {
		obj := &sourcev1.Bucket{Spec: sourcev1.BucketSpec{Provider: provider}}
		return func() error { return (&BucketReconciler{}).checkServed(obj) }
	}
	helmRepo := func(typ, provider string) func() error {
		obj := &sourcev1.HelmRepository{Spec: sourcev1.HelmRepositorySpec{Type: typ, Provider: provider}}
		return func() error { return (&HelmRepositoryReconciler{}).checkServed(obj) }
	}
	chart := func(v *sourcev1.OCIRepositoryVerification, sourceKind ...string) func() error {
		obj := &sourcev1.HelmChart{Spec: sourcev1.HelmChartSpec{Verify: v,
			SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}}}
		if len(sourceKind) > 0 {
			obj.Spec.SourceRef.Kind = sourceKind[0]
		}
		return func() error { return (&HelmChartReconciler{}).checkServed(obj) }
	}
	git := func(provider, sa string) func() error {
		obj := &sourcev1.GitRepository{Spec: sourcev1.GitRepositorySpec{Provider: provider, ServiceAccountName: sa}}
		return func() error { return (&GitRepositoryReconciler{}).checkServed(obj) }
	}
	for _, tc := range []struct {
		name       string
		check      func() error
		wantReason string
		wantErr    string
	}{
		{name: "GitRepository generic", check: git("generic", "")},
		{name: "GitRepository azure", check: git("azure", ""), wantReason: meta.UnsupportedProviderReason, wantErr: "provider 'azure' is not served by Windlass"},
		{name: "GitRepository serviceAccountName", check: git("", "deployer"), wantReason: meta.UnsupportedProviderReason, wantErr: "spec.serviceAccountName 'deployer'"},
		{name: "OCIRepository generic, cosign", check: oci("generic", cosign)},
		{name: "OCIRepository no provider", check: oci("", nil)},
		{name: "OCIRepository aws", check: oci("aws", nil), wantReason: meta.UnsupportedProviderReason, wantErr: "spec.provider 'aws' is not served by Windlass"},
		{name: "OCIRepository azure", check: oci("azure", cosign), wantReason: meta.UnsupportedProviderReason, wantErr: "spec.provider 'azure'"},
		{name: "OCIRepository notation", check: oci("generic", notation),
			wantReason: meta.UnsupportedVerificationProviderReason, wantErr: "spec.verify.provider 'notation' is not served by Windlass: use cosign"},
		{name: "Bucket generic", check: bucket("generic")},
		{name: "Bucket gcp", check: bucket("gcp"), wantReason: meta.UnsupportedProviderReason, wantErr: "spec.provider 'gcp' is not served by Windlass"},
		{name: "HelmRepository oci generic", check: helmRepo("oci", "generic")},
		{name: "HelmRepository default generic", check: helmRepo("", "generic")},
		{name: "HelmRepository oci aws", check: helmRepo("oci", "aws"), wantReason: meta.UnsupportedProviderReason, wantErr: "spec.provider 'aws'"},
		{name: "HelmRepository default azure", check: helmRepo("default", "azure"), wantReason: meta.UnsupportedProviderReason, wantErr: "spec.provider 'azure'"},
		{name: "HelmChart cosign", check: chart(cosign)},
		{name: "HelmChart unverified", check: chart(nil)},
		{name: "HelmChart notation", check: chart(notation), wantReason: meta.UnsupportedVerificationProviderReason, wantErr: "spec.verify.provider 'notation'"},
		{name: "HelmChart of a GitRepository, unverified", check: chart(nil, sourcev1.GitRepositoryKind)},
		{name: "HelmChart of a GitRepository, verified", check: chart(cosign, sourcev1.GitRepositoryKind), wantReason: meta.UnsupportedVerificationReason,
			wantErr: "spec.verify is served only for charts of OCI HelmRepositories, and the chart comes from GitRepository 'charts'"},
		{name: "HelmChart of a Bucket, verified", check: chart(cosign, sourcev1.BucketKind), wantReason: meta.UnsupportedVerificationReason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			testutil.ExpectStall(g, tc.check(), tc.wantReason, tc.wantErr)
		})
	}
}

// TestUnservedHelmValuesStall: a HelmRepository of either type with a cloud
// provider, a HelmChart verified with notation, and one asked to be
// verified from an HTTP repository, are Stalled with a reason naming the
// value; not a request reaches the chart repository.
func TestUnservedHelmValuesStall(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	repo, unserved := helmtest.NewRepo(t), helmtest.NewRepo(t)
	repo.Add(t, helmtest.Chart(t, "podinfo", "1.0.0"))
	unserved.Add(t, helmtest.Chart(t, "podinfo", "1.0.0"))

	plain := newHelmRepository(ns, "plain", unserved.URL())
	plain.Spec.Provider = "aws"
	ociRepo := newHelmRepository(ns, "oci", "oci://"+strings.TrimPrefix(unserved.URL(), "http://")+"/charts")
	ociRepo.Spec.Type, ociRepo.Spec.Insecure, ociRepo.Spec.Provider = sourcev1.HelmRepositoryTypeOCI, true, "gcp"
	served := newHelmRepository(ns, "served", repo.URL())
	chart := newHelmChart(ns, "notation", sourcev1.HelmRepositoryKind, "served", "podinfo")
	chart.Spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: sourcev1.VerificationProviderNotation}
	httpVerified := newHelmChart(ns, "cosign-http", sourcev1.HelmRepositoryKind, "served", "podinfo")
	httpVerified.Spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: sourcev1.VerificationProviderCosign}
	for _, obj := range []client.Object{plain, ociRepo, served, chart, httpVerified} {
		g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	}

	for obj, provider := range map[*sourcev1.HelmRepository]string{plain: "aws", ociRepo: "gcp"} {
		got := waitForHelmRepo(g, obj, helmCondition[*sourcev1.HelmRepository](meta.StalledCondition, metav1.ConditionTrue, meta.UnsupportedProviderReason))
		g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("spec.provider '" + provider + "' is not served by Windlass"))
		g.Expect(got.Status.Artifact).To(BeNil())
	}
	got := waitForChart(g, chart, helmCondition[*sourcev1.HelmChart](meta.StalledCondition, metav1.ConditionTrue, meta.UnsupportedVerificationProviderReason))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("spec.verify.provider 'notation' is not served by Windlass"))
	got = waitForChart(g, httpVerified, helmCondition[*sourcev1.HelmChart](meta.StalledCondition, metav1.ConditionTrue, meta.UnsupportedVerificationReason))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring(
		"spec.verify is served only for charts of OCI HelmRepositories, and HelmRepository 'served' is not of type oci"))
	g.Expect(got.Status.Artifact).To(BeNil(), "a chart asked to be verified is never served unverified")
	waitForHelmRepo(g, served, helmRepoReady)
	g.Expect(unserved.Requests("/index.yaml")).To(BeZero(), "the repositories with a cloud provider fetch nothing")
	g.Expect(repo.Requests("/podinfo-1.0.0.tgz")).To(BeZero(), "the charts asked to be verified are not downloaded")
}
