package artifact

import (
	"context"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/windlass-dev/windlass/api/meta"
)

// deferredArtifact stores an artifact of default/app, removes its file
// (another replica stored it), defers it and returns it.
func deferredArtifact(t *testing.T, g *WithT, s *Storage) meta.Artifact {
	a := s.NewArtifactFor("GitRepository", obj("default", "app"), "main@sha1:abc", "1.tar.gz")
	g.Expect(s.Archive(&a, sourceTree(t), nil)).To(Succeed())
	g.Expect(os.Remove(s.LocalPath(a))).To(Succeed())
	s.Defer("GitRepository", obj("default", "app"), a)
	g.Expect(s.Deferred(a)).To(BeTrue())
	return a
}

// storeWhenAsked stores a again, as the source controller does, when its
// ask arrives on the asks of GitRepositories, and returns the asks it took.
func storeWhenAsked(t *testing.T, s *Storage, a meta.Artifact) <-chan event.GenericEvent {
	taken := make(chan event.GenericEvent, 10)
	go func() {
		ask := <-s.AsksFor("GitRepository")
		taken <- ask
		again := a
		if err := s.Archive(&again, sourceTree(t), nil); err != nil {
			t.Errorf("storing again: %v", err)
		}
		s.StoredAgain("GitRepository", ask.Object)
	}()
	return taken
}

// TestDeferredArtifacts: a deferred artifact is asked for by the readers
// that need it; its source is asked once per ask, names the object, and
// the deferral ends when the run asked for ends (Undefer), when another
// artifact of the object is deferred, or when the object's folder goes.
func TestDeferredArtifacts(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := deferredArtifact(t, g, s)
	other := a
	other.Path = "gitrepository/default/app/2.tar.gz"
	g.Expect(s.Deferred(other)).To(BeFalse(), "another file of the object is not deferred")
	g.Expect(s.Ask(other)).To(BeFalse())
	g.Expect(s.AskedToStore("GitRepository", obj("default", "app"))).To(BeFalse(), "nobody asked yet")

	g.Expect(s.Ask(a)).To(BeTrue())
	var ask event.GenericEvent
	g.Expect(s.AsksFor("GitRepository")).To(Receive(&ask))
	g.Expect(ask.Object.GetNamespace() + "/" + ask.Object.GetName()).To(Equal("default/app"))
	g.Expect(s.AskedToStore("GitRepository", obj("default", "app"))).To(BeTrue())
	s.Defer("GitRepository", obj("default", "app"), a)
	g.Expect(s.AskedToStore("GitRepository", obj("default", "app"))).To(BeTrue(), "deferring again keeps the ask")

	s.Undefer("GitRepository", obj("default", "app"))
	g.Expect(s.Deferred(a)).To(BeFalse(), "the run asked for ended")
	g.Expect(s.Restore(context.Background(), a)).To(BeFalse(), "nothing to wait for")

	s.Defer("GitRepository", obj("default", "app"), a)
	stored, _ := s.ask(a)
	s.Defer("GitRepository", obj("default", "app"), other)
	g.Expect(stored).To(BeClosed(), "another artifact deferred: the readers of the first go on")
	g.Expect(s.Deferred(a)).To(BeFalse())
	g.Expect(s.Deferred(other)).To(BeTrue())
	_, err := s.RemoveAll(s.NewArtifactFor("GitRepository", obj("default", "app"), "", "*"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Deferred(other)).To(BeFalse(), "the object's folder went")
}

// TestAskToStoreBeforeTheDeferral: a reader that needs an artifact before
// its source's run deferred it asks all the same: the run finds it asked
// for (and stores it rather than deferring it), the readers wait for it,
// and deferring it then keeps the ask.
func TestAskToStoreBeforeTheDeferral(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	app := obj("default", "app")
	a := s.NewArtifactFor("GitRepository", app, "main@sha1:abc", "1.tar.gz")
	g.Expect(s.Ask(a)).To(BeFalse(), "nothing deferred to ask for")

	s.AskToStore("GitRepository", app, a)
	var ask event.GenericEvent
	g.Expect(s.AsksFor("GitRepository")).To(Receive(&ask), "the source is asked to run")
	g.Expect(ask.Object.GetNamespace() + "/" + ask.Object.GetName()).To(Equal("default/app"))
	g.Expect(s.AskedToStore("GitRepository", app)).To(BeTrue())
	g.Expect(s.Deferred(a)).To(BeTrue(), "its readers wait for the run")
	s.Defer("GitRepository", app, a)
	g.Expect(s.AskedToStore("GitRepository", app)).To(BeTrue(), "deferring it keeps the ask")

	s.Storing("GitRepository", app, a)
	s.AskToStore("GitRepository", app, a)
	g.Expect(s.AsksFor("GitRepository")).NotTo(Receive(), "a run storing it is not asked again")
	restored, wanted := make(chan bool, 1), a
	go func() { restored <- s.Restore(context.Background(), wanted) }()
	g.Consistently(restored, 100*time.Millisecond).ShouldNot(Receive(), "the reader waits for the run")
	g.Expect(s.Archive(&a, sourceTree(t), nil)).To(Succeed())
	s.StoredAgain("GitRepository", app)
	g.Eventually(restored).Should(Receive(BeTrue()))
	g.Expect(s.Deferred(a)).To(BeFalse())
}

// TestRestoreWaitsUntilStored: a reader waits until the source stored the
// artifact; one whose context ends gives up.
func TestRestoreWaitsUntilStored(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := deferredArtifact(t, g, s)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.Expect(s.Restore(ctx, a)).To(BeFalse(), "a reader whose context ended does not wait")
	g.Expect(s.AsksFor("GitRepository")).To(Receive(), "but its ask was sent")

	taken := storeWhenAsked(t, s, a)
	g.Expect(s.Restore(context.Background(), a)).To(BeTrue())
	g.Expect(taken).To(Receive())
	g.Expect(s.Verify(a)).To(Succeed(), "stored again as it was")
	g.Expect(s.Deferred(a)).To(BeFalse())
}

// TestHandlerServesADeferredArtifactOnceStored: a download of a deferred
// artifact asks for it and is answered once it is stored; a missing
// artifact that is not deferred is a 404 at once.
func TestHandlerServesADeferredArtifactOnceStored(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	base := serve(t, s)
	a := deferredArtifact(t, g, s)

	missing := &http.Client{Timeout: 5 * time.Second}
	resp, err := missing.Get(base + "/gitrepository/default/other/1.tar.gz")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))

	taken := storeWhenAsked(t, s, a)
	resp, err = http.Get(base + "/" + a.Path)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	want, err := os.ReadFile(s.LocalPath(a))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(Equal(want))
	g.Expect(taken).To(Receive(), "the download asked for it")
}

// TestStoringWaitsForTheRun: the readers of an artifact that a run is
// storing again wait for the run, which needs no ask; its end lets them
// go, stored or not. The end of a run that was not storing leaves a
// deferral as it was.
func TestStoringWaitsForTheRun(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := deferredArtifact(t, g, s)
	s.EndStoring("GitRepository", obj("default", "app"))
	g.Expect(s.Deferred(a)).To(BeTrue(), "no run was storing it")

	s.Storing("GitRepository", obj("default", "app"), a)
	g.Expect(s.AskedToStore("GitRepository", obj("default", "app"))).To(BeTrue())
	restored := make(chan bool, 1)
	go func() { restored <- s.Restore(context.Background(), a) }()
	g.Consistently(restored, 200*time.Millisecond).ShouldNot(Receive(), "the reader waits for the run")
	g.Expect(s.AsksFor("GitRepository")).NotTo(Receive(), "a run is storing it: nothing to ask")
	s.EndStoring("GitRepository", obj("default", "app"))
	g.Eventually(restored, 5*time.Second).Should(Receive(BeTrue()))
	g.Expect(s.Deferred(a)).To(BeFalse())
}
