package ui

import (
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/provenance"
)

// maxTraceSteps bounds the way back from an object to its commit: a
// HelmRelease, its HelmChart and the chart's source are the longest.
const maxTraceSteps = 3

// traceStep is one object on the way from an object back to what it was
// made of: a source, with what it fetches, its revision, the commit and
// the image update that made it.
type traceStep struct {
	Row      row
	Revision string
	Fields   []provenance.Field
	// Missing says the object is not there (or not to be read).
	Missing bool
}

// trace returns the way from obj back to its commit: obj itself when it
// is a source, then the sources it is made from, one after the other.
func (s *Server) trace(r *http.Request, obj client.Object, kind string) []traceStep {
	var steps []traceStep
	if _, isSource := obj.(interface{ GetArtifact() *meta.Artifact }); isSource {
		steps = append(steps, s.traceStepOf(obj, kind))
	}
	for next := s.sourceOf(r, obj); next != nil && len(steps) < maxTraceSteps; {
		k, ok := s.kind(next.Kind)
		if !ok {
			break
		}
		src := k.New()
		if err := s.Reader.Get(r.Context(), client.ObjectKey{Namespace: next.Namespace, Name: next.Name}, src); err != nil {
			if !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
				s.Log.Error(err, "Reading a source", "kind", next.Kind, "object", next.Namespace+"/"+next.Name)
			}
			steps = append(steps, traceStep{Row: row{Kind: next.Kind, Namespace: next.Namespace, Name: next.Name}, Missing: true})
			break
		}
		steps = append(steps, s.traceStepOf(src, next.Kind))
		obj, next = src, s.sourceOf(r, src)
	}
	return steps
}

// sourceOf returns the first source obj is made from, or nil when it
// names none of a kind the UI serves.
func (s *Server) sourceOf(r *http.Request, obj client.Object) *graphRef {
	refs := sourcesOf(obj, func(ref graphRef) bool {
		k, ok := s.kind(ref.Kind)
		return ok && s.Reader.Get(r.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, k.New()) == nil
	})
	if len(refs) == 0 {
		return nil
	}
	if _, served := s.kind(refs[0].Kind); !served {
		return nil
	}
	return &refs[0]
}

// traceStepOf describes the source obj of kind.
func (s *Server) traceStepOf(obj client.Object, kind string) traceStep {
	step := traceStep{Row: row{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	if k, ok := s.kind(kind); ok {
		if o, ok := obj.(object); ok {
			step.Row = s.row(k, o)
		}
	}
	if a, ok := obj.(interface{ GetArtifact() *meta.Artifact }); ok && a.GetArtifact() != nil {
		step.Revision = a.GetArtifact().Revision
	}
	for _, fields := range [][]provenance.Field{provenance.SourceFields(obj), provenance.CommitFields(obj), provenance.ImageUpdateFields(obj)} {
		for _, f := range fields {
			if f.Value != "" {
				step.Fields = append(step.Fields, f)
			}
		}
	}
	return step
}

// appliedRevision is one snapshot of a Kustomization's status.history: a
// revision it applied, with the outcome of the runs that applied it.
type appliedRevision struct {
	Revision, Outcome string
	First, Last       time.Time
	Runs              int64
	Took              time.Duration
}

// appliedRevisionsOf returns a Kustomization's applied revisions, newest
// first; none for other kinds.
func appliedRevisionsOf(obj client.Object) []appliedRevision {
	ks, ok := obj.(*kustomizev1.Kustomization)
	if !ok {
		return nil
	}
	out := make([]appliedRevision, 0, len(ks.Status.History))
	for _, h := range ks.Status.History {
		out = append(out, appliedRevision{Revision: h.Metadata["revision"], Outcome: h.LastReconciledStatus,
			First: h.FirstReconciled.Time, Last: h.LastReconciled.Time, Runs: h.TotalReconciliations,
			Took: h.LastReconciledDuration.Round(time.Millisecond)})
	}
	return out
}

// release is one entry of a HelmRelease's history.
type release struct {
	Version                             int
	ChartName, ChartVersion, AppVersion string
	Status, Action                      string
	Deployed                            time.Time
}

// releasesOf returns a HelmRelease's releases (status.history), newest
// first; none for other kinds.
func releasesOf(obj client.Object) []release {
	hr, ok := obj.(*helmv2.HelmRelease)
	if !ok {
		return nil
	}
	out := make([]release, 0, len(hr.Status.History))
	for _, h := range hr.Status.History {
		out = append(out, release{Version: h.Version, ChartName: h.ChartName, ChartVersion: h.ChartVersion,
			AppVersion: h.AppVersion, Status: h.Status, Action: h.Action, Deployed: h.LastDeployed.Time})
	}
	return out
}
