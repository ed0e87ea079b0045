package ui

import (
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/imageupdate"
)

// TestObjectPageTracesBackToTheCommit: a Kustomization's page shows its
// source, the commit its artifact was made from (author, time, subject)
// and the image update that made it, and the revisions it applied; a
// HelmRelease's shows its HelmChart, then the chart's repository; a source
// that is not there says so.
func TestObjectPageTracesBackToTheCommit(t *testing.T) {
	g := NewWithT(t)
	note, err := imageupdate.UpdateNote{Automation: "team-a/fleet",
		Policies: []imageupdate.NotePolicy{{Name: "team-a/web", Image: "web:1.1.0", Previous: "web:1.0.0", Reason: "semver ^1.0"}}}.Note()
	g.Expect(err).NotTo(HaveOccurred())
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app"},
		Spec: sourcev1.GitRepositorySpec{URL: "https://git.example/app.git", Reference: &sourcev1.GitRepositoryRef{Branch: "main"}}}
	repo.Status.Artifact = &meta.Artifact{Revision: "main@sha1:2222", Metadata: map[string]string{
		git.AuthorMetadataKey: "Ada <ada@example.com>", git.TimeMetadataKey: "2026-11-02T09:30:00Z",
		git.SubjectMetadataKey: "Bump <web>", imageupdate.NoteMetadataKey: note}}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app"},
		Spec: kustomizev1.KustomizationSpec{SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"}}}
	now := metav1.NewTime(time.Now())
	ks.Status.History = []kustomizev1.Snapshot{{Digest: "sha256:1", FirstReconciled: now, LastReconciled: now,
		LastReconciledStatus: "ReconciliationSucceeded", TotalReconciliations: 3, Metadata: map[string]string{"revision": "main@sha1:2222"}}}
	orphan := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "orphan"},
		Spec: kustomizev1.KustomizationSpec{SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "gone"}}}
	helmRepo := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "charts"},
		Spec: sourcev1.HelmRepositorySpec{URL: "https://charts.example"}}
	chart := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "team-b-cache"},
		Spec: sourcev1.HelmChartSpec{Chart: "redis", Version: "1.x", SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}}}
	chart.Status.Artifact = &meta.Artifact{Revision: "1.2.0"}
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "cache"},
		Spec: helmv2.HelmReleaseSpec{Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "redis",
			SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}}}}}
	h := testServer(repo, ks, orphan, helmRepo, chart, hr)

	_, body := get(g, h, "/object/Kustomization/team-a/app")
	trace := traceSection(body)
	g.Expect(trace).To(ContainSubstring(`<a href="/object/GitRepository/team-a/app">GitRepository team-a/app</a>`))
	g.Expect(trace).To(MatchRegexp(`<dt>URL</dt><dd>https://git.example/app.git</dd>`))
	g.Expect(trace).To(ContainSubstring(`<dt>Revision</dt><dd>main@sha1:2222</dd>`))
	g.Expect(trace).To(ContainSubstring(`<dt>Author</dt><dd>Ada &lt;ada@example.com&gt;</dd>`))
	g.Expect(trace).To(ContainSubstring(`<dt>Committed</dt><dd>2026-11-02T09:30:00Z</dd>`))
	g.Expect(trace).To(ContainSubstring(`<dt>Subject</dt><dd>Bump &lt;web&gt;</dd>`))
	g.Expect(trace).To(ContainSubstring(`<dt>Updated by</dt><dd>ImageUpdateAutomation/team-a/fleet</dd>`))
	g.Expect(trace).To(ContainSubstring(`team-a/web: web:1.0.0 -&gt; web:1.1.0 (semver ^1.0)`))
	applied := section(body, "applied")
	g.Expect(applied).To(MatchRegexp(`<td>main@sha1:2222</td><td>ReconciliationSucceeded</td>.*<td>3</td>`))

	_, body = get(g, h, "/object/GitRepository/team-a/app")
	g.Expect(traceSection(body)).To(ContainSubstring(`<dt>Author</dt><dd>Ada &lt;ada@example.com&gt;</dd>`), "a source shows its own commit")

	_, body = get(g, h, "/object/Kustomization/team-a/orphan")
	g.Expect(traceSection(body)).To(MatchRegexp(`GitRepository team-a/gone</a>\s*<span class="muted">not found</span>`))

	code, body := get(g, h, "/object/HelmRelease/team-b/cache")
	g.Expect(code).To(Equal(http.StatusOK))
	trace = traceSection(body)
	g.Expect(trace).To(MatchRegexp(`(?s)HelmChart team-b/team-b-cache</a>.*<dt>Revision</dt><dd>1.2.0</dd>.*HelmRepository team-b/charts</a>.*<dt>URL</dt><dd>https://charts.example</dd>`))
}

// traceSection returns the trace part of an object's page.
func traceSection(body string) string {
	_, rest, _ := strings.Cut(body, `id="trace"`)
	part, _, _ := strings.Cut(rest, "<h2>")
	return part
}
