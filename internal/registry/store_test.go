package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// TestScan1000TagsEach scans 1000 tags and reads them back with Each and
// with a Snapshot's iterator, twice, and stops early.
func TestScan1000TagsEach(t *testing.T) {
	g := NewWithT(t)
	tags := numbered("1.0.", 1000)
	_, s, res := scanned(t, tags)
	g.Expect(res.TagCount).To(Equal(1000))

	g.Expect(storedTags(t, s, "apps", "app")).To(Equal(tags))

	var first []string
	g.Expect(s.Each("apps", "app", func(tag string) bool {
		first = append(first, tag)
		return len(first) < 3
	})).To(Succeed())
	g.Expect(first).To(Equal(tags[:3]), "yield returning false stops the walk")

	snap, err := s.Open("apps", "app")
	g.Expect(err).NotTo(HaveOccurred())
	defer snap.Close()
	g.Expect(slices.Collect(snap.All())).To(Equal(tags))
	g.Expect(slices.Collect(snap.All())).To(Equal(tags), "a snapshot can be ranged over again")
	g.Expect(snap.Err()).NotTo(HaveOccurred())
}

// TestSnapshotOutlivesScan proves that a snapshot keeps reading the list
// it opened while a scan replaces it.
func TestSnapshotOutlivesScan(t *testing.T) {
	g := NewWithT(t)
	reg, s, old := scanned(t, []string{"a", "b"})
	opts := Options{Image: reg.image("app")}
	snap, err := s.Open("apps", "app")
	g.Expect(err).NotTo(HaveOccurred())
	defer snap.Close()

	push(t, reg.image("app"), []string{"c"})
	_, err = s.Scan(context.Background(), "apps", "app", opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(slices.Collect(snap.All())).To(Equal([]string{"a", "b"}))
	g.Expect(snap.Revision).To(Equal(old.Revision))
	g.Expect(storedTags(t, s, "apps", "app")).To(Equal([]string{"a", "b", "c"}))
}

// TestConcurrentScansAndReads runs scans that change the list while
// readers open it: every reader sees a count and a revision that describe
// the tags it reads.
func TestConcurrentScansAndReads(t *testing.T) {
	g := NewWithT(t)
	reg, s, _ := scanned(t, []string{"t000"})
	image := reg.image("app")
	opts := Options{Image: image}

	const readers, checks = 2, 3000
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range checks {
				if err := checkSnapshot(s); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	readersDone := make(chan struct{})
	go func() { wg.Wait(); close(readersDone) }()
	scans := 0
	for finished := false; !finished || scans < 3; scans++ {
		push(t, image, []string{fmt.Sprintf("t%03d", scans+1)})
		_, err := s.Scan(context.Background(), "apps", "app", opts)
		g.Expect(err).NotTo(HaveOccurred())
		select {
		case <-readersDone:
			finished = true
		default:
		}
	}
	<-readersDone
	close(errs)
	g.Expect(errs).NotTo(Receive(HaveOccurred()))
	g.Expect(storedTags(t, s, "apps", "app")).To(HaveLen(scans + 1))
}

// checkSnapshot opens the stored list and checks that its meta describes
// its tags.
func checkSnapshot(s *Store) error {
	snap, err := s.Open("apps", "app")
	if err != nil {
		return err
	}
	defer snap.Close()
	var lines []string
	for tag := range snap.All() {
		lines = append(lines, tag)
	}
	if len(lines) != snap.Count {
		return fmt.Errorf("meta says %d tags, the file holds %d", snap.Count, len(lines))
	}
	if want := revisionOf(lines); want != snap.Revision {
		return fmt.Errorf("meta says revision %s, the file's is %s", snap.Revision, want)
	}
	return snap.Err()
}

// revisionOf returns the revision of a list of tags: the SHA-256 of the
// tags file that holds them.
func revisionOf(tags []string) string {
	h := sha256.New()
	for _, tag := range tags {
		_, _ = h.Write([]byte(tag + "\n"))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func TestDelete(t *testing.T) {
	g := NewWithT(t)
	_, s, _ := scanned(t, []string{"1"})

	g.Expect(s.Delete("apps", "app")).To(Succeed())
	_, err := s.Open("apps", "app")
	g.Expect(IsNotFound(err)).To(BeTrue())
	_, ok := s.Revision("apps", "app")
	g.Expect(ok).To(BeFalse())
	g.Expect(filepath.Join(s.root, "apps")).NotTo(BeADirectory(), "the empty namespace folder goes too")
	g.Expect(s.Delete("apps", "app")).To(Succeed(), "deleting nothing is no error")
	g.Expect(s.Delete("..", "app")).To(MatchError(ErrBadRequest))
	err = s.Each("apps", "app", func(string) bool { return true })
	g.Expect(IsNotFound(err)).To(BeTrue())
}

func TestNewStoreRemovesLeftovers(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	dir := filepath.Join(root, imagesDir, "apps", "app")
	g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	for _, f := range []string{".tags-123.tmp", ".meta-4.tmp", ".run-5.tmp", tagsFileName} {
		g.Expect(os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644)).To(Succeed())
	}
	_, err := NewStore(root)
	g.Expect(err).NotTo(HaveOccurred())
	entries, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(1))
	g.Expect(entries[0].Name()).To(Equal(tagsFileName))
}

// TestSortLines sorts more lines than fit in one run, shuffled, with
// repeats, and checks the order and that the runs are removed.
func TestSortLines(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	want := numbered("s", 2*sortRunLines+123)
	slices.Sort(want) // s10000 comes before s9999
	shuffled := append(slices.Clone(want), want[:50]...)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	src := filepath.Join(dir, "raw")
	g.Expect(os.WriteFile(src, []byte(strings.Join(shuffled, "\n")+"\n"), 0o644)).To(Succeed())

	var got []string
	g.Expect(sortLines(dir, src, func(line string) error {
		if len(got) == 0 || got[len(got)-1] != line {
			got = append(got, line)
		}
		return nil
	})).To(Succeed())
	g.Expect(got).To(Equal(want))
	entries, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(1), "only the source is left")
}
