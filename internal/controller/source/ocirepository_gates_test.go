package source

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// TestOCIRepositoryAndBucketWaitBehindGates: behind a closed gate neither
// kind fetches anything (the registry and the S3 server are not asked);
// the gate opening fetches at once, through the watch on Gates.
func TestOCIRepositoryAndBucketWaitBehindGates(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	setGate(g, ns, "freeze", false)
	gates := []meta.NamespacedObjectReference{{Name: "freeze"}}

	reg := startCountingRegistry(t)
	pushed := push(t, g, reg.host, "app:v1", map[string]string{"a.yaml": "a: 1\n"}, "")
	pushRequests := reg.manifestHeads.Load() + reg.manifestGets.Load() + reg.blobGets.Load()
	repo := newOCIRepository(ns, "gated", "oci://"+reg.host+"/app")
	repo.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: "v1"}
	repo.Spec.Gates = gates
	g.Expect(env.Client.Create(context.Background(), repo)).To(Succeed())

	s3 := startS3Fixture(t, g, map[string]string{"a.yaml": "a: 1\n"})
	bucket := s3.newBucket(t, g, ns, "gated")
	bucket.Spec.Gates = gates
	g.Expect(env.Client.Create(context.Background(), bucket)).To(Succeed())

	heldRepo := waitForOCI(g, repo, func(o *sourcev1.OCIRepository) bool { return conditions.IsTrue(o, meta.BlockedCondition) })
	g.Expect(conditions.Reason(heldRepo, meta.BlockedCondition)).To(Equal(meta.GateClosedReason))
	g.Expect(heldRepo.Status.Artifact).To(BeNil())
	heldBucket := waitForBucket(g, bucket, func(o *sourcev1.Bucket) bool { return conditions.IsTrue(o, meta.BlockedCondition) })
	g.Expect(heldBucket.Status.Artifact).To(BeNil())
	g.Expect(reg.manifestHeads.Load()+reg.manifestGets.Load()+reg.blobGets.Load()).To(Equal(pushRequests), "the registry is not asked")
	g.Expect(s3.gets.Load()).To(BeZero(), "no object is downloaded")

	setGate(g, ns, "freeze", true)
	opened := waitForOCI(g, repo, ociReadyAt("v1@"+pushed.Digest.String()))
	g.Expect(conditions.Has(opened, meta.BlockedCondition)).To(BeFalse())
	waitForBucket(g, bucket, bucketReady)
}
