package devenv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/generator"
)

// splitLabel marks the Kustomizations that `windlass dev --split` keeps,
// one per folder of the pattern.
const splitLabel = "dev.windlass.dev/split"

// splitter decomposes the served folder as a monorepo: an ArtifactGenerator
// makes one artifact per folder that the pattern matches, and the splitter
// keeps one Kustomization per artifact, so that an edit applies its
// folder's alone.
type splitter struct {
	// generator is the ArtifactGenerator of the dev repository.
	generator *sourceextv1beta1.ArtifactGenerator
	// dir is the served folder, matched as the generator will match the
	// repository.
	dir string
	// mu guards applied: the reporter reads and writes it while the
	// folder's follower adds and drops Kustomizations.
	mu sync.Mutex
	// applied are the revisions each Kustomization was last said to have
	// applied or failed.
	applied map[string]string
}

// said records revision as what was last said of the Kustomization name.
func (sp *splitter) said(name, revision string) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.applied[name] = revision
}

// forget drops what was said of the Kustomization name.
func (sp *splitter) forget(name string) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	delete(sp.applied, name)
}

// newSplitter returns the splitter of pattern (like apps/{app}), a path of
// the served folder dir with at least one {name}; the artifacts are named
// by the captures, joined by '-'.
func newSplitter(pattern, dir string) (*splitter, error) {
	from := "@" + repoName + "/" + strings.Trim(pattern, "/")
	p, err := generator.ParsePattern(from)
	if err != nil {
		return nil, fmt.Errorf("--split: %w", err)
	}
	if len(p.Names) == 0 {
		return nil, fmt.Errorf("--split %q has no {name}: write a folder pattern like apps/{app}", pattern)
	}
	captures := make([]string, 0, len(p.Names))
	for _, n := range p.Names {
		captures = append(captures, "{"+n+"}")
	}
	gen := &sourceextv1beta1.ArtifactGenerator{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourceextv1beta1.GroupVersion.String(), Kind: sourceextv1beta1.ArtifactGeneratorKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: repoName},
		Spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources:     []sourceextv1beta1.SourceReference{{Alias: repoName, Kind: sourcev1.GitRepositoryKind, Name: repoName}},
			PathPattern: from,
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{{Name: strings.Join(captures, "-"),
				Copy: []sourceextv1beta1.CopyOperation{{From: from + "/**", To: "@artifact/"}}}},
		},
	}
	if err := generator.CheckSpec(gen.Spec); err != nil {
		return nil, fmt.Errorf("--split: %w", err)
	}
	return &splitter{generator: gen, dir: dir, applied: map[string]string{}}, nil
}

// names returns the names of the artifacts that the folder makes now.
func (sp *splitter) names() ([]string, error) {
	plan, err := generator.Plan(sp.generator.Spec, map[string]string{repoName: sp.dir})
	if errors.Is(err, generator.ErrNoFolder) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--split: %w", err)
	}
	names := make([]string, 0, len(plan))
	for _, p := range plan {
		names = append(names, p.Spec.Name)
	}
	slices.Sort(names)
	return names, nil
}

// kustomizationOf returns the Kustomization of the artifact name: all of
// it, pruned.
func kustomizationOf(name string) client.Object {
	ks := kustomization(name, "./", func(spec *kustomizev1.KustomizationSpec) {
		spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: name}
	})
	ks.SetLabels(map[string]string{splitLabel: "true"})
	return ks
}

// kustomizations returns the Kustomizations of the folder now.
func (sp *splitter) kustomizations() ([]client.Object, error) {
	names, err := sp.names()
	if err != nil {
		return nil, err
	}
	objs := make([]client.Object, 0, len(names))
	for _, name := range names {
		objs = append(objs, kustomizationOf(name))
	}
	return objs, nil
}

// seedSplit records what each Kustomization of the split attempted, as
// waitReady said it: only what comes next is reported.
func (s *session) seedSplit(ctx context.Context) {
	list, err := s.splitKustomizations(ctx)
	if err != nil {
		return
	}
	for _, ks := range list {
		s.split.said(ks.Name, ks.Status.LastAttemptedRevision)
	}
}

// splitKustomizations lists the Kustomizations of the split.
func (s *session) splitKustomizations(ctx context.Context) ([]kustomizev1.Kustomization, error) {
	var list kustomizev1.KustomizationList
	err := s.client.List(ctx, &list, client.InNamespace(Namespace), client.MatchingLabels{splitLabel: "true"})
	return list.Items, err
}

// syncSplit creates the Kustomizations of the folders that appeared and
// deletes those of the folders that went, saying so of each.
func (s *session) syncSplit(ctx context.Context) error {
	want, err := s.split.names()
	if err != nil {
		return err
	}
	have, err := s.splitKustomizations(ctx)
	if err != nil {
		return err
	}
	for _, ks := range have {
		if !slices.Contains(want, ks.Name) {
			if err := s.client.Delete(ctx, &ks); client.IgnoreNotFound(err) != nil {
				return err
			}
			s.split.forget(ks.Name)
			s.p.line("✚ deleted Kustomization %s/%s: its folder is gone", Namespace, ks.Name)
		}
	}
	for _, name := range want {
		if slices.ContainsFunc(have, func(ks kustomizev1.Kustomization) bool { return ks.Name == name }) {
			continue
		}
		ks := kustomizationOf(name)
		what := describe(ks) // before Create, which clears the kind
		if err := s.client.Create(ctx, ks); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", what, err)
		}
		s.split.said(name, "")
		s.p.line("✚ created %s for a new folder", what)
	}
	return nil
}

// reportSplitApplies says, for each Kustomization of the split, when it
// applies a new revision or fails to: an edit of one folder is applied by
// that folder's Kustomization alone.
func (s *session) reportSplitApplies(ctx context.Context) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		list, err := s.splitKustomizations(ctx)
		if err != nil {
			continue
		}
		for _, ks := range list {
			if line := s.split.report(&ks); line != "" {
				s.p.line("%s", line)
			}
		}
	}
}

// report returns what to say of ks: that it applied or failed a revision
// not said yet, or "" for nothing new.
func (sp *splitter) report(ks *kustomizev1.Kustomization) string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	revision := ks.Status.LastAttemptedRevision
	if revision == "" || sp.applied[ks.Name] == revision {
		return ""
	}
	switch outcome, message := applyOutcome(ks, revision); outcome {
	case applied:
		sp.applied[ks.Name] = revision
		return fmt.Sprintf("✔ Kustomization %s/%s applied %s", ks.Namespace, ks.Name, revision)
	case failed:
		sp.applied[ks.Name] = revision
		return fmt.Sprintf("✗ Kustomization %s/%s did not apply %s: %s", ks.Namespace, ks.Name, revision, message)
	}
	return ""
}
