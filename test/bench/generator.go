package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
)

// GeneratorResult holds the figures of a -generator run: after the plain
// monorepo's phases, the same repository behind a GitRepository of its
// own and one ArtifactGenerator (pathPattern @mono/apps/{app}), which
// splits it into an ExternalArtifact per application, each applied by a
// Kustomization of its own; then one commit to application 0's folder.
type GeneratorResult struct {
	// ReadySeconds runs from the creation of the generator's source, the
	// generator and its N Kustomizations until every one is Ready.
	ReadySeconds float64 `json:"ready_seconds"`
	// ChangeToAppliedSeconds runs from just before the commit, through a
	// reconcile request of the generator's GitRepository, until
	// application 0's Kustomization applied the commit.
	ChangeToAppliedSeconds float64 `json:"change_to_applied_seconds"`
	// ChangeRequests is what the controller asked of the API server for
	// the change, until its requests stood still.
	ChangeRequests int64 `json:"change_requests"`
	// ChangeCPUSeconds is the controller's CPU over the change.
	ChangeCPUSeconds float64 `json:"change_cpu_seconds"`
	// ChangeApplied is the number of the generator's Kustomizations that
	// applied a new revision for the change: 1.
	ChangeApplied int `json:"change_applied"`
	// ChangeByRequest splits ChangeRequests by verb and resource.
	ChangeByRequest map[string]float64 `json:"change_by_request"`
}

// generatorSourceName names the GitRepository of the generator's
// monorepo, beside the plain layout's.
const generatorSourceName = "monorepo-gen"

// generatedLabel marks the generator's Kustomizations.
const generatedLabel = "bench.windlass.dev/generated"

// checkGenerator checks the options of a -generator run.
func (cfg Config) checkGenerator() error {
	switch {
	case !cfg.Generator:
		return nil
	case cfg.Layout != LayoutMonorepo || cfg.Source != SourceGit || cfg.Kind != KindKustomization:
		return fmt.Errorf("-generator splits a monorepo of Kustomizations: -layout %s -source %s", LayoutMonorepo, SourceGit)
	case cfg.Gate || cfg.Image || cfg.Alert || cfg.Replicas > 1 || cfg.Controllers != ControllersWindlass:
		return errors.New("-generator runs alone: without -gate, -image, -alert, -replicas and -controllers")
	}
	return nil
}

// generatorObjects returns the objects of the generator's layout in
// namespace ns for n applications: its GitRepository at url, the
// ArtifactGenerator and the Kustomizations.
func generatorObjects(ns, url string, n int) []client.Object {
	objs := []client.Object{
		gitRepository(ns, generatorSourceName, url),
		&sourceextv1beta1.ArtifactGenerator{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"},
			Spec: sourceextv1beta1.ArtifactGeneratorSpec{
				Sources:     []sourceextv1beta1.SourceReference{{Alias: "mono", Kind: sourcev1.GitRepositoryKind, Name: generatorSourceName}},
				PathPattern: "@mono/apps/{app}",
				OutputArtifacts: []sourceextv1beta1.OutputArtifact{{Name: "{app}", OriginRevision: "@mono",
					Copy: []sourceextv1beta1.CopyOperation{{From: "@mono/apps/{app}/**", To: "@artifact/"}}}},
			},
		},
	}
	for i := range n {
		objs = append(objs, generatedKustomization(ns, i))
	}
	return objs
}

// generatedKustomization returns the Kustomization of application i of the
// generator's layout: as the plain one, of the ExternalArtifact app-i's
// root, its objects named gen-app-i.
func generatedKustomization(ns string, i int) *kustomizev1.Kustomization {
	name := "gen-" + appName(i)
	return &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{generatedLabel: "true"}},
		Spec: kustomizev1.KustomizationSpec{
			Interval:        metav1.Duration{Duration: sourceInterval},
			Path:            "./",
			Prune:           true,
			Wait:            true,
			Timeout:         &metav1.Duration{Duration: time.Minute},
			TargetNamespace: ns,
			PostBuild:       &kustomizev1.PostBuild{Substitute: map[string]string{"app": name}},
			SourceRef:       kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: appName(i)},
		},
	}
}

// generatorPhase measures the generator's layout (see GeneratorResult).
func (r *run) generatorPhase(ctx context.Context, res *Result) error {
	kit, ok := r.kit.(*gitKit)
	if !ok {
		return errors.New("-generator needs the git source")
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ReadyTimeout)
	defer cancel()
	gr := &GeneratorResult{}
	started := time.Now()
	for _, obj := range generatorObjects(r.ns, kit.proxy.URL+"/"+monorepoName+".git", r.cfg.N) {
		if err := r.c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s: %w", obj.GetName(), err)
		}
	}
	generated := client.MatchingLabels{generatedLabel: "true"}
	if err := waitAll(ctx, r.c, r.ns, &kustomizev1.KustomizationList{}, r.cfg.N, ksReady, describeKs, generated); err != nil {
		return r.withOutput(fmt.Errorf("waiting for the generator's Kustomizations: %w", err))
	}
	gr.ReadySeconds = time.Since(started).Seconds()
	before, err := r.appliedRevisions(ctx, generated)
	if err != nil {
		return err
	}
	if err := r.generatorChange(ctx, kit, gr); err != nil {
		return err
	}
	after, err := r.appliedRevisions(ctx, generated)
	if err != nil {
		return err
	}
	for name, rev := range after {
		if before[name] != rev {
			gr.ChangeApplied++
		}
	}
	res.Generator = gr
	r.logf("generator: all %d ready in %.2fs; a change to one folder applied in %.2fs by %d Kustomization(s), %d API requests, %.2f CPU seconds",
		r.cfg.N, gr.ReadySeconds, gr.ChangeToAppliedSeconds, gr.ChangeApplied, gr.ChangeRequests, gr.ChangeCPUSeconds)
	return nil
}

// generatorChange commits a change to application 0's folder, asks the
// generator's GitRepository to reconcile, and measures until application
// 0's Kustomization applied it and the controller's requests stand still.
func (r *run) generatorChange(ctx context.Context, kit *gitKit, gr *GeneratorResult) error {
	if _, err := r.ctrl.waitRequestsStill(ctx, 10*time.Second); err != nil {
		return err
	}
	mark, err := r.markCost()
	if err != nil {
		return err
	}
	start := time.Now()
	head, err := kit.repos[monorepoName].Commit(branch, map[string]string{appPath(LayoutMonorepo, 0) + "/app.yaml": appManifests(3)}, "change app-0 for the generator")
	if err != nil {
		return err
	}
	src := gitRepository(r.ns, generatorSourceName, "")
	token := "bench-generator-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := requestReconcile(ctx, r.c, []client.Object{src}, token, 1); err != nil {
		return err
	}
	appliedHead := func(obj client.Object) bool {
		k := obj.(*kustomizev1.Kustomization)
		return strings.HasSuffix(k.Status.LastAppliedOriginRevision, ":"+head) && ksReady(k)
	}
	if err := waitAll(ctx, r.c, r.ns, &kustomizev1.KustomizationList{}, 1, appliedHead, describeKs,
		client.MatchingFields{"metadata.name": "gen-" + appName(0)}); err != nil {
		return r.withOutput(fmt.Errorf("waiting for the generator's change to be applied: %w", err))
	}
	gr.ChangeToAppliedSeconds = time.Since(start).Seconds()
	if _, err := r.ctrl.waitRequestsStill(ctx, 10*time.Second); err != nil {
		return err
	}
	requests1, err := r.ctrl.apiRequestsByRequest()
	if err != nil {
		return err
	}
	// One "application": the budget's figures are the change's totals.
	whole := budget(mark.requests, requests1, nil, 1, kustomizev1.KustomizationKind)
	gr.ChangeRequests, gr.ChangeByRequest = whole.Total, whole.ByRequest
	gr.ChangeCPUSeconds, err = r.cpuSince(mark)
	return err
}

// appliedRevisions returns the revision each Kustomization that opts
// select applied, by name.
func (r *run) appliedRevisions(ctx context.Context, opts ...client.ListOption) (map[string]string, error) {
	list := &kustomizev1.KustomizationList{}
	if err := r.c.List(ctx, list, append([]client.ListOption{client.InNamespace(r.ns)}, opts...)...); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range list.Items {
		out[k.Name] = k.Status.LastAppliedRevision
	}
	return out, nil
}

// generatorRows returns the table rows of a -generator run, beside the
// plain layout's change.
func generatorRows(gr *GeneratorResult, plain *ChangeCost) [][2]string {
	rows := [][2]string{
		{"generator: ready_seconds", fmt.Sprintf("%.2f", gr.ReadySeconds)},
		{"generator: change_to_applied_seconds", fmt.Sprintf("%.2f (%d Kustomization(s) applied it)", gr.ChangeToAppliedSeconds, gr.ChangeApplied)},
		{"generator: change API requests, CPU seconds", fmt.Sprintf("%d, %.2f", gr.ChangeRequests, gr.ChangeCPUSeconds)},
		{"    by request", formatBudget(gr.ChangeByRequest)},
	}
	if plain != nil {
		rows = append(rows, [2]string{"plain monorepo: change API requests, CPU seconds", fmt.Sprintf("%d, %.2f", plain.Requests, plain.CPUSeconds)})
	}
	return rows
}
