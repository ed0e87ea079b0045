package source

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/shard"
)

// managedByLabel names, on a generated ExternalArtifact, what manages it.
const managedByLabel = "app.kubernetes.io/managed-by"

// publish makes out's ExternalArtifact, name in obj's namespace, publish
// a, with the labels of its pathPattern captures: it creates it, or brings
// its metadata and status up to date (adopting one declared for obj),
// writing nothing that is already so.
func (r *ArtifactGeneratorReconciler) publish(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, out output, name string,
	captures map[string]string, a meta.Artifact) error {
	if out.ea == nil {
		ea := newExternalArtifact(obj, name, captures)
		if err := r.Create(ctx, ea); err != nil {
			return outcome.Fail(meta.ReconciliationFailedReason, fmt.Errorf("creating ExternalArtifact '%s': %w", name, err))
		}
		out = output{ea: ea, before: ea.DeepCopy()}
	} else if err := r.updateMetadata(ctx, obj, out, captures); err != nil {
		return err
	}
	return r.publishStatus(ctx, obj, out, a)
}

// newExternalArtifact returns the ExternalArtifact name that obj
// generates, with the labels of captures, without status.
func newExternalArtifact(obj *sourceextv1beta1.ArtifactGenerator, name string, captures map[string]string) *sourcev1.ExternalArtifact {
	ea := &sourcev1.ExternalArtifact{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: obj.Namespace,
			OwnerReferences: []metav1.OwnerReference{ownerOf(obj)},
		},
		Spec: sourcev1.ExternalArtifactSpec{SourceRef: &meta.NamespacedObjectKindReference{
			APIVersion: sourceextv1beta1.GroupVersion.String(), Kind: sourceextv1beta1.ArtifactGeneratorKind,
			Name: obj.Name, Namespace: obj.Namespace,
		}},
	}
	ea.Labels, ea.Annotations = generatedMetadata(obj, captures, nil)
	return ea
}

// ownerOf returns the owner reference of a generated ExternalArtifact to
// its generator obj.
func ownerOf(obj *sourceextv1beta1.ArtifactGenerator) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: sourceextv1beta1.GroupVersion.String(), Kind: sourceextv1beta1.ArtifactGeneratorKind,
		Name: obj.Name, UID: obj.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// generatedMetadata returns the labels and annotations of a generated
// ExternalArtifact that has labels (its own, and those of its pathPattern
// captures) and annotations: the common metadata over them, the
// generator's own labels over all, and the generator's
// shard key (sharding.fluxcd.io/key), so that the replica its consumers run
// in watches it with them.
func generatedMetadata(obj *sourceextv1beta1.ArtifactGenerator, labels, annotations map[string]string) (map[string]string, map[string]string) {
	labels, annotations = maps.Clone(labels), maps.Clone(annotations)
	if labels == nil {
		labels = map[string]string{}
	}
	if common := obj.Spec.CommonMetadata; common != nil {
		maps.Copy(labels, common.Labels)
		if len(common.Annotations) > 0 && annotations == nil {
			annotations = map[string]string{}
		}
		maps.Copy(annotations, common.Annotations)
	}
	if key, ok := obj.Labels[shard.KeyLabel]; ok {
		labels[shard.KeyLabel] = key
	}
	labels[managedByLabel] = "windlass"
	labels[sourceextv1beta1.GeneratorLabel] = string(obj.UID)
	return labels, annotations
}

// updateMetadata sets the labels of captures and the common metadata on
// out's ExternalArtifact, when it lacks some, and the owner reference of
// obj on one declared for it. The status the run changed is kept.
func (r *ArtifactGeneratorReconciler) updateMetadata(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, out output,
	captures map[string]string) error {
	ea := out.ea
	labels := maps.Clone(ea.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, captures)
	labels, annotations := generatedMetadata(obj, labels, ea.Annotations)
	owners := ea.OwnerReferences
	if !metav1.IsControlledBy(ea, obj) {
		owners = append(slices.Clone(owners), ownerOf(obj))
	}
	if maps.Equal(labels, ea.Labels) && maps.Equal(annotations, ea.Annotations) && len(owners) == len(ea.OwnerReferences) {
		return nil
	}
	patched := &sourcev1.ExternalArtifact{ObjectMeta: *ea.ObjectMeta.DeepCopy()}
	patched.Labels, patched.Annotations, patched.OwnerReferences = labels, annotations, owners
	if err := r.Patch(ctx, patched, client.MergeFrom(&sourcev1.ExternalArtifact{ObjectMeta: ea.ObjectMeta})); err != nil {
		return outcome.Fail(meta.ReconciliationFailedReason, fmt.Errorf("updating ExternalArtifact '%s': %w", ea.Name, err))
	}
	ea.ObjectMeta, out.before.ObjectMeta = patched.ObjectMeta, *patched.ObjectMeta.DeepCopy()
	return nil
}

// publishStatus sets a as the artifact of out's ExternalArtifact, Ready,
// unless it is so already; a new digest is told in an event of the
// generator.
func (r *ArtifactGeneratorReconciler) publishStatus(ctx context.Context, obj *sourceextv1beta1.ArtifactGenerator, out output, a meta.Artifact) error {
	ea := out.ea
	ea.Status.Artifact = &a
	conditions.MarkTrue(ea, meta.ReadyCondition, meta.SucceededReason, "stored artifact for revision '%s'", a.Revision)
	if equality.Semantic.DeepEqual(out.before.Status, ea.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, ea, client.MergeFrom(out.before)); err != nil {
		return outcome.Fail(meta.ReconciliationFailedReason, fmt.Errorf("publishing the artifact of ExternalArtifact '%s': %w", ea.Name, err))
	}
	if !out.before.Status.Artifact.HasDigest(a.Digest) {
		r.Events.Normal(ctx, obj, sourcev1.NewRevisionReason, a.Revision,
			fmt.Sprintf("ExternalArtifact '%s' published revision '%s'", ea.Name, a.Revision))
	}
	return nil
}
