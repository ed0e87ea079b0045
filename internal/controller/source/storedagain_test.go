package source

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/gitserver"
)

// TestStoredAgainUnderASharedAddress: when the replicas share one address,
// a replica that takes a source over builds its artifact again, and the
// same content leaves the status as it was (its artifact, stored time
// included, and its ArtifactInStorage condition): no write, no event. The
// storage tells the consumers waiting here. Other content is a new
// artifact.
func TestStoredAgainUnderASharedAddress(t *testing.T) {
	g := NewWithT(t)
	store, err := artifact.New(t.TempDir(), "source-controller.windlass.svc", time.Minute, 2)
	g.Expect(err).NotTo(HaveOccurred())
	store.SetShared(true)
	var told []string
	store.OnStoredAgain(func(kind string, obj metav1.Object) {
		told = append(told, kind+"/"+obj.GetNamespace()+"/"+obj.GetName())
	})

	obj := newGitRepository("default", "app", "https://example.com/app.git")
	src := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(src, "a.yaml"), []byte("a: 1\n"), 0o600)).To(Succeed())
	build := func() meta.Artifact {
		a := store.NewArtifactFor(sourcev1.GitRepositoryKind, obj, "main@sha1:1", "1.tar.gz")
		g.Expect(store.Archive(&a, src, nil)).To(Succeed())
		return a
	}
	first := build()
	first.LastUpdateTime = metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	obj.Status.Artifact = &first
	conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason, "stored artifact for revision '%s'", first.Revision)
	inStorage := conditions.Get(obj, sourcev1.ArtifactInStorageCondition)
	inStorage.LastTransitionTime = metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	before := obj.Status.DeepCopy()

	// The replica that stored it went: this storage lacks the file.
	g.Expect(os.Remove(store.LocalPath(first))).To(Succeed())
	recorder := events.NewFakeRecorder(10)
	r := &GitRepositoryReconciler{Storage: store, Events: &event.Recorder{Kubernetes: recorder}}
	sc := &gitScope{}
	_, err = r.reconcileStorage(context.Background(), obj, sc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(recorder.Events).To(BeEmpty(), "no warning: another replica stored it")
	g.Expect(obj.Status.Artifact).To(BeNil(), "built again in this run")
	g.Expect(store.Deferred(first)).To(BeTrue(), "its readers wait for the run")

	again := build()
	change := r.store().stored(context.Background(), obj, sc.storageCheck, again, func(a *meta.Artifact) { obj.Status.Artifact = a })
	g.Expect(change).To(Equal(artifactUnchanged))
	conditions.Delete(obj, meta.ReconcilingCondition) // as a run that ends Ready does
	g.Expect(obj.Status).To(Equal(*before), "the status is as it was: nothing to write")
	g.Expect(told).To(Equal([]string{"GitRepository/default/app"}), "the consumers waiting here are told")
	g.Expect(store.Deferred(first)).To(BeFalse(), "and the readers go on")

	// Other content under the same URL is a new artifact, written.
	g.Expect(os.Remove(store.LocalPath(first))).To(Succeed())
	sc = &gitScope{}
	_, err = r.reconcileStorage(context.Background(), obj, sc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(src, "a.yaml"), []byte("a: 2\n"), 0o600)).To(Succeed())
	other := build()
	g.Expect(r.store().stored(context.Background(), obj, sc.storageCheck, other, func(a *meta.Artifact) { obj.Status.Artifact = a })).
		To(Equal(artifactReplaced))
	g.Expect(obj.Status.Artifact.Digest).NotTo(Equal(first.Digest))
	g.Expect(obj.Status.Artifact.LastUpdateTime).NotTo(Equal(first.LastUpdateTime))
	g.Expect(told).To(HaveLen(1), "a new artifact changes the status, which wakes the consumers")
}

// TestDeferredUntilAskedUnderASharedAddress: a replica that takes a source
// over (a GitRepository, an OCIRepository, a Bucket), whose remote still
// serves the revision of the artifact another replica stored, checks the
// remote only (the references listed, the tag resolved, the objects
// listed) and keeps the status as it was: the artifact is deferred (no
// download, no event). A reader's ask runs the source, which downloads and
// stores the same artifact, and the reader waiting for it goes on; one
// that asks before the run deferred it has it stored at once. A
// remote that moved meanwhile gives a new artifact; a run asked for that
// fails lets the readers go too.
func TestDeferredUntilAskedUnderASharedAddress(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		remote func(t *testing.T, g *WithT, store *artifact.Storage, events *event.Recorder) deferralRemote
	}{
		{sourcev1.GitRepositoryKind, gitDeferralRemote},
		{sourcev1.OCIRepositoryKind, ociDeferralRemote},
		{sourcev1.BucketKind, bucketDeferralRemote},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			store, err := artifact.New(t.TempDir(), "source-controller.windlass.svc", time.Minute, 2)
			g.Expect(err).NotTo(HaveOccurred())
			store.SetShared(true)
			recorder := events.NewFakeRecorder(10)
			remote := tc.remote(t, g, store, &event.Recorder{Kubernetes: recorder})
			obj := remote.obj
			g.Expect(remote.run()).To(Succeed())
			stored := obj.GetArtifact().DeepCopy()
			g.Expect(store.Verify(*stored)).To(Succeed())
			takeOver := func() {
				g.Expect(os.Remove(store.LocalPath(*stored))).To(Succeed(), "the replica that stored it went")
				checks, fetches := remote.requests(), remote.fetches()
				g.Expect(remote.run()).To(Succeed())
				g.Expect(remote.requests()).To(BeNumerically(">", checks), "the remote is checked")
				g.Expect(remote.fetches()).To(Equal(fetches), "nothing downloaded")
				g.Expect(obj.GetArtifact()).To(Equal(stored), "the status stays")
				g.Expect(store.Deferred(*stored)).To(BeTrue())
				g.Expect(store.ArtifactExists(*stored)).To(BeFalse(), "not stored before a reader asks")
			}

			takeOver()
			g.Expect(recorder.Events).To(BeEmpty())
			restored := make(chan bool, 1)
			go func() { restored <- store.Restore(ctx, *stored) }()
			var ask ctrlevent.GenericEvent
			g.Eventually(store.AsksFor(tc.kind), timeout).Should(Receive(&ask), "the reader asks the source")
			g.Expect(ask.Object.GetName()).To(Equal(obj.GetName()))
			fetches := remote.fetches()
			g.Expect(remote.run()).To(Succeed())
			g.Expect(remote.fetches()).To(BeNumerically(">", fetches), "downloaded")
			g.Expect(store.Verify(*stored)).To(Succeed(), "the same artifact, stored again")
			g.Expect(obj.GetArtifact()).To(Equal(stored), "the status stays")
			g.Eventually(restored, timeout).Should(Receive(BeTrue()), "the reader goes on")
			g.Expect(store.Deferred(*stored)).To(BeFalse())
			g.Expect(recorder.Events).To(BeEmpty(), "nothing new to tell")

			// A reader that asks before the takeover's run deferred the
			// artifact: the run stores it at once.
			g.Expect(os.Remove(store.LocalPath(*stored))).To(Succeed(), "the replica that stored it went")
			store.AskToStore(tc.kind, obj, *stored)
			fetches = remote.fetches()
			g.Expect(remote.run()).To(Succeed())
			g.Expect(remote.fetches()).To(BeNumerically(">", fetches), "downloaded at once")
			g.Expect(store.Verify(*stored)).To(Succeed())
			g.Expect(obj.GetArtifact()).To(Equal(stored), "the status stays")
			g.Expect(store.Deferred(*stored)).To(BeFalse())

			takeOver()
			remote.move()
			g.Expect(remote.run()).To(Succeed())
			g.Expect(obj.GetArtifact().Revision).NotTo(Equal(stored.Revision), "the remote moved: a new artifact")
			g.Expect(store.Verify(*obj.GetArtifact())).To(Succeed())
			g.Expect(store.Deferred(*stored)).To(BeFalse())

			stored = obj.GetArtifact().DeepCopy()
			takeOver()
			g.Expect(store.Ask(*stored)).To(BeTrue())
			remote.down()
			g.Expect(remote.run()).NotTo(Succeed(), "the remote is down")
			g.Expect(store.Deferred(*stored)).To(BeFalse(), "the run asked for ended: its readers go on")
			g.Expect(store.Restore(ctx, *stored)).To(BeFalse(), "nothing to wait for")
		})
	}
}

// deferralRemote is one source of TestDeferredUntilAskedUnderASharedAddress
// and its remote.
type deferralRemote struct {
	obj sourceObject
	// run runs the source once, as the runner runs it.
	run func() error
	// requests counts the remote's requests, fetches its downloads of
	// content.
	requests, fetches func() int64
	// move gives the remote a new revision; down takes it down.
	move, down func()
}

// gitDeferralRemote is a GitRepository of a branch of the git server.
func gitDeferralRemote(t *testing.T, g *WithT, store *artifact.Storage, events *event.Recorder) deferralRemote {
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	repo.MustCommit(t, "main", map[string]string{"a.yaml": "a: 1\n"}, "one")
	r := &GitRepositoryReconciler{Storage: store, Events: events, AllowInsecureHTTP: true}
	obj := newGitRepository("default", "app", base+"/app.git")
	obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	obj.Generation, obj.Status.ObservedGeneration = 1, 1 // nothing to announce: the runs need no patcher
	return deferralRemote{
		obj:      obj,
		run:      func() error { _, err := endingStoring(r.store(), r.run)(context.Background(), obj, nil); return err },
		requests: srv.Requests,
		fetches:  func() int64 { return srv.FetchesOf("app.git") },
		move:     func() { repo.MustCommit(t, "main", map[string]string{"a.yaml": "a: 2\n"}, "two") },
		down:     func() { srv.SetDown(true) },
	}
}

// ociDeferralRemote is an OCIRepository of a tag of the counting registry.
func ociDeferralRemote(t *testing.T, g *WithT, store *artifact.Storage, events *event.Recorder) deferralRemote {
	reg := startCountingRegistry(t)
	push(t, g, reg.host, "app:v1", map[string]string{"a.yaml": "a: 1\n"}, "main@sha1:1111111111111111111111111111111111111111")
	r := &OCIRepositoryReconciler{Client: env.Client, Storage: store, Events: events, AllowInsecureHTTP: true}
	obj := newOCIRepository(env.CreateNamespace(t), "app", "oci://"+reg.host+"/app")
	obj.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: "v1"}
	obj.Generation, obj.Status.ObservedGeneration = 1, 1
	return deferralRemote{
		obj: obj,
		run: func() error { _, err := endingStoring(r.store(), r.run)(context.Background(), obj, nil); return err },
		requests: func() int64 {
			return reg.manifestHeads.Load() + reg.manifestGets.Load() + reg.blobGets.Load()
		},
		fetches: func() int64 { return reg.manifestGets.Load() + reg.blobGets.Load() },
		move: func() {
			push(t, g, reg.host, "app:v1", map[string]string{"a.yaml": "a: 2\n"}, "main@sha1:2222222222222222222222222222222222222222")
		},
		down: func() { reg.down.Store(true) },
	}
}

// bucketDeferralRemote is a Bucket of the S3 fixture.
func bucketDeferralRemote(t *testing.T, g *WithT, store *artifact.Storage, events *event.Recorder) deferralRemote {
	f := startS3Fixture(t, g, map[string]string{"a.yaml": "a: 1\n"})
	r := &BucketReconciler{Client: env.Client, Storage: store, Events: events, AllowInsecureHTTP: true}
	obj := f.newBucket(t, g, env.CreateNamespace(t), "app")
	obj.Generation, obj.Status.ObservedGeneration = 1, 1
	return deferralRemote{
		obj:      obj,
		run:      func() error { _, err := endingStoring(r.store(), r.run)(context.Background(), obj, nil); return err },
		requests: f.requests.Load,
		fetches:  f.gets.Load,
		move:     func() { f.put(t, g, "a.yaml", "a: 2\n") },
		down:     func() { f.down.Store(true) },
	}
}
