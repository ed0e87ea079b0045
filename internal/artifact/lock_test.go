package artifact

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/api/meta"
)

func bytesReader(s string) io.Reader { return bytes.NewReader([]byte(s)) }

func TestLockMutualExclusion(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := s.NewArtifactFor("GitRepository", obj("default", "podinfo"), "r", "a.tar.gz")
	// Another file of the same object shares the lock.
	b := s.NewArtifactFor("GitRepository", obj("default", "podinfo"), "r", "b.tar.gz")

	var inside, violations atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			art := a
			if i%2 == 1 {
				art = b
			}
			unlock, err := s.Lock(art)
			if err != nil {
				t.Error(err)
				return
			}
			defer unlock()
			if inside.Add(1) > 1 {
				violations.Add(1)
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
		}()
	}
	wg.Wait()
	g.Expect(violations.Load()).To(BeZero(), "two holders at once")
	g.Expect(s.locks.locks).To(BeEmpty(), "unused locks are dropped")
}

func TestLockIndependentObjects(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := s.NewArtifactFor("GitRepository", obj("default", "one"), "r", "a.tar.gz")
	b := s.NewArtifactFor("GitRepository", obj("default", "two"), "r", "a.tar.gz")
	unlockA, err := s.Lock(a)
	g.Expect(err).NotTo(HaveOccurred())
	defer unlockA()

	acquired := make(chan func())
	go func() {
		unlock, _ := s.Lock(b)
		acquired <- unlock
	}()
	var unlockB func()
	g.Eventually(acquired).Should(Receive(&unlockB), "another object's lock is free")
	unlockB()
}

func TestLockBlocksUntilUnlock(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := s.NewArtifactFor("GitRepository", obj("default", "one"), "r", "a.tar.gz")
	unlock, err := s.Lock(a)
	g.Expect(err).NotTo(HaveOccurred())

	acquired := make(chan func())
	go func() {
		u, _ := s.Lock(a)
		acquired <- u
	}()
	g.Consistently(acquired, 50*time.Millisecond).ShouldNot(Receive())
	unlock()
	unlock() // a second call has no effect
	var second func()
	g.Eventually(acquired).Should(Receive(&second))
	second()
}

func TestLockInvalidPath(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	_, err := s.Lock(meta.Artifact{Path: "../../../etc"})
	g.Expect(err).To(MatchError(ErrInvalidPath))
}
